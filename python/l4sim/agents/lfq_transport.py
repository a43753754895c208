"""The LFQ trainer's weights on a machine that does not see the driver's files (a Ray node):
each rollout task carries the weights' bytes, and the worker process keeps them in one file
of its own under the temporary directory. Torch-free."""

from __future__ import annotations

import atexit
import contextlib
import os
import tempfile
from pathlib import Path

__all__ = ["remove_stale_weights", "weights_here"]


def remove_stale_weights() -> None:
    """Remove the weights files (:func:`weights_here`) of processes no longer running."""
    for old in Path(tempfile.gettempdir()).glob("l4sim-lfq-*.safetensors"):
        pid = old.name.removeprefix("l4sim-lfq-").removesuffix(".safetensors")
        with contextlib.suppress(ValueError, PermissionError):
            try:
                os.kill(int(pid), 0)
            except ProcessLookupError:
                old.unlink(missing_ok=True)


def weights_here(blob: bytes) -> str:
    """A weights file with these bytes on this machine (a Ray node may not see the driver's
    files): one per process, rewritten when the weights change, removed at exit; those of
    processes that were killed (Ray kills its idle workers) are removed by the next one."""
    path = Path(tempfile.gettempdir()) / f"l4sim-lfq-{os.getpid()}.safetensors"
    if not path.is_file():
        atexit.register(path.unlink, missing_ok=True)
        remove_stale_weights()
    if not path.is_file() or path.read_bytes() != blob:
        path.write_bytes(blob)
    return str(path)
