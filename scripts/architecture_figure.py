"""Draw docs/figures/architecture.png: l4sim's layers, a packet's path through the engine and
a parameter's path from a scenario file to the algorithm that reads it.

    python scripts/architecture_figure.py [--out docs/figures/architecture.png]

The boxes name real modules (paths relative to python/l4sim and crates/); when a module moves,
change it here and re-run.
"""

from __future__ import annotations

import argparse
import itertools
from pathlib import Path

from l4sim.plot import pyplot

ROOT = Path(__file__).resolve().parents[1]

LAYERS = [
    (
        "What users touch",
        "#eef2fb",
        [
            "scenario TOML",
            "Python API\nl4sim.run, Simulation",
            "CLI (typer)\nrun, sweep, reproduce",
            "Gymnasium /\nPettingZoo envs",
            "l4sim emulate",
        ],
    ),
    (
        "python/l4sim",
        "#e8f5e9",
        [
            "scenario/\npydantic models",
            "engine/\nsimulation, results",
            "envs/, agents/\n(RL trainers)",
            "experiments/\nExperiment protocol",
            "executors\n(pool, Ray)",
            "emulate/\nnetns, traffic, router",
        ],
    ),
    ("crates/l4sim-py: l4sim._core (thin binding, no logic)", "#fff8e1", []),
    (
        "crates/l4sim-core",
        "#fdecea",
        [
            "engine/\nevents, control API",
            "net/\nlinks, rate, routing",
            "qdisc/\none file per AQM",
            "policy/\nlearned policies",
            "tcp/\nsender parts, cc/",
            "app/, stats/,\nsummary, capture",
        ],
    ),
    ("crates/l4sim-emu: the router, the same channels on real packets (TUN)", "#f3e5f5", []),
]

PACKET = [
    "TcpSender pushes a Packet",
    "engine: forward(node) looks up the next channel",
    "Channel.offer: the qdisc enqueues, marks or drops\n(a learned policy decides through policy/)",
    "Channel.take: dequeue at the link's rate\n(or its trace / schedule); captures record it",
    "propagation delay, jitter, loss",
    "next hop, or deliver to the TcpReceiver",
    "the ACK comes back the same way",
]

PARAMETER = [
    'scenario: cca = {kind = "cubic", hystart = false}',
    "scenario/ccas.py: the Cubic model validates it",
    'to_core_config(): tcp.cca = {"kind": "cubic", "hystart": false}',
    "tcp/config.rs: TcpConfig.cca = CcaConfig::Cubic(CubicConfig)",
    "tcp/cc/mod.rs: Cc::new builds the algorithm",
    "tcp/cc/cubic.rs: Cubic reads CubicConfig.hystart",
]


def draw(out: Path) -> None:
    plt = pyplot()
    from matplotlib.patches import FancyArrowPatch, FancyBboxPatch

    fig = plt.figure(figsize=(15, 7.6))
    ax = fig.add_axes((0, 0, 1, 1))
    ax.set_xlim(0, 150)
    ax.set_ylim(6, 82)
    ax.axis("off")

    def box(x: float, y: float, w: float, h: float, text: str, color: str, size: float = 9):
        ax.add_patch(
            FancyBboxPatch(
                (x, y), w, h, boxstyle="round,pad=0.3,rounding_size=0.8", fc=color, ec="#555"
            )
        )
        ax.text(x + w / 2, y + h / 2, text, ha="center", va="center", fontsize=size)

    # The layers, top to bottom (y is each box's top).
    ax.text(2, 80, "Layers (arrows: who calls whom)", fontsize=12, weight="bold")
    top = 77.0
    spans = []
    for title, color, parts in LAYERS:
        h = 11.0 if parts else 4.5
        box(2, top - h, 84, h, "", color)
        ax.text(3.5, top - 2.0, title, fontsize=10, weight="bold", va="center")
        if parts:
            w = (84 - 2 * (len(parts) + 1)) / len(parts)
            for i, p in enumerate(parts):
                box(3.5 + i * (w + 2), top - h + 1.0, w, 6.0, p, "white", 8)
        spans.append((top, top - h))
        top -= h + 4.0

    def arrow(y_from: float, y_to: float) -> None:
        ax.add_patch(
            FancyArrowPatch((44, y_from), (44, y_to), arrowstyle="-|>", mutation_scale=14, lw=1.2)
        )

    for (_t1, b1), (t2, _b2) in itertools.pairwise(spans[:4]):
        arrow(b1 - 0.3, t2 + 0.3)  # users -> Python -> binding -> core
    arrow(spans[4][0] + 0.3, spans[3][1] - 0.3)  # the emulator's router uses the core

    def path(x: float, y: float, title: str, steps: list[str], color: str) -> float:
        ax.text(x, y, title, fontsize=12, weight="bold", color=color)
        yy = y - 2.0
        prev = yy
        for i, s in enumerate(steps):
            h = 2.4 * (s.count("\n") + 1) + 0.8
            box(x, yy - h, 58, h, f"{i + 1}. {s}", "white", 8)
            if i:
                ax.add_patch(
                    FancyArrowPatch(
                        (x + 29, prev), (x + 29, yy), arrowstyle="-|>", color=color, lw=1.2
                    )
                )
            prev = yy - h
            yy -= h + 1.4
        return yy

    end = path(90, 80, "A packet's path (engine/, net/, qdisc/)", PACKET, "#c62828")
    path(90, end - 2.0, "A parameter's path (Python to the core)", PARAMETER, "#1565c0")
    out.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(out, dpi=110)
    plt.close(fig)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", type=Path, default=ROOT / "docs" / "figures" / "architecture.png")
    draw(ap.parse_args().out)


if __name__ == "__main__":
    main()
