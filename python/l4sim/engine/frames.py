"""A run's media frames (``frames.parquet``): one row per frame of each UDP flow with a
frame source (video, trace, periodic), from the core's ``app::frames::FrameRows``.

The table exists only for runs with such flows, so other runs write the same files as
before.
"""

from __future__ import annotations

from typing import Any

import polars as pl

__all__ = ["FRAME_SCHEMA", "frames_of"]

FRAME_SCHEMA: dict[str, pl.DataType] = {
    "flow": pl.Int64(),
    "frame": pl.Int64(),
    "key": pl.Boolean(),
    "bytes": pl.Int64(),
    "packets": pl.Int64(),
    "created_s": pl.Float64(),
    "sent_s": pl.Float64(),
    "delay_s": pl.Float64(),
    "late": pl.Boolean(),
}
"""Columns: flow index, frame number, key frame, payload bytes, packets, when the source
produced it, when its first packet left, its delay (first packet sent to last received;
NaN if incomplete), whether it missed its deadline by the end of the run."""


def frames_of(core_sim: Any) -> pl.DataFrame | None:
    """The frames table of a core simulation (``l4sim._core.Simulation``), or ``None`` when
    no flow has frames."""
    if not core_sim.has_frames():
        return None
    columns = core_sim.frame_series()
    return pl.DataFrame(
        {k: pl.Series(k, columns[k], dtype=t, nan_to_null=False) for k, t in FRAME_SCHEMA.items()}
    )
