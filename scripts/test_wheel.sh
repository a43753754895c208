#!/usr/bin/env bash
# The installable wheel: build it (maturin, abi3: one wheel for every CPython >= 3.11), install
# it into a fresh virtualenv, and use it with no Rust toolchain on PATH: `l4sim demo`,
# `l4sim emulate --help`, the emulator's router that the extension carries (found, and it
# answers a bad configuration with its one-line error), and, where network namespaces can
# be made (root), a two-second emulated run. Run by scripts/test.sh; needs .venv (maturin).
set -euo pipefail
cd "$(dirname "$0")/.."
work=$(mktemp -d -t l4sim-wheel-XXXXXX)
trap 'rm -rf "$work"' EXIT

# maturin is in the dev extra; install it when this venv lacks it (demo-only installs).
.venv/bin/python -m maturin --version >/dev/null 2>&1 || .venv/bin/python -m pip install -q "maturin>=1.5,<2"
.venv/bin/python -m maturin build --release -q -o "$work/dist" >"$work/build.log" 2>&1 \
  || { cat "$work/build.log" >&2; exit 1; }
wheel=$(ls "$work"/dist/l4sim-*.whl)
case "$wheel" in
  *-abi3-*) ;;
  *) echo "the wheel is not abi3: $wheel" >&2; exit 1 ;;
esac
# The interpreter the project's venv was made from, without the venv.
base=$(.venv/bin/python -c 'import sys; print(sys._base_executable)')
"$base" -m venv "$work/venv"
"$work/venv/bin/python" -m pip install -q "$wheel"

# PATH without any directory that holds cargo or rustc.
clean_path=$(
  IFS=:
  for d in $PATH; do
    [ -e "$d/cargo" ] || [ -e "$d/rustc" ] || printf '%s:' "$d"
  done
)
run() { env -i HOME="$work" PATH="$work/venv/bin:${clean_path%:}" LANG=C.UTF-8 "$@"; }
if run sh -c 'command -v cargo || command -v rustc' >/dev/null; then
  echo "cargo is still on PATH" >&2
  exit 1
fi

cd "$work"
# Nothing from the checkout: the installed package only.
run python -c 'import l4sim, sys; assert "/site-packages/" in l4sim.__file__, l4sim.__file__'
# Package data: the BPF DCTCP source, the shipped traces, the reference tables, the schemas.
run python -c '
from importlib.resources import files
d = files("l4sim") / "data"
for f in ("bpf/l4sim_dctcp.bpf.c", "traces/verizon-lte.down.gz", "schema/scenario.schema.json"):
    assert (d / f).is_file(), f
assert any(p.name.endswith(".csv") for p in (d / "reference").iterdir())
'
run l4sim demo --out "$work/demo" --quiet
test -s "$work/demo/summary.json"
run l4sim emulate --help >/dev/null
run python -c '
from l4sim.emulate import find_router
cmd = find_router()
assert cmd[1:] == ["-m", "l4sim.emulate.router"], cmd
'
# The router itself runs from the wheel: a missing configuration is its one-line error.
set +e
err=$(run python -m l4sim.emulate.router "$work/missing.json" 2>&1)
rc=$?
set -e
if [ "$rc" != 2 ] || [[ "$err" != "l4sim-router: cannot read"* ]]; then
  echo "the wheel's router did not answer as expected (exit $rc): $err" >&2
  exit 1
fi
if [ "$(id -u)" = 0 ] && ip netns add "l4sim-wheelcheck-$$" 2>/dev/null; then
  ip netns del "l4sim-wheelcheck-$$"
  cat >"$work/emu.toml" <<'EOF'
duration = "2s"
[topology]
preset = "dumbbell"
[topology.bottleneck]
rate = "10Mbps"
delay = "5ms"
[[flows]]
kind = "tcp"
cca = "cubic"
EOF
  run l4sim emulate "$work/emu.toml" --out "$work/emu" --quiet
  run python -c "
import json, sys
s = json.load(open(sys.argv[1]))
g = s['flows'][0]['goodput_bps']
assert 5e6 < g < 10.5e6, g
" "$work/emu/summary.json"
  echo "wheel: demo, emulate --help, router and a 2 s emulated run OK ($(basename "$wheel"))"
else
  echo "wheel: demo, emulate --help and router OK ($(basename "$wheel")); no emulated run (needs root and network namespaces)"
fi
