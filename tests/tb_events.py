"""Read the scalars a trainer wrote for TensorBoard (tests only)."""

from __future__ import annotations

from pathlib import Path


def scalars(log_dir: Path) -> dict[str, list[float]]:
    """Every scalar tag in the event files under ``log_dir`` with its values in step order."""
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    acc = EventAccumulator(str(log_dir))
    acc.Reload()
    return {t: [e.value for e in acc.Scalars(t)] for t in acc.Tags()["scalars"]}
