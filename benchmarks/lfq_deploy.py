"""`examples/lfq_deploy.toml` (four CUBIC flows through a 10 Mbit/s LFQ bottleneck, 20 s)
with each offline-small network a reader can deploy: the `tiny` recipe's (trained here, a
few seconds: the tests' recipe), and the shipped `fast` and `paper` weights. Per network
the bottleneck's link utilisation and mean queue delay (the sojourn of its packets), so
that the train-and-deploy page can say what training buys.

    python benchmarks/lfq_deploy.py [--out benchmarks/data]

Writes `benchmarks/data/lfq_deploy.md`.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

BENCH_DIR = Path(__file__).resolve().parent
REPO = BENCH_DIR.parent
sys.path.insert(0, str(REPO / "python"))
sys.path.insert(0, str(BENCH_DIR))

import l4sim  # noqa: E402
from bench_out import Report  # noqa: E402
from l4sim.experiments.lfq import shipped_weights  # noqa: E402

EXAMPLE = REPO / "examples" / "lfq_deploy.toml"
NAMED = "../out/lfq/offline-small.safetensors"  # the weights the example names


def measure(weights: Path) -> tuple[float, float]:
    """The example run with ``weights``: (link utilisation, mean queue delay in s)."""
    text = EXAMPLE.read_text(encoding="utf-8")
    if NAMED not in text:
        raise SystemExit(f"{EXAMPLE} no longer names {NAMED}: update this benchmark")
    scenario = l4sim.loads(text.replace(NAMED, str(weights)), source=str(EXAMPLE))
    queue = l4sim.run(scenario).summary["queues"][0]
    return queue["utilization"], queue["sojourn_mean_s"]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default=str(BENCH_DIR / "data"), help="'' to print only")
    args = ap.parse_args()
    from l4sim.agents import lfq

    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        lfq.train_recipe("tiny", tmp, models=["offline-small"])
        nets = [
            ("`tiny` recipe (8 flows)", Path(tmp) / "offline-small.safetensors"),
            (
                "`fast` recipe, `offline-small` (shipped in `fast/`)",
                shipped_weights("offline-small", fast=True),
            ),
            ("shipped `paper` `offline-small`", shipped_weights("offline-small")),
        ]
        for name, path in nets:
            util, delay = measure(path)
            rows.append([name, f"{100 * util:.1f} %", f"{1000 * delay:.2f} ms"])
            print(*rows[-1], sep="  ")
    Report(args.out or None).table(
        "lfq_deploy", ["weights", "link utilisation", "mean queue delay"], rows
    )


if __name__ == "__main__":
    main()
