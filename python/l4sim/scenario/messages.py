"""Pydantic ``ValidationError`` to one sentence: the key path (``flows[2].cca``), the bad
value and what is allowed (:func:`_describe`)."""

from __future__ import annotations

import types
import typing
from collections.abc import Iterable
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ValidationError

from l4sim.units import UnitError


def _prefix(source: str | None) -> str:
    return f"{source}: " if source else ""


def _unwrap(tp: Any) -> Any:
    """Strip Annotated and Optional wrappers."""
    while True:
        origin = typing.get_origin(tp)
        if origin is Annotated:
            tp = typing.get_args(tp)[0]
            continue
        if origin in (typing.Union, types.UnionType):
            args = [a for a in typing.get_args(tp) if a is not type(None)]
            if len(args) == 1:
                tp = args[0]
                continue
        return tp


def _union_members(tp: Any) -> list[type[BaseModel]]:
    """Members of a tagged union; a tagged model on its own counts as a union of one."""
    if typing.get_origin(tp) in (typing.Union, types.UnionType):
        members = [_unwrap(a) for a in typing.get_args(tp)]
    else:
        members = [tp]
    return [
        m
        for m in members
        if isinstance(m, type) and issubclass(m, BaseModel) and _tag_of(m) is not None
    ]


def _field_by_key(model: type[BaseModel], key: str) -> Any:
    for fname, info in model.model_fields.items():
        if key in (fname, info.alias):
            return info.annotation
    return None


def _walk(root: type[BaseModel], loc: Iterable[int | str]) -> tuple[str, Any]:
    """Display path (``flows[2].cca``) for a pydantic ``loc`` from model ``root``, skipping
    union tags, and the type found at its end (a model class when the loc ends on a model)."""
    tp: Any = root
    parts: list[str] = []
    for item in loc:
        tp = _unwrap(tp)
        tagged = [m for m in _union_members(tp) if _tag_of(m) == item]
        if tagged:  # a discriminated-union tag: not part of the user's key path
            tp = tagged[0]
            continue
        if isinstance(item, int):
            parts.append(f"[{item}]")
            tp = typing.get_args(tp)[0] if typing.get_origin(tp) is list else None
            continue
        parts.append(("." if parts else "") + str(item))
        if isinstance(tp, type) and issubclass(tp, BaseModel):
            tp = _field_by_key(tp, str(item))
        else:
            tp = None
    tp = _unwrap(tp)
    return "".join(parts), tp


def _tag_of(model: type[BaseModel]) -> str | None:
    for key in ("kind", "preset"):
        info = model.model_fields.get(key)
        if info is not None and typing.get_origin(info.annotation) is Literal:
            return typing.get_args(info.annotation)[0]
    return None


def _allowed_tags(tp: Any) -> list[str]:
    return [t for m in _union_members(tp) if (t := _tag_of(m)) is not None]


def _join_or(items: list[str]) -> str:
    quoted = [f"'{x}'" for x in items]
    if len(quoted) <= 1:
        return "".join(quoted)
    return ", ".join(quoted[:-1]) + " or " + quoted[-1]


REFERENCE = "docs/reference/scenario.md"
"""The page that lists every scenario key (named by errors about unknown keys)."""


def _shown(value: Any) -> str:
    """The bad value as the user wrote it, cut short when long (a 400-digit integer)."""
    text = repr(value)
    return text if len(text) <= 60 else f"{text[:40]}…{text[-8:]}"


def _describe(exc: ValidationError, root: type[BaseModel]) -> str:
    """One sentence for the first error of validating ``root``: key path, bad value, what is
    allowed."""
    errors = exc.errors(include_url=False)
    first = errors[0]
    if first["type"] == "missing":
        # A misspelt key shows up as "missing" + "extra": name the misspelling, it's the cause.
        for other in errors[1:]:
            if other["type"] == "extra_forbidden" and other["loc"][:-1] == first["loc"][:-1]:
                missing = _walk(root, first["loc"])[0]
                return f"{_describe_one(other, root)} ({missing} is required)"
    return _describe_one(first, root)


def _describe_one(err: Any, root: type[BaseModel]) -> str:
    loc = err["loc"]
    path, tp = _walk(root, loc)
    kind = err["type"]
    value = err.get("input")
    ctx = err.get("ctx") or {}
    shown = _shown(value) if not isinstance(value, dict | list) else None
    what = f"{path} {shown}" if shown is not None and path else (path or "the scenario")

    if kind == "value_error":
        cause = ctx.get("error")
        if isinstance(cause, UnitError):
            return f"{path} {cause}" if path else str(cause)
        return f"{path}: {cause}" if path else str(cause)
    if kind == "missing":
        return f"{path} is required"
    if kind == "extra_forbidden":
        parent_path, parent = _walk(root, loc[:-1])
        where = f" in {parent_path}" if parent_path else ""
        allowed = ""
        if isinstance(parent, type) and issubclass(parent, BaseModel):
            keys = [info.alias or f for f, info in parent.model_fields.items()]
            allowed = f"; allowed keys{where}: {', '.join(keys)}"
        return f"{path} is not a known key{allowed} (every key: {REFERENCE})"
    if kind in ("union_tag_invalid", "union_tag_not_found"):
        key = ctx.get("discriminator", "'kind'").strip("'")
        allowed = _allowed_tags(tp)
        if kind == "union_tag_not_found":
            return f"{path} needs a {key} key; allowed {key}s: {_join_or(allowed)}"
        return f"{path}.{key} {ctx.get('tag')!r} is not known; allowed {key}s: {_join_or(allowed)}"
    if kind == "literal_error":
        return f"{what} is not allowed; allowed values: {ctx.get('expected')}"
    if kind in ("not_positive", "too_large"):
        return f"{what} {err['msg']}"
    if kind == "finite_number":
        return f"{what} is not a number; give a finite value (nan and inf are not allowed)"
    if kind in ("greater_than", "greater_than_equal", "less_than", "less_than_equal"):
        words = {
            "greater_than": "greater than",
            "greater_than_equal": "at least",
            "less_than": "less than",
            "less_than_equal": "at most",
        }
        bound = next(iter(ctx.values()))
        return f"{what} must be {words[kind]} {bound}"
    if kind in ("int_type", "int_parsing", "int_from_float"):
        return f"{what} is not a whole number"
    if kind in ("float_type", "float_parsing"):
        return f"{what} is not a number"
    if kind in ("bool_type", "bool_parsing"):
        return f"{what} must be true or false"
    if kind == "string_type":
        return f"{what} must be a string"
    if kind == "list_type":
        return f"{what} must be a list"
    if kind in ("model_type", "model_attributes_type", "dict_type"):
        return f"{what} must be a table of keys"
    msg = err["msg"]
    return f"{what}: {msg[:1].lower()}{msg[1:]}"
