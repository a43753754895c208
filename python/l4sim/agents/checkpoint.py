"""Checkpoints that let a training stop and go on: the whole state of a trainer (networks,
optimisers, replay buffers, every random stream, counters and the logs so far) written
atomically into ``DIR/checkpoint/state.pt`` at safe boundaries (the end of an episode, a
batch of flows or a round of workers), and read back by ``l4sim train ... --resume DIR``.

Same seed: a run stopped at any boundary and resumed ends with the weights and tables of
the run that never stopped, byte for byte. What makes that hold:

- a boundary is a point where the trainer's whole state is plain data: the environment
  between episodes is only its random generator (an episode is re-created from it), so a
  signal waits for the next boundary (:func:`l4sim.processes.stop_at_boundary`) and the
  partial episode is run again on resume;
- every random stream is saved as its generator's exact state (Python's ``random``, NumPy's
  legacy global and ``Generator`` states, torch's CPU generator);
- the file is a ``torch.save`` archive of tensors and one JSON string (read back with
  ``weights_only=True``: a checkpoint cannot run code), written to a temporary name and
  renamed over the previous one, so a kill during the write leaves the previous checkpoint.

The config a run was started with is stored beside its state; resuming with another one is
refused in one sentence (:meth:`Checkpointing.load`). The checkpoint stays after the
training ends, until whoever writes the training's outputs has written them and calls
:meth:`Checkpointing.remove` (the CLI does): a stop between the two loses nothing.
"""

from __future__ import annotations

import contextlib
import json
import os
import random
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import torch

from l4sim.errors import L4simError
from l4sim.processes import deferred_interrupt

__all__ = [
    "DEFAULT_EVERY",
    "Checkpointing",
    "generator_state",
    "global_rng_state",
    "set_generator_state",
    "set_global_rng_state",
]

FORMAT = "l4sim-train-checkpoint-1"
SUBDIR = "checkpoint"
FILE = "state.pt"

#: Default ``--checkpoint-every``: episodes (DQN, VDN/QMIX, A3C) or flows (LFQ) between
#: checkpoints when the command line does not say.
DEFAULT_EVERY = {"episodes": 10, "flows": 200}


def global_rng_state() -> dict[str, Any]:
    """Python's ``random``, NumPy's legacy global generator and torch's CPU generator."""
    name, keys, pos, has_gauss, gauss = np.random.get_state()
    py = random.getstate()
    return {
        "python": [py[0], list(py[1]), py[2]],
        "numpy": [name, keys.tolist(), pos, has_gauss, gauss],
        "torch": torch.get_rng_state(),
    }


def set_global_rng_state(state: dict[str, Any]) -> None:
    """Put back what :func:`global_rng_state` took."""
    v, internal, gauss = state["python"]
    random.setstate((v, tuple(internal), gauss))
    name, keys, pos, has_gauss, cached = state["numpy"]
    np.random.set_state((name, np.asarray(keys, np.uint32), pos, has_gauss, cached))
    torch.set_rng_state(state["torch"])


def generator_state(gen: np.random.Generator) -> dict[str, Any]:
    """A NumPy ``Generator``'s exact state (plain data)."""
    return dict(gen.bit_generator.state)


def set_generator_state(gen: np.random.Generator, state: dict[str, Any]) -> None:
    gen.bit_generator.state = state


def _split(obj: Any, tensors: dict[str, torch.Tensor]) -> Any:
    """``obj`` with every tensor and array replaced by a reference into ``tensors``."""
    if isinstance(obj, torch.Tensor | np.ndarray):
        key = str(len(tensors))
        if isinstance(obj, np.ndarray):
            tensors[key] = torch.from_numpy(np.ascontiguousarray(obj).copy())
            return {"__array__": key}
        tensors[key] = obj.detach().to("cpu").clone()
        return {"__tensor__": key}
    if isinstance(obj, dict):
        if not all(isinstance(k, str) for k in obj):
            return {"__items__": [[_split(k, tensors), _split(v, tensors)] for k, v in obj.items()]}
        return {k: _split(v, tensors) for k, v in obj.items()}
    if isinstance(obj, list | tuple):
        return [_split(v, tensors) for v in obj]
    if isinstance(obj, np.generic):
        return obj.item()
    return obj


def _join(obj: Any, tensors: dict[str, torch.Tensor]) -> Any:
    if isinstance(obj, dict):
        if "__array__" in obj:
            return tensors[obj["__array__"]].numpy()
        if "__tensor__" in obj:
            return tensors[obj["__tensor__"]]
        if "__items__" in obj:
            return {_join(k, tensors): _join(v, tensors) for k, v in obj["__items__"]}
        return {k: _join(v, tensors) for k, v in obj.items()}
    if isinstance(obj, list):
        return [_join(v, tensors) for v in obj]
    return obj


def _describe(value: Any) -> str:
    return json.dumps(value, sort_keys=True)


@dataclass
class Checkpointing:
    """Where and how often a trainer checkpoints, and whether it resumes.

    ``dir``: the run's output directory (the checkpoint lives in ``dir/checkpoint/``);
    ``config``: plain data that must be equal for a run to resume another (the command's
    options); ``every``: boundaries (episodes, flows) between periodic checkpoints (0: only
    when a stop signal comes); ``resume``: continue from the checkpoint in ``dir``;
    ``stop``: polled at each boundary (:func:`l4sim.processes.stop_at_boundary`): a signal
    number there makes the trainer write the checkpoint and raise
    :class:`~l4sim.processes.Interrupted`.
    """

    dir: Path
    config: dict[str, Any]
    every: int = 0
    resume: bool = False
    stop: Callable[[], int | None] = field(default=lambda: None)
    part: str = ""
    """A name inside ``dir/checkpoint`` for trainers that run several trainings in turn
    (LFQ's models): each has its own state file."""

    @property
    def path(self) -> Path:
        name = f"{self.part}.pt" if self.part else FILE
        return Path(self.dir) / SUBDIR / name

    def for_part(self, part: str) -> Checkpointing:
        """The same settings for one of several trainings run in turn."""
        return Checkpointing(self.dir, self.config, self.every, self.resume, self.stop, part)

    def due(self, done: int, last: int) -> bool:
        """A periodic checkpoint is due: ``every`` boundaries passed since ``last``."""
        return self.every > 0 and done - last >= self.every

    def save(self, state: dict[str, Any]) -> None:
        """Write ``state`` (plain data, arrays and tensors) atomically."""
        tensors: dict[str, torch.Tensor] = {}
        meta = _split(state, tensors)
        blob = {
            "format": FORMAT,
            "config": json.dumps(self.config, sort_keys=True),
            "meta": json.dumps(meta),
            "tensors": tensors,
        }
        path = self.path
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
        torch.save(blob, tmp)
        with open(tmp, "rb+") as fh:
            os.fsync(fh.fileno())
        os.replace(tmp, path)

    def load(self) -> dict[str, Any] | None:
        """The saved state if resuming (None: start afresh). Refuses, in one sentence, a
        directory without a checkpoint, another file, or one written with another config."""
        if not self.resume:
            return None
        path = self.path
        if not path.is_file():
            if self.part:
                return None  # this part had not started when the run stopped
            raise L4simError(
                f"--resume {str(self.dir)!r} holds no checkpoint ({SUBDIR}/{FILE}); give the "
                "output directory of a training that was stopped"
            )
        try:
            blob = torch.load(path, map_location="cpu", weights_only=True)
            fmt, saved = blob["format"], json.loads(blob["config"])
            meta, tensors = json.loads(blob["meta"]), blob["tensors"]
        except Exception:
            raise L4simError(
                f"{str(path)!r} is not a training checkpoint written by l4sim"
            ) from None
        if fmt != FORMAT:
            raise L4simError(f"{str(path)!r} is not a training checkpoint written by l4sim")
        now = json.loads(json.dumps(self.config, sort_keys=True))
        for key in sorted(set(saved) | set(now)):
            if saved.get(key) != now.get(key):
                raise L4simError(
                    f"--resume {str(self.dir)!r} continues a training with {key} = "
                    f"{_describe(saved.get(key))}, not {_describe(now.get(key))}: give the "
                    "options of the run it continues"
                )
        return _join(meta, tensors)  # type: ignore[no-any-return]

    def remove(self) -> None:
        """The training ended: its checkpoint (all of them, unless this is one part's) is
        of no more use. A stop signal waits until it is all gone: stopped halfway, the
        directory kept some parts' files but not the state, and was then neither resumable
        nor free for a new training."""
        with deferred_interrupt():
            if self.part:
                self.path.unlink(missing_ok=True)
                return
            d = self.path.parent
            for f in d.glob("*.pt") if d.is_dir() else ():
                f.unlink(missing_ok=True)
            with contextlib.suppress(OSError):  # something else is there: leave it
                d.rmdir()
