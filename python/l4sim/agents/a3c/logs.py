"""A3C-L4S's offline workflow ("L4S in FreeBSD with A3C", section 3.2.4): per-interval AQM
logs in the paper's Table-1 format, and an environment that replays them.

:func:`write_log` runs a scenario and records, every ``interval`` (default: the qdisc's
``tupdate``), one row per bottleneck queue with the raw Table-1 columns
(:data:`l4sim.agents.a3c.FEATURES`, ``measurement_start`` = the interval's start time) plus
``time_s``, ``link`` and ``rate_bps`` — what the authors' kernel logging printed
(``fq_calculate_drop_prob-start ... end`` lines in ``A3C-L4S/router1.txt``, github
MPTCP-FreeBSD/FreeBSD-DRL-L4S), from a DualPI2 or FQ-L4S link. CSV or Parquet by suffix.

:class:`OfflineEnv` is the authors' environment (``gym_env`` in
``A3C-L4S/.ipynb_checkpoints/5_a3c_continuous_L4S-checkpoint.ipynb``): an episode starts on
a random row; an action p' moves to the row whose logged ``drop_prob`` is nearest to it,
whose state is the next observation and whose delay gives the reward. Users with kernel
logs convert them to these columns and train with ``A3cConfig(mode="offline", logs=...)``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import polars as pl

from l4sim.agents.a3c.model import (
    FEATURES,
    A3cConfig,
    make_reward,
    norm_scale,
    normalise,
    raw_state,
)
from l4sim.envs.features import QueueStep
from l4sim.errors import EnvConfigError

__all__ = ["OfflineEnv", "read_logs", "write_log"]

#: Queue kinds whose log rows make sense (a base probability p' and a coupling).
LOGGED_KINDS = ("dualpi2", "fq_l4s")


def write_log(scenario: Any, path: str | Path, interval_s: float = 0.016) -> pl.DataFrame:
    """Run ``scenario`` (a Scenario or its dict) and write its Table-1 log to ``path``
    (``.csv`` or ``.parquet``); returns the frame."""
    from l4sim import Scenario
    from l4sim.engine.simulation import Simulation

    scen = scenario if isinstance(scenario, Scenario) else Scenario.parse(scenario)
    links = [
        (f"{a}->{b}", spec.rate, spec.qdisc.kind)
        for a, b, spec in scen.topology.links()
        if spec.qdisc.kind in LOGGED_KINDS
    ]
    if not links:
        raise EnvConfigError(f"scenario {scen.name!r} has no dualpi2 or fq_l4s link to log")
    sim = Simulation(scen)
    q = sim.observe()["queues"]
    idx = {name: q["link"].index(name) for name, _r, _k in links}
    prev = {name: (0, 0, 0, 0.0) for name, _r, _k in links}
    step_ns = round(interval_s * 1e9)
    rows: list[dict[str, Any]] = []
    t = 0
    while t + step_ns <= sim.duration_ns:
        t += step_ns
        sim.run_until_ns(t)
        q = sim.observe()["queues"]
        for name, rate, _kind in links:
            i = idx[name]
            deq, drops, marks, old = prev[name]
            qdelay = float(q["head_sojourn_s"][i])
            p = q["prob"][i]
            p = 0.0 if p is None or p != p else float(p)
            raw = raw_state(
                p,
                qdelay,
                old,
                2.0,
                q["dequeued_bytes"][i] - deq,
                q["backlog_pkts"][i],
                q["backlog_bytes"][i],
                q["drops"][i] - drops,
                q["ecn_marks"][i] - marks,
            )
            prev[name] = (q["dequeued_bytes"][i], q["drops"][i], q["ecn_marks"][i], qdelay)
            row = {"time_s": t / 1e9, "link": name, "rate_bps": float(rate)}
            row |= dict(zip(FEATURES, raw.tolist(), strict=True))
            row["measurement_start"] = (t - step_ns) / 1e9
            rows.append(row)
    df = pl.DataFrame(rows)
    out = Path(path)
    if out.suffix == ".parquet":
        df.write_parquet(out)
    else:
        df.write_csv(out)
    return df


def read_logs(paths: Any) -> pl.DataFrame:
    """Concatenate Table-1 logs (CSV or Parquet); a clear error on a missing column."""
    frames = []
    for p in paths:
        path = Path(p)
        if not path.exists():
            raise EnvConfigError(f"log {str(path)!r} does not exist")
        df = pl.read_parquet(path) if path.suffix == ".parquet" else pl.read_csv(path)
        missing = [c for c in (*FEATURES, "rate_bps") if c not in df.columns]
        if missing:
            raise EnvConfigError(f"log {str(path)!r} lacks the column(s) {', '.join(missing)}")
        frames.append(df.select([*FEATURES, "rate_bps"]))
    if not frames:
        raise EnvConfigError("offline mode needs at least one log (A3cConfig.logs)")
    return pl.concat(frames)


class OfflineEnv:
    """The authors' replay environment over logged rows (see the module comment)."""

    def __init__(self, cfg: A3cConfig, seed: int):
        df = read_logs(cfg.logs)
        self.cfg = cfg
        self.raw = df.select(FEATURES).to_numpy().astype(np.float64)
        self.rate = df["rate_bps"].to_numpy()
        self.obs = np.stack([normalise(r, norm_scale(cfg)) for r in self.raw])
        self.order = np.argsort(self.raw[:, 1], kind="stable")
        self.sorted_p = self.raw[self.order, 1]
        self.rng = np.random.default_rng(seed)
        self.reward_fn = make_reward(cfg)

    def reset(self) -> np.ndarray:
        return self.obs[int(self.rng.integers(0, len(self.obs)))]

    def step(self, p: float) -> tuple[np.ndarray, float]:
        """The row whose logged p' is nearest ``p`` (the authors' ``argsort()[:1]``)."""
        k = int(np.searchsorted(self.sorted_p, p))
        cand = [j for j in (k - 1, k) if 0 <= j < len(self.sorted_p)]
        j = int(self.order[min(cand, key=lambda c: abs(self.sorted_p[c] - p))])
        r = self.raw[j]
        step = QueueStep(
            interval_s=self.cfg.tupdate_s,
            rate_ref_bps=float(self.rate[j]),
            rtt_ref_s=0.04,
            backlog_pkts=int(r[8]),
            backlog_bytes=int(r[9]),
            dequeued_bytes=int(r[7]),
            sojourn_s=float(r[2]),
            drops=int(r[10]),
            marks=int(r[11]),
            prob=float(r[1]),
        )
        return self.obs[j], float(self.reward_fn(step))
