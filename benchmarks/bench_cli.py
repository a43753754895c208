"""Command-line checks shared by the comparison benchmarks (bench_vs_ns3, bench_vs_htsim)."""

from __future__ import annotations

import argparse
from collections.abc import Iterable


def chosen_cases(
    ap: argparse.ArgumentParser, cases: str, known: Iterable[str], repeat: int
) -> list[str]:
    """The case names of the comma list ``cases``, each one of ``known``, with ``repeat`` at
    least 1; otherwise ``ap.error`` (exit 2) says which."""
    known = list(known)
    chosen = [c.strip() for c in cases.split(",") if c.strip()]
    unknown = [c for c in chosen if c not in known]
    if unknown:
        ap.error(f"unknown case(s) {', '.join(unknown)}; known: {', '.join(known)}")
    if repeat < 1:
        ap.error("--repeat must be at least 1")
    return chosen
