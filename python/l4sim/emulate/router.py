"""``python -m l4sim.emulate.router CONFIG.json``: the emulator's router, carried by the
extension.

The router is Rust (``crates/l4sim-emu``); the extension links it so that an installed wheel
emulates without a Rust toolchain. :mod:`l4sim.emulate` starts this module as the router
process; the process names itself ``l4sim-router``.
"""

from __future__ import annotations

import sys

from l4sim.native import core

if __name__ == "__main__":
    core().router_main(sys.argv[1:])
