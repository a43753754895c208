"""netem slotting on a link direction (``slot`` / ``slot_reverse``, docs/links.md): the keys
reach the core, bad values are one sentence, a slotted link delivers in bursts without
reordering, and a link without it is untouched."""

from __future__ import annotations

import textwrap
from typing import Any

import pytest

from l4sim import ScenarioError, Simulation
from l4sim.scenario import loads


def path(slot: str = "", slot_reverse: str = "", seed: int = 1, rwnd: str = "16KB") -> str:
    """h0 -(100 Mbps, 5 ms, the slotted link)- r0 -(10 Mbps, 10 ms, FIFO)- h1 with one
    window-limited NewReno flow h0 -> h1 (its window, 16 KB, is below the path's BDP: no
    standing queue, no loss)."""
    first = f"slot = {slot}" if slot else ""
    second = f"slot_reverse = {slot_reverse}" if slot_reverse else ""
    return textwrap.dedent(
        f"""
        duration = "5s"
        seed = {seed}
        [topology]
        preset = "path"
        routers = 1
        [[topology.hops]]
        rate = "100Mbps"
        delay = "5ms"
        {first}
        [[topology.hops]]
        rate = "10Mbps"
        delay = "10ms"
        qdisc = {{ kind = "fifo", limit = "1000p" }}
        {second}
        [[flows]]
        cca = "newreno"
        rwnd = "{rwnd}"
        """
    )


SLOT = '{ min = "1ms", max = "4ms", packets = 16 }'


def run(text: str) -> dict[str, Any]:
    sim = Simulation(loads(text, source="test.toml"))
    sim.run()
    return sim.summary()  # no wall-clock fields: equal runs give equal summaries


def queue(summary: dict[str, Any], link: str) -> dict[str, Any]:
    return next(q for q in summary["queues"] if q["link"] == link)


def core_links(text: str) -> list[dict[str, Any]]:
    return loads(text, source="test.toml").to_core_config()["links"]


def test_slot_keys_reach_the_core():
    links = core_links(path(SLOT, '{ distribution = "normal", delay = "2ms", jitter = "500us" }'))
    assert links[0]["slot_ab"] == {
        "dist": "uniform",
        "min_ns": 1_000_000,
        "max_ns": 4_000_000,
        "packets": 16,
    }
    assert "slot_ba" not in links[0] and "slot_ab" not in links[1]
    assert links[1]["slot_ba"] == {"dist": "normal", "delay_ns": 2_000_000, "jitter_ns": 500_000}
    # `slot MIN_DELAY` alone: every gap is MIN_DELAY (tc-netem: MAX_DELAY defaults to it).
    (only,) = core_links(path('{ min = "2ms", bytes = "64KB" }'))[:1]
    assert only["slot_ab"] == {
        "dist": "uniform",
        "min_ns": 2_000_000,
        "max_ns": 2_000_000,
        "bytes": 64_000,
    }
    assert "slot_ab" not in core_links(path())[0]


@pytest.mark.parametrize(
    ("slot", "fragment"),
    [
        ('{ min = "-1ms" }', "slot.min"),
        ('{ min = "0ms" }', "slot max must be positive"),
        ('{ min = "5ms", max = "1ms" }', "slot min 5ms is more than its max 1ms"),
        ('{ min = "1ms", max = "11s" }', "slot max 11s is more than 10s"),
        ('{ max = "4ms" }', "slot needs min"),
        ('{ min = "1ms", packets = 0 }', "slot.packets"),
        ('{ min = "1ms", packets = 2147483648 }', "too large"),
        ('{ min = "1ms", bytes = "0B" }', "slot.bytes"),
        ('{ min = "1ms", bytes = "3GB" }', "too large"),
        ('{ min = "1ms", delay = "2ms" }', "not both"),
        ('{ delay = "2ms" }', 'need distribution = "normal"'),
        ('{ distribution = "normal" }', "positive delay or jitter"),
        ('{ distribution = "pareto", delay = "2ms" }', "slot.distribution"),
        ('{ min = "1ms", burst = 3 }', "burst"),
    ],
)
def test_a_bad_slot_is_one_sentence(slot, fragment):
    with pytest.raises(ScenarioError) as info:
        loads(path(slot), source="test.toml")
    message = str(info.value)
    assert "\n" not in message and message.startswith("test.toml: "), message
    assert fragment in message, message


def test_a_slotted_link_delivers_bursts_in_order():
    calm, bursty = run(path()), run(path(SLOT))
    # The window reaches r0 one slot's worth at a time, so the bottleneck behind the
    # slotted link queues bursts it never saw before: its delay's tail lengthens.
    calm_q, bursty_q = queue(calm, "r0->h1"), queue(bursty, "r0->h1")
    assert bursty_q["sojourn_p99_s"] > 2 * calm_q["sojourn_p99_s"], (calm_q, bursty_q)
    assert bursty_q["backlog_mean_pkts"] > calm_q["backlog_mean_pkts"]
    # Nothing is lost or reordered (a reordering would show as retransmissions), and each
    # packet waits for its slot: the one-way delay grows by about a slot's mean wait.
    (c,), (b,) = calm["flows"], bursty["flows"]
    assert c["retransmits"] == b["retransmits"] == 0
    assert c["drops"] == b["drops"] == 0
    assert 0.001 < b["owd_mean_s"] - c["owd_mean_s"] < 0.006
    assert b["bytes_acked"] > 0


def test_ack_aggregation_bunches_the_acks():
    # Slotting the ACK path (the bottleneck's reverse direction, into r0) releases the
    # ACKs in bursts, and the sender answers each burst with a burst of data: the data's
    # queue at the bottleneck grows, with no slot on the data's own path.
    calm, acked = run(path()), run(path(slot_reverse=SLOT))
    assert queue(acked, "r0->h1")["sojourn_p99_s"] > 1.5 * queue(calm, "r0->h1")["sojourn_p99_s"]
    assert acked["flows"][0]["retransmits"] == 0


def test_slotting_is_deterministic_and_seeded():
    a, b = run(path(SLOT)), run(path(SLOT))
    assert a == b
    other = run(path(SLOT, seed=2))
    assert other["flows"][0]["owd_mean_s"] != a["flows"][0]["owd_mean_s"]


def test_a_link_without_slot_is_untouched():
    # The gate draws from its own stream and adds no event: a slot on a direction no packet
    # crosses (h1 -> r0 carries the ACKs, r0 -> h0 the ACKs; h0 -> r0's reverse is r0 -> h0)
    # leaves every byte of the results as without it. The full check, every shipped
    # scenario against the engine before slotting, is benchmarks/snapshot.py --compare.
    text = textwrap.dedent(
        """
        duration = "3s"
        [topology]
        preset = "two_host"
        rate = "10Mbps"
        delay = "10ms"
        loss = 0.01
        jitter = "1ms"
        qdisc = { kind = "fifo", limit = "50p" }
        SLOT
        [[flows]]
        kind = "udp"
        rate = "5Mbps"
        packet_size = "1000B"
        """
    )
    plain = run(text.replace("SLOT", ""))
    idle = run(text.replace("SLOT", f"slot_reverse = {SLOT}"))
    assert plain == idle
    busy = run(text.replace("SLOT", f"slot = {SLOT}"))
    assert busy != plain


def test_dumbbell_access_slots_face_the_bottleneck():
    # access.slot slots each sender's link towards r0 (the data), access.slot_reverse each
    # receiver's link towards r1 (the ACKs); the bottleneck keeps none.
    text = textwrap.dedent(
        f"""
        duration = "1s"
        [topology]
        preset = "dumbbell"
        access = {{ rate = "1Gbps", delay = "1ms", slot = {SLOT}, slot_reverse = {SLOT} }}
        bottleneck = {{ rate = "10Mbps", delay = "10ms" }}
        [[flows]]
        cca = "cubic"
        [[flows]]
        cca = "cubic"
        """
    )
    cfg = loads(text, source="test.toml").to_core_config()
    names = [n["name"] for n in cfg["nodes"]]
    by_ends = {(names[lk["a"]], names[lk["b"]]): lk for lk in cfg["links"]}
    want = {"dist": "uniform", "min_ns": 1_000_000, "max_ns": 4_000_000, "packets": 16}
    for i in range(2):
        sender, receiver = by_ends[(f"s{i}", "r0")], by_ends[("r1", f"d{i}")]
        assert sender["slot_ab"] == want and "slot_ba" not in sender
        assert receiver["slot_ba"] == want and "slot_ab" not in receiver
    assert not {"slot_ab", "slot_ba"} & set(by_ends[("r0", "r1")])
