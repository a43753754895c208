"""Scenario models: shipped scenarios, preset expansion, and one-sentence errors."""

from __future__ import annotations

import json
import textwrap
import tomllib
from pathlib import Path

import pytest

from l4sim import Scenario, ScenarioError, Simulation, _core, load
from l4sim.scenario import loads
from l4sim.scenario.ccas import CCA_KINDS

ROOT = Path(__file__).resolve().parents[1]
SCENARIOS = sorted((ROOT / "scenarios").glob("*.toml"))

# Field names of the normalised config (crates/l4sim-core/src/config.rs, deny_unknown_fields),
# read from the core's own contract rather than copied here.
CONTRACT = _core.contract()
_SCHEMA = CONTRACT["schemas"]["config"]
SIM_KEYS = set(_SCHEMA["properties"])
LINK_KEYS = set(_SCHEMA["$defs"]["LinkConfig"]["properties"])
QDISC_KINDS = set(CONTRACT["qdiscs"])
FLOW_KEYS = set(_SCHEMA["$defs"]["FlowConfig"]["properties"])
TCP_KEYS = set(CONTRACT["tcp"])
# Every UdpConfig key: the defaults (CONTRACT["udp"]) leave the unset media tables out.
UDP_KEYS = set(CONTRACT["schemas"]["config"]["$defs"]["UdpConfig"]["properties"])


def check_core_shape(cfg: dict) -> None:
    """Everything we emit is a field config.rs knows, with the right kind of value."""
    assert set(cfg) <= SIM_KEYS
    json.dumps(cfg)  # JSON-able
    n = len(cfg["nodes"])
    for link in cfg["links"]:
        assert set(link) <= LINK_KEYS
        assert 0 <= link["a"] < n and 0 <= link["b"] < n and link["a"] != link["b"]
        assert isinstance(link["rate_bps"], int) and link["rate_bps"] > 0
        assert isinstance(link["delay_ns"], int)
        for q in (link["qdisc_ab"], link["qdisc_ba"]):
            assert q["kind"] in QDISC_KINDS
    for flow in cfg["flows"]:
        assert set(flow) <= FLOW_KEYS
        assert 0 <= flow["src"] < n and 0 <= flow["dst"] < n
        assert set(flow.get("tcp", {})) <= TCP_KEYS
        assert set(flow.get("udp", {})) <= UDP_KEYS


def scenario(text: str) -> Scenario:
    return loads(textwrap.dedent(text), source="test.toml")


def error(text: str) -> str:
    with pytest.raises(ScenarioError) as info:
        scenario(text)
    message = str(info.value)
    assert "\n" not in message, message
    assert message.startswith("test.toml: "), message
    return message


DUMBBELL = """
    duration = "10s"
    [topology]
    preset = "dumbbell"
    [topology.bottleneck]
    rate = "10Mbps"
    delay = "20ms"
    qdisc = { kind = "fifo", limit = "100p" }
    [[flows]]
    cca = "newreno"
    [[flows]]
    cca = "newreno"
    [[flows]]
    cca = "cubic"
"""


# -- shipped scenarios -------------------------------------------------------------------------


def test_scenarios_are_shipped():
    names = {p.stem for p in SCENARIOS}
    assert {
        "demo",
        "bench_1flow_10M",
        "bench_4flow_10M",
        "bench_1flow_100M",
        "two_host",
        "path_2router",
        "mixed",
    } <= names


@pytest.mark.parametrize("path", SCENARIOS, ids=lambda p: p.name)
def test_shipped_scenario_validates_and_round_trips(path):
    sc = load(path)
    assert sc.name == path.stem
    check_core_shape(sc.to_core_config())
    again = Scenario.parse(tomllib.loads(sc.to_toml()))
    assert again == sc
    assert again.to_core_config() == sc.to_core_config()


def test_packaged_demo_matches_scenarios_dir():
    packaged = ROOT / "python" / "l4sim" / "data" / "demo.toml"
    assert packaged.read_text() == (ROOT / "scenarios" / "demo.toml").read_text()


def test_demo_is_what_the_brief_says():
    cfg = load(ROOT / "scenarios" / "demo.toml").to_core_config()
    assert cfg["duration_ns"] == 20 * 10**9
    bottleneck = cfg["links"][0]
    assert bottleneck["rate_bps"] == 10_000_000 and bottleneck["delay_ns"] == 20_000_000
    assert bottleneck["qdisc_ab"] == {"kind": "fifo", "limit_pkts": 100}
    assert [f["tcp"]["cca"]["kind"] for f in cfg["flows"]] == ["newreno", "newreno", "cubic"]


@pytest.mark.parametrize(
    ("name", "flows", "rate"),
    [("bench_1flow_10M", 1, 10**7), ("bench_4flow_10M", 4, 10**7), ("bench_1flow_100M", 1, 10**8)],
)
def test_bench_scenarios(name, flows, rate):
    cfg = load(ROOT / "scenarios" / f"{name}.toml").to_core_config()
    assert cfg["duration_ns"] == 60 * 10**9
    assert len(cfg["flows"]) == flows
    assert {f["tcp"]["cca"]["kind"] for f in cfg["flows"]} == {"newreno"}
    assert all("size_bytes" not in f for f in cfg["flows"])
    bottleneck, *access = cfg["links"]
    assert (bottleneck["rate_bps"], bottleneck["delay_ns"]) == (rate, 20_000_000)
    assert bottleneck["qdisc_ab"] == {"kind": "fifo", "limit_pkts": 100}
    assert all((lk["rate_bps"], lk["delay_ns"]) == (10**9, 10**6) for lk in access)


# -- preset expansion --------------------------------------------------------------------------


def test_dumbbell_expansion():
    cfg = scenario(DUMBBELL).to_core_config()
    check_core_shape(cfg)
    names = [n["name"] for n in cfg["nodes"]]
    assert names == ["s0", "s1", "s2", "r0", "r1", "d0", "d1", "d2"]
    idx = {n: i for i, n in enumerate(names)}
    links = cfg["links"]
    assert len(links) == 7
    # Link 0 is the bottleneck r0 -> r1 with its qdisc on r0's egress.
    assert (links[0]["a"], links[0]["b"]) == (idx["r0"], idx["r1"])
    assert links[0]["qdisc_ab"] == {"kind": "fifo", "limit_pkts": 100}
    assert links[0]["qdisc_ba"] == {"kind": "fifo", "limit_pkts": 1000}
    assert (links[0]["rate_bps"], links[0]["delay_ns"]) == (10_000_000, 20_000_000)
    # Then the sender access links s_i -- r0, then the receiver ones r1 -- d_i.
    assert [(lk["a"], lk["b"]) for lk in links[1:4]] == [
        (idx[f"s{i}"], idx["r0"]) for i in range(3)
    ]
    assert [(lk["a"], lk["b"]) for lk in links[4:]] == [(idx["r1"], idx[f"d{i}"]) for i in range(3)]
    for lk in links[1:]:
        assert (lk["rate_bps"], lk["delay_ns"]) == (10**9, 10**6)
        assert lk["qdisc_ab"] == lk["qdisc_ba"] == {"kind": "fifo", "limit_pkts": 1000}
    # Flow i defaults to s_i -> d_i.
    assert [(f["src"], f["dst"]) for f in cfg["flows"]] == [
        (idx[f"s{i}"], idx[f"d{i}"]) for i in range(3)
    ]
    assert [f["tcp"]["cca"]["kind"] for f in cfg["flows"]] == ["newreno", "newreno", "cubic"]
    assert cfg["seed"] == 1 and cfg["sample_interval_ns"] == 100_000_000


def test_dumbbell_access_delays_and_count():
    sc = scenario(
        """
        duration = "5s"
        seed = 9
        [topology]
        preset = "dumbbell"
        access = { rate = "100Mbps", delay = "2ms" }
        access_delays = ["1ms", "10ms", "40ms", "80ms"]
        bottleneck = { rate = "10Mbps", delay = "20ms" }
        [[flows]]
        count = 4
        """
    )
    cfg = sc.to_core_config()
    assert len(cfg["nodes"]) == 10
    assert [lk["delay_ns"] for lk in cfg["links"][1:5]] == [m * 10**6 for m in (1, 10, 40, 80)]
    assert [lk["delay_ns"] for lk in cfg["links"][5:]] == [2 * 10**6] * 4
    assert {lk["rate_bps"] for lk in cfg["links"][1:]} == {10**8}
    assert len(cfg["flows"]) == 4 and cfg["seed"] == 9
    assert [f["src"] for f in cfg["flows"]] == [0, 1, 2, 3]


def test_dumbbell_explicit_pairs_and_endpoints():
    sc = scenario(
        """
        duration = "5s"
        [topology]
        preset = "dumbbell"
        pairs = 2
        bottleneck = { rate = "10Mbps", delay = "20ms", loss = 0.01 }
        [[flows]]
        src = "s1"
        dst = "d0"
        """
    )
    cfg = sc.to_core_config()
    names = [n["name"] for n in cfg["nodes"]]
    assert names == ["s0", "s1", "r0", "r1", "d0", "d1"]
    assert (cfg["flows"][0]["src"], cfg["flows"][0]["dst"]) == (1, 4)
    assert cfg["links"][0]["loss"] == 0.01


def test_path_uniform_with_bottleneck():
    cfg = scenario(
        """
        duration = "5s"
        [topology]
        preset = "path"
        routers = 3
        link = { rate = "100Mbps", delay = "1ms" }
        bottleneck = { rate = "5Mbps", delay = "10ms", qdisc = { kind = "fifo", limit = "30KB" } }
        bottleneck_index = 2
        [[flows]]
        cca = "cubic"
        """
    ).to_core_config()
    check_core_shape(cfg)
    assert [n["name"] for n in cfg["nodes"]] == ["h0", "r0", "r1", "r2", "h1"]
    assert [(lk["a"], lk["b"]) for lk in cfg["links"]] == [(0, 1), (1, 2), (2, 3), (3, 4)]
    assert [lk["rate_bps"] for lk in cfg["links"]] == [10**8, 10**8, 5 * 10**6, 10**8]
    assert cfg["links"][2]["qdisc_ab"] == {"kind": "fifo", "limit_bytes": 30_000}
    assert (cfg["flows"][0]["src"], cfg["flows"][0]["dst"]) == (0, 4)


def test_path_hops():
    cfg = scenario(
        """
        duration = "5s"
        [topology]
        preset = "path"
        [[topology.hops]]
        rate = "1Gbps"
        delay = "1ms"
        [[topology.hops]]
        rate = "10Mbps"
        delay = "5ms"
        qdisc = "fifo"
        [[flows]]
        """
    ).to_core_config()
    assert [n["name"] for n in cfg["nodes"]] == ["h0", "r0", "h1"]
    assert [lk["rate_bps"] for lk in cfg["links"]] == [10**9, 10**7]


def test_two_host():
    cfg = scenario(
        """
        duration = "1s"
        [topology]
        preset = "two_host"
        rate = "10Mbps"
        delay = "10ms"
        loss = 0.001
        qdisc = { kind = "fifo", limit = "50p" }
        [[flows]]
        kind = "udp"
        rate = "2Mbps"
        packet_size = "1000B"
        ecn = "ect1"
        """
    ).to_core_config()
    assert [n["name"] for n in cfg["nodes"]] == ["h0", "h1"]
    (link,) = cfg["links"]
    assert link == {
        "a": 0,
        "b": 1,
        "rate_bps": 10**7,
        "delay_ns": 10**7,
        "loss": 0.001,
        "jitter_ns": 0,
        "overhead_bytes": 0,
        "qdisc_ab": {"kind": "fifo", "limit_pkts": 50},
        "qdisc_ba": {"kind": "fifo", "limit_pkts": 1000},
    }
    (flow,) = cfg["flows"]
    assert flow == {
        "kind": "udp",
        "src": 0,
        "dst": 1,
        "start_ns": 0,
        "udp": {"rate_bps": 2_000_000, "packet_bytes": 1000, "ecn": "ect1"},
    }


def test_custom():
    cfg = scenario(
        """
        duration = "3s"
        [topology]
        preset = "custom"
        nodes = ["a", "sw", "b"]
        [[topology.links]]
        a = "a"
        b = "sw"
        rate = "1Gbps"
        delay = "1ms"
        [[topology.links]]
        a = "sw"
        b = "b"
        rate = "10Mbps"
        delay = "5ms"
        qdisc = { kind = "fifo", limit = "20p" }
        qdisc_reverse = { kind = "fifo", limit = "64KiB" }
        [[flows]]
        src = "a"
        dst = "b"
        """
    ).to_core_config()
    assert [n["name"] for n in cfg["nodes"]] == ["a", "sw", "b"]
    assert [(lk["a"], lk["b"]) for lk in cfg["links"]] == [(0, 1), (1, 2)]
    assert cfg["links"][1]["qdisc_ab"] == {"kind": "fifo", "limit_pkts": 20}
    assert cfg["links"][1]["qdisc_ba"] == {"kind": "fifo", "limit_bytes": 65536}


def test_tcp_options():
    cfg = scenario(
        DUMBBELL.replace(
            'cca = "cubic"',
            'cca = "cubic"\necn = true\nmss = "1400B"\ninit_cwnd = 4\nmin_rto = "1s"\n'
            'delack = false\ndupack_threshold = 5\nstart = "1s"\nstop = "8s"\nsize = "1MB"',
        )
    ).to_core_config()
    flow = cfg["flows"][2]
    assert flow["start_ns"] == 10**9 and flow["stop_ns"] == 8 * 10**9
    assert flow["size_bytes"] == 10**6
    assert flow["tcp"] == {
        "cca": {"kind": "cubic"},
        "ecn": True,
        "mss": 1400,
        "init_cwnd": 4,
        "min_rto_ns": 10**9,
        "delack_count": 1,
        "dupack_threshold": 5,
    }
    # Unset options are left to the core's Linux defaults.
    assert cfg["flows"][0]["tcp"] == {"cca": {"kind": "newreno"}, "ecn": False}


def test_init_ssthresh():
    cfg = scenario(DUMBBELL.replace('cca = "cubic"', "init_ssthresh = 20")).to_core_config()
    assert cfg["flows"][2]["tcp"]["init_ssthresh"] == 20
    msg = error(DUMBBELL.replace('cca = "cubic"', "init_ssthresh = 1"))
    assert "flows[2].init_ssthresh" in msg and "at least 2" in msg


def test_delack_table():
    cfg = scenario(
        DUMBBELL.replace('cca = "cubic"', 'delack = { count = 3, timeout = "10ms" }')
    ).to_core_config()
    tcp = cfg["flows"][2]["tcp"]
    assert (tcp["delack_count"], tcp["delack_timeout_ns"]) == (3, 10_000_000)


PRAGUE_FLOW = """\
duration = "5s"
[topology]
preset = "two_host"
rate = "10Mbps"
delay = "10ms"
[[flows]]
ecn = true
"""


def test_cca_table_with_options():
    new = scenario(
        PRAGUE_FLOW + 'cca = { kind = "prague", rtt_independence = true, alpha_mode = 0 }'
    )
    old = scenario(
        PRAGUE_FLOW + 'cca = "prague"\nprague_rtt_independence = true\nprague_alpha_mode = 0'
    )
    tcp = new.to_core_config()["flows"][0]["tcp"]
    # The table goes to the core as it is (the core's PragueConfig), the old flat
    # spelling folded into it; the ECN Prague forces is written out.
    assert tcp == {
        "cca": {"kind": "prague", "rtt_independence": True, "alpha_mode": 0},
        "ecn": True,
        "ect1": True,
        "accecn": True,
    }
    assert old.to_core_config() == new.to_core_config()
    # Written back as a table only when an option is set; reads back equal.
    assert new.to_dict()["flows"][0]["cca"] == {
        "kind": "prague",
        "rtt_independence": True,
        "alpha_mode": 0,
    }
    assert old.to_dict()["flows"][0]["cca"] == "prague"
    assert Scenario.parse(tomllib.loads(new.to_toml())) == new
    plain = scenario(PRAGUE_FLOW + 'cca = { kind = "cubic" }')
    assert plain.to_core_config()["flows"][0]["tcp"] == {"cca": {"kind": "cubic"}, "ecn": True}
    assert plain.to_dict()["flows"][0]["cca"] == "cubic"


def test_the_core_accepts_a_cca_table():
    core = pytest.importorskip("l4sim._core")
    sc = scenario(PRAGUE_FLOW + 'cca = { kind = "prague", rtt_independence = true }')
    core.Simulation(sc.to_core_json())


@pytest.mark.parametrize(
    ("cca", "fragment"),
    [
        (
            '{ kind = "cubic", rtt_independence = true }',
            "flows[0].cca.rtt_independence is not a known key; allowed keys in flows[0].cca: kind",
        ),
        ('{ kind = "prague", alpha_mode = 2 }', "flows[0].cca.alpha_mode 2 is not allowed"),
        ('{ kind = "prague", tree = "2020" }', "flows[0].cca.tree '2020' is not allowed"),
        (
            '{ kind = "prague", tree = "l4steam-2020", ecn_fallback = 1 }',
            'tree = "l4steam-2020" takes neither alpha_mode = 0 nor ecn_fallback',
        ),
        ('{ kind = "prague", rtt_independence = 1 }', "must be true or false"),
        ('{ kind = "copa" }', "flows[0].cca.kind 'copa' is not known; allowed kinds: 'newreno'"),
        ("{ rtt_independence = true }", "flows[0].cca needs a kind key"),
        ("3", "flows[0].cca 3 is not allowed; allowed values: 'newreno'"),
    ],
)
def test_bad_cca_table(cca, fragment):
    msg = error(PRAGUE_FLOW + f"cca = {cca}")
    assert fragment in msg, msg
    assert "\n" not in msg


@pytest.mark.parametrize("option", ["rtt_independence", "alpha_mode"])
def test_cca_option_in_both_spellings(option):
    value = "true" if option == "rtt_independence" else "1"
    msg = error(
        PRAGUE_FLOW + f'cca = {{ kind = "prague", {option} = {value} }}\nprague_{option} = {value}'
    )
    assert msg == (
        f"test.toml: flows[0]: cca.{option} and prague_{option} are the same option; give it "
        f"once, as cca.{option} (prague_{option} is its old spelling)"
    )


def test_overrides():
    sc = scenario(DUMBBELL).with_overrides(seed=42, duration="2s")
    assert sc.seed == 42 and sc.duration == 2 * 10**9
    with pytest.raises(ScenarioError, match="duration '5' has no unit"):
        sc.with_overrides(duration="5")


def test_python_construction():
    from l4sim import Dumbbell, LinkSpec, TcpFlow

    sc = Scenario(
        name="py",
        duration="5s",
        topology=Dumbbell(preset="dumbbell", bottleneck=LinkSpec(rate="10Mbps", delay="20ms")),
        flows=[TcpFlow(kind="tcp", cca="cubic"), TcpFlow(kind="tcp")],
    )
    assert len(sc.to_core_config()["flows"]) == 2
    assert sc.topology.pairs == 2


# -- errors: one sentence naming the key, the value and what is allowed -------------------------


def test_unknown_qdisc():
    msg = error(DUMBBELL.replace('kind = "fifo"', 'kind = "blue"'))
    assert "topology.bottleneck.qdisc.kind" in msg and "'blue'" in msg and "'fifo'" in msg


def test_qdisc_without_kind():
    msg = error(DUMBBELL.replace('kind = "fifo", ', ""))
    assert "topology.bottleneck.qdisc" in msg and "kind" in msg and "'fifo'" in msg


def test_unknown_cca():
    msg = error(DUMBBELL.replace('cca = "cubic"', 'cca = "copa"'))
    assert "flows[2].cca" in msg and "'copa'" in msg
    assert "'newreno'" in msg and "'cubic'" in msg


def test_unknown_flow_kind():
    msg = error(DUMBBELL.replace('cca = "cubic"', 'kind = "sctp"'))
    assert "flows[2].kind" in msg and "'sctp'" in msg and "'tcp'" in msg and "'udp'" in msg


def test_unknown_preset():
    msg = error(DUMBBELL.replace('preset = "dumbbell"', 'preset = "star"'))
    assert "topology.preset" in msg and "'star'" in msg
    assert "'dumbbell'" in msg and "'two_host'" in msg and "'custom'" in msg


def test_negative_rate():
    msg = error(DUMBBELL.replace('rate = "10Mbps"', 'rate = "-10Mbps"'))
    assert "topology.bottleneck.rate" in msg and "'-10Mbps'" in msg and "negative" in msg


def test_unitless_rate():
    msg = error(DUMBBELL.replace('rate = "10Mbps"', "rate = 10"))
    assert "topology.bottleneck.rate" in msg and "no unit" in msg and "Mbps" in msg


def test_unitless_rate_string():
    msg = error(DUMBBELL.replace('rate = "10Mbps"', 'rate = "10000000"'))
    assert "topology.bottleneck.rate" in msg and "no unit" in msg


def test_zero_rate():
    msg = error(DUMBBELL.replace('rate = "10Mbps"', 'rate = "0Mbps"'))
    assert "topology.bottleneck.rate" in msg and "positive" in msg


def test_unitless_limit():
    msg = error(DUMBBELL.replace('limit = "100p"', 'limit = "100"'))
    assert "topology.bottleneck.qdisc.limit" in msg and "'100p'" in msg


def test_unknown_node_in_flow():
    msg = error(DUMBBELL.replace('cca = "cubic"', 'cca = "cubic"\nsrc = "h7"'))
    assert "flows[2].src" in msg and "'h7'" in msg
    assert "s0, s1, s2, r0, r1, d0, d1, d2" in msg


def test_unknown_node_in_custom_link():
    msg = error(
        """
        duration = "3s"
        [topology]
        preset = "custom"
        nodes = ["a", "b"]
        links = [{ a = "a", b = "c", rate = "1Gbps", delay = "1ms" }]
        """
    )
    assert "links[0].b" in msg and "'c'" in msg and "a, b" in msg


def test_custom_flow_needs_endpoints():
    msg = error(
        """
        duration = "3s"
        [topology]
        preset = "custom"
        nodes = ["a", "b"]
        links = [{ a = "a", b = "b", rate = "1Gbps", delay = "1ms" }]
        [[flows]]
        """
    )
    assert "flows[0].src" in msg and "required" in msg


def test_disconnected_flow():
    msg = error(
        """
        duration = "3s"
        [topology]
        preset = "custom"
        nodes = ["a", "b", "c"]
        links = [{ a = "a", b = "b", rate = "1Gbps", delay = "1ms" }]
        [[flows]]
        src = "a"
        dst = "c"
        """
    )
    assert "flows[0]" in msg and "no path" in msg


def test_unknown_key_lists_allowed_keys():
    msg = error(DUMBBELL.replace('cca = "cubic"', 'cca = "cubic"\ncwnd = 3'))
    assert "flows[2].cwnd" in msg and "not a known key" in msg and "init_cwnd" in msg


def test_udp_key_on_tcp_flow():
    msg = error(DUMBBELL.replace('cca = "cubic"', 'rate = "1Mbps"'))
    assert "flows[2].rate" in msg and "not a known key" in msg


def test_udp_needs_rate():
    msg = error(DUMBBELL.replace('cca = "cubic"', 'kind = "udp"'))
    assert "flows[2].rate" in msg and "required" in msg


def test_udp_bad_ecn():
    msg = error(DUMBBELL.replace('cca = "cubic"', 'kind = "udp"\nrate = "1Mbps"\necn = "l4s"'))
    assert "flows[2].ecn" in msg and "'ect1'" in msg and "'not_ect'" in msg


def test_tcp_ecn_must_be_bool():
    msg = error(DUMBBELL.replace('cca = "cubic"', 'ecn = "yes"'))
    assert "flows[2].ecn" in msg and "true or false" in msg


def test_rack_needs_sack():
    msg = error(DUMBBELL.replace('cca = "cubic"', "sack = false\nrack = true"))
    assert "flows[2]" in msg and "rack = true needs sack = true" in msg and "\n" not in msg
    # Without SACK the default RACK is simply not used.
    assert scenario(DUMBBELL.replace('cca = "cubic"', "sack = false")).flows[2].sack is False


def test_bad_loss():
    msg = error(DUMBBELL.replace('rate = "10Mbps"', 'rate = "10Mbps"\nloss = 1.5'))
    assert "topology.bottleneck.loss" in msg and "1.5" in msg


def test_link_jitter_is_a_time():
    scen = scenario(DUMBBELL.replace('rate = "10Mbps"', 'rate = "10Mbps"\njitter = "200us"'))
    assert scen.topology.bottleneck.jitter == 200_000
    msg = error(DUMBBELL.replace('rate = "10Mbps"', 'rate = "10Mbps"\njitter = "soon"'))
    assert "topology.bottleneck.jitter" in msg and "'soon'" in msg


def test_link_overhead_is_bytes_per_packet():
    scen = scenario(DUMBBELL.replace('rate = "10Mbps"', 'rate = "10Mbps"\noverhead = 14'))
    assert scen.topology.bottleneck.overhead == 14
    bottleneck = scen.to_core_config()["links"][0]
    assert (bottleneck["rate_bps"], bottleneck["overhead_bytes"]) == (10_000_000, 14)
    for bad in ("-1", "70000", '"14B"'):
        msg = error(DUMBBELL.replace('rate = "10Mbps"', f'rate = "10Mbps"\noverhead = {bad}'))
        assert "topology.bottleneck.overhead" in msg, msg


def test_link_overhead_costs_its_share_of_the_rate():
    # A bulk flow fills a 10 Mbit/s link: charged 1514 B per 1500 B packet (a Linux HTB on
    # an Ethernet device), its goodput falls by 14 / 1514 (0.92 %), and by nothing else.
    def goodput(overhead: int) -> float:
        sim = Simulation(
            {
                "name": "overhead",
                "duration": "20s",
                "topology": {
                    "preset": "dumbbell",
                    "bottleneck": {"rate": "10Mbps", "delay": "10ms", "overhead": overhead},
                },
                "flows": [{"kind": "tcp", "cca": "cubic"}],
            }
        )
        sim.run_until(5.0)
        before = sim.summary()["flows"][0]["bytes_acked"]
        sim.run()
        return sim.summary()["flows"][0]["bytes_acked"] - before

    plain, charged = goodput(0), goodput(14)
    assert plain > 0.95 * 10e6 / 8 * 15 * 1448 / 1500  # the link is full
    assert charged / plain == pytest.approx(1500 / 1514, abs=0.002)


def test_missing_duration():
    msg = error(DUMBBELL.replace('duration = "10s"', ""))
    assert "duration is required" in msg


def test_start_after_end():
    msg = error(DUMBBELL.replace('cca = "cubic"', 'start = "12s"'))
    assert "flows[2].start" in msg and "'12s'" in msg and "'10s'" in msg


def test_stop_before_start():
    msg = error(DUMBBELL.replace('cca = "cubic"', 'start = "2s"\nstop = "1s"'))
    assert "flows[2].stop" in msg


def test_access_delays_length():
    msg = error(
        DUMBBELL.replace(
            'preset = "dumbbell"', 'preset = "dumbbell"\npairs = 3\naccess_delays = ["1ms"]'
        )
    )
    assert "access_delays" in msg and "one delay per pair" in msg


def test_path_needs_link_or_hops():
    msg = error(
        """
        duration = "3s"
        [topology]
        preset = "path"
        routers = 2
        """
    )
    assert "topology" in msg and "hops" in msg and "link" in msg


def test_empty_file(tmp_path):
    path = tmp_path / "empty.toml"
    path.write_text("  \n")
    with pytest.raises(ScenarioError, match=r"^empty\.toml: the file is empty"):
        load(path)


def test_malformed_toml(tmp_path):
    path = tmp_path / "bad.toml"
    path.write_text('duration = "10s"\n[topology\n')
    with pytest.raises(ScenarioError) as info:
        load(path)
    assert str(info.value).startswith("bad.toml: not valid TOML")
    assert "\n" not in str(info.value)


def test_missing_file(tmp_path):
    with pytest.raises(ScenarioError, match="does not exist"):
        load(tmp_path / "nope.toml")


def test_error_names_the_file(tmp_path):
    path = tmp_path / "mine.toml"
    path.write_text(textwrap.dedent(DUMBBELL).replace('cca = "cubic"', 'cca = "copa"'))
    with pytest.raises(ScenarioError, match=r"^mine\.toml: flows\[2\]\.cca 'copa'"):
        load(path)


@pytest.mark.parametrize("path", sorted((ROOT / "scenarios").glob("*.toml")), ids=lambda p: p.name)
def test_the_core_accepts_every_shipped_scenario(path):
    core = pytest.importorskip("l4sim._core")
    core.Simulation(load(path).to_core_json())  # raises ValueError on any unknown field


def test_fixed_window_or_autotuning():
    msg = error(DUMBBELL.replace('cca = "cubic"', 'rwnd = "500KB"\nrmem_max = "16MiB"'))
    assert "flows[2]" in msg and "give one of them" in msg and "\n" not in msg
    flows = scenario(DUMBBELL.replace('cca = "cubic"', 'rmem_max = "16MiB"')).to_core_config()
    assert flows["flows"][2]["tcp"]["rmem_max_bytes"] == 16 << 20


@pytest.mark.parametrize(
    ("option", "fragment"),
    [('rmem_max = "64KiB"', "rmem_max must be between"), ('rwnd = "2GiB"', "rwnd must be between")],
)
def test_window_bounds(option: str, fragment: str):
    msg = error(DUMBBELL.replace('cca = "cubic"', option))
    assert "flows[2]" in msg and fragment in msg and "\n" not in msg


@pytest.mark.parametrize("cca", [k for k in CCA_KINDS if k != "external"])
def test_resolved_flow_says_the_ecn_its_cca_forces(cca):
    """A TCP flow written with the defaults (ecn = false) resolves to the ECN its congestion
    control makes it use, and the core agrees: CE marks reach the flow exactly when ECN is
    on, and its packets go to DualPI2's L4S queue exactly when ect1 is."""
    sc = loads(
        textwrap.dedent(
            f"""
            name = "ecn"
            duration = "3s"
            [topology]
            preset = "dumbbell"
            bottleneck = {{ rate = "10Mbps", delay = "10ms", qdisc = "dualpi2" }}
            [[flows]]
            kind = "tcp"
            cca = "{cca}"
            """
        )
    )
    spec = sc.flows[0]
    needs = {"prague": ("ecn", "accecn", "ect1"), "dctcp": ("ecn",)}.get(cca, ())
    assert (spec.ecn, bool(spec.accecn), bool(spec.ect1)) == tuple(
        k in needs for k in ("ecn", "accecn", "ect1")
    )
    written = tomllib.loads(sc.to_toml())["flows"][0]
    assert written["ecn"] is ("ecn" in needs)
    assert spec.ecn_mode() == ("accecn" if "accecn" in needs else "ecn" if needs else "off")
    sim = Simulation(sc)
    sim.run()
    summary = sim.summary()
    assert (summary["flows"][0]["ecn_marks"] > 0) is ("ecn" in needs)
    l4s = summary["queues"][0]["classes"][0]
    assert l4s["qdisc"] == "L4S" and (l4s["packets"] > 0) is ("ect1" in needs)


def test_explicit_accecn_off_stays_for_prague():
    sc = scenario(PRAGUE_FLOW + "accecn = false")
    assert sc.flows[0].accecn is False and sc.flows[0].ecn_mode() == "ecn"
