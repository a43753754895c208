"""The JSON Schema of ``summary.json``, for both of its writers.

The core's part (``sim_time_s``, ``flows``, ``queues`` …) comes from the contract
(``_core.contract()["schemas"]["summary"]``, generated from ``crates/l4sim-core/src/summary.rs``
and its doc comments). ``l4sim run`` (:mod:`l4sim.run`) adds :data:`RUN_FIELDS`; ``l4sim
emulate`` (:mod:`l4sim.emulate`) writes the same summary from the kernel's ``TCP_INFO`` and the
router, with :data:`EMULATION_FIELDS` on top, per-flow :data:`EMULATION_FLOW_FIELDS`, and
``null`` for :data:`KERNEL_UNKNOWN` (what the kernel does not report). :func:`summary_schema`
puts them together strictly (no field the schema does not name), so a field added to one
writer only, or a value of another type, fails the tests that validate both
(tests/test_contract.py, tests/test_emulate.py); ``scripts/gen_docs.py`` documents the same.
"""

from __future__ import annotations

import copy
from typing import Any

from l4sim.native import core

__all__ = [
    "EMULATION_FIELDS",
    "EMULATION_FLOW_FIELDS",
    "KERNEL_UNKNOWN",
    "RUN_FIELDS",
    "RUN_FLOW_FIELDS",
    "summary_schema",
]

#: What ``l4sim run`` adds to the core's summary: name -> (JSON type, meaning).
RUN_FIELDS: dict[str, tuple[str, str]] = {
    "scenario": ("string", "The scenario's name."),
    "wall_time_s": ("number", "Wall-clock seconds spent simulating."),
    "l4sim_version": ("string", "The l4sim version that wrote the file."),
    "partial": (
        "boolean",
        "True when the run was stopped early (Ctrl-C): the results cover "
        "the simulated time so far.",
    ),
    "interrupted_at_s": ("number", "Where a partial run stopped (simulated s); only when partial."),
}

#: What ``l4sim run`` adds per flow.
RUN_FLOW_FIELDS: dict[str, tuple[str | list[str], str]] = {
    "ecn": (
        ["string", "null"],
        "The ECN the flow's packets use: a TCP flow's negotiated mode (`\"accecn\"`, "
        '`"ecn"` or `"off"`, including what its congestion control forces: Prague '
        'AccECN with ECT(1), DCTCP ECN); a UDP or control flow\'s codepoint (`"ect1"` …).',
    ),
}

#: What ``l4sim emulate`` adds at the top level.
EMULATION_FIELDS: dict[str, tuple[str, str]] = {
    "emulation": (
        "object",
        "The emulated run's machine and router: `kernel` (uname), `router_elapsed_s`, "
        "`router` (packet counters), `router_lateness_us` (how late the router handed packets "
        "over), `scalable_tcp` (the scalable congestion controls this kernel offers).",
    ),
}

#: What ``l4sim emulate`` adds per flow.
EMULATION_FLOW_FIELDS: dict[str, tuple[str | list[str], str]] = {
    "kernel_cca": (["string", "null"], "The kernel's congestion control the socket ran."),
    "bytes_received": ("integer", "Payload bytes the receiving socket read."),
    "delivered_ce": (
        ["integer", "null"],
        "TCP: `tcpi_delivered_ce`, the packets acknowledged as CE-marked (with classic ECN, "
        "acknowledged while ECE was set).",
    ),
    "ecn_marks_received": (
        ["integer", "null"],
        "UDP: CE-marked packets the receiver read.",
    ),
}

#: Per-flow fields of the core's summary the kernel does not report: ``null`` when emulated.
KERNEL_UNKNOWN: dict[str, str] = {
    "timeouts": "TCP_INFO counts backoffs, not retransmission timeouts per flow",
    "delivery_rate_bps": "the kernel's rate samples are read as a time mean instead",
}


def _strict(node: Any) -> None:
    if isinstance(node, dict):
        if node.get("type") == "object" or "properties" in node:
            node.setdefault("additionalProperties", False)
        for v in node.values():
            _strict(v)
    elif isinstance(node, list):
        for v in node:
            _strict(v)


def _nullable(prop: dict[str, Any]) -> None:
    kind = prop.get("type")
    if isinstance(kind, str):
        prop["type"] = [kind, "null"]
    elif isinstance(kind, list) and "null" not in kind:
        prop["type"] = [*kind, "null"]


def summary_schema(emulated: bool = False) -> dict[str, Any]:
    """The schema a ``summary.json`` written by ``l4sim run`` (or, ``emulated``, by ``l4sim
    emulate``) satisfies, no field left unnamed."""
    schema = copy.deepcopy(core().contract()["schemas"]["summary"])
    _strict(schema)
    props = schema.setdefault("properties", {})
    for key, (kind, text) in RUN_FIELDS.items():
        props[key] = {"type": kind, "description": text}
    flow = schema["$defs"][props["flows"]["items"]["$ref"].rsplit("/", 1)[-1]]
    for key, (kind, text) in RUN_FLOW_FIELDS.items():
        flow["properties"][key] = {"type": kind, "description": text}
    if emulated:
        for key, (kind, text) in EMULATION_FIELDS.items():
            props[key] = {"type": kind, "description": text}
        for key, (kind, text) in EMULATION_FLOW_FIELDS.items():
            flow["properties"][key] = {"type": kind, "description": text}
        for key in KERNEL_UNKNOWN:
            _nullable(flow["properties"][key])
    return schema


_JSON_TYPES: dict[str, tuple[type, ...]] = {
    "object": (dict,),
    "array": (list,),
    "string": (str,),
    "number": (int, float),
    "integer": (int,),
    "boolean": (bool,),
    "null": (type(None),),
}


def shape_problem(value: Any, node: dict[str, Any] | None = None, where: str = "") -> str | None:
    """Where ``value`` (a ``summary.json`` read back) does not have the types of
    :func:`summary_schema` (its emulated form, the wider one), as a phrase; None when it
    does. Fields the schema does not name and fields left out are allowed (files from other
    versions); only a value of the wrong type is a problem, since readers would index it."""
    root = summary_schema(emulated=True)
    return _type_problem(value, root if node is None else node, root["$defs"], where or "the file")


def _type_problem(value: Any, node: dict[str, Any], defs: dict[str, Any], where: str) -> str | None:
    if "$ref" in node:
        node = defs[node["$ref"].rsplit("/", 1)[-1]]
    kinds = node.get("type")
    if kinds is not None:
        kinds = [kinds] if isinstance(kinds, str) else kinds
        allowed = tuple(t for k in kinds for t in _JSON_TYPES.get(k, (object,)))
        is_bool = isinstance(value, bool)
        if not isinstance(value, allowed) or (is_bool and "boolean" not in kinds):
            return f"{where} is {type(value).__name__}, not {' or '.join(kinds)}"
    if isinstance(value, dict):
        for key, sub in node.get("properties", {}).items():
            if key in value:
                found = _type_problem(value[key], sub, defs, f"{where}[{key!r}]")
                if found:
                    return found
    if isinstance(value, list) and "items" in node:
        for i, item in enumerate(value):
            found = _type_problem(item, node["items"], defs, f"{where}[{i}]")
            if found:
                return found
    return None
