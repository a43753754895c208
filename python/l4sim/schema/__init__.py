"""JSON Schemas of the files users write: scenarios and sweep specs (``l4sim schema``).

Both are generated, never written by hand: the scenario schema from the pydantic models
(:class:`l4sim.scenario.Scenario`, with the unit strings' patterns from
:mod:`l4sim.scenario.fields`) plus what the models accept through their shorthands
(``cca = "cubic"``, ``qdisc = "fifo"``, ``delack = false``, a flow without ``kind``), and
each field's description from the core's own schema (the Rust doc comments, which cite the
RFC or Linux function a parameter comes from). The sweep spec's schema is built from the
keys :mod:`l4sim.sweep` reads. Copies ship in the package (``l4sim/data/schema/``) so an
editor can validate TOML as it is typed; ``tests/test_schema.py`` fails when a shipped copy
is stale (``python scripts/gen_docs.py`` rewrites it).
"""

from __future__ import annotations

import copy
import json
import typing
from functools import cache
from importlib.resources import files
from typing import Any

from l4sim.scenario import Scenario
from l4sim.scenario.ccas import CCA_KINDS, CCA_MODELS
from l4sim.scenario.flows import TcpFlow
from l4sim.scenario.media import MEDIA_MODELS, SHORTHAND_KINDS
from l4sim.scenario.qdiscs import QDISC_KINDS, Qdisc

__all__ = [
    "SCHEMA_KINDS",
    "core_description",
    "core_descriptions",
    "schema",
    "schema_json",
    "shipped_schema",
]

DIALECT = "https://json-schema.org/draft/2020-12/schema"
SCHEMA_KINDS = ("scenario", "sweep")
DOCS = "docs/reference/schema.md"
_QDISC_MODELS = frozenset(m.__name__ for m in typing.get_args(typing.get_args(Qdisc)[0]))
#: Models whose keys the core scopes by their ``kind`` (a qdisc's, a CCA's or a media
#: source's own table).
_KIND_SCOPED = _QDISC_MODELS | {m.__name__ for m in CCA_MODELS} | {m.__name__ for m in MEDIA_MODELS}


@cache
def core_descriptions() -> dict[tuple[str, str], str]:
    """The core configuration's field descriptions (Rust doc comments) by (scope, config.rs
    key): scope is a qdisc's or a CCA's kind inside its variant, "" elsewhere."""
    from l4sim.native import core

    out: dict[tuple[str, str], str] = {}

    def walk(node: Any, scope: str) -> None:
        if isinstance(node, dict):
            props = node.get("properties") or {}
            kind = props.get("kind", {}).get("const") if isinstance(props, dict) else None
            scope = kind if isinstance(kind, str) else scope
            for key, value in props.items():
                text = value.get("description") if isinstance(value, dict) else None
                if text:
                    out.setdefault((scope, key), " ".join(text.split()))
            for value in node.values():
                walk(value, scope)
        elif isinstance(node, list):
            for value in node:
                walk(value, scope)

    walk(core().contract()["schemas"]["config"], "")
    return out


def core_description(key: str, scope: str = "") -> str | None:
    """The core's description of config.rs ``key`` (in qdisc or CCA ``scope`` when given)."""
    found = core_descriptions()
    return found.get((scope, key)) or found.get(("", key))


def _models() -> dict[str, Any]:
    """Every model class reachable from ``Scenario``, by its ``$defs`` name."""
    seen: dict[str, Any] = {}

    def visit(model: Any) -> None:
        if model.__name__ in seen:
            return
        seen[model.__name__] = model
        for info in model.model_fields.values():
            for tp in _types(info.annotation) + [m for m in info.metadata if isinstance(m, type)]:
                if isinstance(tp, type) and hasattr(tp, "model_fields"):
                    visit(tp)

    visit(Scenario)
    for m in CCA_MODELS:
        visit(m)
    return seen


def _types(tp: Any) -> list[Any]:
    out = [tp]
    for arg in typing.get_args(tp):
        out.extend(_types(arg))
    return out


def _describe(defs: dict[str, Any]) -> None:
    """Give every property without a description the core's description of the key it
    maps to (``_core_keys``), when the core has one."""
    models = _models()
    for name, node in defs.items():
        model = models.get(name)
        mapping = getattr(model, "_core_keys", {}) if model is not None else {}
        for key, prop in (node.get("properties") or {}).items():
            if key == "kind" and "const" in prop:
                # The table's tag: the core's "kind" keys (a policy's …) describe others.
                prop.setdefault("description", f'Selects this table: `"{prop["const"]}"`.')
                continue
            target = mapping.get(key, key)
            if callable(target):
                keys = getattr(target, "core_keys", ())
                target = keys[0] if keys else key
            kind = model.model_fields.get("kind") if model is not None else None
            scope = kind.default if kind is not None and name in _KIND_SCOPED else ""
            text = core_description(str(target), scope or "")
            if text:
                unit = prop.get("description")
                prop["description"] = f"{text} ({unit})" if unit else text


def _kind_shorthand(node: dict[str, Any], kinds: tuple[str, ...]) -> dict[str, Any]:
    return {"anyOf": [{"type": "string", "enum": list(kinds)}, node]}


def _rewrite(node: Any) -> Any:
    """The shorthands the models accept before validation, in JSON Schema terms."""
    if isinstance(node, list):
        return [_rewrite(x) for x in node]
    if not isinstance(node, dict):
        return node
    node = {k: _rewrite(v) for k, v in node.items()}
    # TOML has no null: an optional key is simply left out.
    alternatives = [a for a in node.get("anyOf", []) if a != {"type": "null"}]
    if "anyOf" in node and len(alternatives) < len(node["anyOf"]):
        node.pop("anyOf")
        if node.get("default", 0) is None:
            node.pop("default")
        node = (
            {**alternatives[0], **node}
            if len(alternatives) == 1
            else {"anyOf": alternatives, **node}
        )
    mapping = (node.get("discriminator") or {}).get("mapping") or {}
    if set(mapping) == set(CCA_KINDS):
        return _kind_shorthand(node, CCA_KINDS)
    if set(mapping) == set(QDISC_KINDS):
        return _kind_shorthand(node, QDISC_KINDS)
    for kinds in SHORTHAND_KINDS:
        if mapping and set(mapping) == set(kinds):
            return _kind_shorthand(node, kinds)
    if set(mapping) == {"tcp", "udp", "control"}:
        # A flow without ``kind`` is TCP: TcpFlow matches it, the others require the key.
        node.pop("discriminator")
    return node


def _scenario() -> dict[str, Any]:
    raw = Scenario.model_json_schema(mode="validation")
    defs = raw.get("$defs", {})
    _describe(defs)
    tcp = defs[TcpFlow.__name__]
    tcp["required"] = [k for k in tcp.get("required", []) if k != "kind"]
    delack = tcp["properties"]["delack"]
    delack["anyOf"] = [{"type": "boolean"}, *delack.get("anyOf", [])]
    out = _rewrite(raw)
    out["$schema"] = DIALECT
    out["$id"] = "https://l4sim.invalid/schema/scenario.schema.json"
    out["title"] = "l4sim scenario"
    out["description"] = (
        "An l4sim scenario file (TOML): topology, flows and run parameters. "
        f"Reference: {DOCS} and docs/reference/scenario.md."
    )
    return out


def _sweep() -> dict[str, Any]:
    from l4sim.sweep.spec import _DISTRIBUTIONS, _TOP_KEYS, MAX_POINTS

    scenario = _scenario()
    defs = scenario.pop("$defs")
    for key in ("$schema", "$id"):
        scenario.pop(key)
    distribution = {
        "type": "object",
        "description": "A drawn value: uniform = [low, high] (numbers or unit strings with "
        "the same unit), or choice = [values ...].",
        "minProperties": 1,
        "maxProperties": 1,
        "properties": {
            "uniform": {"type": "array", "minItems": 2, "maxItems": 2},
            "choice": {"type": "array", "minItems": 1},
        },
        "additionalProperties": False,
    }
    assert set(distribution["properties"]) == set(_DISTRIBUTIONS)
    properties: dict[str, Any] = {
        "name": {"type": "string", "description": "The sweep's name (default output out/NAME)."},
        "base": {
            "description": "The base scenario: a path relative to the spec, or a [base] table.",
            "anyOf": [{"type": "string"}, scenario],
        },
        "seeds": {
            "description": "Seeds for every point: a count N (1..N) or a list of seeds.",
            "anyOf": [
                {"type": "integer", "minimum": 1, "maximum": MAX_POINTS},
                {"type": "array", "items": {"type": "integer", "minimum": 0}, "minItems": 1},
            ],
        },
        "keep_results": {
            "type": "boolean",
            "description": "Also write each point's results to DIR/runs/<point>/.",
        },
        "grid": {
            "type": "object",
            "description": "Dotted scenario keys ('topology.bottleneck.rate') and the list of "
            "values to take; every combination is a point.",
            "additionalProperties": {"type": "array", "minItems": 1},
        },
        "draw": {
            "type": "object",
            "description": "count random draws (seeded by seed) of dotted keys.",
            "properties": {
                "count": {"type": "integer", "minimum": 1},
                "seed": {"type": "integer"},
            },
            "required": ["count"],
            "additionalProperties": distribution,
        },
    }
    assert set(properties) == set(_TOP_KEYS), "the sweep schema lags l4sim.sweep's keys"
    return {
        "$schema": DIALECT,
        "$id": "https://l4sim.invalid/schema/sweep.schema.json",
        "title": "l4sim sweep spec",
        "description": f"An l4sim sweep spec (TOML). Reference: docs/experiments.md, {DOCS}.",
        "type": "object",
        "properties": properties,
        "required": ["base"],
        "additionalProperties": False,
        "$defs": defs,
    }


def schema(kind: str = "scenario") -> dict[str, Any]:
    """The JSON Schema (draft 2020-12) of a scenario file or (``"sweep"``) a sweep spec."""
    if kind not in SCHEMA_KINDS:
        raise ValueError(f"schema kind {kind!r} is not one of {', '.join(SCHEMA_KINDS)}")
    return copy.deepcopy(_scenario() if kind == "scenario" else _sweep())


def schema_json(kind: str = "scenario") -> str:
    """:func:`schema` as the text shipped in ``l4sim/data/schema/KIND.schema.json``."""
    return json.dumps(schema(kind), indent=2, ensure_ascii=False, sort_keys=False) + "\n"


def shipped_schema(kind: str = "scenario") -> str:
    """The copy shipped in the package (what editors point at)."""
    return (files("l4sim") / "data" / "schema" / f"{kind}.schema.json").read_text("utf-8")
