"""The Wi-Fi MAC (crates/l4sim-core/src/net/wifi, docs/links.md "Wi-Fi"): saturation
throughput of 1 to 20 stations against Bianchi's analytical model of the DCF, solved here
from the paper's fixed point (by bisection); and the AP's airtime fairness with A-MPDU."""

from __future__ import annotations

import json
import math
from typing import Any

import pytest

_core = pytest.importorskip("l4sim._core")

# 802.11ac, 20 MHz, MCS 7, one stream (N_DBPS 260 per 4 us symbol), 40 us VHT preamble;
# 5 GHz OFDM: 9 us slot, 16 us SIFS; DCF: DIFS = SIFS + 2 slots; CW 15..1023.
SLOT_US, SIFS_US = 9.0, 16.0
DIFS_US = SIFS_US + 2 * SLOT_US
PAYLOAD_BYTES = 1500
MPDU_BYTES = PAYLOAD_BYTES + 38  # QoS Data header 26, LLC/SNAP 8, FCS 4
W, M, RETRIES = 16, 6, 6  # W = CWmin + 1; CWmax = 2^m W - 1; 7 attempts: stages 0..6


def _txtime_us(bytes_: int, preamble_us: float, bits_per_symbol: int) -> float:
    """TXTIME of an OFDM PPDU: preamble, then 4 us symbols for 16 service bits, the PSDU
    and 6 tail bits."""
    return preamble_us + 4.0 * math.ceil((16 + 8 * bytes_ + 6) / bits_per_symbol)


DATA_US = _txtime_us(MPDU_BYTES, 40.0, 260)
ACK24_US = _txtime_us(14, 20.0, 96)  # ACK at 24 Mbit/s
ACK6_US = _txtime_us(14, 20.0, 24)  # the ACK time in EIFS: 6 Mbit/s
TS_US = DATA_US + SIFS_US + ACK24_US + DIFS_US
TC_US = DATA_US + SIFS_US + ACK6_US + DIFS_US  # EIFS after a collision
# RTS/CTS (802.11-2020 9.3.1.2-3: 20 and 14 bytes, at the basic rate, SIFS apart): Bianchi's
# Ts adds RTS + SIFS + CTS + SIFS; a collision costs the RTS only, then EIFS.
RTS24_US, CTS24_US = _txtime_us(20, 20.0, 96), _txtime_us(14, 20.0, 96)
TS_RTS_US = RTS24_US + SIFS_US + CTS24_US + SIFS_US + TS_US
TC_RTS_US = RTS24_US + SIFS_US + ACK6_US + DIFS_US


def bianchi(
    n: int, w: int = W, m: int = M, retries: int = RETRIES, *, rts: bool = False
) -> dict[str, float]:
    """Bianchi's fixed point (JSAC 2000, eqs. 7 and 9) with a retry limit (back-off
    stages 0..retries, windows 2^min(i, m) w; Bianchi's own model as retries grows):
    tau = sum p^i / sum p^i (W_i + 1) / 2 and p = 1 - (1 - tau)^(n - 1); then the
    saturation throughput S = Ps Ptr E[P] / ((1 - Ptr) sigma + Ptr Ps Ts + Ptr (1 - Ps) Tc)
    (eq. 13), in bit/s; ``rts``: with RTS/CTS access's Ts and Tc."""

    def tau_of(p: float) -> float:
        num = sum(p**i for i in range(retries + 1))
        den = sum(p**i * (w * 2 ** min(i, m) + 1) / 2 for i in range(retries + 1))
        return num / den

    # p - (1 - (1 - tau(p))^(n - 1)) rises from <= 0 at p = 0 to > 0 at p = 1: bisection.
    lo, hi = 0.0, 1.0
    for _ in range(100):
        p = (lo + hi) / 2
        if p - (1 - (1 - tau_of(p)) ** (n - 1)) > 0:
            hi = p
        else:
            lo = p
    p = lo
    tau = tau_of(p)
    ptr = 1 - (1 - tau) ** n
    ps = n * tau * (1 - tau) ** (n - 1) / ptr
    ts, tc = (TS_RTS_US, TC_RTS_US) if rts else (TS_US, TC_US)
    slot = (1 - ptr) * SLOT_US + ptr * ps * ts + ptr * (1 - ps) * tc
    return {"tau": tau, "p": p, "throughput_bps": ps * ptr * PAYLOAD_BYTES * 8 / slot * 1e6}


def dcf_config(n: int, seconds: float = 20.0, seed: int = 1) -> dict[str, Any]:
    """The model's setting in the simulator: n saturated stations sending to the AP,
    basic access (no aggregation, normal ACKs), one access category with DCF's
    parameters, 7 attempts per frame."""
    return {
        "wifi": {
            "standard": "ac",
            "width_mhz": 20,
            "edca": {"aifsn": 2, "cw_min": W - 1, "cw_max": W * 2**M - 1, "txop_ns": 0},
            "aggregation": False,
            "retry_limit": RETRIES + 1,
            "basic_rate_mbps": 24,
            "stations": [{"mcs": 7}] * n,
        },
        "uplink": True,
        "downlink": False,
        "packet_bytes": PAYLOAD_BYTES,
        "duration_ns": int(seconds * 1e9),
        "seed": seed,
    }


def simulate(config: dict[str, Any]) -> dict[str, Any]:
    return _core.wifi_saturation(json.dumps(config))


@pytest.mark.parametrize("n", [1, 2, 5, 10, 20])
def test_saturation_throughput_within_5_percent_of_bianchi(n: int) -> None:
    model = bianchi(n)
    sim = simulate(dcf_config(n))
    assert sim["throughput_bps"] == pytest.approx(model["throughput_bps"], rel=0.05)
    assert sim["p_collision"] == pytest.approx(model["p"], abs=0.03)
    assert (sim["collided"] > 0) == (n > 1)


@pytest.mark.parametrize("n", [1, 2, 5, 10, 20])
def test_rts_cts_saturation_throughput_within_5_percent_of_bianchi(n: int) -> None:
    """With dot11RTSThreshold under the MPDU (1538 bytes) every frame is preceded by
    RTS/CTS: Bianchi's RTS/CTS access mechanism."""
    config = dcf_config(n)
    config["wifi"]["rts_threshold"] = 1000
    model, sim = bianchi(n, rts=True), simulate(config)
    assert sim["throughput_bps"] == pytest.approx(model["throughput_bps"], rel=0.05)
    assert sim["p_collision"] == pytest.approx(model["p"], abs=0.03)


def test_one_station_is_the_model_exactly() -> None:
    """Alone, a station sends a frame every DIFS + 7.5 slots + Ts - DIFS on average."""
    sim = simulate(dcf_config(1))
    expect = PAYLOAD_BYTES * 8 / ((7.5 * SLOT_US + TS_US) * 1e-6)
    assert sim["throughput_bps"] == pytest.approx(expect, rel=0.01)
    assert bianchi(1)["throughput_bps"] == pytest.approx(expect, rel=1e-9)


def test_airtime_fairness_with_ampdu() -> None:
    """The AP sends A-MPDUs to a station at VHT 80 MHz MCS 0 and one at MCS 9: the airtime
    scheduler gives each the same airtime (within 5 %), not the same throughput."""
    config = {
        "wifi": {"standard": "ac", "width_mhz": 80, "stations": [{"mcs": 0}, {"mcs": 9}]},
        "uplink": False,
        "downlink": True,
        "duration_ns": 10_000_000_000,
    }
    sim = simulate(config)
    shares = sim["down_airtime_share"]
    target = sum(shares) / 2
    assert shares == [pytest.approx(target, rel=0.05)] * 2
    assert sim["down_bps"][1] > 5 * sim["down_bps"][0]


def test_bad_configs_are_one_sentence() -> None:
    bad = dcf_config(2)
    bad["wifi"]["stations"] = [{"mcs": 9}]  # VHT MCS 9 does not exist at 20 MHz, 1 stream
    with pytest.raises(ValueError, match="excluded by the standard") as e:
        simulate(bad)
    assert "\n" not in str(e.value)
    with pytest.raises(ValueError, match="at least one station"):
        simulate({**dcf_config(1), "wifi": {"stations": []}})


def _scenario(wifi: str, seconds: int = 4) -> str:
    return f"""
duration = "{seconds}s"
seed = 1
[topology]
preset = "dumbbell"
pairs = 2
bottleneck = {{ rate = "1Gbps", delay = "10ms" }}
[topology.wifi]
{wifi}
[[flows]]
cca = "cubic"
count = 2
"""


def test_dumbbell_with_a_bss_shares_airtime() -> None:
    """Downloads to an MCS 1 and an MCS 9 station through the AP's FQ-CoDel queues: both
    progress, the fast station gets several times the slow one's goodput, and each gets
    about the same airtime (TCP leaves a queue empty now and then, so the shares are not
    exactly the scheduler's target, as in the saturated case)."""
    from l4sim import Simulation
    from l4sim.scenario import loads

    scenario = loads(_scenario("stations = [{ mcs = 1 }, { mcs = 9 }]"))
    config = scenario.to_core_config()
    assert config["wifi"][0]["links"] == [3, 4]
    sim = Simulation(scenario)
    sim.run()
    summary = sim.summary()
    slow, fast = (f["goodput_bps"] for f in summary["flows"])
    assert slow > 10e6 and fast > 4 * slow
    bss = summary["wifi"][0]
    assert bss["access_point"] == "r1"
    down = [s["down_airtime_share"] for s in bss["stations"]]
    assert down[0] == pytest.approx(down[1], rel=0.1)
    assert sum(down) > 0.6
    assert all(s["up_airtime_share"] > 0 for s in bss["stations"])  # the TCP ACKs
    assert bss["collisions"] > 0


def test_a_topology_without_wifi_has_no_wifi_key() -> None:
    from l4sim import Simulation
    from l4sim.scenario import loads

    plain = loads(_scenario("").replace("[topology.wifi]\n", ""))
    assert "wifi" not in plain.to_core_config()
    sim = Simulation(plain)
    sim.run()
    assert "wifi" not in sim.summary()


def test_airtime_queue_limits_through_the_scenario() -> None:
    """With a 1000-frame driver queue at the AP, mac80211's AQL (on by default) keeps the
    MCS 0 station's download at a far lower RTT than with AQL off, which lets the driver
    queue fill with its airtime (measured with this file's set-up: 0.065 s against 0.166 s
    smoothed RTT, goodput 12.2 against 11.7 Mbit/s; the MCS 9 station 0.063 against
    0.082 s). The keys reach the core with Linux's defaults in microseconds."""
    from l4sim import Simulation
    from l4sim.scenario import loads

    stations = "stations = [{ mcs = 0 }, { mcs = 9 }]\ndriver_queue = 1000"
    on = loads(_scenario(stations))
    off = loads(_scenario(stations + "\naql = false"))
    aql = on.to_core_config()["wifi"][0]["bss"]["aql"]
    assert aql == {
        "enabled": True,
        "txq_limit_low_us": 5000,
        "txq_limit_high_us": 12000,
        "threshold_us": 24000,
    }
    srtt = []
    for sc in (on, off):
        sim = Simulation(sc)
        sim.run()
        srtt.append(sim.summary()["flows"][0]["srtt_mean_s"])
    assert srtt[0] < 0.5 * srtt[1], srtt


@pytest.mark.parametrize(
    ("wifi", "message"),
    [
        ('aql_txq_limit_low = "20ms"', "at least aql_txq_limit_low"),
        ('aql_threshold = "1.5us"', "whole microseconds"),
        ("driver_queue = -1", "driver_queue"),
        ("stations = [{ mcs = 1 }]", "one station per receiver"),
        ('standard = "n"\nmcs = 9', "does not exist in 802.11n"),
        ('standard = "n"\nwidth = 80', "has no 80 MHz channel"),
    ],
)
def test_bad_wifi_keys_are_one_sentence(wifi: str, message: str) -> None:
    from l4sim import ScenarioError
    from l4sim.scenario import loads

    with pytest.raises(ScenarioError, match=message):
        loads(_scenario(wifi))


def test_emulate_refuses_a_bss(monkeypatch: pytest.MonkeyPatch) -> None:
    """The emulator's router has no 802.11 MAC: a scenario with one is refused up front."""
    from l4sim import emulate as emu
    from l4sim.errors import EmulationError
    from l4sim.scenario import loads

    monkeypatch.setattr(emu, "kernel_ccas", lambda: ["reno", "cubic"])
    with pytest.raises(EmulationError, match="runs only in the simulator"):
        emu._hosts_and_flows(loads(_scenario("mcs = 7")), 1)


def test_rts_threshold_through_the_scenario() -> None:
    """The key reaches the core only when set (a BSS without it keeps its configuration
    and its bytes); with a threshold of 0 every PPDU, the ACKs' too, opens with RTS/CTS,
    which costs airtime: less goodput than without."""
    from l4sim import Simulation
    from l4sim.scenario import loads

    stations = "stations = [{ mcs = 1 }, { mcs = 9 }]"
    plain, rts = loads(_scenario(stations)), loads(_scenario(stations + "\nrts_threshold = 0"))
    assert "rts_threshold" not in plain.to_core_config()["wifi"][0]["bss"]
    assert rts.to_core_config()["wifi"][0]["bss"]["rts_threshold"] == 0
    goodput = []
    for sc in (plain, rts):
        sim = Simulation(sc)
        sim.run()
        goodput.append(sum(f["goodput_bps"] for f in sim.summary()["flows"]))
    assert 0 < goodput[1] < goodput[0]
