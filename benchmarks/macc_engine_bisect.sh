#!/bin/bash
# MA-CC's training seed 1 (`l4sim reproduce macc-002 --only ma-cc --seeds 1`) at each engine
# commit between the one that made macc-002's earlier table (aed6538) and the BBR TSO
# change (1fc83bf), each from its own worktree and build; prints the greedy episode's
# last-10-s throughput (kbit/s) and MAD queue (packets) per commit.
# Usage: benchmarks/macc_engine_bisect.sh WORKDIR  (about 10 CPU-minutes per commit)
# Writes WORKDIR/macc_engine_bisect.csv and .md (the table the macc-002 page includes from
# benchmarks/data/).
set -eu
work=${1:?usage: benchmarks/macc_engine_bisect.sh WORKDIR}
repo=$(cd "$(dirname "$0")/.." && pwd)
py=${PYTHON:-python}
mkdir -p "$work"
csv="$work/macc_engine_bisect.csv"
echo "commit,steady_throughput_kbps,steady_mad_queue_pkts" > "$csv"
for c in aed6538 ad63002 1b3fb91 8372f1c 1fc83bf; do
  wt="$work/wt-$c"
  [ -d "$wt" ] || git -C "$repo" worktree add -q --detach "$wt" "$c"
  # No LTO: a faster build, the same floating point (Rust does not contract or reorder it).
  (cd "$wt" && CARGO_TARGET_DIR="$work/target" CARGO_PROFILE_RELEASE_LTO=false \
    cargo build -q --release -p l4sim-py &&
    cp "$work/target/release/lib_core.so" python/l4sim/_core.abi3.so)
  (cd "$wt" && PYTHONPATH="$wt/python" "$py" -m l4sim reproduce macc-002 --only ma-cc \
    --seeds 1 --out "$work/out-$c" > "$work/log-$c.txt" 2>&1)
  row=$(grep -h '^ma-cc,1,' "$work/out-$c/per_seed.csv" | cut -d, -f9,12)
  echo "$c,$row" | tee -a "$csv"
  git -C "$repo" worktree remove --force "$wt"
done
"$py" - "$csv" <<'PY'
import csv, sys
from pathlib import Path
what = {
    "aed6538": "the earlier table's commit",
    "ad63002": "pacing times the payload, as Linux",
    "1b3fb91": "the ACK that ends recovery goes on to the Open state's checks",
    "8372f1c": "Linux's SACK compression at the receiver",
    "1fc83bf": "BBR paces TSO bursts (with the commits since 8372f1c)",
}
path = Path(sys.argv[1])
lines = ["| commit | engine change | MA-CC seed 1, last 10 s: kbit/s | MAD queue pkts |",
         "|---|---|---:|---:|"]
for r in csv.DictReader(path.open()):
    lines.append(f"| `{r['commit']}` | {what[r['commit']]} "
                 f"| {float(r['steady_throughput_kbps']):,.0f} "
                 f"| {float(r['steady_mad_queue_pkts']):.1f} |")
path.with_suffix(".md").write_text("\n".join(lines) + "\n")
PY
