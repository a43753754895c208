"""Numbers in the docs' prose that name their result cell (scripts/prose_cells.py)."""

import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "scripts"))

import prose_cells  # noqa: E402


def test_a_cell_takes_its_value_from_the_table():
    spec = 'results/macc/results.md scheme=ma-cc "seeds at the paper\'s point"'
    want = prose_cells.lookup(spec)
    assert " of " in want
    text = f"reaches it on <!-- cell {spec} -->9 of 9<!-- /cell --> seeds"
    assert (
        prose_cells.refresh(text) == f"reaches it on <!-- cell {spec} -->{want}<!-- /cell --> seeds"
    )


@pytest.mark.parametrize(
    "spec",
    [
        "results/macc/results.md seeds",  # no row
        "results/nowhere.md scheme=ma-cc seeds",
        "results/macc/results.md scheme=no-such-scheme seeds",
        "results/macc/results.md scheme=ma-cc no-such-column",
    ],
)
def test_a_bad_cell_is_one_sentence(spec):
    with pytest.raises(SystemExit) as e:
        prose_cells.lookup(spec)
    assert str(e.value) and "\n" not in str(e.value)
