"""CLI failure paths, in-process (no simulator core needed): one red sentence, no traceback."""

from __future__ import annotations

from pathlib import Path

import pytest

from l4sim import cli
from l4sim.errors import (
    ActionError,
    CoreError,
    EnvConfigError,
    L4simError,
    ScenarioError,
)

ROOT = Path(__file__).resolve().parents[1]


def run_main(args: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    with pytest.raises(SystemExit) as info:
        cli.main(args)
    out, err = capsys.readouterr()
    return info.value.code, out, err


def one_line(err: str) -> str:
    lines = [line for line in err.splitlines() if line.strip()]
    assert len(lines) == 1, err
    assert lines[0].startswith("error: ") and "Traceback" not in err
    return lines[0]


@pytest.mark.parametrize(
    ("args", "fragment"),
    [
        (["run", "does-not-exist.toml"], "does not exist"),
        (["run", str(ROOT / "scenarios" / "demo.toml"), "--seed", "x"], "--seed"),
        (["run", str(ROOT / "scenarios" / "demo.toml"), "--seed", "-1"], "--seed"),
        (["run", str(ROOT / "scenarios" / "demo.toml"), "--duration", "5"], "no unit"),
        (["run", str(ROOT / "scenarios" / "demo.toml"), "--duration", "1s"], "flows[1].start"),
        (["run", str(ROOT / "scenarios" / "demo.toml"), "--bogus"], "--bogus"),
        (["run"], "Missing argument"),
        (["nonsense"], "nonsense"),
        (["plot", "no-such-dir"], "does not exist"),
    ],
)
def test_bad_input_exits_2(args, fragment, capsys, monkeypatch, tmp_path):
    monkeypatch.chdir(tmp_path)
    code, _, err = run_main(args, capsys)
    assert code == 2
    assert fragment in one_line(err)


def test_bad_scenario_file(tmp_path, capsys):
    bad = tmp_path / "bad.toml"
    bad.write_text('duration = "1s"\n[topology]\npreset = "ring"\n')
    code, _, err = run_main(["run", str(bad), "--out", str(tmp_path / "o")], capsys)
    assert code == 2
    line = one_line(err)
    assert "bad.toml" in line and "topology.preset" in line and "'ring'" in line


def test_unexpected_failure_exits_1(tmp_path, capsys, monkeypatch):
    def explode(*args, **kwargs):
        raise RuntimeError("boom\nsecond line")

    monkeypatch.setattr(cli, "_run_and_write", explode)
    monkeypatch.delenv("L4SIM_DEBUG", raising=False)
    code, _, err = run_main(
        ["run", str(ROOT / "scenarios" / "demo.toml"), "--out", str(tmp_path / "o")], capsys
    )
    assert code == 1
    line = one_line(err)
    assert "internal error" in line and "boom" in line


@pytest.mark.parametrize(
    ("error", "code"),
    [(ScenarioError, 2), (EnvConfigError, 2), (ActionError, 2), (CoreError, 1), (L4simError, 2)],
)
def test_every_error_class_is_one_sentence(error, code, tmp_path, capsys, monkeypatch):
    def refuse(*args, **kwargs):
        raise error(f"{error.__name__} says no")

    monkeypatch.setattr(cli, "_run_and_write", refuse)
    monkeypatch.delenv("L4SIM_DEBUG", raising=False)
    got, _, err = run_main(
        ["run", str(ROOT / "scenarios" / "demo.toml"), "--out", str(tmp_path / "o")], capsys
    )
    assert got == code
    assert one_line(err) == f"error: {error.__name__} says no"


def test_help_and_version(capsys):
    code, out, _ = run_main(["--help"], capsys)
    assert code == 0 and "run" in out and "plot" in out and "demo" in out
    code, out, _ = run_main([], capsys)
    assert code == 0 and "Usage" in out
    code, out, _ = run_main(["version"], capsys)
    assert code == 0 and out.startswith("l4sim ")
