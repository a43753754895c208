"""``l4sim train``: train a learning agent on an l4sim environment and evaluate it."""

from __future__ import annotations

import contextlib
import math
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.markup import escape

from l4sim.cli._app import _RAY, app, check_out_dir, err_console, jobs_in_range, out_console
from l4sim.cli.tables import _eval_table
from l4sim.errors import L4simError

if TYPE_CHECKING:
    from rich.progress import Progress

    from l4sim.agents.checkpoint import Checkpointing


def _progress(quiet: bool) -> Progress:
    """The training commands' progress bar: description, bar, done/total, rate, elapsed
    time, time left, info."""
    from rich.progress import (
        BarColumn,
        MofNCompleteColumn,
        TextColumn,
        TimeElapsedColumn,
        TimeRemainingColumn,
    )

    from l4sim.cli._progress import LoggedProgress

    return LoggedProgress(
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TextColumn("[progress.data.speed]{task.fields[rate]}"),
        TimeElapsedColumn(),
        TextColumn("ETA"),
        TimeRemainingColumn(),
        TextColumn("{task.fields[info]}"),
        console=err_console,
        disable=quiet,
    )


def _rate(bar: Progress, task: Any, unit: str) -> str:
    """The task's measured rate (rich's recent window), e.g. ``12.3 episodes/s``."""
    speed = bar.tasks[task].speed if task < len(bar.tasks) else None
    return "" if not speed else f"{speed:.3g} {unit}/s"


#: ``--checkpoint-every`` of the training commands.
def _every_option(unit: str, default: int | str) -> Any:
    return typer.Option(
        "--checkpoint-every",
        help=f"Write the whole training state to OUT/checkpoint every this many {unit} "
        f"(0: only when stopped by Ctrl-C, SIGTERM or SIGHUP, which wait for the end of the "
        f"current {unit.rstrip('s')}).",
        min=0,
        show_default=str(default),
    )


#: ``--resume`` of the training commands.
ResumeOption = Annotated[
    Path | None,
    typer.Option(
        "--resume",
        help="Continue the stopped training whose output directory is DIR (give the same "
        "options; the output goes to DIR). The result is byte for byte that of a run that "
        "never stopped.",
        metavar="DIR",
    ),
]


def _output(out: Path | None, resume: Path | None, default: str) -> Path:
    """The output directory: ``--resume DIR`` is it (a different ``--out`` is refused)."""
    if resume is not None:
        if out is not None and Path(out).resolve() != Path(resume).resolve():
            raise L4simError(
                f"--out {str(out)!r} and --resume {str(resume)!r} differ: a resumed training "
                "writes into the directory it resumes"
            )
        if not Path(resume).is_dir():
            raise L4simError(f"--resume {str(resume)!r} is not a directory")
        return Path(resume)
    out = check_out_dir(out if out is not None else Path(default))
    if any((out / "checkpoint").glob("*.pt")):
        # Starting afresh would overwrite a stopped training's state (hours, for some).
        raise L4simError(
            f"--out {str(out)!r} holds the checkpoint of a stopped training: give --resume "
            f"{str(out)!r} to go on, or another --out (or delete {str(out / 'checkpoint')!r})"
        )
    return out


@contextlib.contextmanager
def _checkpointing(
    out: Path, resume: Path | None, every: int, config: dict[str, Any]
) -> Iterator[Checkpointing]:
    """Checkpoints in ``out`` (resuming with ``--resume``); a stop signal (Ctrl-C, SIGTERM,
    SIGHUP) waits for the trainer's next boundary, which writes one and stops; the error
    line then says how to go on."""
    from l4sim.agents.checkpoint import Checkpointing
    from l4sim.processes import Interrupted, stop_at_boundary

    with stop_at_boundary() as stop:
        try:
            yield Checkpointing(out, config, every, resume is not None, stop)
            signum = stop()
            if signum is not None:  # came after the last boundary: it stops all the same
                raise Interrupted(signum)
        except Interrupted as e:
            if (out / "checkpoint").is_dir():
                e.hint = f"the training state is in {out}/checkpoint: add --resume {out} to go on"
            raise


#: ``--device`` of the training commands (l4sim.agents.device).
DeviceOption = Annotated[
    str,
    typer.Option(
        help="Where the networks train: cpu, cuda, cuda:N or auto (a GPU if PyTorch sees "
        "one). The simulation runs on the CPU either way; only cpu is bit for bit "
        "reproducible."
    ),
]

train_app = typer.Typer(
    help="Train a learning agent on an l4sim environment and evaluate it.",
    no_args_is_help=True,
)
app.add_typer(train_app, name="train")


@train_app.command("rl-tcp")
def train_rl_tcp_cmd(
    steps: Annotated[
        int, typer.Option(help="Training steps (one 100 ms decision each).", min=1)
    ] = 20_000,
    reward: Annotated[
        str, typer.Option(help="default (l4sim's normalised tcp reward) or ns3ai.")
    ] = "default",
    out: Annotated[
        Path | None, typer.Option("--out", "-o", help="Output directory (default out/rl-tcp).")
    ] = None,
    seed: Annotated[int, typer.Option(help="Seed of the whole run.", min=0, max=2**63 - 1)] = 1,
    load_path: Annotated[
        Path | None,
        typer.Option(
            "--load", help="Evaluate these saved weights (DIR/dqn.pt) instead of training."
        ),
    ] = None,
    device: DeviceOption = "cpu",
    checkpoint_every: Annotated[int, _every_option("episodes", 10)] = 10,
    resume: ResumeOption = None,
    quiet: Annotated[bool, typer.Option("--quiet", "-q", help="No progress bar or table.")] = False,
) -> None:
    """RL-TCP (ns3-ai's example): a DQN sets a TCP window over 2 Mbps / 80 ms.

    Writes DIR/dqn.pt, DIR/tb (TensorBoard), DIR/eval.json and the figures
    eval_episode.png and training_return.png. Stopped (Ctrl-C, SIGTERM, SIGHUP), it keeps
    its state in DIR/checkpoint; --resume DIR goes on.
    """
    import importlib.util
    import json

    out = _output(out, resume if load_path is None else None, "out/rl-tcp")
    if importlib.util.find_spec("torch") is None:
        raise L4simError("l4sim train needs PyTorch: pip install 'l4sim[rl]' (torch, tensorboard)")
    from l4sim.agents.device import resolve
    from l4sim.experiments import rl_tcp

    resolve(device)
    if reward not in rl_tcp.REWARDS:
        raise typer.BadParameter(
            f"--reward {reward!r} is not known; allowed: {', '.join(rl_tcp.REWARDS)}"
        )
    if load_path is not None:
        if not load_path.is_file():
            raise L4simError(f"--load {str(load_path)!r} is not a file")
        try:
            result, _ = rl_tcp.evaluate_checkpoint(load_path)
        except ValueError as e:
            raise L4simError(str(e)) from None
        out.mkdir(parents=True, exist_ok=True)
        path = out / "eval.json"
        path.write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
        if not quiet:
            out_console.print(
                _eval_table(
                    result["eval"], f"RL-TCP, {escape(str(load_path))} ({result['reward']})"
                )
            )
        out_console.print(f"Evaluation in [bold]{escape(str(path))}[/]", soft_wrap=True)
        return

    err_console.print(
        f"TensorBoard logs in [bold]{escape(str(out / 'tb'))}[/]: "
        f"tensorboard --logdir {escape(str(out / 'tb'))}"
    )
    config = {"command": "rl-tcp", "steps": steps, "reward": reward, "seed": seed}
    config["device"] = device
    with _progress(quiet) as bar, _checkpointing(out, resume, checkpoint_every, config) as ck:
        task = bar.add_task(f"rl-tcp ({reward})", total=steps, info="", rate="")

        def step(done: int, total: int, info: dict[str, float]) -> None:
            ret = info.get("return", math.nan)
            text = f"ε {info['epsilon']:.2f}" + ("" if ret != ret else f", return {ret:.4g}")
            bar.update(task, completed=done, info=text, rate=_rate(bar, task, "steps"))

        result = rl_tcp.train(
            out, steps=steps, reward=reward, seed=seed, progress=step, device=device, checkpoint=ck
        )
    tr = result["train"]
    if not quiet:
        out_console.print(_eval_table(result["eval"], f"RL-TCP evaluation ({reward} reward)"))
        out_console.print(
            f"Trained {tr['steps']:,} steps ({tr['episodes']} episodes) in "
            f"{tr['wall_time_s']:.1f} s, {tr['steps_per_s']:,.0f} steps/s.",
            soft_wrap=True,
        )
    out_console.print(
        f"Results in [bold]{escape(str(out))}[/]: dqn.pt, eval.json, train.json, figures; "
        f"TensorBoard: tensorboard --logdir {escape(str(out / 'tb'))}",
        soft_wrap=True,
    )
    ck.remove()  # every output written: the checkpoint is of no more use


def _converged(stats: dict[str, Any]) -> str:
    """``, converged at N flows`` / ``, not converged by the cap`` for a model trained with
    a convergence rule; empty for the others."""
    if "converged_at" not in stats:
        return ""
    at = stats["converged_at"]
    return ", not converged by the cap" if at is None else f", converged at {at:,} flows"


@train_app.command("lfq")
def train_lfq_cmd(
    recipe: Annotated[
        str,
        typer.Option(
            help="paper (3 x 256, the shipped default weights), paper-full (the paper's "
            "budget: CPU-hours, stop and --resume it in pieces), fast (3 x 64, the shipped "
            "fast weights) or tiny (seconds, for tests)."
        ),
    ] = "paper",
    out: Annotated[
        Path | None,
        typer.Option("--out", "-o", help="Output directory (default out/lfq-train)."),
    ] = None,
    seed: Annotated[int, typer.Option(help="Seed of the whole run.", min=0, max=2**31)] = 1,
    jobs: Annotated[
        int,
        typer.Option(
            help="Worker processes for the rollouts (same weights for any N).",
            min=1,
            callback=jobs_in_range,
        ),
    ] = 1,
    only: Annotated[
        str | None,
        typer.Option(
            help="Comma-separated models (offline-small, offline-large, online); online "
            "also trains offline-large, which it starts from."
        ),
    ] = None,
    ray: Annotated[str | None, _RAY] = None,
    device: DeviceOption = "cpu",
    checkpoint_every: Annotated[int | None, _every_option("flows", "200; paper-full: 2000")] = None,
    resume: ResumeOption = None,
    quiet: Annotated[bool, typer.Option("--quiet", "-q", help="No progress bar.")] = False,
) -> None:
    """LFQ (Grigorescu et al.): train the per-flow buffer networks with a named recipe.

    Writes DIR/<model>.safetensors (what fq's policy = {kind = "lfq", weights = ...} loads;
    the shipped weights are these files of --recipe paper and --recipe fast, seed 1, as the
    engine of November 2026 wrote them: later engine fixes give other bytes), the online
    critic,
    DIR/snapshots (weights every few thousand flows), DIR/tb (TensorBoard) and
    DIR/train.json (flows, wall time, flows/s). Same recipe and seed: the same bytes.
    Stopped (Ctrl-C, SIGTERM, SIGHUP), it keeps its state in DIR/checkpoint (the finished
    models and the current one's last batch); --resume DIR goes on.
    """
    import importlib.util
    import json
    import time

    from l4sim.agents.lfq_recipes import MODELS, RECIPES

    out = _output(out, resume, "out/lfq-train")
    if recipe not in RECIPES:
        raise typer.BadParameter(f"--recipe {recipe!r} is not known; allowed: {', '.join(RECIPES)}")
    if jobs < 1:
        raise typer.BadParameter(f"--jobs must be at least 1, not {jobs}")
    models = None if only is None else [m.strip() for m in only.split(",") if m.strip()]
    bad = [m for m in models or [] if m not in MODELS]
    if bad or models == []:
        raise typer.BadParameter(f"--only: unknown model(s) {bad}; allowed: {', '.join(MODELS)}")
    if importlib.util.find_spec("torch") is None:
        raise L4simError("l4sim train needs PyTorch: pip install 'l4sim[rl]' (torch, tensorboard)")
    from l4sim.agents import lfq
    from l4sim.agents.device import resolve

    resolve(device)
    r = RECIPES[recipe]
    every = r.checkpoint_every if checkpoint_every is None else checkpoint_every
    err_console.print(
        f"LFQ recipe [bold]{recipe}[/]: {escape(r.help)}; TensorBoard: "
        f"tensorboard --logdir {escape(str(out / 'tb'))}",
        soft_wrap=True,
    )
    start = time.perf_counter()
    config = {"command": "lfq", "recipe": recipe, "seed": seed, "only": models, "device": device}
    with _progress(quiet) as bar, _checkpointing(out, resume, every, config) as ck:
        tasks: dict[str, int] = {}

        def step(model: str, info: dict[str, float]) -> None:
            if model not in tasks:
                tasks[model] = bar.add_task(model, total=r.flows(model), info="", rate="")
            text = f"loss {info['loss']:.3g}, mean output {info['output']:.1f}"
            rate = _rate(bar, tasks[model], "flows")
            bar.update(tasks[model], completed=int(info["flows"]), info=text, rate=rate)

        stats = lfq.train_recipe(
            recipe,
            out,
            seed=seed,
            jobs=jobs,
            models=models,
            progress=step,
            device=device,
            checkpoint=ck,
            ray=ray,
        )
    wall = time.perf_counter() - start
    record = {
        "recipe": recipe,
        "seed": seed,
        "jobs": jobs,
        "ray": ray,
        "device": device,
        "wall_s": wall,
        "models": stats,
    }
    (out / "train.json").write_text(json.dumps(record, indent=2) + "\n", encoding="utf-8")
    ck.remove()  # every output written: the checkpoint is of no more use
    for m, s in stats.items():
        out_console.print(
            f"{m}: {s['flows']:,} flows in {s['wall_s']:.1f} s ({s['flows_per_s']:.0f} flows/s)"
            + _converged(s),
            soft_wrap=True,
        )
    out_console.print(
        f"Weights in [bold]{escape(str(out))}[/]: "
        + ", ".join(f"{m}.safetensors" for m in stats)
        + f"; {wall:.1f} s in all.",
        soft_wrap=True,
    )
