"""The rule for input files: regular files only, size-capped, checked before they are read,
a FIFO never blocks; every path a scenario names is resolved beside the scenario file; a
weights file with a non-finite number is refused."""

from __future__ import annotations

import json
import os
import shutil
import struct
import subprocess
import time
from pathlib import Path

import pytest

pytest.importorskip("l4sim._core")

from cli_run import run_l4sim
from l4sim import files
from l4sim.errors import ScenarioError
from l4sim.scenario import load, loads
from l4sim.sweep import SweepError, load_spec

ROOT = Path(__file__).resolve().parents[1]
LFQ_WEIGHTS = ROOT / "python" / "l4sim" / "data" / "lfq" / "online.safetensors"


def two_host(qdisc: str = "", link: str = "") -> str:
    return f"""
name = "t"
duration = "200ms"
[topology]
preset = "two_host"
rate = "10Mbps"
delay = "5ms"
{link}
qdisc = {{ kind = "fq"{qdisc} }}
[[flows]]
cca = "cubic"
"""


@pytest.fixture
def fifo(tmp_path: Path) -> Path:
    path = tmp_path / "fifo"
    os.mkfifo(path)
    return path


def one_sentence(proc: subprocess.CompletedProcess[str]) -> str:
    lines = [x for x in proc.stderr.splitlines() if x.strip()]
    assert proc.returncode == 2, proc.stderr[-2000:]
    assert len(lines) == 1 and lines[0].startswith("error: "), proc.stderr[-2000:]
    return lines[0]


# -- special files -----------------------------------------------------------------------------


@pytest.mark.parametrize("kind", ["dev_zero", "fifo"])
def test_run_refuses_a_special_file_at_once(kind: str, fifo: Path, tmp_path: Path) -> None:
    """`l4sim run /dev/zero` read without end (2.9 GB in 10 s) and a FIFO blocked forever."""
    path = "/dev/zero" if kind == "dev_zero" else str(fifo)
    start = time.monotonic()
    line = one_sentence(run_l4sim("run", path, "-q", cwd=tmp_path, timeout=30))
    assert time.monotonic() - start < 20
    assert f"scenario file {path!r} is not a regular file" in line


def test_an_oversized_scenario_file_is_refused_unread(tmp_path: Path) -> None:
    big = tmp_path / "big.toml"
    with open(big, "wb") as fh:
        fh.truncate(files.MAX_SCENARIO_BYTES + 1)  # sparse: nothing to read
    with pytest.raises(ScenarioError, match=r"is 64 MiB, more than the 64 MiB a scenario file"):
        load(big)
    with pytest.raises(ScenarioError, match="is a directory"):
        load(tmp_path)
    with pytest.raises(ScenarioError, match="does not exist"):
        load(tmp_path / "missing.toml")


def test_read_input_does_not_block_on_a_fifo_even_with_a_writer_gone(fifo: Path) -> None:
    with pytest.raises(ValueError, match="not a regular file"):
        files.read_input(fifo, "thing", 10)
    (fifo.parent / "ok").write_bytes(b"12345")
    assert files.read_input(fifo.parent / "ok", "thing", 5) == b"12345"
    with pytest.raises(ValueError, match="5 bytes, more than the 4 bytes a thing may have"):
        files.read_input(fifo.parent / "ok", "thing", 4)


def test_a_sweep_spec_and_its_base_must_be_regular_files(fifo: Path, tmp_path: Path) -> None:
    with pytest.raises(SweepError, match="not a regular file"):
        load_spec("/dev/zero")
    with pytest.raises(SweepError, match="not a regular file"):
        load_spec(fifo)
    spec = tmp_path / "spec.toml"
    spec.write_text(f'base = "{fifo.name}"\n')
    with pytest.raises(SweepError, match=r"base scenario .*fifo' is not a regular file"):
        load_spec(spec)


@pytest.mark.parametrize("key", ["lfq_policy", "policy"])
@pytest.mark.parametrize("target", ["/dev/zero", "fifo"])
def test_a_weights_file_must_be_a_regular_file(
    key: str, target: str, fifo: Path, tmp_path: Path
) -> None:
    """lfq_policy = "/dev/zero" read without end in the core, and a FIFO blocked."""
    path = str(fifo) if target == "fifo" else target
    value = f'"{path}"' if key == "lfq_policy" else f'{{ kind = "lfq", weights = "{path}" }}'
    start = time.monotonic()
    with pytest.raises(ScenarioError, match="is not a regular file"):
        loads(two_host(f", {key} = {value}"))
    assert time.monotonic() - start < 5


def test_a_trace_must_be_a_regular_file(fifo: Path) -> None:
    for path in ("/dev/zero", str(fifo)):
        with pytest.raises(ScenarioError, match=r"trace file .* is not a regular file"):
            loads(two_host(link=f'trace = "{path}"'))


def test_the_core_refuses_special_and_oversized_weights_files(tmp_path: Path) -> None:
    from l4sim import _core

    with pytest.raises(ValueError, match="not a regular file"):
        _core.policy_infer("lfq", "/dev/zero", [])
    big = tmp_path / "big.safetensors"
    with open(big, "wb") as fh:
        fh.truncate(files.MAX_WEIGHTS_BYTES + 1)
    with pytest.raises(ValueError, match="more than the 67108864 bytes"):
        _core.policy_infer("lfq", str(big), [])


# -- non-finite weights ------------------------------------------------------------------------


@pytest.mark.parametrize("value", [float("nan"), float("inf")])
def test_a_weights_file_with_a_non_finite_number_is_refused(value: float, tmp_path: Path) -> None:
    """NaN LFQ weights were accepted (every limit NaN: goodput 3.1 -> 1.3 Mbit/s)."""
    data = bytearray(LFQ_WEIGHTS.read_bytes())
    (n,) = struct.unpack("<Q", data[:8])
    header = json.loads(data[8 : 8 + n])
    name = sorted(k for k in header if k != "__metadata__")[0]
    start = 8 + n + header[name]["data_offsets"][0]
    data[start : start + 4] = struct.pack("<f", value)
    bad = tmp_path / "bad.safetensors"
    bad.write_bytes(bytes(data))
    with pytest.raises(ScenarioError, match=rf"{name}\[0\] is (NaN|inf), not a finite number"):
        loads(two_host(f', lfq_policy = "{bad}"'))


# -- one resolution rule ----------------------------------------------------------------------


def test_weights_and_traces_resolve_beside_the_scenario_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A trace was taken beside the scenario and a weights file from the working directory."""
    here = tmp_path / "experiment"
    here.mkdir()
    shutil.copy(LFQ_WEIGHTS, here / "w.safetensors")
    (here / "link.trace").write_text("\n".join(str(i) for i in range(1, 11)) + "\n")
    text = two_host(
        ', policy = { kind = "lfq", weights = "w.safetensors" }', 'trace = "link.trace"'
    )
    (here / "s.toml").write_text(text)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    sc = load(here / "s.toml")
    qdisc = sc.topology.qdisc
    assert qdisc.policy.weights == str(here / "w.safetensors")
    assert sc.topology.trace == str(here / "link.trace")
    # The same relative names from the working directory are not found there.
    with pytest.raises(ScenarioError, match=r"w\.safetensors"):
        loads(text)
    # The effective scenario (scenario.toml in a result) names the absolute files.
    assert str(here / "w.safetensors") in sc.to_toml()


def test_a_sweep_base_resolves_its_paths_beside_itself(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    here = tmp_path / "base"
    here.mkdir()
    shutil.copy(LFQ_WEIGHTS, here / "w.safetensors")
    (here / "s.toml").write_text(two_host(', policy = { kind = "lfq", weights = "w.safetensors" }'))
    (tmp_path / "spec.toml").write_text('base = "base/s.toml"\nseeds = 2\n')
    monkeypatch.chdir(tmp_path / "base")  # not where the spec is, nor its parent
    from l4sim.sweep import points

    pts = points(load_spec(tmp_path / "spec.toml"))
    assert [p.error for p in pts] == [None, None]
    assert pts[0].scenario is not None
    assert pts[0].scenario["topology"]["qdisc"]["policy"]["weights"] == str(here / "w.safetensors")
