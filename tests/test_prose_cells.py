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
        "python/l4sim/data/lfq/train.json models.no-such-model.wall_s",
        "python/l4sim/data/lfq/train.json models",  # not a number
        "python/l4sim/data/lfq/nowhere.json wall_s",
    ],
)
def test_a_bad_cell_is_one_sentence(spec):
    with pytest.raises(SystemExit) as e:
        prose_cells.lookup(spec)
    assert str(e.value) and "\n" not in str(e.value)


def test_a_derived_number_comes_from_the_facts_being_generated(tmp_path):
    # gen_docs writes results/NAME/facts.csv in the same pass as the pages: a page reads the
    # new facts, not the stale file on disk.
    spec = "results/rfc3168-coexistence/facts.csv name=classic_within value"
    facts = prose_cells.ROOT / "results" / "rfc3168-coexistence" / "facts.csv"
    generated = {facts: "name,value\nclassic_within,7 of 9\n"}
    assert prose_cells.lookup(spec, generated) == "7 of 9"
    assert prose_cells.lookup(spec) != "7 of 9"


def test_every_committed_fact_is_what_its_experiment_computes():
    import gen_docs

    for path, text in gen_docs.result_facts().items():
        assert path.read_text(encoding="utf-8") == text, f"{path} is stale: run gen_docs.py"


def test_a_reference_csv_cell_skips_its_source_lines():
    # Reference data opens with `#` lines naming its source; the header is the first other line.
    spec = "python/l4sim/data/reference/l4s_tests_s2.csv cc=prague rate2_mbps=1 max_rtt_ms"
    assert prose_cells.lookup(spec) == "4346"


def test_a_cell_can_name_a_reference_file_past_its_source_note():
    # Reference CSVs start with "#" lines naming their source; the header comes after them.
    spec = "python/l4sim/data/reference/paper002_fig4.csv scheme=ma-cc throughput_kbps"
    assert prose_cells.lookup(spec) == "28459"


def test_a_cell_reads_a_markdown_table_being_generated():
    # measured.py's tables are written in the same pass as the pages that quote them.
    spec = 'benchmarks/data/speed_vs_ns3.md case=1flow10M "speed ratio"'
    path = prose_cells.ROOT / "benchmarks" / "data" / "speed_vs_ns3.md"
    generated = {path: "*Made by ...*\n\n| case | speed ratio |\n|---|---|\n| 1flow10M | 999 |\n"}
    assert prose_cells.lookup(spec, generated) == "999"
    assert prose_cells.lookup(spec) != "999"


def test_a_json_cell_reads_a_dotted_key_and_rounds_a_float():
    import json

    spec = "python/l4sim/data/lfq/train.json models.online.flows"
    record = json.loads((prose_cells.ROOT / spec.split()[0]).read_text(encoding="utf-8"))
    assert prose_cells.lookup(spec) == str(record["models"]["online"]["flows"])
    wall = prose_cells.lookup("python/l4sim/data/lfq/train.json wall_s")
    assert wall == str(round(record["wall_s"]))
