"""``l4sim train``: train a learning agent on an l4sim environment and evaluate it."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Annotated

import typer
from rich.markup import escape

from l4sim.cli._app import app, check_out_dir, err_console, out_console
from l4sim.cli.tables import _eval_table
from l4sim.errors import L4simError

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
    quiet: Annotated[bool, typer.Option("--quiet", "-q", help="No progress bar or table.")] = False,
) -> None:
    """RL-TCP (ns3-ai's example, paper 000): a DQN sets a TCP window over 2 Mbps / 80 ms.

    Writes DIR/dqn.pt, DIR/tb (TensorBoard), DIR/eval.json and the figures
    eval_episode.png and training_return.png.
    """
    import importlib.util
    import json

    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    check_out_dir(out)
    if importlib.util.find_spec("torch") is None:
        raise L4simError("l4sim train needs PyTorch: pip install 'l4sim[rl]' (torch, tensorboard)")
    from l4sim.experiments import rl_tcp

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
    with Progress(
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        TextColumn("{task.fields[info]}"),
        console=err_console,
        disable=quiet,
    ) as bar:
        task = bar.add_task(f"rl-tcp ({reward})", total=steps, info="")

        def step(done: int, total: int, info: dict[str, float]) -> None:
            ret = info.get("return", math.nan)
            text = f"ε {info['epsilon']:.2f}" + ("" if ret != ret else f", return {ret:.4g}")
            bar.update(task, completed=done, info=text)

        result = rl_tcp.train(out, steps=steps, reward=reward, seed=seed, progress=step)
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
