"""Sweep specs: parse and check a spec (base scenario, grid, random draws, seeds) and expand
it into its points, each keyed by a hash of its resolved scenario. The spec's format is
described in :mod:`l4sim.sweep`, which runs the points; this module runs nothing."""

from __future__ import annotations

import copy
import hashlib
import itertools
import json
import math
import random
import tomllib
import warnings
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from l4sim import files
from l4sim.errors import L4simError, ScenarioError
from l4sim.scenario import Scenario
from l4sim.units import split_quantity

#: The most points a sweep may have (grid combinations x draws x seeds); a spec with more is
#: refused before any point is built (each takes ~3 KB and ~1 ms to build and check).
MAX_POINTS = 100_000
_TOP_KEYS = ("base", "seeds", "keep_results", "name", "grid", "draw")
_DISTRIBUTIONS = ("uniform", "choice")


class SweepError(L4simError):
    """A sweep spec or output directory that cannot be used (one sentence)."""


class SweepWarning(UserWarning):
    """A sweep spec that runs but probably not as meant (e.g. it varies nothing)."""


# --------------------------------------------------------------------------------------------
# The spec.


@dataclass
class Distribution:
    key: str
    kind: str  # "uniform" | "choice"
    values: list[Any]

    def draw(self, rng: random.Random) -> Any:
        if self.kind == "choice":
            return rng.choice(self.values)
        lo, hi = self.values
        if isinstance(lo, int) and isinstance(hi, int):
            return rng.randint(lo, hi)
        if isinstance(lo, str):
            (a, unit), (b, _) = split_quantity(lo), split_quantity(hi)
            return f"{rng.uniform(a, b):.6g}{unit}"
        return rng.uniform(float(lo), float(hi))


@dataclass
class SweepSpec:
    """A parsed sweep spec (see the module docstring)."""

    base: dict[str, Any]
    base_source: str
    grid: dict[str, list[Any]] = field(default_factory=dict)
    draws: list[Distribution] = field(default_factory=list)
    draw_count: int = 0
    draw_seed: int = 1
    seeds: list[int] | None = None
    keep_results: bool = False
    name: str = "sweep"
    base_dir: Path | None = None
    """Where the base scenario's relative paths (traces, weights) are resolved: beside its
    file, or beside the spec for an inline [base] (``l4sim.files.resolve``)."""

    def axes(self) -> list[str]:
        """The dotted keys that vary: grid keys, then drawn keys."""
        return list(self.grid) + [d.key for d in self.draws]

    def size(self) -> int:
        n = math.prod(len(v) for v in self.grid.values())
        return n * max(1, self.draw_count) * len(self.seeds or [None])


def _check_size(where: str, combos: int, draws: int, seeds: int) -> None:
    """Refuse a sweep of more than :data:`MAX_POINTS` points (before building any)."""
    factors = [(combos, "grid combination"), (max(1, draws), "draw"), (max(1, seeds), "seed")]
    total = math.prod(n for n, _ in factors)
    if total > MAX_POINTS:
        shown = " x ".join(f"{n:,} {what}{'s' if n != 1 else ''}" for n, what in factors)
        raise SweepError(
            f"{where}: the sweep has {total:,} points ({shown}), more than the {MAX_POINTS:,} a "
            "sweep may have; use fewer seeds, draws or grid values, or split it into sweeps"
        )


def _flatten(
    table: dict[str, Any], prefix: str = "", leaf: Callable[[Any], bool] = lambda v: False
):
    """``{"a": {"b": v}}`` -> ``{"a.b": v}`` (TOML's dotted keys nest; quoted ones do not)."""
    out: dict[str, Any] = {}
    for k, v in table.items():
        key = f"{prefix}{k}"
        if isinstance(v, dict) and not leaf(v):
            out.update(_flatten(v, key + ".", leaf))
        else:
            out[key] = v
    return out


def _parts(key: str) -> list[str | int]:
    return [int(p) if p.isdigit() else p for p in key.split(".")]


def _check_key(base: dict[str, Any], key: str, where: str) -> None:
    """The table (or list) that ``key`` sets a field of must exist in the base scenario."""
    node: Any = base
    parts = _parts(key)
    if any(p == "" for p in parts):
        raise SweepError(
            f"{where}: {key!r} is not a dotted scenario key like 'topology.bottleneck.rate'"
        )
    for depth, p in enumerate(parts[:-1]):
        here = ".".join(str(x) for x in parts[: depth + 1])
        if isinstance(node, list) and isinstance(p, int):
            if p >= len(node):
                raise SweepError(
                    f"{where}: {key!r} names item {p} of a list of {len(node)} in the base scenario"
                )
            node = node[p]
        elif isinstance(node, dict) and isinstance(p, str) and isinstance(node.get(p), dict | list):
            node = node[p]
        else:
            raise SweepError(f"{where}: {key!r}: the base scenario has no table {here!r}")


def set_key(data: dict[str, Any], key: str, value: Any) -> None:
    """Set dotted ``key`` (list items by index: ``flows.0.cca``) in scenario dict ``data``."""
    node: Any = data
    parts = _parts(key)
    for p in parts[:-1]:
        node = node[p]
    node[parts[-1]] = value


def _read_toml(path: Path, what: str) -> dict[str, Any]:
    data = files.read_input(path, what, files.MAX_SPEC_BYTES, SweepError)
    try:
        return tomllib.loads(data.decode("utf-8"))
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as e:
        raise SweepError(f"{path}: not valid TOML ({e})") from None


def load_spec(path: str | Path) -> SweepSpec:
    """Read and check a sweep spec; every problem is one :class:`SweepError` sentence."""
    path = Path(path)
    return parse_spec(_read_toml(path, "sweep spec"), where=str(path), root=path.parent)


def parse_spec(
    data: dict[str, Any], *, where: str = "sweep", root: Path | None = None
) -> SweepSpec:
    """Check a spec given as a dict (as read from TOML); relative paths are from ``root``."""
    unknown = [k for k in data if k not in _TOP_KEYS]
    if unknown:
        raise SweepError(
            f"{where}: unknown key {unknown[0]!r}; a sweep spec has {', '.join(_TOP_KEYS)}"
        )
    base_value = data.get("base")
    if isinstance(base_value, str):
        base_path = (root or Path.cwd()) / base_value
        base = _read_toml(base_path, f"{where}: base scenario")
        base_source, base_dir = str(base_path), base_path.parent
    elif isinstance(base_value, dict):
        base, base_source, base_dir = base_value, f"{where} [base]", root
    else:
        raise SweepError(
            f"{where}: 'base' must name a scenario file or be a [base] table with the scenario"
        )
    try:  # the base itself must be a valid scenario: its errors are not the grid's
        with files.relative_to(base_dir):
            Scenario.parse(copy.deepcopy(base), source=base_source)
    except ScenarioError as e:
        raise SweepError(str(e)) from None

    grid_table = data.get("grid", {})
    if not isinstance(grid_table, dict):
        raise SweepError(f"{where}: [grid] must be a table of dotted keys and lists of values")
    grid = _flatten(grid_table)
    for key, values in grid.items():
        if not isinstance(values, list) or not values:
            raise SweepError(f"{where}: grid key {key!r} needs a non-empty list of values")
        _check_key(base, key, where)

    draws: list[Distribution] = []
    draw_count, draw_seed = 0, 1
    if "draw" in data:
        table = data["draw"]
        if not isinstance(table, dict):
            raise SweepError(f"{where}: [draw] must be a table")
        table = dict(table)
        draw_count = table.pop("count", None)
        draw_seed = table.pop("seed", 1)
        if not isinstance(draw_count, int) or isinstance(draw_count, bool) or draw_count < 1:
            raise SweepError(f"{where}: [draw] needs count = a whole number of draws >= 1")
        if not isinstance(draw_seed, int) or isinstance(draw_seed, bool):
            raise SweepError(f"{where}: [draw] seed must be a whole number")
        dists = _flatten(table, leaf=lambda v: any(k in v for k in _DISTRIBUTIONS))
        if not dists:
            raise SweepError(f"{where}: [draw] names no key to draw")
        for key, spec in dists.items():
            draws.append(_distribution(key, spec, where))
            _check_key(base, key, where)
        overlap = set(grid) & {d.key for d in draws}
        if overlap:
            raise SweepError(f"{where}: {sorted(overlap)[0]!r} is both in [grid] and in [draw]")

    seeds_value = data.get("seeds")
    seeds: list[int] | None
    count_only = isinstance(seeds_value, int) and not isinstance(seeds_value, bool)
    if seeds_value is None:
        n_seeds = 1
    elif count_only and seeds_value >= 1:
        n_seeds = seeds_value
    elif (
        isinstance(seeds_value, list)
        and seeds_value
        and all(isinstance(s, int) and not isinstance(s, bool) and s >= 0 for s in seeds_value)
    ):
        n_seeds = len(seeds_value)
    else:
        raise SweepError(
            f"{where}: seeds must be a count (seeds = 10 means 1..10) or a list of seeds >= 0"
        )
    # Count the points before building any list of them (seeds = 1000000000 must not).
    _check_size(where, math.prod(len(v) for v in grid.values()), draw_count, n_seeds)
    if seeds_value is None:
        seeds = None
    elif count_only:
        seeds = list(range(1, seeds_value + 1))
    else:
        seeds = list(dict.fromkeys(seeds_value))
    keep = data.get("keep_results", False)
    if not isinstance(keep, bool):
        raise SweepError(f"{where}: keep_results must be true or false")
    name = data.get("name", Path(where).stem if root is not None else "sweep")
    if not isinstance(name, str):
        raise SweepError(f"{where}: name must be a string")
    spec = SweepSpec(
        base=base,
        base_source=base_source,
        grid=grid,
        draws=draws,
        draw_count=draw_count,
        draw_seed=draw_seed,
        seeds=seeds,
        keep_results=keep,
        name=name,
        base_dir=base_dir,
    )
    if not spec.axes() and len(spec.seeds or [None]) <= 1:
        warnings.warn(
            SweepWarning(
                f"{where}: the spec has no [grid] values and no [draw], so the sweep runs the "
                "base scenario once; add [grid] keys, a [draw] table or seeds to vary it"
            ),
            stacklevel=2,
        )
    _check_some_point_is_valid(spec, where)
    return spec


def _distribution(key: str, spec: Any, where: str) -> Distribution:
    if not isinstance(spec, dict) or len(spec) != 1 or next(iter(spec)) not in _DISTRIBUTIONS:
        raise SweepError(
            f"{where}: draw key {key!r} needs one distribution: {{ uniform = [low, high] }} "
            "or { choice = [values...] }"
        )
    kind, values = next(iter(spec.items()))
    if not isinstance(values, list) or not values:
        raise SweepError(f"{where}: draw key {key!r}: {kind} needs a non-empty list")
    if kind == "uniform":
        ok = len(values) == 2
        if ok and all(isinstance(v, str) for v in values):
            try:
                (a, ua), (b, ub) = split_quantity(values[0]), split_quantity(values[1])
                ok = ua == ub and a <= b
            except ValueError:
                ok = False
        elif ok:
            ok = all(isinstance(v, int | float) and not isinstance(v, bool) for v in values)
            ok = ok and values[0] <= values[1]
        if not ok:
            raise SweepError(
                f"{where}: draw key {key!r}: uniform needs [low, high] with low <= high, both "
                'numbers or both quantities in one unit (e.g. ["0s", "2s"])'
            )
    return Distribution(key, kind, list(values))


# --------------------------------------------------------------------------------------------
# Points.


@dataclass
class Point:
    """One scenario of a sweep: its parameters, seed, resolved scenario and key."""

    index: int
    params: dict[str, Any]
    seed: int | None
    scenario: dict[str, Any] | None  # validated, as plain data; None when invalid
    key: str
    error: str | None = None


def _hash(data: Any) -> str:
    text = json.dumps(data, sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def _params(spec: SweepSpec) -> Iterator[dict[str, Any]]:
    """The parameters of every grid combination and draw, in order (lazily: no list)."""
    rng = random.Random(spec.draw_seed)
    draws: list[dict[str, Any]] = [
        {d.key: d.draw(rng) for d in spec.draws} for _ in range(spec.draw_count)
    ] or [{}]
    for values in itertools.product(*spec.grid.values()):
        combo = dict(zip(spec.grid, values, strict=True))
        for drawn in draws:
            yield {**combo, **drawn}


def _parse_point(spec: SweepSpec, params: dict[str, Any], seed: int | None) -> Scenario:
    """A point's scenario, its relative paths beside the base scenario."""
    with files.relative_to(spec.base_dir):
        return Scenario.parse(_scenario_data(spec, params, seed), source="point")


def _scenario_data(spec: SweepSpec, params: dict[str, Any], seed: int | None) -> dict[str, Any]:
    data = copy.deepcopy(spec.base)
    for key, value in params.items():
        set_key(data, key, value)
    if seed is not None:
        data["seed"] = seed
    return data


def _problem(e: ScenarioError) -> str:
    """A point's scenario error without its ``point:`` prefix and final full stop."""
    return str(e).removeprefix("point: ").rstrip(".")


def _nothing_valid(spec: SweepSpec, where: str, params: dict[str, Any], error: str) -> SweepError:
    """The error for a sweep none of whose points is valid: it names the first key whose
    every value, alone on the base scenario, is invalid, else the first point's parameters."""
    axes: list[tuple[str, str, list[Any]]] = [("grid", k, v) for k, v in spec.grid.items()]
    axes += [("draw", d.key, d.values) for d in spec.draws]
    for kind, key, values in axes:
        problems: list[str] = []
        for value in values:
            try:
                _parse_point(spec, {key: value}, None)
                break
            except ScenarioError as e:
                problems.append(_problem(e))
        else:
            return SweepError(
                f"{where}: {kind} key {key!r} = {values[0]!r} makes every point invalid: "
                f"{problems[0]}"
            )
    shown = ", ".join(f"{k} = {v!r}" for k, v in params.items()) or "the base scenario"
    return SweepError(f"{where}: every point of the sweep is invalid; the first ({shown}): {error}")


def _check_some_point_is_valid(spec: SweepSpec, where: str) -> None:
    """Refuse a sweep whose every point would fail validation (a misspelt key, a value of the
    wrong type), before any runs. Points are built until the first valid one (usually the
    first); a seed does not make a point valid or not, so one seed is enough."""
    seed = spec.seeds[0] if spec.seeds else None
    first: tuple[dict[str, Any], str] | None = None
    for params in _params(spec):
        try:
            _parse_point(spec, params, seed)
            return
        except ScenarioError as e:
            first = first or (params, _problem(e))
    if first is not None:
        raise _nothing_valid(spec, where, *first)


def points(spec: SweepSpec) -> list[Point]:
    """Every point of ``spec``, in order (grid, then draws, then seeds)."""
    _check_size(
        spec.name,
        math.prod(len(v) for v in spec.grid.values()),
        spec.draw_count,
        len(spec.seeds or [None]),
    )
    out: list[Point] = []
    for params in _params(spec):
        for seed in spec.seeds or [None]:
            try:
                sc = _parse_point(spec, params, seed)
            except ScenarioError as e:
                data = _scenario_data(spec, params, seed)
                out.append(Point(len(out), params, seed, None, "invalid-" + _hash(data), str(e)))
                continue
            resolved = sc.to_dict()
            out.append(Point(len(out), params, seed, resolved, _hash(resolved)))
    return out
