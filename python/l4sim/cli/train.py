"""``l4sim train``: train a learning agent on an l4sim environment and evaluate it."""

from __future__ import annotations

import math
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer
from rich.markup import escape

from l4sim.cli._app import app, check_out_dir, err_console, jobs_in_range, out_console
from l4sim.cli.tables import _eval_table
from l4sim.errors import L4simError

if TYPE_CHECKING:
    from rich.progress import Progress


def _progress(quiet: bool) -> Progress:
    """The training commands' progress bar: description, bar, done/total, time, info."""
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    return Progress(
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        TextColumn("{task.fields[info]}"),
        console=err_console,
        disable=quiet,
    )


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
    out: Annotated[Path, typer.Option("--out", "-o", help="Output directory.")] = Path(
        "out/rl-tcp"
    ),
    seed: Annotated[int, typer.Option(help="Seed of the whole run.", min=0, max=2**63 - 1)] = 1,
    load_path: Annotated[
        Path | None,
        typer.Option(
            "--load", help="Evaluate these saved weights (DIR/dqn.pt) instead of training."
        ),
    ] = None,
    device: DeviceOption = "cpu",
    quiet: Annotated[bool, typer.Option("--quiet", "-q", help="No progress bar or table.")] = False,
) -> None:
    """RL-TCP (ns3-ai's example): a DQN sets a TCP window over 2 Mbps / 80 ms.

    Writes DIR/dqn.pt, DIR/tb (TensorBoard), DIR/eval.json and the figures
    eval_episode.png and training_return.png.
    """
    import importlib.util
    import json

    check_out_dir(out)
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
    with _progress(quiet) as bar:
        task = bar.add_task(f"rl-tcp ({reward})", total=steps, info="")

        def step(done: int, total: int, info: dict[str, float]) -> None:
            ret = info.get("return", math.nan)
            text = f"ε {info['epsilon']:.2f}" + ("" if ret != ret else f", return {ret:.4g}")
            bar.update(task, completed=done, info=text)

        result = rl_tcp.train(
            out, steps=steps, reward=reward, seed=seed, progress=step, device=device
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


@train_app.command("lfq")
def train_lfq_cmd(
    recipe: Annotated[
        str,
        typer.Option(
            help="paper (3 x 256, the shipped default weights), fast (3 x 64, the shipped "
            "fast weights) or tiny (seconds, for tests)."
        ),
    ] = "paper",
    out: Annotated[Path, typer.Option("--out", "-o", help="Output directory.")] = Path(
        "out/lfq-train"
    ),
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
    device: DeviceOption = "cpu",
    quiet: Annotated[bool, typer.Option("--quiet", "-q", help="No progress bar.")] = False,
) -> None:
    """LFQ (Grigorescu et al.): train the per-flow buffer networks with a named recipe.

    Writes DIR/<model>.safetensors (what fq's policy = {kind = "lfq", weights = ...} loads;
    the shipped weights are these files of --recipe paper and --recipe fast, seed 1, as the
    engine of November 2026 wrote them: later engine fixes give other bytes), the online
    critic,
    DIR/snapshots (weights every few thousand flows), DIR/tb (TensorBoard) and
    DIR/train.json (flows, wall time, flows/s). Same recipe and seed: the same bytes.
    """
    import importlib.util
    import json
    import time

    from l4sim.agents.lfq_recipes import MODELS, RECIPES

    check_out_dir(out)
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
    err_console.print(
        f"LFQ recipe [bold]{recipe}[/]: {escape(r.help)}; TensorBoard: "
        f"tensorboard --logdir {escape(str(out / 'tb'))}",
        soft_wrap=True,
    )
    start = time.perf_counter()
    with _progress(quiet) as bar:
        tasks: dict[str, int] = {}

        def step(model: str, info: dict[str, float]) -> None:
            if model not in tasks:
                tasks[model] = bar.add_task(model, total=r.flows(model), info="")
            text = f"loss {info['loss']:.3g}, mean output {info['output']:.1f}"
            bar.update(tasks[model], completed=int(info["flows"]), info=text)

        stats = lfq.train_recipe(
            recipe, out, seed=seed, jobs=jobs, models=models, progress=step, device=device
        )
    wall = time.perf_counter() - start
    record = {
        "recipe": recipe,
        "seed": seed,
        "jobs": jobs,
        "device": device,
        "wall_s": wall,
        "models": stats,
    }
    (out / "train.json").write_text(json.dumps(record, indent=2) + "\n", encoding="utf-8")
    for m, s in stats.items():
        out_console.print(
            f"{m}: {s['flows']:,} flows in {s['wall_s']:.1f} s ({s['flows_per_s']:.0f} flows/s)",
            soft_wrap=True,
        )
    out_console.print(
        f"Weights in [bold]{escape(str(out))}[/]: "
        + ", ".join(f"{m}.safetensors" for m in stats)
        + f"; {wall:.1f} s in all.",
        soft_wrap=True,
    )
