"""``l4sim train a3c`` and ``l4sim train macc``: the A3C-L4S and MA-CC (VDN / QMIX)
trainers on their own, with checkpoints and ``--resume`` as every training command."""

from __future__ import annotations

import contextlib
import importlib.util
import json
from pathlib import Path
from typing import Annotated

import typer
from rich.markup import escape

from l4sim.cli._app import _RAY, out_console
from l4sim.cli.train import (
    ResumeOption,
    _checkpointing,
    _every_option,
    _output,
    _progress,
    _rate,
    train_app,
)
from l4sim.errors import L4simError

OutOption = Annotated[Path | None, typer.Option("--out", "-o", help="Output directory.")]
SeedOption = Annotated[int, typer.Option(help="Seed of the whole run.", min=0, max=2**31)]
QuietOption = Annotated[bool, typer.Option("--quiet", "-q", help="No progress bar.")]
EveryOption = Annotated[int, _every_option("episodes", 10)]


def _need_torch() -> None:
    if importlib.util.find_spec("torch") is None:
        raise L4simError("l4sim train needs PyTorch: pip install 'l4sim[rl]' (torch, tensorboard)")


@train_app.command("a3c")
def train_a3c_cmd(
    episodes: Annotated[int, typer.Option(help="Episodes per worker.", min=1)] = 250,
    steps: Annotated[int, typer.Option(help="Decisions per episode.", min=1)] = 100,
    workers: Annotated[int, typer.Option(help="Workers (lock-step rounds).", min=1, max=64)] = 4,
    reward: Annotated[str, typer.Option(help="utility or delay.")] = "utility",
    out: OutOption = None,
    seed: SeedOption = 1,
    checkpoint_every: EveryOption = 10,
    resume: ResumeOption = None,
    ray: Annotated[str | None, _RAY] = None,
    quiet: QuietOption = False,
) -> None:
    """A3C-L4S: train the DualPI2 agent (its workers in deterministic lock-step rounds).

    Writes DIR/policy.safetensors (what a dualpi2 qdisc's policy = {kind = "a3c", weights
    = ...} loads), DIR/checkpoint.safetensors (actor and critic), DIR/episodes.csv (each
    episode's reward per step) and DIR/tb (TensorBoard). Stopped (Ctrl-C, SIGTERM, SIGHUP)
    between episodes, it keeps its state in DIR/checkpoint; --resume DIR goes on. With
    --ray the workers are Ray tasks that update the networks asynchronously (Hogwild!):
    not reproducible bit for bit, and without checkpoints.
    """
    import csv

    if ray is not None and resume is not None:
        raise L4simError(
            "--resume needs the lock-step workers: --ray workers update asynchronously and "
            "keep no checkpoint"
        )
    out = _output(out, resume, "out/a3c-train")
    _need_torch()
    from l4sim.agents import a3c

    if reward not in a3c.REWARDS:
        raise typer.BadParameter(
            f"--reward {reward!r} is not known; allowed: {', '.join(a3c.REWARDS)}"
        )
    sync = "rounds" if ray is None else "hogwild"
    cfg = a3c.A3cConfig(
        workers=workers,
        episodes=episodes,
        steps=steps,
        reward=reward,
        seed=seed,
        sync=sync,
        ray=ray,
    )
    config = {"command": "a3c", "episodes": episodes, "steps": steps, "workers": workers}
    config |= {"reward": reward, "seed": seed}
    checkpoints = (
        _checkpointing(out, resume, checkpoint_every, config)
        if ray is None
        else contextlib.nullcontext(None)
    )
    with _progress(quiet) as bar, checkpoints as ck:
        task = bar.add_task("a3c episodes", total=workers * episodes, info="", rate="")

        def step(done: int, total: int) -> None:
            bar.update(task, completed=done, rate=_rate(bar, task, "episodes"))

        res = a3c.train(cfg, out, log_dir=out / "tb", checkpoint=ck, progress=step)
    with open(out / "episodes.csv", "w", newline="") as fh:
        csv.writer(fh).writerows(
            [("worker", "episode", "reward_per_step")] + [c[:3] for c in res.curve]
        )
    if ck is not None:
        ck.remove()  # every output written: the checkpoint is of no more use
    out_console.print(
        f"{res.steps:,} decisions in {res.wall_s:.1f} s; policy in "
        f"[bold]{escape(str(out / 'policy.safetensors'))}[/]",
        soft_wrap=True,
    )


@train_app.command("macc")
def train_macc_cmd(
    scheme: Annotated[
        str,
        typer.Option(
            help="A learned MA-CC scheme: ma-cc (VDN), ma-cc-qmix (QMIX), rl-aqm+rl-tcp, "
            "rl-aqm+newreno or red+rl-tcp (independent learners)."
        ),
    ] = "ma-cc",
    episodes: Annotated[int, typer.Option(help="Training episodes.", min=1)] = 100,
    episode_length: Annotated[
        str, typer.Option(help="Simulated time of one episode (MA-CC: 60s).")
    ] = "60s",
    select_every: Annotated[
        int,
        typer.Option(
            help="Every this many episodes a greedy validation episode; the best nets are "
            "kept (0: the last nets).",
            min=0,
        ),
    ] = 5,
    out: OutOption = None,
    seed: SeedOption = 1,
    checkpoint_every: EveryOption = 10,
    resume: ResumeOption = None,
    quiet: QuietOption = False,
) -> None:
    """MA-CC: train TCP and AQM agents together (VDN, QMIX) or independently.

    Writes DIR/policy.pt (the nets and config), DIR/curve.json (each episode's return,
    throughput and RTT; the validations) and DIR/tb (TensorBoard). Stopped (Ctrl-C,
    SIGTERM, SIGHUP) between episodes, it keeps its state in DIR/checkpoint; --resume DIR
    goes on.
    """
    out = _output(out, resume, "out/macc-train")
    _need_torch()
    from l4sim.engine.simulation import to_ns
    from l4sim.experiments import macc

    learned = [s for s, v in macc.SCHEMES.items() if v[2]]
    if scheme not in learned:
        raise typer.BadParameter(
            f"--scheme {scheme!r} is not learned; allowed: {', '.join(learned)}"
        )
    to_ns(episode_length, "--episode-length")
    from l4sim.agents import vdn

    mixer = macc.SCHEMES[scheme][3]
    cfg = vdn.VdnConfig(mixer=mixer or "vdn", seed=seed, select_every=select_every)
    config = {"command": "macc", "scheme": scheme, "episodes": episodes, "seed": seed}
    config |= {"episode_length": episode_length, "select_every": select_every}
    with _progress(quiet) as bar, _checkpointing(out, resume, checkpoint_every, config) as ck:
        task = bar.add_task(scheme, total=episodes, info="", rate="")

        def step(ep: int, ret: float) -> None:
            rate = _rate(bar, task, "episodes")
            bar.update(task, completed=ep + 1, info=f"return {ret:.4g}", rate=rate)

        result = vdn.train(
            lambda: macc.make_env(scheme, episode_length),
            episodes,
            cfg,
            on_episode=step,
            episode_stats=macc.episode_stats,
            log_dir=out / "tb",
            checkpoint=ck,
        )
    vdn.save(result, out / "policy.pt")
    curve = {"returns": result.returns, "throughput_rtt": result.stats}
    curve |= {"validation": result.validation, "selected_episode": result.selected}
    (out / "curve.json").write_text(json.dumps(curve) + "\n", encoding="utf-8")
    ck.remove()  # every output written: the checkpoint is of no more use
    out_console.print(
        f"{result.steps:,} steps in {result.wall_s:.1f} s; nets in "
        f"[bold]{escape(str(out / 'policy.pt'))}[/]",
        soft_wrap=True,
    )
