"""The reproducibility contract of ``l4sim reproduce`` (docs/reproductions/index.md, "What
every reproduction writes"): each learned ``--quick`` reproduction run twice writes the
same CSV and Markdown tables byte for byte (wall times only in ``timing.csv``), a manifest
with the seeds and every case's scenario hash, and mean ± 95 % CI columns over the training
seeds.
"""

from __future__ import annotations

import csv
import json
import math
from pathlib import Path

import pytest

pytest.importorskip("l4sim._core")
pytest.importorskip("torch")

from l4sim import cli
from l4sim.experiments._tables import mean_ci, t975

COMMON = ["--quick", "--no-figures", "-q", "--jobs", "1"]
RUNS = {
    "a3c-004": ["--only", "1Mbps-prague"],
    "macc-002": ["--only", "ma-cc"],
    "lfq-001": ["--only", "online", "--train"],
    "remote-rl-tcp-000": ["--only", "fifo,stage2"],
    "rl-tcp": ["--only", "default"],
}


def test_t_quantile_and_interval_by_hand() -> None:
    assert t975(4) == pytest.approx(2.776, abs=5e-4)
    assert t975(30) == pytest.approx(2.0423, abs=1e-4)
    assert t975(60) == pytest.approx(2.0003, abs=2e-4)  # Cornish-Fisher beyond the table
    # n = 5: mean 3, s = sqrt(2.5), half-width 2.776 * s / sqrt(5) = 1.963.
    mean, low, high, n = mean_ci([1.0, 2.0, 3.0, 4.0, 5.0])
    assert (mean, n) == (3.0, 5)
    assert low == pytest.approx(3.0 - 1.963, abs=1e-3)
    assert high == pytest.approx(3.0 + 1.963, abs=1e-3)
    assert mean_ci([2.0, None, math.nan]) == (2.0, None, None, 1)


def _run(name: str, out: Path) -> dict:
    with pytest.raises(SystemExit) as e:
        cli.main(["reproduce", name, *RUNS[name], *COMMON, "--out", str(out)])
    assert e.value.code == 0
    return json.loads((out / "manifest.json").read_text(encoding="utf-8"))


def _bytes(p: Path) -> bytes:
    """A table's bytes; a weights file's tensors (its header's metadata order varies)."""
    if p.suffix != ".safetensors":
        return p.read_bytes()
    from safetensors.numpy import load_file

    return b"".join(k.encode() + v.tobytes() for k, v in sorted(load_file(str(p)).items()))


def _tables(out: Path) -> dict[str, bytes]:
    return {
        p.relative_to(out).as_posix(): _bytes(p)
        for p in sorted(out.rglob("*"))
        if p.suffix in (".csv", ".md", ".safetensors") and p.name != "timing.csv"
    }


@pytest.mark.parametrize("name", list(RUNS))
def test_two_runs_write_the_same_tables(name: str, tmp_path: Path) -> None:
    first = _run(name, tmp_path / "a")
    second = _run(name, tmp_path / "b")
    a, b = _tables(tmp_path / "a"), _tables(tmp_path / "b")
    assert "per_seed.csv" in a and any(k.endswith(".csv") for k in a)
    assert sorted(a) == sorted(b)
    assert [k for k in a if a[k] != b[k]] == []
    assert first["seeds"] == second["seeds"]
    assert first["seeds"]
    hashes = first["scenario_hashes"]
    assert hashes and hashes == second["scenario_hashes"]
    assert all(len(h) == 64 for h in hashes.values())
    assert first["versions"]["l4sim_core_crate"] and first["machine"]["cpus"] >= 1
    for ci in (tmp_path / "a").glob("ci*.csv"):
        rows = list(csv.DictReader(ci.open()))
        assert rows and {"mean", "ci95_low", "ci95_high", "n_seeds"} <= set(rows[0])
        for r in rows:
            if r["ci95_low"]:
                assert float(r["ci95_low"]) <= float(r["mean"]) <= float(r["ci95_high"])
    assert list((tmp_path / "a").glob("ci*.csv"))
