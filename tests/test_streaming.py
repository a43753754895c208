"""`l4sim run --stream`: the time series go to Parquet chunk by chunk as the run goes, so a
long run holds only a chunk of them; the files equal those of a run that keeps them, and the
memory budget (`--memory-limit`) counts only the chunk."""

from __future__ import annotations

from pathlib import Path

import polars as pl
import pytest

pytest.importorskip("l4sim._core")

import l4sim
from l4sim import cli
from l4sim.engine import budget
from l4sim.engine.results import SeriesStream, write

ROOT = Path(__file__).resolve().parents[1]
DEMO = ROOT / "scenarios" / "demo.toml"


def _cli(args: list[str]) -> int:
    with pytest.raises(SystemExit) as e:
        cli.main(args)
    return int(e.value.code or 0)


def test_streamed_series_equal_the_kept_ones(tmp_path: Path):
    assert _cli(["run", str(DEMO), "-q", "--out", str(tmp_path / "kept")]) == 0
    assert _cli(["run", str(DEMO), "-q", "--stream", "--out", str(tmp_path / "streamed")]) == 0
    for name in ("flows", "queues"):
        kept = pl.read_parquet(tmp_path / "kept" / f"{name}.parquet")
        streamed = pl.read_parquet(tmp_path / "streamed" / f"{name}.parquet")
        assert kept.height > 0 and kept.equals(streamed), name
    assert sorted(p.name for p in (tmp_path / "streamed").iterdir()) == [
        "flows.parquet",
        "queues.parquet",
        "scenario.toml",
        "summary.json",
    ]


def test_a_series_with_no_row_is_an_empty_file_with_its_columns(tmp_path: Path):
    sc = l4sim.load(DEMO).with_overrides(duration="2500ms")
    sc = sc.model_copy(update={"sample_interval": 3 * 10**9})  # no sample within 2.5 s
    sink = SeriesStream(tmp_path)
    result = l4sim.run(sc, on_series=sink)
    write(result, tmp_path, stream=sink)
    flows = pl.read_parquet(tmp_path / "flows.parquet")
    assert flows.height == 0 and "cwnd_pkts" in flows.columns


def test_the_budget_counts_a_chunk_when_streaming(tmp_path: Path):
    sc = l4sim.load(DEMO).with_overrides(duration="600s")
    full = budget.estimate(sc.to_core_config()).total
    chunk = budget.estimate(sc.to_core_config(), streaming=True).total
    assert chunk < full
    limit = str((chunk + full) // 2)
    with pytest.raises(budget.MemoryBudgetError, match="--stream"):
        l4sim.Simulation(sc, memory_limit=limit)
    l4sim.Simulation(sc, memory_limit=limit, streaming=True)


def test_memory_limit_refuses_in_one_sentence(tmp_path: Path, capsys):
    code = _cli(["run", str(DEMO), "-q", "--memory-limit", "1MiB", "--out", str(tmp_path / "x")])
    err = " ".join(capsys.readouterr().err.split())
    assert code == 2 and err.count("error:") == 1
    assert "more than the budget of 1 MiB" in err and "--stream" in err
    assert not (tmp_path / "x" / "summary.json").exists()
    code = _cli(["run", str(DEMO), "-q", "--memory-limit", "lots", "--out", str(tmp_path / "y")])
    assert code == 2 and "memory" in capsys.readouterr().err
