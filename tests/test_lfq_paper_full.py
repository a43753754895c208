"""LFQ at the paper's budget: the ``paper-full`` recipe, its online stage that stops when
its learning curve converges (and resumes to the same flow), and ``--weights paper-full``."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

pytest.importorskip("l4sim._core")
pytest.importorskip("torch")

from l4sim.agents import lfq
from l4sim.agents.checkpoint import Checkpointing
from l4sim.agents.lfq_converge import Convergence, CurveWatch
from l4sim.agents.lfq_recipes import RECIPES
from l4sim.errors import L4simError
from l4sim.experiments import lfq as lfq_experiment
from l4sim.processes import Interrupted

ROOT = Path(__file__).resolve().parents[1]


def test_the_paper_recipe_keeps_its_numbers_and_paper_full_has_the_papers_budget() -> None:
    paper = RECIPES["paper"]
    assert (paper.width, paper.offline_flows, paper.online_flows, paper.warmup) == (
        256,
        16_000,
        12_000,
        4_000,
    )
    assert paper.converge is None and paper.snapshot_every == 2_000
    full = lfq.recipe_configs("paper-full", seed=2)
    # LFQ section V-A: the output is stable "after around 250000 flows".
    assert full["offline-small"].flows == full["offline-large"].flows == 250_000
    online = full["online"]
    assert online.converge is not None and online.flows == 1_000_000
    assert online.converge.window % online.batch == 0 == online.critic_warmup_flows % online.batch
    assert full["offline-small"].converge is None and online.seed == 2 + 200
    assert RECIPES["paper-full"].checkpoint_every == 2_000


def _feed(watch: CurveWatch, windows: list[tuple[float, float]]) -> None:
    """One batch per window: NewReno and BIC flows whose output is ``slope`` x delay +
    ``level`` at two delays and two bandwidths."""
    done = watch.start
    for level, slope in windows:
        results, outputs = [], []
        for cca in ("newreno", "bic"):
            for bw, delay in ((5.0, 5.0), (25.0, 25.0), (5.0, 25.0), (25.0, 5.0)):
                results.append({"cca": cca, "bw": bw, "delay": delay})
                outputs.append(level + slope * delay + 0.1 * bw)
        done += len(results)
        watch.add(done, outputs, results)


def test_the_curve_converges_when_every_table_quantity_stops_moving() -> None:
    rule = Convergence(window=8, tolerance=0.03, corr_tolerance=0.05, patience=2)
    still = CurveWatch(rule, ("newreno", "bic"), start=16)
    _feed(still, [(10.0, 0.5)] * 2 + [(10.1, 0.5)] * 3)
    # Windows 2 and 3 each within 3 % and 0.05 of the one before: converged at the third.
    assert still.converged_at == 16 + 3 * 8 and len(still.windows) == 5
    newreno = still.windows[0]["stats"]["newreno"]
    assert newreno[0] == pytest.approx(10.0 + 0.5 * 15 + 0.1 * 15)
    assert 0.0 < newreno[1] < newreno[2] < 1.0  # output follows delay more than bandwidth
    # A level that keeps climbing ~7 % a window, or a delay slope that turns, never does.
    climbing = CurveWatch(rule, ("newreno", "bic"), start=16)
    _feed(climbing, [(10.0 + 1.5 * k, 0.5) for k in range(6)])
    turning = CurveWatch(rule, ("newreno", "bic"), start=16)
    _feed(turning, [(10.0, 0.5), (10.0, 0.5), (10.0, -0.5), (10.0, -0.5), (10.0, 0.5)])
    assert not climbing.converged and not turning.converged
    # Its state is plain data: a copy loaded from it goes on alike.
    again = CurveWatch(rule, ("newreno", "bic"), start=16)
    again.load(turning.state())
    assert again.state() == turning.state()


def _online(flows: int = 40) -> lfq.LfqConfig:
    # Every window passes (tolerances far above any change): converged after warm-up + 3
    # windows = 2 + 3 x 2 = 8 flows, well before the cap of 40.
    return lfq.LfqConfig(
        flows=flows,
        batch=2,
        width=8,
        critic_width=8,
        duration_s=1.0,
        seed=5,
        online=True,
        critic_warmup_flows=2,
        converge=Convergence(window=2, tolerance=1e9, corr_tolerance=1e9, patience=2),
    )


def test_online_stops_at_convergence_and_a_resumed_run_stops_at_the_same_flow(
    tmp_path: Path,
) -> None:
    whole = tmp_path / "whole.safetensors"
    _, info = lfq.train(_online(), whole)
    assert info["flows"] == info["converged_at"] == 8 and len(info["curve"]) == 3
    # Stopped by a signal at its third batch boundary, then resumed: the same bytes, the
    # same flow.
    calls = {"n": 0}

    def stop() -> int | None:
        calls["n"] += 1
        return signal.SIGTERM if calls["n"] == 3 else None

    stopped = tmp_path / "stopped.safetensors"
    with pytest.raises(Interrupted):
        lfq.train(_online(), stopped, checkpoint=Checkpointing(tmp_path / "ck", {}, 0, False, stop))
    _, again = lfq.train(_online(), stopped, checkpoint=Checkpointing(tmp_path / "ck", {}, 0, True))
    assert again["flows"] == 8 and again["curve"] == info["curve"]
    assert stopped.read_bytes() == whole.read_bytes()
    assert lfq.critic_path(stopped).read_bytes() == lfq.critic_path(whole).read_bytes()


def test_paper_full_weights_not_yet_shipped_are_one_sentence(tmp_path: Path) -> None:
    # A training seed no one ships (the shipped seeds are 1..3).
    unshipped = 999
    assert not lfq_experiment.shipped_weights("online", which="paper-full", seed=unshipped).exists()
    with pytest.raises(L4simError, match="paper-full LFQ weights are not installed yet") as e:
        lfq_experiment.reproduce(
            tmp_path, only=["online"], seeds=[1, unshipped], weights="paper-full"
        )
    assert "\n" not in str(e.value) and "--recipe paper-full" in str(e.value)
    assert f"seed(s) {unshipped} " in str(e.value)
    with pytest.raises(L4simError, match="ask for different weights"):
        lfq_experiment.reproduce(tmp_path, only=["online"], fast=True, weights="paper-full")


def test_the_training_script_stopped_by_sigterm_goes_on_with_the_same_command(
    tmp_path: Path,
) -> None:
    """scripts/train_lfq_paper_full.sh (here with the tiny recipe): SIGTERM to the script
    checkpoints the training; the same command again ends with the uninterrupted bytes."""
    env = os.environ | {
        "PYTHONPATH": str(ROOT / "python"),
        "L4SIM": f"{sys.executable} -m l4sim",
        "RECIPE": "tiny",
    }
    script = [str(ROOT / "scripts" / "train_lfq_paper_full.sh")]

    def run(out: Path) -> subprocess.CompletedProcess[str]:
        cmd = [*script, str(out), "1", "1"]
        return subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=300)

    assert run(tmp_path / "whole").returncode == 0
    stopped = tmp_path / "stopped"
    proc = subprocess.Popen(
        [*script, str(stopped), "1", "1"], env=env, stderr=subprocess.PIPE, text=True
    )
    begun = time.monotonic()
    while not (stopped / "seed1" / "checkpoint").is_dir() and time.monotonic() - begun < 240:
        time.sleep(0.01)
    proc.send_signal(signal.SIGTERM)
    _, err = proc.communicate(timeout=300)
    assert proc.returncode == 143, err
    assert "add --resume" in err and not (stopped / "seed1" / "train.json").exists()
    again = run(stopped)
    assert again.returncode == 0, again.stderr
    for m in ("offline-small", "offline-large", "online", "online.critic"):
        f = f"seed1/{m}.safetensors"
        assert (stopped / f).read_bytes() == (tmp_path / "whole" / f).read_bytes(), m
    # Done: the same command again has nothing left to do.
    assert run(stopped).returncode == 0 and not (stopped / "seed1" / "checkpoint").exists()


def test_a_new_training_refuses_to_overwrite_a_stopped_ones_checkpoint(tmp_path: Path) -> None:
    from l4sim.cli.train import _output

    Checkpointing(tmp_path, {}).save({"flows": 2_000})
    with pytest.raises(L4simError, match="holds the checkpoint of a stopped training") as e:
        _output(tmp_path, None, "out/x")
    assert "--resume" in str(e.value) and "\n" not in str(e.value)
    assert _output(None, tmp_path, "out/x") == tmp_path


def test_a_rollout_given_the_weights_bytes_is_the_rollout_given_their_file(tmp_path: Path) -> None:
    """What a Ray node without the driver's files runs: the same rollout, bit for bit."""
    import tempfile

    from l4sim.agents.lfq_transport import remove_stale_weights

    path = tmp_path / "w.safetensors"
    lfq.save_weights(path, lfq.LfqNet(8))
    cfg = lfq.LfqConfig(width=8, duration_s=1.0)
    blob = path.read_bytes()
    assert lfq.rollout((cfg, blob, 7)) == lfq.rollout((cfg, str(path), 7))
    here = Path(tempfile.gettempdir()) / f"l4sim-lfq-{os.getpid()}.safetensors"
    assert here.read_bytes() == blob
    stale = here.with_name("l4sim-lfq-999999999.safetensors")  # no such process
    stale.write_bytes(b"")
    remove_stale_weights()
    assert not stale.exists() and here.exists()
