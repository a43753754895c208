"""Trainings that stop and go on: every trainer (DQN, VDN/QMIX, A3C, LFQ offline and online),
killed by a real SIGTERM at a seeded random moment of its training and resumed with
``--resume``, ends with the files of the run that never stopped, byte for byte.

Each trainer's uninterrupted run and its killed run start together (one thread per
trainer, all trainers at once: most of the time is the interpreter's start-up), the signal
goes a random delay after the killed run's first checkpoint appears (training has begun),
then the resumed run finishes the job."""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("l4sim._core")
pytest.importorskip("torch")

from l4sim.agents.checkpoint import Checkpointing
from l4sim.errors import L4simError

ROOT = Path(__file__).resolve().parents[1]

#: trainer -> (the ``l4sim train`` arguments, the files compared byte for byte). The
#: smallest configs that still fill replay buffers, step optimisers and run several
#: checkpoint boundaries.
TRAINERS: dict[str, tuple[list[str], list[str]]] = {
    "dqn": (
        ["rl-tcp", "--steps", "600", "--checkpoint-every", "2"],
        ["dqn.pt"],
    ),
    "qmix": (
        [
            *("macc", "--scheme", "ma-cc-qmix", "--episodes", "10"),
            *("--episode-length", "2s", "--select-every", "3"),
        ],
        ["policy.pt", "curve.json"],
    ),
    "a3c": (
        ["a3c", "--episodes", "6", "--steps", "20", "--workers", "2"],
        ["policy.safetensors", "checkpoint.safetensors", "episodes.csv"],
    ),
    "lfq": (
        ["lfq", "--recipe", "tiny", "--checkpoint-every", "4"],
        [
            "offline-small.safetensors",
            "offline-large.safetensors",
            "online.safetensors",
            "online.critic.safetensors",
        ],
    ),
}


def _start(args: list[str]) -> subprocess.Popen[str]:
    env = {k: v for k, v in os.environ.items() if k != "L4SIM_DEBUG"}
    env["PYTHONPATH"] = str(ROOT / "python")
    return subprocess.Popen(
        [sys.executable, "-m", "l4sim", "train", *args, "--quiet"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )


def _finish(proc: subprocess.Popen[str]) -> tuple[int, str]:
    try:
        _, err = proc.communicate(timeout=300)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    return proc.returncode, err


def _kill_and_resume(name: str, tmp: Path, delay: float) -> dict[str, Any]:
    args, _ = TRAINERS[name]
    whole, stopped = tmp / name / "whole", tmp / name / "stopped"
    ref = _start([*args, "--out", str(whole)])
    proc = _start([*args, "--out", str(stopped)])
    begun = time.monotonic()
    while not (stopped / "checkpoint").is_dir() and proc.poll() is None:
        if time.monotonic() - begun > 240:
            break
        time.sleep(0.01)
    time.sleep(delay)
    sent = proc.poll() is None
    if sent:
        proc.send_signal(signal.SIGTERM)
    code, err = _finish(proc)
    ref_code, ref_err = _finish(ref)
    resumed = subprocess.run(
        [sys.executable, "-m", "l4sim", "train", *args, "--quiet", "--resume", str(stopped)],
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": str(ROOT / "python")},
        timeout=300,
    )
    return {
        "sent": sent,
        "stopped": (code, err),
        "whole": (ref_code, ref_err),
        "resumed": (resumed.returncode, resumed.stderr),
        "dirs": (whole, stopped),
    }


@pytest.fixture(scope="module")
def killed(tmp_path_factory: pytest.TempPathFactory) -> dict[str, dict[str, Any]]:
    tmp = tmp_path_factory.mktemp("resume")
    rnd = random.Random(50)
    delays = {name: rnd.uniform(0.0, 0.4) for name in TRAINERS}
    with ThreadPoolExecutor(len(TRAINERS)) as pool:
        futures = {n: pool.submit(_kill_and_resume, n, tmp, d) for n, d in delays.items()}
        return {n: f.result() for n, f in futures.items()}


@pytest.mark.parametrize("name", list(TRAINERS))
def test_killed_and_resumed_equals_uninterrupted(
    killed: dict[str, dict[str, Any]], name: str
) -> None:
    r = killed[name]
    assert r["whole"][0] == 0, r["whole"][1]
    assert r["sent"], f"{name}: the training ended before the signal; lengthen its config"
    code, err = r["stopped"]
    assert code == 128 + signal.SIGTERM, err
    lines = err.strip().splitlines()
    assert lines[-1].startswith("error: interrupted by SIGTERM; the training state is in"), err
    assert "Traceback" not in err
    assert r["resumed"][0] == 0, r["resumed"][1]
    whole, stopped = r["dirs"]
    for f in TRAINERS[name][1]:
        assert (stopped / f).read_bytes() == (whole / f).read_bytes(), f"{name}: {f} differs"
    assert not (stopped / "checkpoint").exists(), "a finished training leaves no checkpoint"
    if name == "dqn":  # the evaluation of the final weights too (wall times aside)
        a = json.loads((whole / "eval.json").read_text())["eval"]
        assert a == json.loads((stopped / "eval.json").read_text())["eval"]
    if name == "lfq":  # the learning curve's snapshots
        snaps = sorted(p.name for p in (whole / "snapshots").iterdir())
        assert snaps == sorted(p.name for p in (stopped / "snapshots").iterdir())
        for s in snaps:
            assert (whole / "snapshots" / s).read_bytes() == (
                stopped / "snapshots" / s
            ).read_bytes()


def test_resume_refuses_another_config(tmp_path: Path) -> None:
    Checkpointing(tmp_path, {"steps": 600, "seed": 1}).save({"step": 3})
    with pytest.raises(L4simError, match=r"with steps = 600, not 700: give the options"):
        Checkpointing(tmp_path, {"steps": 700, "seed": 1}, resume=True).load()
    assert Checkpointing(tmp_path, {"steps": 600, "seed": 1}, resume=True).load() == {"step": 3}


def test_resume_refuses_a_directory_without_checkpoint(tmp_path: Path) -> None:
    with pytest.raises(L4simError, match="holds no checkpoint"):
        Checkpointing(tmp_path, {}, resume=True).load()
    (tmp_path / "checkpoint").mkdir()
    (tmp_path / "checkpoint" / "state.pt").write_bytes(b"not a checkpoint")
    with pytest.raises(L4simError, match="is not a training checkpoint"):
        Checkpointing(tmp_path, {}, resume=True).load()


def test_state_round_trips_every_random_stream() -> None:
    import numpy as np
    import torch

    from l4sim.agents import checkpoint as ck

    random_state = ck.global_rng_state()
    gen = np.random.default_rng(5)
    saved = {"rng": ck.generator_state(gen), "global": random_state, "a": np.arange(3.0)}
    draws = (gen.random(), np.random.random(), torch.rand(1).item())
    tensors: dict[str, Any] = {}
    back = ck._join(json.loads(json.dumps(ck._split(saved, tensors))), tensors)
    ck.set_generator_state(gen, back["rng"])
    ck.set_global_rng_state(back["global"])
    assert (gen.random(), np.random.random(), torch.rand(1).item()) == draws
    assert back["a"].tolist() == [0.0, 1.0, 2.0]


def test_a3c_one_worker_checkpointed_runs_as_hogwild(tmp_path: Path) -> None:
    """One Hogwild worker given a checkpoint runs as one round of one worker: the same
    weights and curve as without."""
    from l4sim.agents import a3c

    cfg = a3c.A3cConfig(workers=1, episodes=3, steps=10, seed=3)
    plain = a3c.train(cfg)
    ck = a3c.train(cfg, checkpoint=Checkpointing(tmp_path, {}, every=1))
    for k, v in plain.actor.state_dict().items():
        assert v.numpy().tobytes() == ck.actor.state_dict()[k].numpy().tobytes(), k
    assert [c[:3] for c in plain.curve] == [c[:3] for c in ck.curve]
    with pytest.raises(L4simError, match="A3C checkpoints need sync='rounds'"):
        a3c.train(
            a3c.A3cConfig(workers=2, episodes=1, steps=2), checkpoint=Checkpointing(tmp_path, {})
        )


def test_a_stop_signal_waits_until_the_checkpoint_is_all_removed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A SIGTERM while a finished training removed its checkpoints once left the parts'
    files without the state: neither resumable nor free for a new run. It now waits."""
    from l4sim import processes

    ck = Checkpointing(tmp_path, {})
    ck.save({"step": 1})
    for part in ("offline-small", "online"):
        ck.for_part(part).save({"flows": 2})
    unlink = Path.unlink

    def unlink_and_signal(self: Path, missing_ok: bool = False) -> None:
        unlink(self, missing_ok=missing_ok)
        os.kill(os.getpid(), signal.SIGTERM)  # the handler runs before the next bytecode

    previous = processes.stop_on_signals()
    try:
        monkeypatch.setattr(Path, "unlink", unlink_and_signal)
        with pytest.raises(processes.Interrupted):
            ck.remove()
        monkeypatch.undo()
    finally:
        processes.restore_signals(previous)
    assert not (tmp_path / "checkpoint").exists()
