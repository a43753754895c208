"""Behaviour snapshot: the results a refactor or a speed-up must leave unchanged.

    python benchmarks/snapshot.py OUT_DIR                 # write a snapshot
    python benchmarks/snapshot.py OUT_DIR --compare REF   # write one and diff it with REF
    python benchmarks/snapshot.py OUT_DIR --compare REF --ignore-events

A snapshot holds, for every shipped scenario (scenarios/*.toml), its summary.json with
the wall-time fields removed, and the tables (CSV) of `l4sim reproduce aqm-004` and
`l4sim reproduce l4s-rtt-fairness`. Same code, same seeds: the files are byte-identical.
`--compare` prints each file that differs and exits 1 if any does. `--ignore-events` leaves
the summaries' event counts out of the comparison, for an engine change that removes
events by design (e.g. virtual queues: no "transmission done" events on FIFO links).
"""

from __future__ import annotations

import argparse
import filecmp
import json
import sys
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent

#: Fields that measure the machine, not the simulation.
WALL_FIELDS = ("wall_time_s", "events_per_s", "speed_x")


def _strip(v: Any) -> Any:
    if isinstance(v, dict):
        return {k: _strip(x) for k, x in v.items() if k not in WALL_FIELDS}
    if isinstance(v, list):
        return [_strip(x) for x in v]
    return v


def snapshot(out: Path) -> None:
    import l4sim
    from l4sim.experiments import aqm_comparison, l4s_rtt_fairness

    out.mkdir(parents=True, exist_ok=True)
    for path in sorted((REPO / "scenarios").glob("*.toml")):
        summary = _strip(l4sim.run(l4sim.load(path)).summary)
        (out / f"{path.stem}.summary.json").write_text(
            json.dumps(summary, indent=1, sort_keys=True)
        )
        print(f"  {path.name}", flush=True)
    # Directory names kept from the snapshots' first layout, so old snapshots compare.
    for name, mod in (("aqm_004", aqm_comparison), ("l4s_rtt_fairness", l4s_rtt_fairness)):
        d = out / name
        mod.reproduce(d, figures=False)
        print(f"  {d.name}", flush=True)


def _files(d: Path) -> set[Path]:
    """The compared files: scenario summaries and the reproductions' tables (their per-case
    directories hold summaries with wall times)."""
    return {p.relative_to(d) for p in [*d.glob("*.summary.json"), *d.glob("*/*.csv")]}


def _same(a: Path, b: Path, ignore_events: bool) -> bool:
    if ignore_events and a.name.endswith(".summary.json"):
        x, y = json.loads(a.read_text()), json.loads(b.read_text())
        x.pop("events", None)
        y.pop("events", None)
        return x == y
    return filecmp.cmp(a, b, shallow=False)


def compare(out: Path, ref: Path, ignore_events: bool = False) -> int:
    """Every file of the reference must be here and the same; a file only in this snapshot
    is a new output (a table a change added), listed but not a difference."""
    mine, theirs = _files(out), _files(ref)
    for p in sorted(mine - theirs):
        print(f"new in this snapshot: {p}")
    bad = sorted(theirs - mine)
    for p in bad:
        print(f"missing from this snapshot: {p}")
    for p in sorted(mine & theirs):
        if not _same(out / p, ref / p, ignore_events):
            print(f"differs: {p}")
            bad.append(p)
    print(f"{len(mine & theirs)} files compared, {len(bad)} differ or are missing")
    return 1 if bad else 0


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("out", type=Path)
    ap.add_argument("--compare", type=Path, default=None, help="reference snapshot to diff with")
    ap.add_argument(
        "--ignore-events",
        action="store_true",
        help="compare summaries without their event counts",
    )
    a = ap.parse_args()
    snapshot(a.out)
    return compare(a.out, a.compare, a.ignore_events) if a.compare else 0


if __name__ == "__main__":
    sys.exit(main())
