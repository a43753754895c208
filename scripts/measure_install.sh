#!/usr/bin/env bash
# Measure what the README says of the demo install: a fresh clone of this checkout's HEAD,
# `bash scripts/demo.sh` there (virtualenv, dependencies, the Rust core's release build, the
# demo), its wall time and the virtualenv's size. Writes results/install/install.json.
# Package caches (pip, cargo) are used as they are on this machine: say so when quoting.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
git clone -q "$root" "$tmp/l4sim"
start=$(date +%s)
(cd "$tmp/l4sim" && bash scripts/demo.sh >/dev/null)
end=$(date +%s)
mb=$(du -sm "$tmp/l4sim/.venv" | cut -f1)
mkdir -p results/install
cat > results/install/install.json <<JSON
{
  "command": "bash scripts/measure_install.sh",
  "commit": "$(git rev-parse --short HEAD)",
  "date": "$(date +%F)",
  "machine": "$(nproc) cores, $(uname -m)",
  "demo_sh_wall_s": $((end - start)),
  "venv_mb": $mb
}
JSON
cat results/install/install.json
