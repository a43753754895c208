"""Running an experiment's cases through an executor (serial, process pool or Ray)."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

from l4sim.errors import L4simError
from l4sim.executors import Executor, SerialExecutor

C = TypeVar("C")
R = TypeVar("R")


def run_cases(
    fn: Callable[[Any], R],
    tasks: Sequence[Any],
    cases: Sequence[C],
    executor: Executor | None = None,
    on_case: Callable[[C, int, int], None] | None = None,
) -> list[R]:
    """``fn(task)`` for every task on ``executor`` (default: serial), results in case order.

    ``on_case(case, done, total)`` is called as each case finishes. A case that fails stops
    nothing: the others finish (and write their results); then the first failure is raised
    as one :class:`L4simError` sentence naming the case.
    """
    executor = executor or SerialExecutor()
    results: list[R | None] = [None] * len(tasks)
    failures: list[tuple[int, str]] = []
    for done, (i, outcome) in enumerate(executor.map(fn, tasks), start=1):
        if outcome.ok:
            results[i] = outcome.value
        else:
            failures.append((i, outcome.error or "failed"))
        if on_case is not None:
            on_case(cases[i], done, len(tasks))
    if failures:
        i, error = min(failures)
        more = f" ({len(failures) - 1} more cases failed)" if len(failures) > 1 else ""
        raise L4simError(f"case {getattr(cases[i], 'name', i)} failed: {error}{more}")
    return [r for r in results if r is not None]


@dataclass(frozen=True)
class Seeded:
    """One case run with one seed: what an experiment's ``_cases`` lists when its cases do
    not carry their seed, so the manifest records the seeds that ran."""

    case: Any
    seed: int

    @property
    def name(self) -> str:
        return f"{self.case.name}-s{self.seed}"


def seeds_for(seeds: Iterable[int] | None, quick: bool, default: Sequence[int]) -> list[int]:
    """The seeds a run uses: those given, else one seed for ``--quick``, else ``default``."""
    return list(seeds) if seeds is not None else list((1,) if quick else default)


def seeded(todo: Iterable[Any], seeds: Iterable[int]) -> list[Seeded]:
    """Every case of ``todo`` with every seed, seed-major (as :func:`run_seeded` runs them)."""
    cases = list(todo)
    return [Seeded(c, s) for s in seeds for c in cases]


def seeded_hooks(
    cases: Callable[..., Sequence[Any]],
    scenario: Callable[[Any, int], Any],
    default_seeds: Sequence[int],
) -> tuple[Callable[..., dict[str, Any]], Callable[..., list[Seeded]]]:
    """The ``scenarios`` and ``_cases`` (:func:`~l4sim.experiments.base.declare`) of an
    experiment whose cases carry no seed: ``cases(groups, quick=...)`` run with each seed
    (``--seeds``, else one for ``--quick``, else ``default_seeds``), ``scenario(case, seed)``
    what each ran."""

    def case_list(
        groups: Iterable[str], *, quick: bool = False, seeds: Iterable[int] | None = None, **_: Any
    ) -> list[Seeded]:
        return seeded(cases(groups, quick=quick), seeds_for(seeds, quick, default_seeds))

    def scenarios(out_dir: Any, groups: Iterable[str], **options: Any) -> dict[str, Any]:
        return {t.name: scenario(t.case, t.seed) for t in case_list(groups, **options)}

    return scenarios, case_list


def run_seeded(
    fn: Callable[[Any], R],
    todo: Sequence[C],
    seeds: Sequence[int],
    executor: Executor | None = None,
    on_case: Callable[[C, int, int], None] | None = None,
) -> tuple[list[R], list[list[R]]]:
    """``fn((case, seed))`` for every case of ``todo`` and every seed (seed-major, as
    :func:`run_cases` runs them): every run in that order, and each case's runs over the
    seeds, in ``todo``'s order."""
    if not seeds:
        raise ValueError("seeds names no seed; give at least one")
    tasks = [(c, s) for s in seeds for c in todo]
    runs = run_cases(fn, tasks, [t[0] for t in tasks], executor, on_case)
    n = len(todo)
    return runs, [runs[i::n] for i in range(n)]
