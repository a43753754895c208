"""The reproducibility contract of ``l4sim reproduce`` (docs/reproductions/index.md, "What
every reproduction writes"): each learned ``--quick`` reproduction writes a manifest with the
seeds and every case's scenario hash, and mean ± 95 % CI columns over the training seeds
(read from the session's one ``l4sim reproduce all --quick``, the ``quick_outputs``
fixture). Its tables are byte for byte the committed ones (tests/test_results_guard.py, so
the same from run to run; wall times only in ``timing.csv``); ``lfq-001 --train``, whose
trained weights that guard does not see, run twice writes the same tables and weights.
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
#: The learned reproductions (topic names): their quick forms train.
LEARNED = ("a3c-l4s", "macc", "lfq", "remote-brain", "rl-tcp")


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


def _run(out: Path) -> dict:
    """``l4sim reproduce lfq-001 --only online --train --quick`` into ``out``."""
    with pytest.raises(SystemExit) as e:
        cli.main(
            ["reproduce", "lfq-001", "--only", "online", "--train", *COMMON, "--out", str(out)]
        )
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


def test_two_trainings_write_the_same_tables_and_weights(tmp_path: Path) -> None:
    first, second = _run(tmp_path / "a"), _run(tmp_path / "b")
    a, b = _tables(tmp_path / "a"), _tables(tmp_path / "b")
    assert "per_seed.csv" in a and any(k.endswith(".safetensors") for k in a)
    assert sorted(a) == sorted(b)
    assert [k for k in a if a[k] != b[k]] == []
    assert first["seeds"] == second["seeds"] and first["seeds"]
    assert first["scenario_hashes"] == second["scenario_hashes"]


@pytest.mark.parametrize("name", LEARNED)
def test_manifest_seeds_hashes_and_intervals(name: str, quick_outputs) -> None:
    out = quick_outputs[name]
    manifest = json.loads((out / "manifest.json").read_text(encoding="utf-8"))
    assert manifest["options"]["quick"] is True
    assert (out / "per_seed.csv").is_file()
    assert manifest["seeds"]
    hashes = manifest["scenario_hashes"]
    assert hashes and all(len(h) == 64 for h in hashes.values())
    assert manifest["versions"]["l4sim_core_crate"] and manifest["machine"]["cpus"] >= 1
    assert list(out.glob("ci*.csv"))
    for ci in out.glob("ci*.csv"):
        rows = list(csv.DictReader(ci.open()))
        assert rows and {"mean", "ci95_low", "ci95_high", "n_seeds"} <= set(rows[0])
        for r in rows:
            if r["ci95_low"]:
                assert float(r["ci95_low"]) <= float(r["mean"]) <= float(r["ci95_high"])
