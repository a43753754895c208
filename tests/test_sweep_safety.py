"""Sweeps that cannot run away: no process outlives a killed ``l4sim sweep`` (pool, local
Ray, the emulator's router), a spec is bounded and checked before any point runs, and a
killed Ray sweep resumes without losing or re-running a finished point."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("l4sim._core")

from l4sim import cli
from l4sim.processes import descendants, die_with_parent, pdeathsig_preexec
from l4sim.sweep import (
    MAX_POINTS,
    SweepError,
    SweepWarning,
    load_spec,
    parse_spec,
    points,
    run_sweep,
)
from netns import netns_reason

ROOT = Path(__file__).resolve().parents[1]
BASE = ROOT / "scenarios" / "bench_1flow_10M.toml"
LINUX = sys.platform.startswith("linux")
linux_only = pytest.mark.skipif(not LINUX, reason="PR_SET_PDEATHSIG and /proc are Linux's")


def write_spec(tmp: Path, body: str, name: str = "spec.toml") -> Path:
    path = tmp / name
    path.write_text(f'base = "{BASE}"\n{body}', encoding="utf-8")
    return path


# --------------------------------------------------------------------------------------------
# Processes, from /proc (psutil may not be installed).


def alive(pid: int) -> bool:
    """Running (a zombie is dead: only its parent has not collected it yet)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat[stat.rindex(")") + 2] not in "ZX"


def cmdline(pid: int) -> str:
    with contextlib.suppress(OSError):
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode()[:100]
    return "?"


def wait_until(cond: Callable[[], bool], timeout: float, what: str) -> None:
    end = time.monotonic() + timeout
    while not cond():
        assert time.monotonic() < end, what
        time.sleep(0.05)


def start_cli(*args: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "l4sim", *args],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,  # its own process group: cleaned up below if the test fails
    )


def kill_and_check_orphans(proc: subprocess.Popen[str], timeout: float) -> str:
    """SIGKILL ``proc`` alone (not its group); every descendant it had must be gone within
    ``timeout`` s. Returns their command lines."""
    family = descendants(proc.pid)
    names = " | ".join(cmdline(p) for p in family)
    try:
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=10)
        end = time.monotonic() + timeout
        while [p for p in family if alive(p)] and time.monotonic() < end:
            time.sleep(0.1)
        left = [f"{p} {cmdline(p)}" for p in family if alive(p)]
        assert not left, f"still running {timeout} s after the parent was killed: {left}"
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
        for p in family:  # reparented ones are not in the group's reach if they made their own
            with contextlib.suppress(ProcessLookupError):
                if alive(p):
                    os.kill(p, signal.SIGKILL)
        proc.communicate()
    return names


# Points of ~0.3 s each: enough to keep two workers busy for a minute.
BUSY = """
seeds = 400
[grid]
"duration" = ["600s"]
"""


@linux_only
def test_killing_the_parent_of_a_pool_sweep_leaves_no_process(tmp_path: Path) -> None:
    out = tmp_path / "out"
    proc = start_cli("sweep", str(write_spec(tmp_path, BUSY)), "--out", str(out), "--jobs", "2")
    try:
        # Busy: points are being written, and the resource tracker, the forkserver and both
        # workers run under the CLI.
        wait_until(
            lambda: len(list((out / "points").glob("*.json"))) >= 2 or proc.poll() is not None,
            60,
            "the sweep wrote no point",
        )
        assert proc.poll() is None, proc.communicate()
        wait_until(lambda: len(descendants(proc.pid)) >= 4, 20, "fewer than 4 helper processes")
    except BaseException:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
        raise
    names = kill_and_check_orphans(proc, timeout=5)
    assert "resource_tracker" in names and names.count("forkserver") >= 3, names


@linux_only
def test_die_with_parent_and_the_preexec_kill_the_child_with_its_parent(tmp_path: Path) -> None:
    # A middle process starts a `sleep` that asks for PDEATHSIG (as the emulator starts its
    # router, and as a pool worker does with die_with_parent); killing the middle one must
    # take the `sleep` with it, while one started without it lives on.
    code = (
        "import subprocess, sys, time\n"
        "from l4sim.executors import pdeathsig_preexec\n"
        "a = subprocess.Popen(['sleep', '60'], preexec_fn=pdeathsig_preexec())\n"
        "b = subprocess.Popen(['sleep', '60'])\n"
        "print(a.pid, b.pid, flush=True)\n"
        "time.sleep(60)\n"
    )
    mid = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)
    assert mid.stdout is not None
    with_sig, without = map(int, mid.stdout.readline().split())
    try:
        mid.kill()
        mid.wait()
        wait_until(lambda: not alive(with_sig), 3, "the child asking for PDEATHSIG lives on")
        assert alive(without)
    finally:
        for pid in (with_sig, without):
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
    assert die_with_parent(0)  # signal 0: the request is accepted (and cleared again)


def test_die_with_parent_is_a_no_op_off_linux(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sys, "platform", "darwin")
    assert die_with_parent() is False and pdeathsig_preexec() is None


def test_a_worker_tells_a_dead_or_zombie_owner_from_a_live_one(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import l4sim.processes as ex

    zombie = subprocess.Popen(["true"])
    wait_until(lambda: not alive(zombie.pid), 5, "true did not end")  # not reaped yet
    if LINUX:
        assert (ex.start_time(os.getpid()) or 0) > 0
        assert ex.start_time(zombie.pid) is None  # killed but not collected: dead
    zombie.wait()
    # Without /proc (macOS): only whether the pid exists.
    isdir = os.path.isdir
    monkeypatch.setattr(ex.os.path, "isdir", lambda p: p != "/proc/self" and isdir(p))
    assert ex.start_time(os.getpid()) == -1 and ex.start_time(zombie.pid) is None


# --------------------------------------------------------------------------------------------
# Bounds and up-front checks.


def test_a_sweep_of_too_many_points_is_refused_before_building_them(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    spec = write_spec(tmp_path, "seeds = 1000000000\n")
    start = time.perf_counter()
    with pytest.raises(SystemExit) as info:
        cli.main(["sweep", str(spec), "--out", str(tmp_path / "out"), "-q"])
    assert time.perf_counter() - start < 5  # counted, not built
    err = capsys.readouterr().err
    lines = [line for line in err.splitlines() if line.strip()]
    assert info.value.code == 2 and len(lines) == 1, err
    assert "1,000,000,000 points" in lines[0] and "1,000,000,000 seeds" in lines[0], err
    assert f"{MAX_POINTS:,}" in lines[0] and "MemoryError" not in err
    assert not (tmp_path / "out").exists()
    # The product counts: 1001 x 1000 x 1 is over the limit as well; the draws too.
    grid = {"duration": [f"{i}s" for i in range(1, 1002)]}
    with pytest.raises(SweepError, match="1,001,000 points"):
        parse_spec({"base": str(BASE), "seeds": 1000, "grid": grid})
    with pytest.raises(SweepError, match="2,000,000 draws"):
        parse_spec(
            {"base": str(BASE), "draw": {"count": 2_000_000, "duration": {"choice": ["1s"]}}}
        )
    # At the limit is fine (only counted here: the points are not built).
    assert parse_spec({"base": str(BASE), "seeds": MAX_POINTS}).size() == MAX_POINTS


def test_a_spec_made_in_code_is_bounded_too() -> None:
    spec = parse_spec({"base": str(BASE), "seeds": 2})
    spec.seeds = list(range(MAX_POINTS + 1))
    with pytest.raises(SweepError, match="more than the"):
        points(spec)


@pytest.mark.parametrize(
    ("body", "fragments"),
    [
        (
            '[grid]\n"topology.bottleneck.ratee" = ["5Mbps", "10Mbps"]\n',
            ["grid key 'topology.bottleneck.ratee' = '5Mbps'", "not a known key"],
        ),
        (
            '[grid]\n"topology.bottleneck.rate" = [5, 10]\n"duration" = ["1s"]\n',
            ["grid key 'topology.bottleneck.rate' = 5", "has no unit"],
        ),
        (
            '[draw]\ncount = 3\n"flows.0.cca" = { choice = ["cubicc", "renoo"] }\n',
            ["draw key 'flows.0.cca' = 'cubicc'", "not allowed"],
        ),
        (
            # Each value is fine alone; together they never are.
            '[grid]\n"duration" = ["1s"]\n"flows.0.start" = ["2s"]\n',
            ["every point of the sweep is invalid", "flows.0.start = '2s'", "not before"],
        ),
    ],
)
def test_a_grid_that_makes_every_point_invalid_is_refused_before_any_runs(
    body: str, fragments: list[str], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    spec = write_spec(tmp_path, body)
    with pytest.raises(SystemExit) as info:
        cli.main(["sweep", str(spec), "--out", str(tmp_path / "out"), "-q", "--jobs", "1"])
    err = capsys.readouterr().err
    lines = [line for line in err.splitlines() if line.strip()]
    assert info.value.code == 2 and len(lines) == 1, err
    assert lines[0].startswith("error: ") and "spec.toml" in lines[0], err
    for fragment in fragments:
        assert fragment in lines[0], err
    assert not (tmp_path / "out").exists()  # nothing ran, nothing was written


def test_a_bad_value_among_good_ones_still_runs_the_good_points(tmp_path: Path) -> None:
    # Not refused: the sweep runs and records the bad value's points as failed (exit 1).
    spec = load_spec(write_spec(tmp_path, '[grid]\n"topology.bottleneck.rate" = ["5Mbps", 5]\n'))
    pts = points(spec)
    assert [p.error is None for p in pts] == [True, False]


def test_a_spec_built_in_code_with_no_valid_point_is_refused_by_run_sweep(
    tmp_path: Path,
) -> None:
    spec = parse_spec({"base": str(BASE), "grid": {"duration": ["1s"]}})
    spec.grid = {"topology.bottleneck.ratee": ["5Mbps"]}
    with pytest.raises(SweepError, match=r"grid key 'topology\.bottleneck\.ratee'"):
        run_sweep(spec, tmp_path / "out")
    assert not (tmp_path / "out").exists()


def test_a_spec_that_varies_nothing_warns(tmp_path: Path) -> None:
    with pytest.warns(SweepWarning, match=r"no \[grid\] values and no \[draw\]"):
        spec = load_spec(write_spec(tmp_path, "[grid]\n"))
    assert spec.size() == 1
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # seeds alone, or one grid value, vary something
        load_spec(write_spec(tmp_path, "seeds = 3\n", "seeds.toml"))
        load_spec(write_spec(tmp_path, '[grid]\n"duration" = ["1s"]\n', "grid.toml"))


# --------------------------------------------------------------------------------------------
# sweep.parquet is built from spill files, so the parent's memory stays flat.


def fake_point(task: dict[str, Any]) -> dict[str, Any]:
    """A point's summary without simulating (seed 2 fails while FAIL_SEED2 exists)."""
    seed = task["scenario"]["seed"]
    if seed == 2 and Path(task["scenario"]["description"], "FAIL_SEED2").exists():
        raise RuntimeError("seed 2 fails this time")
    return {
        "sim_time_s": 1.0,
        "wall_time_s": 0.0,
        "events": seed,
        "jain_fairness": 1.0,
        "flows": [{"id": 0, "goodput_bps": 1000.0 * seed}, {"id": 1, "goodput_bps": 1.0}],
        "queues": [{"link": "r0->r1", "drops": seed}],
    }


def test_rows_spilled_merged_and_replaced_make_the_same_table(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import polars as pl

    import l4sim.sweep as sw

    monkeypatch.setattr(sw._Table, "BATCH", 4)  # spill every ~2 points
    monkeypatch.setattr(sw._Table, "MERGE", 3)  # and merge the spill files often
    monkeypatch.setattr(sw, "FLUSH_EVERY_S", 0.0)  # sweep.parquet after every point
    (tmp_path / "FAIL_SEED2").touch()
    spec = parse_spec(
        {
            "base": str(BASE),
            "seeds": 20,
            "grid": {"description": [str(tmp_path)], "duration": ["1s", "2s"]},
        }
    )
    out = tmp_path / "out"
    first = run_sweep(spec, out, point_fn=fake_point)
    assert first.ok == 38 and first.failed == 2
    df = pl.read_parquet(out / "sweep.parquet")
    assert df.filter(pl.col("record") == "failed")["seed"].to_list() == [2, 2]
    assert not (out / sw.ROWS).exists()  # the spill files are gone
    (tmp_path / "FAIL_SEED2").unlink()
    again = run_sweep(spec, out, point_fn=fake_point)
    assert again.skipped == 38 and again.ran == 2 and again.ok == 40
    df = pl.read_parquet(out / "sweep.parquet")
    # Each point once: 2 flow rows and 1 queue row, in point order; the failures replaced.
    assert df.height == 40 * 3 and set(df["status"]) == {"ok"}
    assert df["point_index"].to_list() == sorted(df["point_index"].to_list())
    flows = df.filter(pl.col("record") == "flow", pl.col("id") == 0)
    assert sorted(flows["goodput_bps"].to_list()) == sorted([1000.0 * s for s in range(1, 21)] * 2)
    assert df.columns[:4] == ["point", "point_index", "seed", "description"]
    assert not (out / sw.ROWS).exists()


# --------------------------------------------------------------------------------------------
# A local Ray runtime: nothing is left once the driver is killed. (That a killed Ray sweep
# resumes without losing or re-running a point takes ~30 s: benchmarks/soak_sweep.py --ray.)


@linux_only
def test_killing_the_parent_of_a_ray_sweep_leaves_no_process(tmp_path: Path) -> None:
    pytest.importorskip("ray")
    out = tmp_path / "out"
    spec = write_spec(tmp_path, BUSY)
    proc = start_cli("sweep", str(spec), "--out", str(out), "--ray", "local", "--jobs", "2", "-q")
    try:
        wait_until(
            lambda: len(list((out / "points").glob("*.json"))) >= 1 or proc.poll() is not None,
            90,
            "the Ray sweep wrote no point",
        )
        assert proc.poll() is None, proc.communicate()
    except BaseException:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
        raise
    # Ray stops its gcs_server, raylet and workers itself; l4sim's reaper kills its agents,
    # which would linger for about a minute. A worker caught between two points is titled
    # ray::IDLE rather than ray::_call; either is a worker that must go.
    names = kill_and_check_orphans(proc, timeout=5)
    assert "raylet" in names and "gcs_server" in names, names
    assert "ray::_call" in names or "ray::IDLE" in names, names


# --------------------------------------------------------------------------------------------
# The emulator's router.


EMULATED = """
name = "emu_kill"
duration = "30s"
[topology]
preset = "dumbbell"
[topology.bottleneck]
rate = "10Mbps"
delay = "10ms"
[[flows]]
kind = "tcp"
cca = "cubic"
"""


@pytest.mark.skipif((reason := netns_reason()) is not None, reason=reason or "")
def test_killing_l4sim_emulate_kills_its_router(tmp_path: Path) -> None:
    from l4sim import emulate as emu
    from l4sim.errors import EmulationError

    try:
        emu.find_router()
    except EmulationError as e:
        pytest.skip(str(e))
    scen = tmp_path / "s.toml"
    scen.write_text(EMULATED)
    proc = start_cli("emulate", str(scen), "--out", str(tmp_path / "o"))
    try:
        wait_until(
            lambda: (
                any("l4sim.emulate.router" in cmdline(p) for p in descendants(proc.pid))
                or proc.poll() is not None
            ),
            30,
            "the router did not start",
        )
        assert proc.poll() is None, proc.communicate()
        time.sleep(0.5)
        kill_and_check_orphans(proc, timeout=3)
    finally:
        emu.cleanup_leftovers()  # the killed run's namespaces (its pid is gone now)


def test_too_many_jobs_is_one_sentence(tmp_path: Path, capsys):
    from l4sim.executors import MAX_JOBS

    spec = ROOT / "examples" / "sweep_buffers.toml"
    with pytest.raises(SystemExit) as e:
        cli.main(["sweep", str(spec), "--jobs", str(MAX_JOBS + 1), "--out", str(tmp_path / "x")])
    err = capsys.readouterr().err
    assert e.value.code == 2 and "worker processes" in err, err


def test_a_point_too_big_for_the_budget_fails_and_the_others_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """routers = 100000 once aborted the parent while it validated the points (a 40 GB
    routing table); now that point fails on the memory budget and the others run."""
    monkeypatch.setenv("L4SIM_MEMORY_LIMIT", "200MiB")
    base = tmp_path / "path.toml"
    base.write_text(
        'name = "path"\nduration = "100ms"\n[topology]\npreset = "path"\nrouters = 1\n'
        'link = { rate = "10Mbps", delay = "1ms" }\n[[flows]]\ncca = "cubic"\n'
    )
    spec_path = tmp_path / "spec.toml"
    spec_path.write_text('base = "path.toml"\n[grid]\n"topology.routers" = [1, 100000, 2]\n')
    outcome = run_sweep(load_spec(spec_path), tmp_path / "out")
    assert (outcome.total, outcome.ok, outcome.failed) == (3, 2, 1)
    assert [i for i, _ in outcome.errors] == [1]
    assert "MemoryBudgetError" in outcome.errors[0][1]
    assert "more than the budget of 200 MiB" in outcome.errors[0][1]


def test_the_forkserver_ignores_the_terminals_signals() -> None:
    """The pool's forkserver shares the terminal's process group and imports l4sim for a
    second or more before multiprocessing makes it ignore Ctrl-C: it is started with Ctrl-C
    and SIGHUP ignored, so an early Ctrl-C stops the sweep with one line, not a traceback
    of the server's imports."""
    from multiprocessing import forkserver

    from l4sim.executors import PoolExecutor

    status = Path("/proc/self/status")
    if not status.is_file():
        pytest.skip("needs /proc")
    with PoolExecutor(1):
        pid = forkserver._forkserver._forkserver_pid
        lines = Path(f"/proc/{pid}/status").read_text().splitlines()
    ignored = int(next(x for x in lines if x.startswith("SigIgn:")).split()[1], 16)
    for sig in (signal.SIGINT, signal.SIGHUP):
        assert ignored & (1 << (sig - 1)), sig


def test_a_closed_pool_leaves_no_manager_thread_for_the_exit_hook() -> None:
    """Closing a busy pool once returned while its manager thread was still closing its
    wake-up pipe: an interpreter exiting then (a sweep stopped by SIGTERM) wrote to the
    closed pipe from ``concurrent.futures``' exit hook: a traceback on stderr, and at times
    a hang (3 in 210 such exits measured). ``close`` now returns after the manager thread
    is done."""
    from l4sim.executors import PoolExecutor

    for _ in range(3):
        pool = PoolExecutor(2)
        results = pool.map(time.sleep, [0.2] * 20)
        next(results)
        manager = pool._pool._executor_manager_thread  # type: ignore[union-attr]
        pool.close()
        assert manager is not None and not manager.is_alive()
