"""The Python side against the core's contract (`l4sim._core.contract()`, generated from the
Rust types by crates/l4sim-core/src/contract.rs): a core field, kind or column added
without its Python counterpart (or renamed on one side only) fails here."""

from __future__ import annotations

import re
import typing
from pathlib import Path

import pytest

import l4sim
from l4sim import _core
from l4sim.engine.simulation import FLOW_SCHEMA, QUEUE_SCHEMA
from l4sim.scenario import qdiscs
from l4sim.scenario.ccas import CCA_KINDS, CCA_MODELS
from l4sim.scenario.flows import ControlFlow, TcpFlow, UdpFlow

ROOT = Path(__file__).resolve().parents[1]
CONTRACT = _core.contract()


def _qdisc_models() -> dict[str, type[qdiscs._QdiscBase]]:
    union = typing.get_args(qdiscs.Qdisc)[0]
    return {m.model_fields["kind"].default: m for m in typing.get_args(union)}


def _diff(what: str, python: set[str], core: set[str]) -> str:
    return (
        f"{what}: core only {sorted(core - python)}, Python only {sorted(python - core)} "
        "(add the field to the Python model or map its name in _core_keys)"
    )


def test_qdisc_kinds_match_the_core():
    core = list(CONTRACT["qdiscs"])
    assert set(qdiscs.QDISC_KINDS) == set(core)
    assert set(_qdisc_models()) == set(core)


@pytest.mark.parametrize("kind", list(CONTRACT["qdiscs"]))
def test_every_qdisc_parameter_has_a_python_field(kind: str):
    python = _qdisc_models()[kind].core_names()
    core = set(CONTRACT["qdiscs"][kind])
    assert python == core, _diff(f"qdisc {kind!r}", python, core)


def test_tcp_options_match_the_core():
    python = TcpFlow.core_names()
    core = set(CONTRACT["tcp"])
    assert python == core, _diff("TCP options", python, core)


def test_udp_and_control_options_match_the_core():
    # Every UdpConfig key, the media tables (source, feedback, cc) included: the defaults
    # leave those out when unset, so that a plain UDP flow's configuration reads as before.
    core = set(CONTRACT["schemas"]["config"]["$defs"]["UdpConfig"]["properties"])
    assert set(CONTRACT["udp"]) == core - {"source", "feedback", "cc"}
    assert UdpFlow.core_names() == core, _diff("UDP options", UdpFlow.core_names(), core)
    # A control flow sends what it is given: no rate, no media.
    assert ControlFlow.core_names() == set(CONTRACT["udp"]) - {"rate_bps"}


def test_cca_kinds_match_the_core_in_order():
    assert list(CCA_KINDS) == CONTRACT["cca_kinds"]
    assert [m.model_fields["kind"].default for m in CCA_MODELS] == CONTRACT["cca_kinds"]


@pytest.mark.parametrize("model", CCA_MODELS, ids=lambda m: m.model_fields["kind"].default)
def test_every_cca_option_has_a_python_field(model):
    """A CCA's options are its own config struct in the core (tcp/cc/<kind>.rs); the
    Python model has one field per option, under the same name, defaulting to the core."""
    kind = model.model_fields["kind"].default
    python, core = model.core_names(), set(CONTRACT["ccas"][kind])
    assert python == core, _diff(f"cca {kind!r}", python, core)
    assert all(model.model_fields[f].default is None for f in core)
    assert list(CONTRACT["ccas"]) == CONTRACT["cca_kinds"]


def test_series_columns_match_the_core():
    assert list(FLOW_SCHEMA) == CONTRACT["series"]["flows"]
    assert list(QUEUE_SCHEMA) == CONTRACT["series"]["queues"]


def test_environments_read_only_columns_the_core_writes():
    text = (ROOT / "python/l4sim/envs/features.py").read_text()
    flows = set(re.findall(r'\bf\["(\w+)"\]', text))
    queues = set(re.findall(r'\bq\["(\w+)"\]', text))
    paths = set(re.findall(r'\bp\["(\w+)"\]', text))
    assert flows and queues and paths
    assert flows <= set(CONTRACT["observation"]["flows"])
    assert queues <= set(CONTRACT["observation"]["queues"])
    assert paths <= set(CONTRACT["flow_path"])


def test_observations_carry_exactly_the_contract_columns():
    sim = l4sim.Simulation(l4sim.load(ROOT / "scenarios/demo.toml"))
    sim.run_until("1s")
    obs = sim.observe()
    assert list(obs["flows"]) == CONTRACT["observation"]["flows"]
    assert list(obs["queues"]) == CONTRACT["observation"]["queues"]
    assert list(sim._sim.paths()[0]) == CONTRACT["flow_path"]


def test_api_doc_names_every_column_and_kind():
    doc = (ROOT / "crates/l4sim-py/API.md").read_text()
    for col in CONTRACT["observation"]["flows"] + CONTRACT["observation"]["queues"]:
        assert f"`{col}`" in doc, f"API.md does not document observation column {col!r}"


def test_qdisc_doc_table_lists_every_core_parameter():
    """docs/qdiscs.md's table (rows `| **kind** | scenario key | core key | ...`) names each
    kind's core parameters, no more and no fewer."""
    documented: dict[str, set[str]] = {}
    kind = None
    for line in (ROOT / "docs/qdiscs.md").read_text().splitlines():
        if not line.startswith("|"):
            if kind is not None:
                break  # the end of the table
            continue
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if m := re.fullmatch(r"\*\*(\w+)\*\*", cells[0]):
            kind = m.group(1)
        if kind is not None:
            documented.setdefault(kind, set()).update(re.findall(r"`(\w+)`", cells[2]))
    assert set(documented) == set(CONTRACT["qdiscs"])
    for k, params in CONTRACT["qdiscs"].items():
        assert documented[k] == set(params), _diff(
            f"docs/qdiscs.md {k!r}", documented[k], set(params)
        )


def test_core_errors_arrive_as_the_packages_exceptions():
    with pytest.raises(l4sim.CoreError, match="invalid configuration"):
        _core.Simulation('{"duration_ns": 1}')
    sim = l4sim.Simulation(l4sim.load(ROOT / "scenarios/demo.toml"))
    with pytest.raises(l4sim.ActionError, match="no link named"):
        sim._sim.apply({"kind": "set_queue_limit", "link": "nowhere", "packets": 5})
    with pytest.raises(l4sim.ActionError, match="not a TCP flow"):
        sim._sim.apply({"kind": "set_cwnd", "flow": 99, "cwnd": 5})


def test_run_writes_the_summary_the_contract_describes(tmp_path: Path):
    """`l4sim run`'s summary.json (the core's summary plus what run.py adds), a whole run and
    an interrupted one, against the contract's schema with no field left unnamed; the
    emulator's writer is checked against the same schema in tests/test_emulate.py."""
    import json

    jsonschema = pytest.importorskip("jsonschema")
    from l4sim.engine.results import write
    from l4sim.schema.summary import summary_schema

    sc = l4sim.load(ROOT / "scenarios" / "l4s_dualpi2.toml").model_copy(
        update={"duration": 500_000_000}
    )
    res = l4sim.run(sc)
    write(res, tmp_path)
    schema = summary_schema()
    jsonschema.validate(json.loads((tmp_path / "summary.json").read_text()), schema)
    partial = dict(res.summary, partial=True, interrupted_at_s=0.25)
    jsonschema.validate(json.loads(json.dumps(partial)), schema)
    with pytest.raises(jsonschema.ValidationError, match="unexpected"):
        jsonschema.validate(json.loads(json.dumps(dict(partial, surprise=1))), schema)


def test_contract_version_names_the_policy_and_set_qdisc_change():
    """Version 4: learned policies attach only through ``policy``; ``set_qdisc`` replaced
    ``set_dualpi2`` / ``set_flow_limit`` (read, deprecated, by the binding)."""
    assert CONTRACT["version"] == 4
    kinds = {a["properties"]["kind"]["const"] for a in CONTRACT["schemas"]["action"]["oneOf"]}
    assert "set_qdisc" in kinds and not {"set_dualpi2", "set_flow_limit"} & kinds
    for kind in ("fq", "dualpi2", "fq_l4s"):
        assert not [k for k in CONTRACT["qdiscs"][kind] if "lfq" in k or "a3c" in k], kind


def test_dualpi2_target_has_one_unit_and_one_set_of_bounds():
    """The PI target: ns in the core's config, the contract and set_qdisc, 1 ns to 10 s;
    the scenario model refuses what the core refuses (0 included)."""
    (alt,) = (
        a
        for a in CONTRACT["schemas"]["config"]["$defs"]["QdiscConfig"]["oneOf"]
        if a["properties"]["kind"]["const"] == "dualpi2"
    )
    bounds = alt["properties"]["target_ns"]
    assert (bounds["minimum"], bounds["maximum"]) == (1, qdiscs.PI_TARGET_MAX_NS)
    assert qdiscs.DualPi2(target="10s").target == qdiscs.PI_TARGET_MAX_NS
    for bad in ("0ms", "10000000001ns", "11s"):
        with pytest.raises(ValueError, match="target"):
            qdiscs.DualPi2(target=bad)
    topo = {"preset": "two_host", "rate": "10Mbps", "delay": "10ms", "qdisc": "dualpi2"}
    sim = l4sim.Simulation(l4sim.Scenario.parse({"duration": "1s", "topology": topo}))
    link = sim.observe()["queues"]["link"][0]
    for bad in (0, 10e9 + 1):
        with pytest.raises(l4sim.errors.ActionError, match="outside 1 ns to 10 s"):
            sim.apply({"kind": "set_qdisc", "link": link, "params": {"target_ns": bad}})
    sim.apply({"kind": "set_qdisc", "link": link, "params": {"target_ns": 10e9}})
