"""`l4sim reproduce` writes manifest.json beside its tables: what produced them (version,
commit, command, options, machine, library versions) and a SHA-256 of each table, so two
runs can be compared without opening them — and the same command twice gives the same
tables, byte for byte."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

pytest.importorskip("l4sim._core")

from l4sim import cli

ARGS = ["reproduce", "aqm-004", "--only", "dualpi2", "--no-figures", "-q", "--jobs", "1"]


def _reproduce(out: Path) -> dict:
    with pytest.raises(SystemExit) as e:
        cli.main([*ARGS, "--out", str(out)])
    assert e.value.code == 0
    return json.loads((out / "manifest.json").read_text(encoding="utf-8"))


def test_manifest_names_what_produced_the_tables_and_they_repeat(tmp_path: Path):
    first = _reproduce(tmp_path / "a")
    second = _reproduce(tmp_path / "b")
    assert first["experiment"] == "aqm-004"
    assert first["command"] == ["l4sim", *ARGS, "--out", str(tmp_path / "a")]
    assert first["options"]["only"] == ["dualpi2"] and first["options"]["quick"] is False
    assert first["machine"]["cpus"] >= 1 and first["versions"]["python"]
    assert first["wall_time_s"] > 0
    tables = {k: v for k, v in first["files"].items() if k.endswith((".csv", ".md"))}
    assert tables, first["files"]
    # Deterministic: the same command gives the same tables (their hashes), byte for byte.
    assert {k: second["files"][k] for k in tables} == tables
