"""``l4sim reproduce NAME``, generated from the experiments' declarations.

The command has the generic options (``--out``, ``--only``, ``--figures``, ``--jobs``,
``--ray``, ``--quiet``) and the union of the options the registered experiments declare
(:class:`l4sim.experiments.base.Option`), with the help each declaration gives; an option
the named experiment does not declare is refused in one sentence. Its parameters and help
are built from the registry (:data:`l4sim.experiments.EXPERIMENTS`) each time the command
is: an experiment registered later (a test's) gets its options too.
"""

from __future__ import annotations

import inspect
import time
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.markup import escape

from l4sim.cli._app import (
    _INVOCATION,
    _JOBS,
    _RAY,
    app,
    check_out_dir,
    default_out,
    err_console,
    out_console,
)
from l4sim.cli.manifest import MANIFEST
from l4sim.errors import L4simError
from l4sim.executors import make_executor
from l4sim.experiments import all_experiments, experiment
from l4sim.experiments.base import Experiment, Option
from l4sim.processes import Interrupted, deferred_interrupt

#: The options every experiment has (an experiment may not declare one of these names).
GENERIC = ("name", "out", "only", "figures", "jobs", "ray", "fingerprints", "quiet")

#: ``l4sim reproduce all``: every registered experiment in turn (:mod:`l4sim.cli.reproduce_all`).
ALL = "all"

#: Recorded in every manifest (False / None when not given), so manifests compare key by key.
_ALWAYS_RECORDED = ("quick", "train")


def declared_options(experiments: list[Experiment]) -> dict[str, list[tuple[Experiment, Option]]]:
    """Every declared option name -> the experiments declaring it (first declaration first)."""
    found: dict[str, list[tuple[Experiment, Option]]] = {}
    for exp in experiments:
        for opt in exp.options:
            if opt.name in GENERIC:
                raise ValueError(f"experiment {exp.name!r} declares the generic option {opt.flag}")
            found.setdefault(opt.name, []).append((exp, opt))
    return found


def _option_help(declared: list[tuple[Experiment, Option]]) -> str:
    helps: dict[str, list[str]] = {}
    for exp, opt in declared:
        helps.setdefault(opt.help, []).append(exp.name)
    return " ".join(f"{' / '.join(names)}: {text}" for text, names in helps.items())


def _parameter(name: str, declared: list[tuple[Experiment, Option]]) -> inspect.Parameter:
    opts = [o for _, o in declared]
    kind, flag, text = opts[0].type, opts[0].flag, _option_help(declared)
    if kind is bool:
        annotation: Any = Annotated[bool, typer.Option(flag, help=text)]
        default: Any = False
    elif kind is str:
        annotation = Annotated[str | None, typer.Option(flag, help=text, show_default=False)]
        default = None
    else:
        same = len({(o.min, o.max) for o in opts}) == 1  # else each experiment checks its own
        bounds = {"min": opts[0].min, "max": opts[0].max} if same else {}
        annotation = Annotated[
            int | None, typer.Option(flag, help=text, show_default=False, **bounds)
        ]
        default = None
    return inspect.Parameter(
        name, inspect.Parameter.KEYWORD_ONLY, default=default, annotation=annotation
    )


def _signature() -> inspect.Signature:
    experiments = all_experiments()
    groups = "; ".join(f"{e.name}: {', '.join(e.groups)}" for e in experiments)

    def p(name: str, annotation: Any, default: Any = inspect.Parameter.empty) -> Any:
        kind = inspect.Parameter.KEYWORD_ONLY
        return inspect.Parameter(name, kind, default=default, annotation=annotation)

    generic = [
        p(
            "name",
            Annotated[
                str,
                typer.Argument(
                    help="Experiment: a topic name or its paper id (the list above), or all.",
                    show_default=False,
                ),
            ],
        ),
        p(
            "out",
            Annotated[
                Path | None,
                typer.Option("--out", "-o", help="Output directory (default: out/NAME)."),
            ],
            None,
        ),
        p(
            "only",
            Annotated[
                str | None, typer.Option(help=f"Comma-separated subset of the cases: {groups}.")
            ],
            None,
        ),
        p("figures", Annotated[bool, typer.Option(help="Draw the figures.")], True),
        p("jobs", Annotated[int | None, _JOBS], None),
        p("ray", Annotated[str | None, _RAY], None),
        p(
            "fingerprints",
            Annotated[
                bool,
                typer.Option(
                    "--fingerprints",
                    help="With all --quick: rewrite the quick outputs' fingerprints, "
                    "results/NAME/quick.sha256.",
                ),
            ],
            False,
        ),
    ]
    declared = [_parameter(n, d) for n, d in declared_options(experiments).items()]
    quiet = p(
        "quiet",
        Annotated[bool, typer.Option("--quiet", "-q", help="No progress bar or table.")],
        False,
    )
    return inspect.Signature([*generic, *declared, quiet])


def _help() -> str:
    lines = [
        "Rebuild a paper's (or a testbed's) experiment and write its tables and figures.",
        "",
        "Experiments (topic name, the paper id as an alias):",
        "",
    ]
    for e in all_experiments():
        alias = f" ({', '.join(e.aliases)})" if e.aliases else ""
        lines.append(f"- {e.name}{alias}: {e.title}.")
    lines += [
        "",
        "Options an experiment does not declare are refused; docs/reproductions/ describes each.",
        "",
        "l4sim reproduce all [--quick] runs every experiment in turn, each into OUT/NAME "
        "(default out/NAME, with --quick out/quick/NAME) with its manifest; --quick runs each "
        "one's quick form (--quick, or for an experiment without one a small subset). It "
        "resumes: an experiment whose directory already holds a manifest of the same form "
        "written at the current commit (a checkout without local changes) is skipped. With "
        "--quick it compares each quick output with its fingerprint in results/NAME/ "
        "(--fingerprints rewrites them).",
    ]
    return "\n".join(lines)


class _GeneratedCommand:
    """The callback of ``l4sim reproduce``: typer reads its parameters (``__signature__``)
    and help (``__doc__``), generated from the registry whenever the command is built."""

    __name__ = "reproduce_cmd"
    __qualname__ = "reproduce_cmd"

    def __init__(self) -> None:
        self.__annotations__: dict[str, Any] = {}

    @property
    def __signature__(self) -> inspect.Signature:
        return _signature()

    @property  # type: ignore[misc]
    def __doc__(self) -> str:  # type: ignore[override]
        return _help()

    def __call__(self, **values: Any) -> None:
        reproduce(**values)


reproduce_cmd = app.command("reproduce")(_GeneratedCommand())


def _seeds_run(exp: Experiment, groups: list[str] | None, kwargs: dict[str, Any]) -> list[int]:
    """The seeds the cases ran (their ``seed`` fields), for experiments without ``--seeds``."""
    cases = exp.cases(groups or exp.groups, **kwargs)
    return sorted({s for c in cases if isinstance(s := getattr(c, "seed", None), int) and s > 0})


def _mark_partial(
    e: KeyboardInterrupt, out_dir: Path, progress: dict[str, Any], manifest: Any
) -> None:
    """A stop signal before the manifest was written: write one marked ``partial`` (the
    cases finished, of how many; whatever tables are in ``out_dir`` are not this run's
    whole result), and say so in the error line."""
    done, total = progress["done"], progress["total"]
    with deferred_interrupt(deliver=False):  # a second signal leaves it readable
        manifest({"cases_done": done, "cases": total})
    if isinstance(e, Interrupted):
        e.hint = (
            f"{done} of {total} cases had finished; {out_dir}/{MANIFEST} says partial: run "
            "the same command again"
        )


def reproduce(
    *,
    name: str,
    out: Path | None,
    only: str | None,
    figures: bool,
    jobs: int | None,
    ray: str | None,
    quiet: bool,
    fingerprints: bool = False,
    argv: list[str] | None = None,
    table: bool = True,
    **options: Any,
) -> None:
    """Run experiment ``name`` with the command line's values; write its manifest (its
    command ``argv``, default the command line's). ``name`` ``all``: every experiment
    (:func:`l4sim.cli.reproduce_all.reproduce_all`)."""
    from rich.progress import BarColumn, MofNCompleteColumn, TextColumn

    from l4sim.cli._progress import LoggedProgress
    from l4sim.cli.manifest import write_manifest

    if name == ALL:
        from l4sim.cli.reproduce_all import reproduce_all

        run = {"figures": figures, "jobs": jobs, "ray": ray, "quiet": quiet, "one": reproduce}
        reproduce_all(out, only, fingerprints, run, **options)
        return
    if fingerprints:
        raise typer.BadParameter("--fingerprints goes with l4sim reproduce all --quick")
    try:
        exp = experiment(name)
    except L4simError as e:
        raise L4simError(f"{e}; or {ALL}, every one in turn") from None
    subset = None
    if only is not None:
        subset = [a.strip() for a in only.split(",") if a.strip()]
        unknown = [a for a in subset if a not in exp.groups]
        if unknown or not subset:
            raise typer.BadParameter(
                f"--only {only!r} names no known case set; known: {', '.join(exp.groups)}"
            )
    given = {k: v for k, v in options.items() if v is not None and v is not False}
    refused = [k for k in given if not any(o.name == k for o in exp.options)]
    if refused:
        raise typer.BadParameter(f"experiment {name!r} has no --{' or --'.join(refused)} mode")
    declared = {o.name: o for o in exp.options}
    for k, v in given.items():
        why = declared[k].check(v)
        if why is not None:
            raise typer.BadParameter(why)
    kwargs = {k: declared[k].argument(v) for k, v in given.items()}
    out_dir = out if out is not None else default_out(name)
    check_out_dir(out_dir)
    tb_dir = exp.tensorboard_dir(out_dir, **kwargs)
    if tb_dir is not None:
        err_console.print(
            f"TensorBoard logs in [bold]{escape(str(tb_dir))}[/]: "
            f"tensorboard --logdir {escape(str(tb_dir))}"
        )
    started = time.perf_counter()
    recorded: dict[str, Any] = {k: options.get(k, False) for k in _ALWAYS_RECORDED}
    recorded.update(only=subset, seeds=list(kwargs.get("seeds", [])) or None)
    recorded.update(figures=figures, jobs=jobs, ray=ray)
    recorded.update({k: options.get(k) for k in declared if k not in recorded})
    total = len(exp.cases(subset or exp.groups, **kwargs))
    progress = {"done": 0, "total": total, "finished": False}

    def manifest(partial: dict[str, Any] | None = None) -> None:
        write_manifest(
            out_dir,
            experiment=name,
            options=recorded,
            wall_time_s=time.perf_counter() - started,
            argv=_INVOCATION if argv is None else argv,
            seeds=recorded["seeds"] or _seeds_run(exp, subset, kwargs),
            scenario_hashes=exp.scenario_hashes(out_dir, subset or exp.groups, **kwargs),
            partial=partial,
        )

    try:
        with LoggedProgress(
            TextColumn("{task.description}"),
            BarColumn(),
            MofNCompleteColumn(),
            console=err_console,
            disable=quiet,
        ) as bar:
            task = bar.add_task(name, total=total)

            def step(case: Any, done: int, n: int) -> None:
                progress.update(done=done, total=n)
                bar.update(task, completed=done, total=n, description=f"{name}: {case.name}")

            with make_executor(jobs, ray) as executor:
                rows = exp.reproduce(
                    out_dir, only=subset, figures=figures, on_case=step, executor=executor, **kwargs
                )
            bar.update(task, completed=bar.tasks[0].total, description=name)
        with deferred_interrupt():  # the manifest is written whole
            manifest()
            progress["finished"] = True
    except KeyboardInterrupt as e:
        if not progress["finished"]:
            _mark_partial(e, out_dir, progress, manifest)
        raise
    if not quiet and table:
        print(exp.markdown_table(rows))
    # A subset may write only some tables (``coexistence --only 1vN``: no grid table).
    written = next((out_dir / t for t in exp.tables if (out_dir / t).is_file()), None)
    where = f"Table in [bold]{escape(str(written))}[/]; everything else" if written else "Output"
    out_console.print(f"{where} under [bold]{escape(str(out_dir))}[/].")
