"""One rule for signals: SIGTERM and SIGHUP stop ``l4sim`` as Ctrl-C does (results so far
written and marked partial, one line, exit 128 + n); a second signal while the files are
written still leaves them readable; a Ctrl-C while the package imports is one line.

Signals go at seeded random times of a command's life (imports, the run, the write), so a
time that falls before anything was simulated may leave nothing; whatever is left must be
complete or marked partial, and readable."""

from __future__ import annotations

import json
import os
import random
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import polars as pl
import pytest

pytest.importorskip("l4sim._core")

from l4sim.sweep import POINTS, read_sweep

ROOT = Path(__file__).resolve().parents[1]
SCENARIO = ROOT / "scenarios" / "bench_1flow_100M.toml"


def start(args: list[str], cwd: Path) -> subprocess.Popen[str]:
    env = {k: v for k, v in os.environ.items() if k != "L4SIM_DEBUG"}
    env["PYTHONPATH"] = str(ROOT / "python")
    return subprocess.Popen(
        [sys.executable, "-m", "l4sim", *args],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        cwd=cwd,
        env=env,
        # a background job may ignore SIGINT; Python installs its handler only on SIG_DFL
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )


def signal_at(
    proc: subprocess.Popen[str], delays: list[float], sig: int = signal.SIGTERM
) -> tuple[int, str]:
    """Send ``sig`` after each delay (seconds, cumulative); the exit code and stderr."""
    for delay in delays:
        time.sleep(delay)
        if proc.poll() is None:
            proc.send_signal(sig)
    try:
        _, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    return proc.returncode, err


def _without_worker_startup(err: str) -> str:
    """stderr less what a pool worker that was still starting prints when the sweep it was
    for is gone (multiprocessing's bootstrap finds the sweep's semaphore unlinked): noise
    of the worker, not of l4sim's answer."""
    return re.sub(
        r"Traceback \(most recent call last\):\n  File \S+multiprocessing/forkserver.py(?:.*\n)*?"
        r"\S*Error: .*\n?",
        "",
        err,
    )


def check_exit(code: int, err: str, sig: int) -> None:
    """Exit 0 (done before the signal), 128 + n with one line, or killed by the signal's
    default action (-n: before the package imported anything, or while the interpreter
    shuts down after the command's work)."""
    err = _without_worker_startup(err)
    assert code in (0, 128 + sig, -sig), err[-3000:]
    assert "Traceback" not in err and "internal error" not in err, err[-3000:]
    if code > 0:
        lines = [x for x in err.splitlines() if x.strip()]
        assert len(lines) == 1, err[-3000:]
        assert "interrupted" in lines[0]


def check_results(out: Path) -> str:
    """A results directory: absent, empty, or complete or partial and readable; what it is."""
    assert not list(out.glob(".l4sim-write-*")) if out.exists() else True
    if not out.exists() or not any(out.iterdir()):
        return "none"
    summary = json.loads((out / "summary.json").read_text())
    flows = pl.read_parquet(out / "flows.parquet")
    pl.read_parquet(out / "queues.parquet")
    assert (out / "scenario.toml").is_file()
    if summary["partial"]:
        assert summary["interrupted_at_s"] == pytest.approx(summary["sim_time_s"])
        assert flows.height == 0 or flows["time_s"].max() <= summary["sim_time_s"] + 1e-9
        return "partial"
    assert summary["sim_time_s"] == pytest.approx(RUN_S)
    return "complete"


RUN_S = 900  # about 3 s of wall time after 2-3 s of imports
# far longer than the 5 s before the signal on any machine (3000 s once finished in under 5 s on CI)
LONG = "30000s"
DELAYS = [round(random.Random(seed).uniform(0.5, 7.0), 2) for seed in range(5)]


@pytest.mark.parametrize("stream", [False, True], ids=["run", "stream"])
@pytest.mark.parametrize("delay", DELAYS)
def test_sigterm_at_random_points_of_a_run_keeps_a_readable_result(
    stream: bool, delay: float, tmp_path: Path
) -> None:
    out = tmp_path / "o"
    args = ["run", str(SCENARIO), "--duration", f"{RUN_S}s", "-q", "--out", str(out)]
    code, err = signal_at(start([*args, "--stream"] if stream else args, tmp_path), [delay])
    check_exit(code, err, signal.SIGTERM)
    what = check_results(out)
    if code == -signal.SIGTERM:
        assert what in ("none", "complete"), err
    elif code == 0:
        assert what == "complete", err


def test_two_signals_50_ms_apart_during_a_streamed_run(tmp_path: Path) -> None:
    """Two Ctrl-Cs 50 ms apart once left an empty directory: the second now waits for the
    files of the first."""
    out = tmp_path / "o"
    args = ["run", str(SCENARIO), "--duration", LONG, "-q", "--out", str(out), "--stream"]
    proc = start(args, tmp_path)
    code, err = signal_at(proc, [5.0, 0.05], signal.SIGINT)
    check_exit(code, err, signal.SIGINT)
    assert check_results(out) == "partial", err


def test_sighup_stops_a_run_as_ctrl_c_does(tmp_path: Path) -> None:
    out = tmp_path / "o"
    args = ["run", str(SCENARIO), "--duration", LONG, "-q", "--out", str(out)]
    code, err = signal_at(start(args, tmp_path), [5.0], signal.SIGHUP)
    assert code == 128 + signal.SIGHUP, err
    assert "interrupted by SIGHUP at " in err and "partial results in" in err
    assert check_results(out) == "partial"


def test_ctrl_c_while_importing_is_one_line(tmp_path: Path) -> None:
    code, err = signal_at(start(["version"], tmp_path), [0.3], signal.SIGINT)
    assert code in (0, 130), err
    assert "Traceback" not in err and len(err.strip().splitlines()) <= 1, err


SWEEP_DELAYS = [round(random.Random(100 + seed).uniform(0.5, 8.0), 2) for seed in range(5)]


@pytest.mark.parametrize("delay", SWEEP_DELAYS)
def test_sigterm_at_random_points_of_a_sweep_keeps_every_finished_point(
    delay: float, tmp_path: Path
) -> None:
    """sweep.parquet was left stale (5 of 10 points) by SIGTERM: it now has every point
    whose file was written."""
    spec = tmp_path / "spec.toml"
    spec.write_text(f'base = "{SCENARIO}"\nseeds = 40\n[grid]\nduration = ["10s"]\n')
    out = tmp_path / "out"
    code, err = signal_at(start(["sweep", str(spec), "-q", "--out", str(out)], tmp_path), [delay])
    check_exit(code, err, signal.SIGTERM)
    finished = {p.stem for p in (out / POINTS).glob("*.json")} if out.exists() else set()
    if (out / "sweep.parquet").exists():
        table, _ = read_sweep(out)
        assert set(table["point"].unique()) == finished
    else:
        assert not finished


def test_workers_keep_their_default_stop_signals() -> None:
    """A forked child (a Hogwild worker) gets Python's defaults back, so Process.terminate()
    still ends it; a pool worker ignores only Ctrl-C and SIGHUP (they go to the group)."""
    from l4sim import processes

    previous = processes.stop_on_signals()
    try:
        pid = os.fork()
        if pid == 0:  # the child: exit 0 only if the defaults are back
            ok = signal.getsignal(signal.SIGTERM) == signal.SIG_DFL
            ok = ok and signal.getsignal(signal.SIGINT) is signal.default_int_handler
            os._exit(0 if ok else 1)
        _, status = os.waitpid(pid, 0)
        assert os.waitstatus_to_exitcode(status) == 0
        assert signal.getsignal(signal.SIGTERM) is processes._interrupt
    finally:
        processes.restore_signals(previous)
