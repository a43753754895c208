"""Fixtures shared by several test modules."""

from __future__ import annotations

from pathlib import Path

import pytest


@pytest.fixture(scope="session")
def quick_outputs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """``l4sim reproduce all --quick``, once per test session: reproduction name -> its
    quick output directory. The results guard compares them with the committed fingerprints
    and the reproducibility contract reads their manifests and tables."""
    pytest.importorskip("l4sim._core")
    pytest.importorskip("torch")
    from l4sim import cli
    from l4sim.experiments import EXPERIMENTS

    out = tmp_path_factory.mktemp("quick")
    args = ["reproduce", "all", "--quick", "--no-figures", "-q", "--jobs", "2", "--out", str(out)]
    with pytest.raises(SystemExit) as e:
        cli.main(args)
    assert e.value.code == 0, "l4sim reproduce all --quick failed (its output names which)"
    return {name: out / name for name in EXPERIMENTS}
