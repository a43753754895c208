"""What every experiment declares: the :class:`Experiment` protocol, its :class:`Option` s,
and :class:`Declared`, the declaration each experiment module exports as ``EXPERIMENT``.

``l4sim reproduce`` is generated from these declarations: the experiments it lists, their
aliases, the ``--only`` groups and the experiment options (``--quick``, ``--seeds`` ...) with
their types, bounds and help. An option an experiment does not declare is refused.
"""

from __future__ import annotations

import hashlib
import json
import sys
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

from l4sim.executors import Executor

OnCase = Callable[[Any, int, int], None]
"""``on_case(case, done, total)``: called as each case finishes."""


def scenario_hash(scenario: Any) -> str:
    """SHA-256 of a resolved scenario (a :class:`~l4sim.scenario.Scenario` or its plain
    data): its canonical JSON, keys sorted; equal scenarios hash equal."""
    data = scenario.to_dict() if hasattr(scenario, "to_dict") else scenario
    text = json.dumps(data, sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(text.encode()).hexdigest()


def seeds_1_to(n: int) -> range:
    """``--seeds N`` as the keyword ``reproduce`` takes: the seeds 1..N."""
    return range(1, n + 1)


@dataclass(frozen=True)
class Option:
    """An option of ``l4sim reproduce NAME``: ``--NAME`` on the command line, keyword
    ``NAME`` of the experiment's ``reproduce`` (and ``cases``, ``tensorboard_dir``).

    A ``bool`` option is a flag, passed only when given; an ``int`` option (``default``
    None) is passed only when given, after ``convert`` (e.g. :func:`seeds_1_to`); a ``str``
    option takes one of ``choices``, passed only when given."""

    name: str
    type: type[bool] | type[int] | type[str]
    help: str
    default: Any = None
    min: int | None = None
    max: int | None = None
    convert: Callable[[Any], Any] | None = None
    choices: tuple[str, ...] = ()

    @property
    def flag(self) -> str:
        return f"--{self.name}"

    def given(self, value: Any) -> bool:
        """Whether ``value`` (what the command line gave) asks for anything."""
        return value is not None and value is not False

    def argument(self, value: Any) -> Any:
        """The keyword argument for command-line ``value``."""
        return self.convert(value) if self.convert is not None else value

    def check(self, value: Any) -> str | None:
        """Why ``value`` is out of this option's bounds (one sentence), or None."""
        if self.type is bool or value is None:
            return None
        if self.type is str:
            if value in self.choices:
                return None
            return f"{self.flag} {value!r} is not known; give one of {', '.join(self.choices)}"
        if (self.min is not None and value < self.min) or (
            self.max is not None and value > self.max
        ):
            return f"{self.flag} {value} is out of range; give {self.min}..{self.max}"
        return None


def quick_option(what: str) -> Option:
    """``--quick``: a small, fast version (``what`` it shrinks, e.g. "one seed")."""
    return Option("quick", bool, f"A small, fast version: {what}.", default=False)


def seeds_option(help: str) -> Option:
    """``--seeds N`` (1..1000): the seeds 1..N."""
    return Option("seeds", int, help, min=1, max=1000, convert=seeds_1_to)


@runtime_checkable
class Experiment(Protocol):
    """An experiment ``l4sim reproduce`` runs: a paper's (or a testbed's) measurements
    rebuilt on l4sim, one table (or a few) and figures."""

    #: Topic name (``aqm-comparison``); ``aliases`` (the paper ids, ``aqm-004``) work too.
    name: str
    aliases: tuple[str, ...]
    title: str
    #: The paper (or testbed) reproduced, and where in it the numbers are.
    paper: str
    #: What ``--only`` selects.
    groups: tuple[str, ...]
    options: tuple[Option, ...]
    #: The files written under the output directory: tables first (the first is the main
    #: one), then figures (globs relative to the output directory).
    tables: tuple[str, ...]
    figures: tuple[str, ...]
    #: The reference data it compares with: files in ``l4sim/data/reference``.
    reference: tuple[str, ...]

    def cases(self, groups: Iterable[str], **options: Any) -> Sequence[Any]: ...

    def reproduce(
        self,
        out_dir: str | Path,
        *,
        only: Iterable[str] | None = None,
        figures: bool = True,
        on_case: OnCase | None = None,
        executor: Executor | None = None,
        **options: Any,
    ) -> list[Any]: ...

    def markdown_table(self, rows: list[Any]) -> str: ...

    def tensorboard_dir(self, out_dir: str | Path, **options: Any) -> Path | None: ...

    def scenario_hashes(
        self, out_dir: str | Path, groups: Iterable[str], **options: Any
    ) -> dict[str, str]:
        """Case name -> SHA-256 (:func:`scenario_hash`) of the resolved scenario the case
        ran (for learned cases: the evaluation's) in a run with these options."""
        ...


def _no_scenarios(out_dir: str | Path, groups: Iterable[str], **_: Any) -> dict[str, Any]:
    return {}


def _no_tensorboard(out_dir: str | Path, **_: Any) -> Path | None:
    return None


def tb_subdir(out_dir: str | Path, **_: Any) -> Path | None:
    """A ``tensorboard_dir``: the trainers write TensorBoard logs to ``out_dir/tb`` (one run
    per trained model)."""
    return Path(out_dir) / "tb"


@dataclass(frozen=True)
class Declared:
    """An :class:`Experiment` made of an experiment module's functions: each module ends
    with ``EXPERIMENT = Declared(...)``, registered in :data:`l4sim.experiments.EXPERIMENTS`.
    """

    name: str
    title: str
    paper: str
    groups: tuple[str, ...]
    tables: tuple[str, ...]
    run: Callable[..., list[Any]]
    table: Callable[[list[Any]], str]
    case_list: Callable[..., Sequence[Any]]
    aliases: tuple[str, ...] = ()
    options: tuple[Option, ...] = ()
    figures: tuple[str, ...] = ()
    reference: tuple[str, ...] = ()
    #: The module that documents it (its docstring is the experiment's description).
    module: str = ""
    tensorboard: Callable[..., Path | None] = field(default=_no_tensorboard)
    #: ``scenarios(out_dir, groups, **options)``: case name -> the resolved scenario it ran.
    scenarios: Callable[..., dict[str, Any]] = field(default=_no_scenarios)
    #: ``headline(out_dir)``: one or two sentences of what a full run's output in
    #: ``out_dir`` shows, computed from its tables (the docs' index and the README quote
    #: it); None where the experiment has none yet.
    headline: Callable[[Path], str] | None = None
    #: ``facts(out_dir)``: the derived numbers a page's prose quotes (a median, a count),
    #: name -> text as the prose shows it, computed from the full run's tables;
    #: ``gen_docs.py`` writes them to ``results/NAME/facts.csv`` for the pages' cell
    #: markers. None where the experiment has none.
    facts: Callable[[Path], dict[str, str]] | None = None

    @property
    def names(self) -> tuple[str, ...]:
        return (self.name, *self.aliases)

    @property
    def main_table(self) -> str:
        return self.tables[0]

    def option(self, name: str) -> Option | None:
        return next((o for o in self.options if o.name == name), None)

    def cases(self, groups: Iterable[str], **options: Any) -> Sequence[Any]:
        return self.case_list(groups, **options)

    def reproduce(self, out_dir: str | Path, **options: Any) -> list[Any]:
        """:meth:`Experiment.reproduce`: ``only``, ``figures``, ``on_case``, ``executor`` and
        the experiment's options go to ``run`` as given (its defaults otherwise)."""
        return self.run(out_dir, **options)

    def markdown_table(self, rows: list[Any]) -> str:
        return self.table(rows)

    def tensorboard_dir(self, out_dir: str | Path, **options: Any) -> Path | None:
        return self.tensorboard(out_dir, **options)

    def scenario_hashes(
        self, out_dir: str | Path, groups: Iterable[str], **options: Any
    ) -> dict[str, str]:
        return {k: scenario_hash(v) for k, v in self.scenarios(out_dir, groups, **options).items()}


#: ``Declared`` field -> the module function :func:`declare` takes it from.
_MODULE_FUNCTIONS = {
    "run": "reproduce",
    "table": "markdown_table",
    "case_list": "_cases",
    "tensorboard": "tensorboard_dir",
    "scenarios": "scenarios",
    "headline": "headline",
    "facts": "facts",
}


def declare(module: str, **fields: Any) -> Declared:
    """The :class:`Declared` of experiment module ``module`` (its ``__name__``, at its end):
    the ``fields`` given, and the functions the module defines for the rest — ``run`` its
    ``reproduce``, ``table`` its ``markdown_table``, ``case_list`` its ``_cases`` (without
    one: its ``cases(groups)``, the options, which change no case, dropped), ``tensorboard``
    its ``tensorboard_dir``, ``scenarios`` its ``scenarios``, ``headline`` its
    ``headline`` and ``facts`` its ``facts`` (the last four only where it has them)."""
    namespace = vars(sys.modules[module])
    for name, function in _MODULE_FUNCTIONS.items():
        if name not in fields and function in namespace:
            fields[name] = namespace[function]
    if "case_list" not in fields:
        cases = namespace["cases"]
        fields["case_list"] = lambda groups, **_: cases(groups)
    return Declared(module=module, **fields)
