"""TensorBoard scalars for l4sim's trainers (A3C, VDN/QMIX, LFQ; DQN writes its own).

``ScalarLog(None)`` does nothing, so a trainer logs unconditionally and the caller decides
whether there is a directory. Event files are PyTorch's ``SummaryWriter``'s (the ``rl`` extra
carries ``tensorboard``); read them with ``tensorboard --logdir DIR``.
"""

from __future__ import annotations

from pathlib import Path
from types import TracebackType
from typing import Any


class ScalarLog:
    """Scalars by tag and step into ``log_dir`` (nothing when ``log_dir`` is None)."""

    def __init__(self, log_dir: str | Path | None) -> None:
        self._writer: Any = None
        if log_dir is not None:
            from torch.utils.tensorboard import SummaryWriter  # tensorboard only when logging

            self._writer = SummaryWriter(str(log_dir))

    def add(self, step: int, scalars: dict[str, float]) -> None:
        if self._writer is not None:
            for tag, value in scalars.items():
                self._writer.add_scalar(tag, float(value), step)

    def close(self) -> None:
        if self._writer is not None:
            self._writer.close()
            self._writer = None

    def __enter__(self) -> ScalarLog:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()
