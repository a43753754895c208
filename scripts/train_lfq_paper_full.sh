#!/bin/sh
# LFQ's paper-full recipe on training seeds 1..SEEDS, each into OUT/seed<N>, one after the
# other; stop it at any time (Ctrl-C, or SIGTERM to this script) and run the same command
# again to go on from the last checkpoint (a seed with OUT/seed<N>/train.json is done).
# Usage: scripts/train_lfq_paper_full.sh [OUT [SEEDS [JOBS]]]  (defaults: out/lfq-paper-full 3 2)
set -eu
out=${1:-out/lfq-paper-full}
seeds=${2:-3}
jobs=${3:-2}
l4sim=${L4SIM:-l4sim}
recipe=${RECIPE:-paper-full}  # another recipe: for tests
for s in $(seq 1 "$seeds"); do
    d="$out/seed$s"
    [ -f "$d/train.json" ] && continue
    if [ -d "$d/checkpoint" ]; then where="--resume"; else where="--out"; fi
    $l4sim train lfq --recipe "$recipe" --seed "$s" --jobs "$jobs" "$where" "$d" &
    child=$!
    # SIGTERM to this script is passed on; Ctrl-C and a hang-up reach the training itself
    # (its process group). Either way it writes its checkpoint and stops; this waits for it.
    trap 'kill -TERM "$child" 2>/dev/null; wait "$child"; exit 143' TERM
    trap 'wait "$child"; exit 130' INT HUP
    wait "$child"
    trap - TERM INT HUP
done
