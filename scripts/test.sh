#!/usr/bin/env bash
# Install l4sim (Rust core built by maturin) with its dev tools into .venv, then run every
# check and test: rustfmt, clippy, the Rust tests, ruff, pytest.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/venv.sh
python -m pip install -q -e ".[dev,rl]"
cargo fmt --all --check
cargo clippy --all-targets -q -- -D warnings
cargo test --release -q -p l4sim-core
ruff check .
ruff format --check .
python -m pytest -q
