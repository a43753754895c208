"""The odd inputs and places a careless or hostile user reaches for, each answered in one
sentence (never "internal error"): an output directory the file system cannot name, a full
disk, stdout that takes nothing, a results file of another shape, a sweep over the seed, two
links between the same nodes, a huge --jobs, reward arguments a reward does not take, a
capture path the core cannot open, one Simulation driven from four threads, and a run that
delivered nothing (Jain's index undefined, not "perfectly fair")."""

from __future__ import annotations

import json
import subprocess
import threading
import time
import uuid
from pathlib import Path

import polars as pl
import pytest

from cli_run import ROOT, run_l4sim

pytest.importorskip("l4sim._core")

from l4sim import ActionError, EnvConfigError, ScenarioError, Simulation, loads

TCP_FLOW = '[[flows]]\nkind = "tcp"\ncca = "cubic"'


def scenario_text(name: str = "odd", duration: str = "300ms", flows: str = TCP_FLOW) -> str:
    return f"""
name = {json.dumps(name)}
duration = "{duration}"
[topology]
preset = "dumbbell"
bottleneck = {{ rate = "10Mbps", delay = "5ms", qdisc = {{ kind = "fifo", limit = "50p" }} }}
{flows}
"""


def write_scenario(tmp_path: Path, **kw: str) -> Path:
    path = tmp_path / "s.toml"
    path.write_text(scenario_text(**kw))
    return path


def one_error_line(stderr: str) -> str:
    lines = [x for x in stderr.splitlines() if x.strip()]
    assert len(lines) == 1, stderr
    assert lines[0].startswith("error: ") and "internal error" not in lines[0], stderr
    return lines[0]


def test_a_10000_character_name_gets_a_short_default_directory(tmp_path: Path) -> None:
    scenario = write_scenario(tmp_path, name="x" * 10_000)
    done = run_l4sim("run", str(scenario), "-q", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    (made,) = (tmp_path / "out").iterdir()
    assert len(made.name) <= 100 and made.name.startswith("xxxx")
    assert (made / "summary.json").is_file()


@pytest.mark.parametrize(
    ("out", "fragment"),
    [(b"\xff\xfe-out", "is not valid UTF-8"), (b"d" * 300, "longer than 255 bytes")],
    ids=["not-utf8", "too-long"],
)
def test_an_out_directory_the_file_system_cannot_name(
    tmp_path: Path, out: bytes, fragment: str
) -> None:
    scenario = write_scenario(tmp_path)
    done = subprocess.run(
        [*_python_l4sim(), b"run", str(scenario).encode(), b"-q", b"--out", out],
        capture_output=True,
        cwd=tmp_path,
        env=_env(),
        timeout=300,
    )
    line = one_error_line(done.stderr.decode("utf-8", "replace"))
    assert done.returncode == 2 and fragment in line


def test_a_nul_in_out_is_one_sentence(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from l4sim import cli

    scenario = write_scenario(tmp_path)
    with pytest.raises(SystemExit) as stop:
        cli.main(["run", str(scenario), "-q", "--out", str(tmp_path / "a\0b")])
    assert stop.value.code == 2
    assert "null byte" in one_error_line(capsys.readouterr().err).lower()


def test_stdout_that_takes_nothing_is_one_sentence(tmp_path: Path) -> None:
    scenario = write_scenario(tmp_path)
    with open("/dev/full", "w") as full:
        done = subprocess.run(
            [*_python_l4sim(), "run", str(scenario), "--out", str(tmp_path / "o")],
            stdout=full,
            stderr=subprocess.PIPE,
            text=True,
            env=_env(),
            timeout=300,
        )
    assert done.returncode == 1
    assert "No space left on device" in one_error_line(done.stderr.split("\n", 1)[-1])


@pytest.fixture
def tiny_disk(tmp_path: Path) -> Path:
    """A 16 KiB tmpfs (root only): what a full disk looks like to the writers."""
    mount = tmp_path / f"tiny-{uuid.uuid4().hex[:6]}"
    mount.mkdir()
    made = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=16k", "tmpfs", str(mount)], capture_output=True
    )
    if made.returncode != 0:
        pytest.skip("cannot mount a tmpfs here (needs root)")
    yield mount
    subprocess.run(["umount", str(mount)], check=False)


def test_a_full_disk_is_one_sentence_for_run_and_a_failed_point_for_sweep(
    tmp_path: Path, tiny_disk: Path
) -> None:
    scenario = write_scenario(tmp_path, duration="120s")
    done = run_l4sim("run", str(scenario), "-q", "--out", str(tiny_disk / "r"))
    assert done.returncode == 2
    assert "No space left on device" in one_error_line(done.stderr)
    assert not (tiny_disk / "r" / "summary.json").exists()  # nothing half-written in place
    subprocess.run(["rm", "-rf", str(tiny_disk / "r")], check=True)
    spec = tmp_path / "sweep.toml"
    spec.write_text('base = "s.toml"\nkeep_results = true\n[grid]\nseed = [1, 2]\n')
    done = run_l4sim("sweep", str(spec), "-q", "-j", "1", "--out", str(tiny_disk / "sw"))
    assert "internal error" not in done.stderr and "Traceback" not in done.stderr
    assert done.stderr.count("No space left on device") >= 1, done.stderr


def test_report_and_plot_refuse_a_summary_of_another_shape(tmp_path: Path) -> None:
    for i, content in enumerate(["[1, 2]", '{"flows": 3}', '{"flows": [{"goodput_bps": "x"}]}']):
        d = tmp_path / f"r{i}"
        d.mkdir()
        (d / "summary.json").write_text(content)
        for args in (["report", str(d), "--out", str(tmp_path / f"r{i}.html")], ["plot", str(d)]):
            done = run_l4sim(*args)
            assert done.returncode == 2, done.stderr
            assert "is not a summary written by l4sim" in one_error_line(done.stderr)


def test_report_refuses_a_parquet_that_is_not_a_sweep(tmp_path: Path) -> None:
    d = tmp_path / "sw"
    d.mkdir()
    pl.DataFrame({"a": [1, 2]}).write_parquet(d / "sweep.parquet")
    done = run_l4sim("report", str(d), "--out", str(tmp_path / "x.html"))
    assert done.returncode == 2
    assert "is not a table written by l4sim sweep" in one_error_line(done.stderr)


def test_a_sweep_over_the_seed_has_one_seed_column(tmp_path: Path) -> None:
    write_scenario(tmp_path)
    spec = tmp_path / "sweep.toml"
    spec.write_text('base = "s.toml"\n[grid]\nseed = [3, 4]\n')
    out = tmp_path / "sw"
    done = run_l4sim("sweep", str(spec), "-q", "-j", "1", "--out", str(out))
    assert done.returncode == 0, done.stderr
    table = pl.read_parquet(out / "sweep.parquet")
    assert table.columns.count("seed") == 1
    assert sorted(table["seed"].unique().to_list()) == [3, 4]
    done = run_l4sim("report", str(out), "--out", str(tmp_path / "r.html"))
    assert done.returncode == 0, done.stderr


def test_two_links_between_the_same_nodes_are_refused() -> None:
    text = """
name = "par"
duration = "1s"
[topology]
preset = "custom"
nodes = ["a", "b"]
links = [
  { a = "a", b = "b", rate = "10Mbps", delay = "5ms" },
  { a = "b", b = "a", rate = "20Mbps", delay = "5ms" },
]
[[flows]]
kind = "tcp"
src = "a"
dst = "b"
"""
    with pytest.raises(ScenarioError, match=r"links\[0\] and links\[1\] both join"):
        loads(text)


@pytest.mark.parametrize("command", [["train", "lfq"], ["sweep", "nowhere.toml"]])
def test_a_huge_jobs_is_refused_before_any_work(command: list[str], tmp_path: Path) -> None:
    start = time.monotonic()
    done = run_l4sim(*command, "--jobs", "100000", "--out", str(tmp_path / "o"))
    assert done.returncode == 2
    assert "worker processes l4sim starts on one machine" in one_error_line(done.stderr)
    assert not (tmp_path / "o").exists()
    assert time.monotonic() - start < 60  # refused while the command line is read


def test_reward_kwargs_are_checked_when_the_env_is_made() -> None:
    from l4sim.envs import TcpCwndEnv

    with pytest.raises(EnvConfigError, match="has no parameter 'bogus'; its parameters: delta"):
        TcpCwndEnv(reward_kwargs={"bogus": 1})
    with pytest.raises(EnvConfigError, match="must be a finite number"):
        TcpCwndEnv(reward_kwargs={"delta": float("nan")})
    TcpCwndEnv(reward_kwargs={"delta": 0.5})  # a good one still works


@pytest.mark.parametrize(
    ("file", "fragment"),
    [
        ("a\0b.pcap", "contains a NUL byte"),
        (b"\xff.pcap", "not valid UTF-8"),
        (3, "must be a path"),
    ],
)
def test_a_capture_path_the_core_cannot_open(file: object, fragment: str) -> None:
    sim = Simulation(loads(scenario_text()))
    with pytest.raises(ActionError, match=fragment):
        sim.capture("s0->r0", file)


def test_one_simulation_driven_from_four_threads_waits_instead_of_failing() -> None:
    sim = Simulation(loads(scenario_text(duration="2s")))
    errors: list[str] = []

    def drive(k: int) -> None:
        try:
            for i in range(100):
                sim.run_until(0.004 * (i + 1) + k * 1e-6)
                sim.summary()
                sim.observe()
        except Exception as e:  # the failure this test is about
            errors.append(f"{type(e).__name__}: {e}")

    threads = [threading.Thread(target=drive, args=(k,)) for k in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    assert sim.now == pytest.approx(0.4 + 3e-6)


def test_jain_fairness_is_null_when_nothing_was_delivered() -> None:
    # a link so lossy that no segment arrives in 200 ms: 0/0, not 1.0
    text = scenario_text(duration="200ms").replace('delay = "5ms"', 'delay = "5ms", loss = 0.999')
    sim = Simulation(loads(text))
    sim.run()
    summary = sim.summary()
    assert all(f["goodput_bps"] == 0 for f in summary["flows"])
    assert summary["jain_fairness"] is None


def _python_l4sim() -> list[str]:
    import sys

    return [sys.executable, "-m", "l4sim"]


def _env() -> dict[str, str]:
    import os

    env = {k: v for k, v in os.environ.items() if k != "L4SIM_DEBUG"}
    env["PYTHONPATH"] = str(ROOT / "python")
    return env


def test_a_call_that_finds_the_core_borrowed_waits_for_the_run_and_is_made_again() -> None:
    """The window between another thread's lock and its borrow: the core refuses a call
    with pyo3's borrow error before doing anything; the guard waits for the run holding the
    lock and makes the call again. Any other error goes through unchanged."""
    from l4sim.engine.guards import OneCallAtATime

    class Core:
        calls = 0

        def observe(self) -> str:
            Core.calls += 1
            if Core.calls == 1:
                raise RuntimeError("Already borrowed")
            return "ok"

        def broken(self) -> None:
            raise RuntimeError("something else")

    guard = OneCallAtATime(Core())
    released = threading.Event()

    def run_elsewhere() -> None:
        with guard._lock:  # another thread inside run()
            released.wait(5)

    holder = threading.Thread(target=run_elsewhere)
    holder.start()
    timer = threading.Timer(0.1, released.set)
    timer.start()
    try:
        assert guard.observe() == "ok"
        assert released.is_set()  # it waited for the run to end before calling again
    finally:
        released.set()
        holder.join()
    assert Core.calls == 2
    with pytest.raises(RuntimeError, match="something else"):
        guard.broken()
