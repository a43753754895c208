"""Run results: the summary.json contract plus the time series, and their files on disk.

An output directory holds ``summary.json`` (indent 2), ``flows.parquet``, ``queues.parquet``
and ``scenario.toml`` (the effective scenario, loadable with :func:`l4sim.load`); a run with
media flows also ``frames.parquet`` (:mod:`l4sim.engine.frames`).
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import polars as pl
import pyarrow as pa

from l4sim import files
from l4sim.engine.frames import FRAME_SCHEMA
from l4sim.engine.simulation import FLOW_SCHEMA, QUEUE_SCHEMA
from l4sim.errors import L4simError, ScenarioError
from l4sim.scenario import Scenario, load
from l4sim.schema.summary import shape_problem

__all__ = ["FILES", "Result", "SeriesStream", "make_dir", "read", "write"]

FILES = ("summary.json", "flows.parquet", "queues.parquet", "scenario.toml")
"""The files :func:`write` puts in an output directory."""


@dataclass
class Result:
    """The outcome of a run.

    ``summary`` is the summary.json contract (incl. ``wall_time_s``); ``flows`` and
    ``queues`` are the time series (columns: :data:`l4sim.engine.simulation.FLOW_SCHEMA`,
    :data:`l4sim.engine.simulation.QUEUE_SCHEMA`).
    """

    summary: dict[str, Any]
    flows: pl.DataFrame
    queues: pl.DataFrame
    scenario: Scenario | None = None
    captures: list[dict[str, Any]] = field(default_factory=list)
    """What each of the scenario's captures wrote: {"file", "link", "packets"}."""
    frames: pl.DataFrame | None = None
    """The media flows' frames (:data:`l4sim.engine.frames.FRAME_SCHEMA`); ``None`` when
    no flow has frames."""

    def to_arrow(self) -> dict[str, pa.Table]:
        """The time series as Arrow tables: ``{"flows": ..., "queues": ...}``."""
        return {"flows": self.flows.to_arrow(), "queues": self.queues.to_arrow()}

    def flow_summary(self) -> pl.DataFrame:
        """``summary["flows"]`` as a DataFrame (one row per flow)."""
        return pl.DataFrame(self.summary.get("flows", []), infer_schema_length=None)

    def queue_summary(self) -> pl.DataFrame:
        """``summary["queues"]`` as a DataFrame: a row per queue (``class`` ``""``) and one
        per class of a multi-class queue under it (DualPI2's ``"L4S"``, ``"Classic"``; its
        ``qdisc`` the queue's), as ``queues.parquet``'s ``class`` column has them."""
        rows = []
        for q in self.summary["queues"]:
            whole = {k: v for k, v in q.items() if k != "classes"}
            rows.append({**whole, "class": ""})
            for c in q.get("classes") or []:
                cls = {k: v for k, v in c.items() if k != "classes"}
                rows.append({**cls, "qdisc": q.get("qdisc"), "class": c.get("qdisc")})
        return pl.DataFrame(rows, infer_schema_length=None)


def make_dir(path: str | Path, what: str = "output directory") -> Path:
    """Create directory ``path`` (and its parents) if needed; a path that is a file, lies
    under a file or cannot be created is one sentence (:class:`~l4sim.errors.L4simError`)."""
    out = Path(path)
    if out.exists() and not out.is_dir():
        raise L4simError(f"{what} {str(out)!r} is a file, not a directory; give a directory")
    try:
        out.mkdir(parents=True, exist_ok=True)
    except (FileExistsError, NotADirectoryError):
        raise L4simError(
            f"{what} {str(out)!r} cannot be created: part of the path is a file, not a directory"
        ) from None
    except OSError as e:
        raise L4simError(f"cannot create {what} {str(out)!r} ({e.strerror or e})") from None
    return out


def _temp_dir(out: Path) -> Path:
    try:
        return Path(tempfile.mkdtemp(prefix=".l4sim-write-", dir=out))
    except OSError as e:
        raise L4simError(f"cannot write to output directory {str(out)!r} ({e.strerror})") from None


class SeriesStream:
    """Writes a run's time series to ``flows.parquet`` and ``queues.parquet`` chunk by chunk
    as the run goes (one row group per non-empty chunk), so a long run holds only a chunk of
    its series in memory: pass it as ``on_series`` to :func:`l4sim.run` and to
    :func:`write`, which moves the files into place beside the summary. The files equal
    those written from the whole series at once."""

    def __init__(self, out_dir: str | Path) -> None:
        self.out = make_dir(out_dir)
        self.tmp = _temp_dir(self.out)
        self._writers: dict[str, Any] = {}

    def __call__(self, flows: pl.DataFrame, queues: pl.DataFrame) -> None:
        for name, frame in (("flows", flows), ("queues", queues)):
            if frame.height:
                self._writer(name).write_table(frame.to_arrow().cast(self._schema(name)))

    @staticmethod
    def _schema(name: str) -> pa.Schema:
        schema = FLOW_SCHEMA if name == "flows" else QUEUE_SCHEMA
        return pl.DataFrame(schema=schema).to_arrow().schema

    def _writer(self, name: str) -> Any:
        import pyarrow.parquet as pq

        if name not in self._writers:
            try:
                self._writers[name] = pq.ParquetWriter(
                    self.tmp / f"{name}.parquet", self._schema(name), compression="zstd"
                )
            except OSError as e:
                where = str(self.out)
                raise L4simError(f"cannot write {name}.parquet in {where!r} ({e})") from None
        return self._writers[name]

    def close(self) -> None:
        """Finish both files (an empty one, with its columns, for a series with no row)."""
        for name in ("flows", "queues"):
            self._writer(name).close()

    def discard(self) -> None:
        shutil.rmtree(self.tmp, ignore_errors=True)


def write(result: Result, out_dir: str | Path, stream: SeriesStream | None = None) -> list[Path]:
    """Write ``result`` into ``out_dir`` (created if needed); returns the paths written.

    Files are written to a temporary directory inside ``out_dir`` first and moved into place
    only when all of them were written, so a failure leaves earlier results untouched. With
    ``stream`` (the :class:`SeriesStream` the run wrote its series to), the Parquet files
    are the streamed ones and ``result``'s (empty) series are not written.
    """
    out = make_dir(out_dir)
    tmp: Path | None = stream.tmp if stream is not None else None
    try:
        tmp = tmp or _temp_dir(out)
        (tmp / "summary.json").write_text(json.dumps(result.summary, indent=2) + "\n")
        if stream is not None:
            stream.close()
        else:
            result.flows.write_parquet(tmp / "flows.parquet")
            result.queues.write_parquet(tmp / "queues.parquet")
        written = ["summary.json", "flows.parquet", "queues.parquet"]
        if result.frames is not None:
            result.frames.write_parquet(tmp / "frames.parquet")
            written.append("frames.parquet")
        if result.scenario is not None:
            (tmp / "scenario.toml").write_text(result.scenario.to_toml(), encoding="utf-8")
            written.append("scenario.toml")
        paths = []
        for name in written:
            os.replace(tmp / name, out / name)
            paths.append(out / name)
        return paths
    except (OSError, pl.exceptions.ComputeError) as e:
        why = files.why_write_failed(e, out)
        raise L4simError(f"cannot write results to {str(out)!r} ({why})") from None
    finally:
        if tmp is not None:
            shutil.rmtree(tmp, ignore_errors=True)


def read(out_dir: str | Path) -> Result:
    """Read back what :func:`write` wrote."""
    out = Path(out_dir)
    if not out.is_dir():
        raise L4simError(f"results directory {str(out)!r} does not exist")
    summary_path = out / "summary.json"
    if not summary_path.is_file():
        raise L4simError(
            f"{str(out)!r} holds no summary.json; give a directory written by `l4sim run`"
        )
    data = files.read_input(summary_path, "summary file", files.MAX_RESULTS_BYTES, L4simError)
    try:
        summary = json.loads(data)
    except (json.JSONDecodeError, UnicodeDecodeError):
        raise L4simError(f"{str(summary_path)!r} is not valid JSON") from None
    problem = shape_problem(summary, where="its content")
    if problem:
        raise L4simError(
            f"{str(summary_path)!r} is not a summary written by l4sim run or emulate: {problem}"
        )

    def frame(name: str, schema: dict[str, pl.DataType]) -> pl.DataFrame:
        path = out / name
        if not path.is_file():
            return pl.DataFrame(schema=schema)
        try:
            return pl.read_parquet(path)
        except Exception as e:
            raise L4simError(f"{str(path)!r} is not a readable Parquet file ({e})") from None

    scenario = None
    if (out / "scenario.toml").is_file():
        try:
            scenario = load(out / "scenario.toml")
        except ScenarioError:
            scenario = None  # a copy from another version: the series still plot fine
    return Result(
        summary=summary,
        flows=frame("flows.parquet", FLOW_SCHEMA),
        queues=frame("queues.parquet", QUEUE_SCHEMA),
        scenario=scenario,
        frames=frame("frames.parquet", FRAME_SCHEMA)
        if (out / "frames.parquet").is_file()
        else None,
    )
