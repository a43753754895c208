#!/usr/bin/env bash
# Install l4sim into .venv and run the demo scenario; prints where the figures are.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/venv.sh
python -m pip install -q .
l4sim demo "$@"
