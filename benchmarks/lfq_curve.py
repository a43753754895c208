"""Learning curves of an ``l4sim train lfq`` run from its ``snapshots/``: for each kept
weights file, the Table I / II figures on a 7-point sweep (bandwidth 5..25 Mbit/s at 15 ms,
delay 5..25 ms at 15 Mbit/s, NewReno and BIC, 5 s flows, the reproduction's
``lfq._run_case``): the mean output per CC and the correlations with bandwidth and delay,
against the flows trained. Writes ``curve.csv`` and ``curve.png`` into the run's directory
(or ``--png``).

    python benchmarks/lfq_curve.py out/lfq-paper [--model online] [--points 7] [--png P]
"""

from __future__ import annotations

import argparse
import csv
from pathlib import Path

from l4sim.experiments import lfq
from l4sim.plot import pyplot


def curve(run: Path, model: str, points: int) -> list[dict]:
    rows = []
    for snap in sorted((run / "snapshots").glob(f"{model}.*.safetensors")):
        flows = int(snap.name.split(".")[1])
        cases = [
            lfq.Case(model, cca, sweep, x, weights=str(snap))
            for cca in lfq.CCAS
            for sweep in ("bw", "delay")
            for x in lfq._grid(points)
        ]
        res = [lfq._run_case(c) for c in cases]
        for m, cca, cb, cd, mean in lfq.table_one(res):
            rows.append(
                {"flows": flows, "cca": cca, "corr_bw": cb, "corr_delay": cd, "mean_output": mean}
            )
            del m
    return rows


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("run", type=Path)
    ap.add_argument("--model", default="online")
    ap.add_argument("--points", type=int, default=7)
    ap.add_argument("--png", type=Path)
    a = ap.parse_args()
    rows = curve(a.run, a.model, a.points)
    with open(a.run / f"curve_{a.model}.csv", "w", newline="") as fh:
        w = csv.DictWriter(fh, fieldnames=list(rows[0]))
        w.writeheader()
        w.writerows(rows)
    for r in rows:
        print(
            f"{r['flows']:7d} {r['cca']:8s} out {r['mean_output']:6.1f} "
            f"corr bw {r['corr_bw']:+.3f} delay {r['corr_delay']:+.3f}"
        )
    plt = pyplot()
    fig, axes = plt.subplots(1, 2, figsize=(9, 3.5))
    for cca in lfq.CCAS:
        s = [r for r in rows if r["cca"] == cca]
        axes[0].plot([r["flows"] for r in s], [r["mean_output"] for r in s], "o-", label=cca)
        axes[1].plot([r["flows"] for r in s], [r["corr_delay"] for r in s], "o-", label=cca)
    axes[0].set_ylabel("mean output buffer (packets)")
    axes[1].set_ylabel("corr(output, delay)")
    for ax in axes:
        ax.set_xlabel(f"{a.model} training flows")
        ax.legend()
    fig.suptitle(f"LFQ {a.model}: {a.run.name}")
    fig.tight_layout()
    fig.savefig(a.png or a.run / f"curve_{a.model}.png", dpi=100)


if __name__ == "__main__":
    main()
