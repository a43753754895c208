"""The CLI's output paths and interruptions: a name from a file never leaves out/, an unusable
--out is one sentence, Ctrl-C keeps a run's partial results, help text shows its brackets."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
import types
from pathlib import Path
from typing import Any

import polars as pl
import pytest

from l4sim import cli
from l4sim.cli._app import default_out, safe_name
from l4sim.engine.results import Result, write
from l4sim.engine.simulation import FLOW_SCHEMA, QUEUE_SCHEMA
from l4sim.errors import L4simError
from l4sim.scenario import loads

ROOT = Path(__file__).resolve().parents[1]

needs_core = pytest.mark.skipif(
    not any((ROOT / "python" / "l4sim").glob("_core*")), reason="needs the compiled core"
)


def scenario_text(name: str, duration: str = "200ms") -> str:
    return f"""
name = {json.dumps(name)}
duration = "{duration}"
[topology]
preset = "dumbbell"
bottleneck = {{ rate = "10Mbps", delay = "10ms", qdisc = {{ kind = "fifo", limit = "50p" }} }}
[[flows]]
cca = "newreno"
"""


def run_main(args: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    with pytest.raises(SystemExit) as info:
        cli.main(args)
    out, err = capsys.readouterr()
    return int(info.value.code or 0), out, err


def one_line(err: str) -> str:
    lines = [line for line in err.splitlines() if line.strip()]
    assert len(lines) == 1, err
    assert lines[0].startswith("error: ") and "Traceback" not in err
    assert "internal error" not in lines[0]
    return lines[0]


def fake_result(name: str = "fake") -> Result:
    sc = loads(scenario_text(name))
    summary = {"scenario": name, "sim_time_s": 0.2, "wall_time_s": 0.01, "events": 0}
    summary |= {"seed": 1, "jain_fairness": None, "flows": [], "queues": [], "partial": False}
    return Result(
        summary=summary,
        flows=pl.DataFrame(schema=FLOW_SCHEMA),
        queues=pl.DataFrame(schema=QUEUE_SCHEMA),
        scenario=sc,
    )


def files_under(root: Path, name: str) -> list[Path]:
    return sorted(p.resolve() for p in root.rglob(name))


# --------------------------------------------------------------------------------------------
# 1. Names from files stay under out/.


@pytest.mark.parametrize(
    ("name", "safe"),
    [
        ("../../escaped", "_.._escaped"),
        ("../x", "_x"),
        ("/abs/y", "_abs_y"),
        ("..", "run"),
        ("", "run"),
        (".hidden", "hidden"),
        ("a b/c\\d:e", "a_b_c_d_e"),
        ("ok-name_1.2", "ok-name_1.2"),
    ],
)
def test_safe_name(name: str, safe: str):
    assert safe_name(name) == safe
    assert default_out(name) == Path("out") / safe


def test_default_out_refuses_a_symlink_leading_away(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "out").mkdir()
    (tmp_path / "elsewhere").mkdir()
    (tmp_path / "out" / "x").symlink_to(tmp_path / "elsewhere")
    with pytest.raises(L4simError, match="resolves outside 'out'; give --out"):
        default_out("x")


@needs_core
@pytest.mark.parametrize("name", ["../x", "/abs/y", "../../escaped"])
def test_run_name_cannot_escape(name: str, tmp_path, monkeypatch, capsys):
    work = tmp_path / "a" / "work"
    work.mkdir(parents=True)
    monkeypatch.chdir(work)
    (work / "s.toml").write_text(scenario_text(name))
    code, _, err = run_main(["run", "s.toml", "-q"], capsys)
    assert code == 0, err
    written = files_under(tmp_path, "summary.json")
    assert written == [(work / "out" / safe_name(name) / "summary.json").resolve()]
    assert not Path("/abs/y").exists()


def test_emulate_name_cannot_escape(tmp_path, monkeypatch, capsys):
    import l4sim.emulate

    work = tmp_path / "a" / "work"
    work.mkdir(parents=True)
    monkeypatch.chdir(work)
    (work / "s.toml").write_text(scenario_text("../../emu"))
    monkeypatch.setattr(l4sim.emulate, "emulate", lambda sc, **kw: fake_result())
    code, _, err = run_main(["emulate", "s.toml", "-q"], capsys)
    assert code == 0, err
    assert files_under(tmp_path, "summary.json") == [
        (work / "out" / "_.._emu-emu" / "summary.json").resolve()
    ]


@needs_core
def test_sweep_name_cannot_escape(tmp_path, monkeypatch, capsys):
    work = tmp_path / "a" / "work"
    work.mkdir(parents=True)
    monkeypatch.chdir(work)
    (work / "base.toml").write_text(scenario_text("base", "100ms"))
    (work / "spec.toml").write_text('name = "../../evil"\nbase = "base.toml"\nseeds = 2\n')
    code, _, err = run_main(["sweep", "spec.toml", "-q", "-j", "1"], capsys)
    assert code == 0, err
    assert files_under(tmp_path, "sweep.parquet") == [
        (work / "out" / "_.._evil" / "sweep.parquet").resolve()
    ]


def test_reproduce_name_is_checked(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    code, _, err = run_main(["reproduce", "../x"], capsys)
    assert code == 2
    assert "unknown experiment '../x'" in one_line(err)
    assert list(tmp_path.iterdir()) == []


# --------------------------------------------------------------------------------------------
# 2. Unusable output paths: one sentence, exit code 2 (tests run as root, so no read-only
# directories: a path under a regular file and a file where a directory belongs instead).


@pytest.fixture
def work(tmp_path, monkeypatch) -> Path:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "file.txt").write_text("x")
    (tmp_path / "s.toml").write_text(scenario_text("s"))
    (tmp_path / "dir").mkdir()
    write(fake_result(), tmp_path / "res")
    return tmp_path


FILE = "is a file, not a directory"
UNDER = "cannot be created: 'file.txt' is a file, not a directory"


@pytest.mark.parametrize(
    ("args", "fragment"),
    [
        (["run", "s.toml", "-o", "file.txt"], f"--out 'file.txt' {FILE}"),
        (["run", "s.toml", "-o", "file.txt/sub"], f"--out 'file.txt/sub' {UNDER}"),
        (["emulate", "s.toml", "-o", "file.txt"], f"--out 'file.txt' {FILE}"),
        (["emulate", "s.toml", "-o", "file.txt/sub"], f"--out 'file.txt/sub' {UNDER}"),
        (["plot", "res", "--fig-dir", "file.txt"], f"--fig-dir 'file.txt' {FILE}"),
        (["plot", "res", "--fig-dir", "file.txt/a/b"], f"--fig-dir 'file.txt/a/b' {UNDER}"),
        (["demo", "-q", "-o", "file.txt"], f"--out 'file.txt' {FILE}"),
        (["demo", "-q", "-o", "file.txt/sub"], f"--out 'file.txt/sub' {UNDER}"),
        (["sweep", str(ROOT / "examples" / "sweep_buffers.toml"), "-o", "file.txt"], FILE),
        (["sweep", str(ROOT / "examples" / "sweep_buffers.toml"), "-o", "file.txt/x"], UNDER),
        (["reproduce", "aqm-004", "-o", "file.txt"], f"--out 'file.txt' {FILE}"),
        (["reproduce", "aqm-004", "-o", "file.txt/x"], f"--out 'file.txt/x' {UNDER}"),
        (["train", "rl-tcp", "-o", "file.txt"], f"--out 'file.txt' {FILE}"),
        (["train", "rl-tcp", "-o", "file.txt/x"], f"--out 'file.txt/x' {UNDER}"),
        (["report", "res", "-o", "file.txt/r.html"], "'file.txt' is a file, not a directory"),
        (["report", "res", "-o", "nodir/r.html"], "'nodir' does not exist"),
        (["report", "res", "-o", "dir"], "--out 'dir' is a directory; give a file name"),
        (["schema", "-o", "file.txt/s.json"], "'file.txt' is a file, not a directory"),
        (["schema", "-o", "dir"], "--out 'dir' is a directory; give a file name"),
    ],
)
def test_unusable_out_is_one_sentence(args: list[str], fragment: str, work, capsys):
    code, _, err = run_main(args, capsys)
    assert code == 2, err
    assert fragment in one_line(err)
    assert (work / "file.txt").read_text() == "x"


def test_unwritable_out_dir(work, monkeypatch, capsys):
    # what a non-root user sees in a read-only directory (root may write anywhere)
    monkeypatch.setattr(cli.os, "access", lambda path, mode, **k: not mode & os.W_OK)
    code, _, err = run_main(["run", "s.toml", "-o", "new/sub"], capsys)
    assert code == 2
    assert "--out 'new/sub' cannot be written: '.' is not writable" in one_line(err)
    code, _, err = run_main(["report", "res", "-o", "r.html"], capsys)
    assert code == 2
    assert "--out 'r.html' cannot be written (permission denied)" in one_line(err)


def test_plot_and_write_refuse_a_path_under_a_file(work):
    from l4sim.plot import plot

    with pytest.raises(L4simError, match=r"figure directory 'file\.txt/f' cannot be created"):
        plot(work / "res", "file.txt/f")
    with pytest.raises(L4simError, match=r"output directory 'file\.txt/o' cannot be created"):
        write(fake_result(), "file.txt/o")


# --------------------------------------------------------------------------------------------
# 3. Ctrl-C keeps what was simulated.


@needs_core
def test_run_stops_on_interrupt_with_partial_result():
    from l4sim.engine.run import run

    sc = loads(scenario_text("p", "1s"))
    seen: list[float] = []

    def on_chunk(sim: Any) -> None:
        seen.append(sim.now)
        if len(seen) == 3:
            raise KeyboardInterrupt

    result = run(sc, chunks=10, on_chunk=on_chunk, stop_on_interrupt=True)
    assert result.summary["partial"] is True
    assert result.summary["interrupted_at_s"] == pytest.approx(0.3)
    assert result.summary["sim_time_s"] == pytest.approx(0.3)
    assert result.flows["time_s"].max() <= 0.3 + 1e-9
    seen.clear()
    with pytest.raises(KeyboardInterrupt):
        run(sc, chunks=10, on_chunk=on_chunk)
    full = run(sc, chunks=10)
    assert full.summary["partial"] is False and "interrupted_at_s" not in full.summary


@needs_core
def test_ctrl_c_writes_partial_results(tmp_path):
    """SIGINT once the progress bar runs: exit 130, one line saying how far, summary.json with
    partial = true."""
    env = dict(os.environ, TTY_COMPATIBLE="1", TTY_INTERACTIVE="1", COLUMNS="120")
    env.pop("L4SIM_DEBUG", None)
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT / "python"), env.get("PYTHONPATH", "")])
    out = tmp_path / "o"
    scenario = ROOT / "scenarios" / "bench_1flow_100M.toml"
    proc = subprocess.Popen(
        [sys.executable, "-m", "l4sim", "run", str(scenario), "--duration", "36000s", "-o", out],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        cwd=tmp_path,
        env=env,
        # a shell's background job ignores SIGINT; Python only installs its handler on SIG_DFL
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )
    chunks: list[bytes] = []
    started = threading.Event()

    def read_stderr() -> None:
        assert proc.stderr is not None
        while data := os.read(proc.stderr.fileno(), 4096):
            chunks.append(data)
            if b"sim " in b"".join(chunks):
                started.set()

    reader = threading.Thread(target=read_stderr, daemon=True)
    reader.start()
    try:
        assert started.wait(15), b"".join(chunks).decode(errors="replace")
        time.sleep(0.3)
        proc.send_signal(signal.SIGINT)
        sent = time.perf_counter()
        assert proc.stdout is not None
        stdout = proc.stdout.read().decode()
        code = proc.wait(timeout=10)
        took = time.perf_counter() - sent
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    reader.join(5)
    for pipe in (proc.stdout, proc.stderr):
        if pipe is not None:
            pipe.close()
    stderr = b"".join(chunks).decode(errors="replace")
    assert code == 130, stderr
    assert took < 2.0
    assert "Traceback" not in stderr
    assert "of 36000 s simulated; partial results in" in stderr, stderr
    assert "interrupted at " in stderr
    summary = json.loads((out / "summary.json").read_text())
    assert summary["partial"] is True
    assert 0 < summary["sim_time_s"] == pytest.approx(summary["interrupted_at_s"])
    assert summary["sim_time_s"] < 36000
    assert "Flows" in stdout  # the tables of what was simulated
    assert {p.name for p in out.iterdir()} >= {"flows.parquet", "queues.parquet", "scenario.toml"}


# --------------------------------------------------------------------------------------------
# 4. reproduce --quiet.


@pytest.fixture
def fake_experiment(monkeypatch) -> types.ModuleType:
    from l4sim.experiments import EXPERIMENTS
    from l4sim.experiments.base import Declared

    mod = types.ModuleType("l4sim_fake_experiment")
    calls = types.SimpleNamespace(reproduce=None, tensorboard_dir=None)

    def reproduce(out: Path, **kw: Any) -> list[int]:
        if calls.reproduce is not None:
            return calls.reproduce(out, **kw)
        kw["on_case"](types.SimpleNamespace(name="a"), 1, 1)
        Path(out).mkdir(parents=True, exist_ok=True)
        (Path(out) / "table.md").write_text("| FAKE TABLE |\n")
        return [1]

    mod.EXPERIMENT = Declared(  # type: ignore[attr-defined]
        name="fake",
        title="A fake experiment",
        paper="none",
        groups=("a",),
        tables=("table.md",),
        run=reproduce,
        table=lambda rows: "| FAKE TABLE |",
        case_list=lambda groups, **kw: [types.SimpleNamespace(name="a")],
        tensorboard=lambda out, **kw: (
            calls.tensorboard_dir(out, **kw) if calls.tensorboard_dir else None
        ),
    )
    mod.calls = calls  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, mod.__name__, mod)
    monkeypatch.setitem(EXPERIMENTS, "fake", mod.__name__)
    return mod


def test_reproduce_quiet(fake_experiment, tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    code, out, _ = run_main(["reproduce", "fake", "-j", "1"], capsys)
    assert code == 0 and "FAKE TABLE" in out
    code, out, err = run_main(["reproduce", "fake", "-j", "1", "--quiet"], capsys)
    assert code == 0 and "FAKE TABLE" not in out and "fake" not in err
    assert "Table in out/fake/table.md" in out


def test_reproduce_names_no_table_it_did_not_write(fake_experiment, tmp_path, monkeypatch, capsys):
    # A subset can leave a table unwritten (coexistence --only 1vN writes no grid table).
    fake_experiment.calls.reproduce = lambda out, **kw: [1]
    monkeypatch.chdir(tmp_path)
    code, out, _ = run_main(["reproduce", "fake", "-j", "1", "--quiet"], capsys)
    assert code == 0 and "Table in" not in out
    assert "Output under out/fake" in out


def test_reproduce_names_the_tensorboard_directory_first(
    fake_experiment, tmp_path, monkeypatch, capsys
):
    """An experiment that trains names where its TensorBoard logs go before it starts."""
    monkeypatch.chdir(tmp_path)
    seen: list[bool] = []
    fake_experiment.calls.tensorboard_dir = lambda out, **kw: Path(out) / "tb"

    def reproduce(out: Path, **kw: Any) -> list[int]:
        seen.append("TensorBoard logs in out/fake/tb" in capsys.readouterr().err)
        return [1]

    fake_experiment.calls.reproduce = reproduce
    code, _, _ = run_main(["reproduce", "fake", "-j", "1", "-q"], capsys)
    assert code == 0 and seen == [True]


# --------------------------------------------------------------------------------------------
# 5. Square brackets in help text survive rich markup.


@pytest.mark.parametrize("command", ["sweep", "reproduce"])
def test_help_shows_the_ray_extra(command: str, monkeypatch, capsys):
    monkeypatch.setenv("COLUMNS", "400")
    code, out, _ = run_main([command, "--help"], capsys)
    assert code == 0
    assert "pip install 'l4sim[ray]'" in out


def test_missing_torch_names_the_rl_extra(tmp_path, monkeypatch, capsys):
    import importlib.util

    real = importlib.util.find_spec
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(
        importlib.util, "find_spec", lambda n, *a: None if n == "torch" else real(n, *a)
    )
    code, _, err = run_main(["train", "rl-tcp"], capsys)
    assert code == 2
    assert "pip install 'l4sim[rl]'" in one_line(err)


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGHUP, signal.SIGINT])
def test_a_signal_during_reproduce_is_one_line_and_128_plus_n(
    sig: int, fake_experiment, tmp_path, monkeypatch, capsys
):
    """typer turned any KeyboardInterrupt into a silent exit code 130, and SIGTERM killed
    reproduce and train without a word; now every command says it and exits 128 + n, with
    the cases finished before kept."""
    monkeypatch.chdir(tmp_path)

    def reproduce(out: Path, **kw: Any) -> list[int]:
        (out / "case-a").mkdir(parents=True)
        (out / "case-a" / "summary.json").write_text("{}")
        os.kill(os.getpid(), sig)
        time.sleep(5)  # the signal's handler raises before this ends
        return [1]

    fake_experiment.calls.reproduce = reproduce
    code, _, err = run_main(["reproduce", "fake", "-j", "1", "--quiet"], capsys)
    assert code == 128 + sig
    name = signal.Signals(sig).name
    said = "error: interrupted" + ("" if sig == 2 else f" by {name}")
    assert one_line(err) == (
        f"{said}; 0 of 1 cases had finished; out/fake/manifest.json says partial: run the "
        "same command again"
    )
    assert (tmp_path / "out" / "fake" / "case-a" / "summary.json").is_file()
    manifest = json.loads((tmp_path / "out" / "fake" / "manifest.json").read_text())
    assert manifest["partial"] == {"cases_done": 0, "cases": 1}
    assert signal.getsignal(signal.SIGTERM) == signal.SIG_DFL  # main put the handlers back
