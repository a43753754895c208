"""Run results: the summary.json contract plus the time series, and their files on disk.

An output directory holds ``summary.json`` (indent 2), ``flows.parquet``, ``queues.parquet``
and ``scenario.toml`` (the effective scenario, loadable with :func:`l4sim.load`).
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import polars as pl
import pyarrow as pa

from l4sim.errors import L4simError, ScenarioError
from l4sim.scenario import Scenario, load
from l4sim.simulation import FLOW_SCHEMA, QUEUE_SCHEMA

__all__ = ["FILES", "Result", "read", "write"]

FILES = ("summary.json", "flows.parquet", "queues.parquet", "scenario.toml")
"""The files :func:`write` puts in an output directory."""


@dataclass
class Result:
    """The outcome of a run.

    ``summary`` is the summary.json contract (incl. ``wall_time_s``); ``flows`` and
    ``queues`` are the time series (columns: :data:`l4sim.simulation.FLOW_SCHEMA`,
    :data:`l4sim.simulation.QUEUE_SCHEMA`).
    """

    summary: dict[str, Any]
    flows: pl.DataFrame
    queues: pl.DataFrame
    scenario: Scenario | None = None

    def to_arrow(self) -> dict[str, pa.Table]:
        """The time series as Arrow tables: ``{"flows": ..., "queues": ...}``."""
        return {"flows": self.flows.to_arrow(), "queues": self.queues.to_arrow()}

    def flow_summary(self) -> pl.DataFrame:
        """``summary["flows"]`` as a DataFrame (one row per flow)."""
        return pl.DataFrame(self.summary.get("flows", []), infer_schema_length=None)

    def queue_summary(self) -> pl.DataFrame:
        """``summary["queues"]`` as a DataFrame, without the per-class entries."""
        rows = [{k: v for k, v in q.items() if k != "classes"} for q in self.summary["queues"]]
        return pl.DataFrame(rows, infer_schema_length=None)


def write(result: Result, out_dir: str | Path) -> list[Path]:
    """Write ``result`` into ``out_dir`` (created if needed); returns the paths written.

    Files are written to a temporary directory inside ``out_dir`` first and moved into place
    only when all of them were written, so a failure leaves earlier results untouched.
    """
    out = Path(out_dir)
    try:
        out.mkdir(parents=True, exist_ok=True)
    except FileExistsError:
        raise L4simError(f"output path {str(out)!r} exists and is not a directory") from None
    except OSError as e:
        raise L4simError(f"cannot create output directory {str(out)!r} ({e.strerror})") from None
    try:
        tmp = Path(tempfile.mkdtemp(prefix=".l4sim-write-", dir=out))
    except OSError as e:
        raise L4simError(f"cannot write to output directory {str(out)!r} ({e.strerror})") from None
    try:
        (tmp / "summary.json").write_text(json.dumps(result.summary, indent=2) + "\n")
        result.flows.write_parquet(tmp / "flows.parquet")
        result.queues.write_parquet(tmp / "queues.parquet")
        written = ["summary.json", "flows.parquet", "queues.parquet"]
        if result.scenario is not None:
            (tmp / "scenario.toml").write_text(result.scenario.to_toml(), encoding="utf-8")
            written.append("scenario.toml")
        paths = []
        for name in written:
            os.replace(tmp / name, out / name)
            paths.append(out / name)
        return paths
    except OSError as e:
        raise L4simError(f"cannot write results to {str(out)!r} ({e.strerror or e})") from None
    finally:
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
    try:
        summary = json.loads(summary_path.read_text())
    except (json.JSONDecodeError, UnicodeDecodeError):
        raise L4simError(f"{str(summary_path)!r} is not valid JSON") from None

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
    )
