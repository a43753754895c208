"""The guard on the results the docs quote: every reproduction's quick output, recomputed
(``quick_outputs``, one ``l4sim reproduce all --quick`` per session), must match the
fingerprint committed beside its full results (``results/NAME/quick.sha256``). A change that
moves any of them fails here with one message naming each and saying what to do. Also
``reproduce all``'s refusals and its resume."""

from __future__ import annotations

import json
import sys
import types
from pathlib import Path
from typing import Any

import pytest

from l4sim import cli
from l4sim.experiments import EXPERIMENTS, all_experiments
from l4sim.experiments.base import Declared
from l4sim.experiments.fingerprints import (
    FINGERPRINT_FILE,
    RESULTS_DIR,
    SUBSETS,
    fingerprint,
    form,
    guard_message,
    moved,
    write_fingerprint,
)
from test_experiments import _cases, _markdown, _reproduce


def test_quick_outputs_match_their_committed_fingerprints(quick_outputs) -> None:
    found = moved(quick_outputs)
    stray = {p.parent.name for p in RESULTS_DIR.glob(f"*/{FINGERPRINT_FILE}")} - set(EXPERIMENTS)
    if found or stray:
        pytest.fail(guard_message(found, stray), pytrace=False)


def test_every_reproduction_has_a_quick_form() -> None:
    for exp in all_experiments():
        wanted = form(exp, quick=True)
        assert wanted.quick or exp.name in SUBSETS, exp.name
        if wanted.only is not None:
            assert set(wanted.only) <= set(exp.groups), exp.name
    assert set(SUBSETS) <= set(EXPERIMENTS)


def test_a_moved_table_is_named_with_what_to_do(tmp_path: Path) -> None:
    results = tmp_path / "results"
    outputs = {}
    for name in ("alpha", "beta"):
        out = outputs[name] = tmp_path / "out" / name
        out.mkdir(parents=True)
        (out / "table.csv").write_text("a,b\n1,2\n")
        (out / "per_seed.csv").write_text("seed,x\n1,0.5\n")
        (out / "timing.csv").write_text("case,wall_s\nx,1.0\n")
        (out / "manifest.json").write_text("{}\n")
        assert write_fingerprint(name, out, results)
        assert not write_fingerprint(name, out, results)  # unchanged: left alone
    assert set(fingerprint(outputs["alpha"])) == {"table.csv", "per_seed.csv"}
    assert moved(outputs, results) == {}
    # Wall times and the manifest change from run to run: not a move.
    (outputs["alpha"] / "timing.csv").write_text("case,wall_s\nx,9.0\n")
    (outputs["alpha"] / "manifest.json").write_text('{"git_commit": "other"}\n')
    assert moved(outputs, results) == {}
    # One digit of one table, a table added: named, each reproduction once.
    (outputs["beta"] / "per_seed.csv").write_text("seed,x\n1,0.6\n")
    (outputs["beta"] / "ci.csv").write_text("mean\n1\n")
    found = moved(outputs, results)
    assert found == {"beta": ["ci.csv (new)", "per_seed.csv"]}
    text = guard_message(found)
    assert "beta: ci.csv (new), per_seed.csv" in text and "alpha" not in text
    for step in ("full results", "--fingerprints", "CHANGELOG"):
        assert step in text


@pytest.mark.parametrize(
    ("args", "words"),
    [
        (["--only", "codel"], "--only picks cases of one experiment"),
        (["--seeds", "2"], "takes no --seeds"),
        (["--fingerprints"], "--fingerprints needs --quick"),
        (["--jobs", "0"], "--jobs"),
    ],
)
def test_reproduce_all_refuses_in_one_sentence(args, words, tmp_path, capsys) -> None:
    with pytest.raises(SystemExit) as e:
        cli.main(["reproduce", "all", *args, "-o", str(tmp_path / "x")])
    assert e.value.code == 2
    err = " ".join(capsys.readouterr().err.split())
    assert words in err and "Traceback" not in err
    assert not (tmp_path / "x").exists()


def test_fingerprints_belong_to_reproduce_all(tmp_path, capsys) -> None:
    with pytest.raises(SystemExit) as e:
        cli.main(["reproduce", "aqm-004", "--fingerprints", "-o", str(tmp_path)])
    assert e.value.code == 2
    assert "--fingerprints goes with l4sim reproduce all --quick" in capsys.readouterr().err
    with pytest.raises(SystemExit) as e:
        cli.main(["reproduce", "alll", "-o", str(tmp_path)])
    assert e.value.code == 2
    err = " ".join(capsys.readouterr().err.split())
    assert "unknown experiment 'alll'" in err and "or all, every one in turn" in err


def _boom(out_dir: Any, **_: Any) -> list[Any]:
    raise RuntimeError("the boom experiment always fails")


def _only_tiny(monkeypatch, *also_failing: str) -> None:
    """Register the test experiment of test_experiments as the only one (and experiments
    ``also_failing`` that always fail, before it)."""
    registry = {}
    for name in (*also_failing, "tiny"):
        mod = types.ModuleType(f"l4sim_{name}_all")
        mod.EXPERIMENT = Declared(  # type: ignore[attr-defined]
            name=name,
            title="One NewReno flow for one second",
            paper="none (a test)",
            groups=("one",),
            tables=("tiny.md", "tiny.csv"),
            run=_reproduce if name == "tiny" else _boom,
            table=_markdown,
            case_list=_cases,
        )
        monkeypatch.setitem(sys.modules, mod.__name__, mod)
        registry[name] = mod.__name__
    monkeypatch.setattr("l4sim.experiments.EXPERIMENTS", registry)


def test_a_failing_experiment_is_named_and_the_others_run(tmp_path, monkeypatch, capsys) -> None:
    pytest.importorskip("l4sim._core")
    _only_tiny(monkeypatch, "boom")
    with pytest.raises(SystemExit) as e:
        cli.main(["reproduce", "all", "-j", "1", "-q", "-o", str(tmp_path)])
    assert e.value.code == 1
    err = " ".join(capsys.readouterr().err.split())
    assert "boom failed: the boom experiment always fails" in err and "1 failed: boom" in err
    assert (tmp_path / "tiny" / "manifest.json").is_file()
    assert not (tmp_path / "boom" / "manifest.json").exists()


def test_reproduce_all_resumes_at_the_same_commit(tmp_path, monkeypatch, capsys) -> None:
    pytest.importorskip("l4sim._core")
    _only_tiny(monkeypatch)
    commit = ["0123abc"]
    for module in ("l4sim.cli.manifest", "l4sim.cli.reproduce_all"):
        monkeypatch.setattr(f"{module}.git_commit", lambda: commit[0])

    def run_all() -> tuple[str, dict]:
        with pytest.raises(SystemExit) as e:
            cli.main(["reproduce", "all", "-j", "1", "-q", "-o", str(tmp_path)])
        assert e.value.code == 0
        manifest = json.loads((tmp_path / "tiny" / "manifest.json").read_text())
        return " ".join(capsys.readouterr().err.split()), manifest

    err, first = run_all()
    assert "[1/1] tiny (full)" in err
    redo = ["l4sim", "reproduce", "tiny", "--out", str(tmp_path / "tiny"), "--jobs", "1"]
    assert first["command"] == redo
    assert first["git_commit"] == "0123abc" and first["options"]["quick"] is False
    err, again = run_all()
    assert "tiny: done at this commit, skipped" in err and again == first
    # A table that is not what the manifest recorded, another commit, local changes: rerun.
    for change in ("table", "commit", "dirty"):
        if change == "table":
            (tmp_path / "tiny" / "tiny.csv").write_text("case,goodput_mbps\none,0\n")
        else:
            commit[0] = "4567def" + ("+dirty" if change == "dirty" else "")
        err, manifest = run_all()
        assert "[1/1] tiny (full)" in err, change
        assert manifest["git_commit"] == commit[0]
    assert "not a clean git checkout" in err
