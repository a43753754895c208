"""Inference cost of LFQ inside the core (paper 001) and what each way of cutting it costs.

1. ns per decision of the network alone (``policy_infer("lfq", ...)`` with ``repeat``, the Python
   conversion paid once) per hidden width, one feature vector at a time and batched (4 at a
   time, ``LfqActor::outputs``).
2. Simulation slowdown: one 15 Mbit/s / 15 ms NewReno flow through plain ``fq`` (100
   packets per flow), ``fq`` keeping the LFQ features only, and ``fq`` in LFQ mode per
   width and decision interval n (a decision on every n-th packet of the flow); the cost per
   decision is (LFQ wall - features-only wall) / decisions. The random networks answer
   ~30 packets so that all runs carry about the same traffic.
   Times are CPU times of this process (``time.process_time``), so that other jobs sharing
   the machine change them less than wall times.
3. Accuracy of the interval (with the shipped offline alpha-small network, or ``--weights``):
   over NewReno and BIC flows at 5, 15 and 25 Mbit/s (15 ms), every 50 ms the limit in force
   is compared with the limit the per-packet policy would set on the features of that moment
   (the staleness error, packets), and throughput and mean / max queue are compared with the
   n = 1 run.
4. Accuracy of a smaller network: a network of each smaller width distilled from the shipped
   one (L1 on the feature vectors of the runs in 3, 2 000 Adam steps): its output difference
   on held-out vectors and the runs' throughput / queue through it.

    python benchmarks/bench_lfq.py [--seconds 10] [--quick]
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np
import torch

import l4sim
from l4sim import _core
from l4sim.agents import lfq
from l4sim.experiments import lfq as lfq_experiment

torch.set_num_threads(1)


def wall(sc: l4sim.Scenario, repeat: int) -> tuple[float, dict]:
    best, summary = float("inf"), {}
    for _ in range(repeat):
        sim = l4sim.Simulation(sc)
        t = time.process_time()
        sim.run()
        best = min(best, time.process_time() - t)
        summary = sim.summary()
    return best, summary


def random_net(width: int, path: Path) -> str:
    torch.manual_seed(0)
    net = lfq.LfqNet(width)
    with torch.no_grad():
        net.fc4.weight.mul_(0.01)
        net.fc4.bias.fill_(30.0)
    lfq.save_weights(path, net)
    return str(path)


def inference(weights: dict[int, str], rows: int = 256, repeat: int = 200) -> None:
    print("\n1. network alone: ns per decision")
    print(" width     MACs   single  batched(4)")
    x = np.random.default_rng(0).uniform(0.0, 1.0, size=(rows, 60)).tolist()
    for w, path in weights.items():
        res = []
        for batch in (False, True):
            _core.policy_infer("lfq", path, x, batch=batch, repeat=2)  # warm
            t = time.process_time()
            _core.policy_infer("lfq", path, x, batch=batch, repeat=repeat)
            res.append((time.process_time() - t) / (rows * repeat) * 1e9)
        macs = 60 * w + 2 * w * w + w
        print(f"{w:6d} {macs:8d} {res[0]:8.0f} {res[1]:11.0f}")


def slowdown(weights: dict[int, str], intervals: list[int], seconds: float, repeat: int) -> None:
    print("\n2. simulation: one 15 Mbit/s, 15 ms NewReno flow of", seconds, "s")
    sc = lfq.scenario(15.0, 15.0, "newreno", seconds, {"kind": "fq", "per_flow_limit": "100p"})
    t_fq, s = wall(sc, repeat)
    q = s["queues"][0]
    arrivals = q["packets"] + q["drops"]
    feat = {"kind": "fq", "per_flow_limit": "100p", "policy": {"kind": "lfq"}}
    t_feat, _ = wall(lfq.scenario(15.0, 15.0, "newreno", seconds, feat), repeat)
    print(f"plain fq: {t_fq * 1e3:.1f} ms, {t_fq / arrivals * 1e9:.0f} ns per arrival")
    print(
        f"fq + LFQ features only: {t_feat * 1e3:.1f} ms, slowdown {t_feat / t_fq:.2f}x, "
        f"{(t_feat - t_fq) / arrivals * 1e9:.0f} ns per arrival for the features"
    )
    print(" width  interval  wall_ms  slowdown  decisions  ns/decision")
    for w, path in weights.items():
        for n in intervals:
            qd = {"kind": "fq", "policy": {"kind": "lfq", "weights": path, "every": n}}
            t, s = wall(lfq.scenario(15.0, 15.0, "newreno", seconds, qd), repeat)
            q = s["queues"][0]
            dec = -(-(q["packets"] + q["drops"]) // n)
            print(
                f"{w:6d} {n:9d} {t * 1e3:8.1f} {t / t_fq:8.2f}x {dec:10d} "
                f"{(t - t_feat) / dec * 1e9:12.0f}"
            )


CASES = [(cca, bw) for cca in ("newreno", "bic") for bw in (5.0, 15.0, 25.0)]


def trace(path: str, n: int, cca: str, bw: float, seconds: float) -> dict[str, Any]:
    """One flow under ``path`` at interval ``n``: features and limit every 50 ms."""
    qd = {"kind": "fq", "policy": {"kind": "lfq", "weights": path, "every": n}}
    sim = l4sim.Simulation(lfq.scenario(bw, 15.0, cca, seconds, qd))
    xs, limits = [], []
    t = 0.0
    while t < seconds - 1e-9:
        t = min(t + 0.05, seconds)
        sim.run_until(t)
        xs.append(sim.observe_policy(lfq.LINK)["features"][0])
        limits.append(sim.observe_flow_queues(lfq.LINK)["limit_pkts"][0])
    sim.run()
    q = sim.summary()["queues"][0]
    return {
        "x": xs,
        "limits": limits,
        "thr": sim.observe()["queues"]["dequeued_bytes"][0] * 8 / seconds / 1e6,
        "avg_q": q["backlog_mean_pkts"],
        "max_q": q["backlog_max_pkts"],
    }


def _limit(y: float) -> int:
    return int(min(max(round(y), 1), 1000))


def interval_accuracy(path: str, intervals: list[int], seconds: float) -> list[list[float]]:
    print("\n3. decision interval: accuracy vs the per-packet policy (shipped network)")
    print(
        "interval  staleness_pkts(mean/max)  thr_Mbps(n=1 -> n)  avg_q(n=1 -> n)  max_q(n=1 -> n)"
    )
    base = {c: trace(path, 1, *c, seconds) for c in CASES}
    for n in intervals:
        stale, rows = [], []
        for c in CASES:
            tr = base[c] if n == 1 else trace(path, n, *c, seconds)
            want = [_limit(y) for y in _core.policy_infer("lfq", path, tr["x"])]
            stale += [abs(a - b) for a, b in zip(tr["limits"], want, strict=True)]
            rows.append((base[c], tr))
        f = statistics.fmean
        print(
            f"{n:8d} {f(stale):14.2f} / {max(stale):4.0f} "
            f"{f(b['thr'] for b, _ in rows):9.2f} -> {f(t['thr'] for _, t in rows):5.2f} "
            f"{f(b['avg_q'] for b, _ in rows):7.1f} -> {f(t['avg_q'] for _, t in rows):5.1f} "
            f"{f(b['max_q'] for b, _ in rows):7.1f} -> {f(t['max_q'] for _, t in rows):5.1f}"
        )
    return [x for c in CASES for x in base[c]["x"]]


def distil(teacher: lfq.LfqNet, width: int, x: torch.Tensor) -> lfq.LfqNet:
    torch.manual_seed(1)
    student = lfq.LfqNet(width)
    with torch.no_grad():
        y = teacher(x)
    opt = torch.optim.Adam(student.parameters(), lr=3e-3)
    for _ in range(2000):
        loss = torch.nn.functional.l1_loss(student(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
    return student


def smaller_networks(
    path: str, xs: list[list[float]], widths: list[int], seconds: float, tmp: Path
) -> None:
    from safetensors.torch import load_file

    state = load_file(path)
    teacher = lfq.LfqNet(state["fc1.weight"].shape[0])
    teacher.load_state_dict(state)
    print(f"\n4. smaller networks distilled from the shipped width-{teacher.fc1.out_features} one")
    print(" width  |output diff| (mean/p99 pkts, held out)  thr_Mbps  avg_q  max_q")
    x = torch.tensor(xs, dtype=torch.float32)
    train, test = x[0::2], x[1::2]
    with torch.no_grad():
        y_test = teacher(test)
    f = statistics.fmean
    for w in widths:
        net = teacher if w == teacher.fc1.out_features else distil(teacher, w, train)
        with torch.no_grad():
            d = (net(test) - y_test).abs().squeeze(1).numpy()
        p = tmp / f"s{w}.safetensors"
        lfq.save_weights(p, net)
        trs = [trace(str(p), lfq_experiment.INTERVAL, *c, seconds) for c in CASES]
        print(
            f"{w:6d} {d.mean():20.2f} / {np.quantile(d, 0.99):5.2f} {'':14s}"
            f"{f(t['thr'] for t in trs):8.2f} {f(t['avg_q'] for t in trs):6.1f} "
            f"{f(t['max_q'] for t in trs):6.1f}"
        )


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--seconds", type=float, default=10.0)
    ap.add_argument("--intervals", type=int, nargs="+", default=[1, 2, 5, 10, 20, 50])
    ap.add_argument("--widths", type=int, nargs="+", default=[256, 128, 64, 32, 16])
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--weights", default=str(lfq_experiment.shipped_weights("offline-small")))
    ap.add_argument("--quick", action="store_true", help="2 s flows, fewer settings")
    a = ap.parse_args()
    if a.quick:
        a.seconds, a.intervals, a.widths, a.repeat = 2.0, [1, 10], [256, 64], 1
    with tempfile.TemporaryDirectory() as tmp_dir:
        tmp = Path(tmp_dir)
        nets = {w: random_net(w, tmp / f"r{w}.safetensors") for w in a.widths}
        inference(nets)
        slowdown(nets, a.intervals, a.seconds, a.repeat)
        if Path(a.weights).is_file():
            xs = interval_accuracy(a.weights, a.intervals, a.seconds)
            smaller_networks(a.weights, xs, [w for w in a.widths if w <= 64], a.seconds, tmp)
        else:
            print(f"\n(no trained weights at {a.weights}: accuracy sections skipped)")


if __name__ == "__main__":
    main()
