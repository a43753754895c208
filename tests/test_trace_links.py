"""Trace-driven link rates (docs/traces.md): a step schedule and the same steps as a
Mahimahi trace carry a long TCP flow at each step's rate; a trace delivers its capacity
to a saturating UDP flow; bad traces are one-sentence errors; the shipped traces load."""

from __future__ import annotations

from pathlib import Path

import polars as pl
import pytest

import l4sim
from l4sim import cli
from l4sim.errors import ScenarioError
from l4sim.scenario import traces

STEP_S = 10.0
RATES = (20e6, 5e6, 12e6)  # bit/s, one per STEP_S
# TCP payload per packet on the wire (TcpConfig defaults: mss 1448, 52 B of headers).
PAYLOAD = 1448 / 1500
# Base RTT: bottleneck 10 ms + two 1 ms access links, each way.
RTT = 0.024
# A buffer of 50 packets: at least CUBIC's 0.43 BDP at every step (BDP at 20 Mbit/s x
# 24 ms is 40 packets), so the link stays full between losses.
BUFFER_PKTS = 50
# "After convergence": the slowest RTT is at 5 Mbit/s behind a full buffer,
# RTT + 50 x 1500 B x 8 / 5 Mbit/s = 0.144 s. A step down leaves the link saturated (the
# queue drains at the new rate) and overflows the buffer within one RTT (cwnd, up to
# BDP + buffer = 90 packets at 20 Mbit/s, is above the 60 of 5 Mbit/s): one loss
# recovery, a few RTTs. A step up (5 → 12 Mbit/s) finds cwnd (at least 0.7 x 60 = 42
# packets after a loss) already above the new BDP (24 packets): the link is full at
# once. Skipping 2 s (about 14 of the slowest RTTs) after each step leaves the recovery
# out with room to spare.
MAX_RTT = RTT + BUFFER_PKTS * 1500 * 8 / min(RATES)
SKIP_S = 2.0


def _step_trace(path: Path) -> None:
    """RATES as a Mahimahi trace: in each ms, as many 1504-byte opportunities as the rate
    has accumulated by its end (so the count up to t is floor(∫rate / 12032 bit))."""
    lines: list[str] = []
    done = 0
    bits = 0.0
    for ms in range(1, int(STEP_S * len(RATES) * 1000) + 1):
        bits += RATES[int((ms - 1) / 1000 / STEP_S)] / 1000
        n = int(bits // (traces.OPPORTUNITY_BYTES * 8))
        lines += [str(ms)] * (n - done)
        done = n
    path.write_text("\n".join(lines) + "\n")


def _scenario(tmp_path: Path, link: str, flow: str, duration: str = "30s") -> Path:
    p = tmp_path / "s.toml"
    p.write_text(
        f"""duration = "{duration}"
[topology]
preset = "dumbbell"
[topology.bottleneck]
rate = "100Mbps"
delay = "10ms"
qdisc = {{kind = "fifo", limit = "{BUFFER_PKTS}p"}}
{link}
[[flows]]
{flow}
"""
    )
    return p


@pytest.mark.parametrize("form", ["schedule", "mahimahi"])
def test_tcp_follows_each_step(tmp_path: Path, form: str) -> None:
    if form == "schedule":
        link = (
            'schedule = [{at = "0s", rate = "20Mbps"}, {at = "10s", rate = "5Mbps"}, '
            '{at = "20s", rate = "12Mbps"}]'
        )
        capacity = list(RATES)
    else:
        _step_trace(tmp_path / "steps.trace")
        link = 'trace = "steps.trace"'  # relative to the scenario file
        ops = traces.load(str(tmp_path / "steps.trace"))
        capacity = [
            sum(1 for t in ops if k * STEP_S * 1000 < t <= (k + 1) * STEP_S * 1000)
            * traces.OPPORTUNITY_BYTES
            * 8
            / STEP_S
            for k in range(len(RATES))
        ]
    assert SKIP_S > 10 * MAX_RTT
    r = l4sim.run(l4sim.load(_scenario(tmp_path, link, 'kind = "tcp"\ncca = "cubic"')))
    f = r.flows.filter(pl.col("flow") == 0)
    for k, cap in enumerate(capacity):
        lo, hi = k * STEP_S + SKIP_S, (k + 1) * STEP_S
        w = f.filter((pl.col("time_s") > lo + 1e-9) & (pl.col("time_s") <= hi + 1e-9))
        goodput = w["goodput_bps"].mean()
        assert goodput == pytest.approx(cap * PAYLOAD, rel=0.05), (form, k, goodput, cap)


def test_a_trace_delivers_its_capacity_to_udp(tmp_path: Path) -> None:
    # 3 opportunities per 2 ms (two at 1 ms, one at 2 ms), looped: 1500 per second; 1500-
    # byte packets take 1500/1504 of one each, so 1504 packets per second get through.
    (tmp_path / "t.mm").write_text("1\n1\n2\n")
    link = 'trace = "t.mm"'
    flow = 'kind = "udp"\nrate = "50Mbps"\npacket_size = "1500B"'
    r = l4sim.run(l4sim.load(_scenario(tmp_path, link, flow, "10s")))
    expected = 1500 * traces.OPPORTUNITY_BYTES * 8
    assert r.summary["flows"][0]["throughput_bps"] == pytest.approx(expected, rel=0.05)
    assert traces.mean_rate_bps(traces.load(str(tmp_path / "t.mm"))) == expected


def test_onoff_and_a_repeating_schedule_carry_their_mean(tmp_path: Path) -> None:
    flow = 'kind = "udp"\nrate = "50Mbps"\npacket_size = "1500B"'
    for link, mean in [
        ('onoff = {on = "300ms", off = "100ms", rate = "16Mbps"}', 12e6),
        (
            'schedule = [{at = "0s", rate = "4Mbps"}, {at = "1s", rate = "12Mbps"}]\n'
            'schedule_period = "2s"',
            8e6,
        ),
    ]:
        r = l4sim.run(l4sim.load(_scenario(tmp_path, link, flow, "10s")))
        assert r.summary["flows"][0]["throughput_bps"] == pytest.approx(mean, rel=0.02), link


@pytest.mark.parametrize(
    ("content", "fragment"),
    [
        (None, "does not exist"),
        ("", "is empty"),
        ("5\n3\n", "must not decrease"),
        ("1\n-2\n", "is not a whole, non-negative number"),
        ("0\n0\n", "lasts no time"),
        ("1\n\n2\n", "line 2"),
        ("99999999999\n", "24.8 days"),
    ],
)
def test_bad_traces_are_one_sentence(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], content: str | None, fragment: str
) -> None:
    if content is not None:
        (tmp_path / "bad.trace").write_text(content)
    path = _scenario(tmp_path, 'trace = "bad.trace"', 'kind = "tcp"', "1s")
    with pytest.raises(ScenarioError, match=fragment):
        l4sim.load(path)
    with pytest.raises(SystemExit) as info:
        cli.main(["run", str(path), "-o", str(tmp_path / "out"), "-q"])
    err = capsys.readouterr().err
    assert info.value.code != 0
    lines = [x for x in err.splitlines() if x.strip()]
    assert len(lines) == 1 and fragment in lines[0] and "Traceback" not in err, err
    assert "topology.bottleneck.trace" in lines[0], lines[0]


@pytest.mark.parametrize(
    ("link", "fragment"),
    [
        ('trace = "builtin:nowhere"', "no built-in trace"),
        ('schedule = [{at = "1s", rate = "5Mbps"}]', "must be 0s"),
        ('schedule = [{at = "0s", rate = "5Mbps"}, {at = "1s", rate = "0Mbps"}]', "last step"),
        ('schedule = [{at = "0s", rate = "-5Mbps"}]', "negative"),
        ('trace = "builtin:verizon-lte.down"\nonoff = {on="1s", off="1s", rate="1Mbps"}', "one of"),
    ],
)
def test_bad_schedules_are_one_sentence(tmp_path: Path, link: str, fragment: str) -> None:
    with pytest.raises(ScenarioError, match=fragment):
        l4sim.load(_scenario(tmp_path, link, 'kind = "tcp"', "1s"))


def test_shipped_traces_load() -> None:
    names = traces.builtin_traces()
    assert {"verizon-lte.down", "verizon-lte.up", "att-lte-driving.down"} <= set(names)
    for name in names:
        ops = traces.load(f"builtin:{name}")
        # Cut to 60 s (docs/traces.md), from 0.5 to 20 Mbit/s.
        assert 59_000 < ops[-1] <= 60_000, name
        assert 0.5e6 < traces.mean_rate_bps(ops) < 20e6, name
    readme = (Path(traces.__file__).parents[1] / "data" / "traces" / "README.md").read_text()
    assert all(n in readme for n in names) and "GPL" in readme


def test_envs_accept_a_trace() -> None:
    from l4sim.envs import TcpCwndEnv

    name = "builtin:verizon-lte.down"
    env = TcpCwndEnv(trace=name, episode_steps=20)
    spec = env.scenario.topology.bottleneck  # type: ignore[union-attr]
    assert spec.trace == name and spec.rate == 10_000_000  # the ACK direction keeps it
    # Observations are scaled by the trace's mean rate, not the scenario's 10 Mbit/s.
    assert env.rate_ref_bps == pytest.approx(traces.mean_rate_bps(traces.load(name)), rel=1e-6)
    env.reset(seed=1)
    delivered = 0.0
    for _ in range(20):
        obs, _, _, truncated, _ = env.step(4)  # grow the window
        delivered += float(obs[0])
    assert delivered > 0 and truncated
    with pytest.raises(ScenarioError, match="does not exist"):
        TcpCwndEnv(trace="no-such.trace")
