"""The experiments' protocol: every registered experiment declares itself, the paper ids
still work as aliases, the reference data ships with a named source, and a new experiment
is one declaration and one registry line (the recipe of docs/architecture.md)."""

from __future__ import annotations

import csv
import json
import sys
import types
from dataclasses import dataclass
from importlib.resources import files
from pathlib import Path
from typing import Any

import pytest

from l4sim import cli
from l4sim.experiments import EXPERIMENTS, all_experiments, experiment
from l4sim.experiments.base import Declared, Experiment, Option
from l4sim.experiments.reference import rows

ROOT = Path(__file__).resolve().parents[1]

#: The names the docs, tests and users have typed since before the topic names.
OLD_NAMES = {
    "aqm-004": "aqm-comparison",
    "a3c-004": "a3c-l4s",
    "l4s-rtt-fairness": "l4s-rtt-fairness",
    "rl-tcp": "rl-tcp",
    "macc-002": "macc",
    "lfq-001": "lfq",
    "remote-rl-tcp-000": "remote-brain",
}


def test_every_experiment_conforms_and_old_names_are_aliases() -> None:
    exps = all_experiments()
    assert [e.name for e in exps] == list(EXPERIMENTS)
    for e in exps:
        assert isinstance(e, Experiment), e.name
        assert e.title and e.paper and e.groups and e.tables, e.name
        assert e.tables[0].endswith(".md"), e.name
        assert len(e.cases(e.groups)) > 0, e.name
    for old, topic in OLD_NAMES.items():
        assert experiment(old).name == topic
        assert experiment(topic).name == topic


def test_reference_files_name_their_source() -> None:
    """Every shipped reference file is declared by an experiment or read by a test or a
    benchmark (no orphan data), begins with its source and is listed in the README."""
    ref = files("l4sim") / "data" / "reference"
    declared = {f for e in all_experiments() for f in e.reference}
    shipped = {p.name for p in ref.iterdir() if p.name.endswith(".csv")}
    assert declared <= shipped
    readers = "".join(
        p.read_text(encoding="utf-8")
        for d in (ROOT / "tests", ROOT / "benchmarks")
        for p in sorted(d.glob("*.py"))
    )
    orphans = {name for name in shipped - declared if name not in readers}
    assert not orphans
    readme = (ref / "README.md").read_text(encoding="utf-8")
    for name in shipped:
        assert (ref / name).read_text(encoding="utf-8").startswith("# "), name
        assert f"`{name}`" in readme, name
        assert rows(name), name
    assert len(rows("l4s_tests_s1.csv")) == 144


def test_an_undeclared_option_is_refused_in_one_sentence(capsys) -> None:
    with pytest.raises(SystemExit) as e:
        cli.main(["reproduce", "aqm-comparison", "--train", "-o", "x"])
    assert e.value.code == 2
    err = " ".join(capsys.readouterr().err.split())
    assert "experiment 'aqm-comparison' has no --train mode" in err


# A tiny experiment, declared in the test as the recipe says: one case, a 1-second scenario,
# a one-row table, one declared option.


@dataclass
class _Row:
    case: str
    goodput_mbps: float


def _cases(groups: Any, **_: Any) -> list[Any]:
    return [types.SimpleNamespace(name=g) for g in groups]


def _run(task: tuple[str, int]) -> _Row:
    import l4sim

    name, rate = task
    sc = l4sim.Scenario.parse(
        {
            "duration": "1s",
            "topology": {
                "preset": "dumbbell",
                "bottleneck": {"rate": f"{rate}Mbps", "delay": "10ms"},
            },
            "flows": [{"kind": "tcp", "cca": "newreno", "src": "s0", "dst": "d0"}],
        }
    )
    s = l4sim.run(sc).summary
    return _Row(name, s["flows"][0]["goodput_bps"] / 1e6)


def _reproduce(out_dir: Any, *, only: Any, figures: bool, on_case: Any, executor: Any, **o: Any):
    from l4sim.experiments._cases import run_cases
    from l4sim.experiments._tables import write_table

    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    todo = _cases(only or ("one",))
    rows = run_cases(_run, [(c.name, o.get("rate", 10)) for c in todo], todo, executor, on_case)
    write_table(rows, out, "tiny.md", _markdown(rows))
    return rows


def _markdown(rows: list[_Row]) -> str:
    return "| case | goodput Mbit/s |\n|---|---|\n" + "".join(
        f"| {r.case} | {r.goodput_mbps:.2f} |\n" for r in rows
    )


def test_a_declared_experiment_runs_through_the_cli(tmp_path, monkeypatch, capsys) -> None:
    mod = types.ModuleType("l4sim_tiny_experiment")
    mod.EXPERIMENT = Declared(  # type: ignore[attr-defined]
        name="tiny",
        aliases=("tiny-999",),
        title="One NewReno flow for one second",
        paper="none (a test)",
        groups=("one",),
        options=(Option("rate", int, "Bottleneck rate, Mbit/s.", min=1, max=100),),
        tables=("tiny.md", "tiny.csv"),
        run=_reproduce,
        table=_markdown,
        case_list=_cases,
    )
    monkeypatch.setitem(sys.modules, mod.__name__, mod)
    monkeypatch.setitem(EXPERIMENTS, "tiny", mod.__name__)

    out = tmp_path / "tiny"
    with pytest.raises(SystemExit) as e:
        cli.main(["reproduce", "--help"])
    assert e.value.code == 0
    help_text = " ".join(capsys.readouterr().out.split())
    assert "tiny (tiny-999): One NewReno flow for one second" in help_text
    assert "--rate" in help_text and "tiny: Bottleneck" in help_text  # wrapped at 80 columns

    with pytest.raises(SystemExit) as e:
        cli.main(["reproduce", "tiny-999", "--rate", "5", "-j", "1", "-q", "-o", str(out)])
    assert e.value.code == 0, capsys.readouterr().err
    with open(out / "tiny.csv") as fh:
        table = list(csv.DictReader(fh))
    assert [r["case"] for r in table] == ["one"]
    assert 3.0 < float(table[0]["goodput_mbps"]) <= 5.0
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["experiment"] == "tiny-999"
    assert manifest["options"]["rate"] == 5 and manifest["options"]["quick"] is False
    assert "tiny.md" in manifest["files"]

    # Out of its declared bounds, and an option only other experiments declare: one sentence.
    for args, words in (
        (["--rate", "500"], "--rate"),
        (["--seeds", "2"], "experiment 'tiny' has no --seeds mode"),
    ):
        with pytest.raises(SystemExit) as e:
            cli.main(["reproduce", "tiny", *args, "-o", str(tmp_path / "x")])
        assert e.value.code == 2
        assert words in " ".join(capsys.readouterr().err.split())
