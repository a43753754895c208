"""When an LFQ training's learning curve has converged: the stopping rule of a recipe's online
stage (:attr:`l4sim.agents.lfq_recipes.Recipe.converge`). Torch-free.

The curve is read from the training flows themselves, at no extra simulation: after the
critic's warm-up, the flows are cut into windows of ``window`` flows and, per CC, each
window gives the quantities LFQ's Tables I and II report, measured on the actor's output at
each flow's experiment: its mean (packets) and its Pearson correlation with the flow's
bandwidth and with its delay. The curve has converged when, for ``patience`` window
boundaries in a row, every mean moved by less than ``tolerance`` (relative) and every
correlation by less than ``corr_tolerance`` (absolute) from the window before. The
recipe's flow count is the hard cap.

Everything is accumulated in a fixed order from the batch's results, and the running sums
are part of the trainer's checkpoint, so a stopped and resumed training stops at the same
flow as one that never stopped.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

__all__ = ["Convergence", "CurveWatch"]

#: Per-CC running sums: n, output, bw, delay, output^2, bw^2, delay^2, output*bw, output*delay.
_SUMS = 9


@dataclass(frozen=True)
class Convergence:
    """The stopping rule (see the module's docstring)."""

    window: int
    """Flows per window (a whole number of batches)."""
    tolerance: float
    """Largest relative change of a CC's mean output between two windows."""
    corr_tolerance: float
    """Largest absolute change of a CC's corr(output, bandwidth) or corr(output, delay)."""
    patience: int
    """Window boundaries in a row that must pass."""

    def describe(self) -> str:
        return (
            f"per CC, the mean output within {100 * self.tolerance:g} % and corr(output, "
            f"bandwidth) and corr(output, delay) within {self.corr_tolerance:g} of the "
            f"previous window of {self.window:,} flows, {self.patience} windows in a row"
        )


def _corr(n: float, sx: float, sy: float, sxx: float, syy: float, sxy: float) -> float:
    vx, vy = n * sxx - sx * sx, n * syy - sy * sy
    if n < 2 or vx <= 0.0 or vy <= 0.0:
        return 0.0
    return (n * sxy - sx * sy) / math.sqrt(vx * vy)


class CurveWatch:
    """Accumulates the curve window by window and says when ``rule`` holds; ``start``: the
    flow count at which the actor starts learning (the critic's warm-up)."""

    def __init__(self, rule: Convergence, ccas: Sequence[str], start: int = 0) -> None:
        self.rule = rule
        self.ccas = list(ccas)
        self.start = start
        self.sums = [[0.0] * _SUMS for _ in self.ccas]
        self.windows: list[dict[str, Any]] = []
        """One entry per closed window: flows at its end and per CC (mean, corr bw, corr
        delay)."""
        self.passed = 0
        self.converged_at: int | None = None

    def add(self, done: int, outputs: Sequence[float], results: Sequence[dict[str, Any]]) -> None:
        """One batch: ``outputs`` the actor's output per flow, ``results`` the rollouts
        (``bw``, ``delay``, ``cca``); ``done`` the flows trained after it."""
        if done <= self.start:
            return
        for y, r in zip(outputs, results, strict=True):
            s = self.sums[self.ccas.index(r["cca"])]
            b, d = float(r["bw"]), float(r["delay"])
            for k, v in enumerate((1.0, y, b, d, y * y, b * b, d * d, y * b, y * d)):
                s[k] += v
        if (done - self.start) % self.rule.window == 0:
            self._close(done)

    def _close(self, done: int) -> None:
        stats = {}
        for cca, s in zip(self.ccas, self.sums, strict=True):
            n, sy, sb, sd, syy, sbb, sdd, syb, syd = s
            stats[cca] = (
                sy / n if n else 0.0,
                _corr(n, sy, sb, syy, sbb, syb),
                _corr(n, sy, sd, syy, sdd, syd),
            )
        self.sums = [[0.0] * _SUMS for _ in self.ccas]
        if self.windows:
            before = self.windows[-1]["stats"]
            ok = all(
                abs(m - before[c][0]) <= self.rule.tolerance * max(abs(before[c][0]), 1e-9)
                and abs(cb - before[c][1]) <= self.rule.corr_tolerance
                and abs(cd - before[c][2]) <= self.rule.corr_tolerance
                for c, (m, cb, cd) in stats.items()
            )
            self.passed = self.passed + 1 if ok else 0
        self.windows.append({"flows": done, "stats": stats})
        if self.converged_at is None and self.passed >= self.rule.patience:
            self.converged_at = done

    @property
    def converged(self) -> bool:
        return self.converged_at is not None

    def state(self) -> dict[str, Any]:
        """Plain data for the checkpoint."""
        return {
            "sums": self.sums,
            "windows": self.windows,
            "passed": self.passed,
            "converged_at": self.converged_at,
        }

    def load(self, state: dict[str, Any]) -> None:
        self.sums = [list(map(float, s)) for s in state["sums"]]
        self.windows = [
            {"flows": w["flows"], "stats": {c: tuple(v) for c, v in w["stats"].items()}}
            for w in state["windows"]
        ]
        self.passed = int(state["passed"])
        self.converged_at = state["converged_at"]
