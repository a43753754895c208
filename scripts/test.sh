#!/usr/bin/env bash
# Install l4sim (Rust core built by maturin) with its dev tools into .venv, then run every
# check and test: rustfmt, clippy, the Rust tests, ruff, pytest.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/venv.sh
python -m pip install -q -e ".[dev,docs,rl,ray]"
# The HTML report's browser test drives Debian's Chromium headless; install it when missing
# and we may (root with apt-get). Without it that one test is skipped and says why.
if ! command -v chromium >/dev/null 2>&1 && [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null \
    || echo "could not install chromium: the report's browser test will be skipped" >&2
fi
# The emulator's BPF DCTCP (tests/test_emulate_bpf.py) is built with clang and loaded with
# bpftool; install them when missing and we may. Without them those tests skip and say why.
if ! { command -v clang && command -v bpftool && [ -f /usr/include/bpf/bpf_helpers.h ]; } >/dev/null 2>&1 && [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq clang bpftool libbpf-dev >/dev/null \
    || echo "could not install clang and bpftool: the BPF DCTCP tests will be skipped" >&2
fi
cargo fmt --all --check
cargo clippy --all-targets -q -- -D warnings
cargo test --release -q -p l4sim-core -p l4sim-emu
ruff check .
ruff format --check .
# The docs site: every warning (a broken link or anchor, a page left out) is an error; the
# Rust API pages come from cargo doc. tests/test_docs.py opens the result in Chromium.
NO_MKDOCS_2_WARNING=1 mkdocs build --strict -q
# One worker per core, each taking whole test files (a file's fixtures, such as the quick
# reproductions the results guard runs, are built once); the slowest tests are listed.
python -m pytest -q -n auto --dist loadfile --durations=15
# The wheel, installed into a fresh venv with no Rust on PATH (demo, emulate, its router).
bash scripts/test_wheel.sh
