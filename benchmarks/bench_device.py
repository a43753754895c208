"""Where a training step's time goes, and when a GPU pays.

    python benchmarks/bench_device.py [--out results.json] [--repeat 200]

For each PyTorch trainer, times in one process, side by side:
- the environment's share: one RL-TCP step (``TcpCwnd-v0``, DQN), one MA-CC step
  (``MultiCCEnv``, VDN), one LFQ rollout (a whole A/B pair of simulated flows);
- the network's share on each device present (``cpu``, and ``cuda`` where PyTorch sees a
  GPU): one greedy action (a forward on one observation) and one update (forward, backward
  and optimiser step on the trainer's batch, with the host-to-device copy of that batch);
- the batch size from which an update on the GPU beats the CPU, for the trainers' MLPs.

The CPU is timed with one torch thread, as the trainers run it. Prints a table; ``--out``
writes the numbers as JSON. The medians of ``--repeat`` timings are reported.
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np
import torch
from torch import nn


def _median_s(fn: Callable[[], object], repeat: int, sync: bool) -> float:
    for _ in range(max(3, repeat // 10)):
        fn()
    times = []
    for _ in range(repeat):
        if sync:
            torch.cuda.synchronize()
        t0 = time.perf_counter()
        fn()
        if sync:
            torch.cuda.synchronize()
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def mlp(n_in: int, widths: tuple[int, ...], n_out: int) -> nn.Module:
    layers: list[nn.Module] = []
    w = n_in
    for h in widths:
        layers += [nn.Linear(w, h), nn.ReLU()]
        w = h
    layers.append(nn.Linear(w, n_out))
    return nn.Sequential(*layers)


#: The trainers' networks and batches (as their configs set them).
NETS = {
    "dqn (rl-tcp)": (5, (64, 64), 5, 128, "adam"),
    "vdn (ma-cc)": (3, (64, 64), 5, 32 * 4, "adam"),
    "lfq offline": (60, (256, 256, 256), 1, 20, "sgd"),
    "lfq online": (60, (256, 256, 256), 1, 40, "sgd"),
}


def net_costs(dev: torch.device, n_in, widths, n_out, batch, opt_name, repeat) -> dict:
    torch.manual_seed(1)
    net = mlp(n_in, widths, n_out).to(dev)
    opt = (torch.optim.Adam if opt_name == "adam" else torch.optim.SGD)(net.parameters(), lr=1e-3)
    x_host = torch.randn(batch, n_in)
    y_host = torch.randn(batch, n_out)
    one = np.random.default_rng(1).standard_normal(n_in).astype(np.float32)
    sync = dev.type == "cuda"

    def act() -> int:
        with torch.no_grad():
            return int(net(torch.as_tensor(one).reshape(1, -1).to(dev)).argmax().item())

    def update() -> None:
        loss = nn.functional.smooth_l1_loss(net(x_host.to(dev)), y_host.to(dev))
        opt.zero_grad()
        loss.backward()
        opt.step()

    return {
        "act_s": _median_s(act, repeat, sync),
        "update_s": _median_s(update, repeat, sync),
    }


def crossover(devs: list[torch.device], repeat: int) -> dict:
    """Update time vs batch size for a 64x64 and a 3x256 MLP on each device."""
    out: dict = {}
    for name, (n_in, widths, n_out) in {
        "64x64": (5, (64, 64), 5),
        "3x256": (60, (256, 256, 256), 1),
    }.items():
        rows = []
        for batch in (32, 128, 512, 2048, 8192, 32768):
            row = {"batch": batch}
            for dev in devs:
                row[dev.type] = net_costs(dev, n_in, widths, n_out, batch, "adam", repeat)[
                    "update_s"
                ]
            rows.append(row)
        out[name] = rows
    return out


def env_costs(repeat: int) -> dict:
    from l4sim.agents import lfq
    from l4sim.experiments import macc_002, rl_tcp

    env = rl_tcp.make_env()
    env.reset(seed=1)
    rng = np.random.default_rng(1)
    n = env.action_space.n

    def tcp_step() -> None:
        _, _, term, trunc, _ = env.step(int(rng.integers(n)))
        if term or trunc:
            env.reset()

    menv = macc_002.make_env("ma-cc")
    menv.reset(seed=1)

    def ma_step() -> None:
        if not menv.agents:
            menv.reset()
        menv.step({a: int(rng.integers(menv.action_space(a).n)) for a in menv.agents})

    cfg = lfq.recipe_configs("paper")["offline-small"]
    weights = (
        Path(__file__).resolve().parents[1] / "python/l4sim/data/lfq/offline-small.safetensors"
    )
    seeds = iter(range(1, 10**6))

    def rollout() -> None:
        lfq.rollout((cfg, str(weights), next(seeds)))

    return {
        "dqn (rl-tcp)": _median_s(tcp_step, repeat, False),
        "vdn (ma-cc)": _median_s(ma_step, repeat, False),
        "lfq offline": _median_s(rollout, max(5, repeat // 20), False),
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", type=Path)
    ap.add_argument("--repeat", type=int, default=200)
    args = ap.parse_args()
    torch.set_num_threads(1)
    devs = [torch.device("cpu")] + ([torch.device("cuda")] if torch.cuda.is_available() else [])
    gpu = torch.cuda.get_device_name(0) if torch.cuda.is_available() else None
    envs = env_costs(args.repeat)
    envs["lfq online"] = envs["lfq offline"] / 2  # one branch per flow instead of two
    nets = {
        name: {d.type: net_costs(d, *spec, args.repeat) for d in devs}
        for name, spec in NETS.items()
    }
    cross = crossover(devs, 10)
    print(f"devices: cpu (1 torch thread){', cuda: ' + gpu if gpu else ''}")
    print(
        f"{'trainer':<14} {'env step':>10} "
        + " ".join(f"{d.type + ' act':>10} {d.type + ' update':>12}" for d in devs)
        + "  update / env step"
    )
    for name in NETS:
        line = f"{name:<14} {envs[name] * 1e3:>8.3f}ms "
        for d in devs:
            c = nets[name][d.type]
            line += f"{c['act_s'] * 1e3:>8.3f}ms {c['update_s'] * 1e3:>10.3f}ms "
        ratios = ", ".join(
            f"{d.type} {nets[name][d.type]['update_s'] / envs[name]:.2f}" for d in devs
        )
        print(line + " " + ratios)
    for name, rows in cross.items():
        print(f"update time by batch size, {name} MLP (Adam):")
        for r in rows:
            print(
                f"  batch {r['batch']:>6}: "
                + ", ".join(f"{d.type} {r[d.type] * 1e3:.3f} ms" for d in devs)
            )
    if args.out:
        import subprocess

        commit = subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"],
            capture_output=True,
            text=True,
            cwd=Path(__file__).resolve().parent,
        ).stdout.strip()
        args.out.write_text(
            json.dumps(
                {
                    "commit": commit or None,
                    "date": time.strftime("%Y-%m-%d"),
                    "gpu": gpu,
                    "torch": torch.__version__,
                    "env_s": envs,
                    "nets": nets,
                    "crossover": cross,
                },
                indent=1,
            )
            + "\n"
        )


if __name__ == "__main__":
    main()
