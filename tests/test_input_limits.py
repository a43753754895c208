"""Input at the edges: numbers the core cannot hold, nan and inf, a byte order mark, deep
nesting, model_dump round trips, and valid but doubtful scenarios (warnings). Each case is
one ScenarioError sentence (or a ScenarioWarning), never another exception type."""

from __future__ import annotations

import tomllib
import warnings
from pathlib import Path

import pytest

from l4sim import cli
from l4sim.errors import ScenarioError, ScenarioWarning
from l4sim.scenario import Scenario, load, loads
from l4sim.units import MAX_TIME_NS, U64_MAX, UnitError, parse_queue_limit, parse_size, parse_time

ROOT = Path(__file__).resolve().parents[1]
SCENARIOS = sorted((ROOT / "scenarios").glob("*.toml"))

BASE = """
duration = "1s"
[topology]
preset = "dumbbell"
bottleneck = { rate = "10Mbps", delay = "10ms" BOTTLENECK }
[[flows]]
cca = "cubic"
"""


def scenario(bottleneck: str = "", flow: str = "", top: str = "") -> str:
    """The base scenario with extra keys in the bottleneck's table, the flow and the top."""
    return top + BASE.replace(" BOTTLENECK", bottleneck) + flow


def refused(text: str) -> str:
    with pytest.raises(ScenarioError) as info:
        loads(text)
    message = str(info.value)
    assert "\n" not in message
    return message


# -- numbers the core cannot hold ------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "fragment"),
    [
        (
            scenario().replace("10Mbps", "1e30bps"),
            "topology.bottleneck.rate '1e30bps' is too large; at most 18446744073709551615bps",
        ),
        (
            scenario(', qdisc = { kind = "fifo", limit = "1e23p" }'),
            "topology.bottleneck.qdisc.limit '1e23p' is too large; at most 4611686018427387904p",
        ),
        (
            scenario(', qdisc = { kind = "fifo", limit = "1e30B" }'),
            "topology.bottleneck.qdisc.limit '1e30B' is too large; at most 4611686018427387904B",
        ),
        (
            scenario(flow='size = "1e30B"\n'),
            "flows[0].size '1e30B' is too large; at most 18446744073709551615B",
        ),
        (
            scenario().replace('"1s"', '"1e20s"'),
            "duration '1e20s' is too large; at most 4611686018427387904ns (about 146 years)",
        ),
        (
            scenario(", jitter = '1e9999999s'"),
            "topology.bottleneck.jitter '1e9999999s' is too large",
        ),
        (
            scenario(flow="init_cwnd = 99999999999\n"),
            "flows[0].init_cwnd 99999999999 is too large; allowed: 1 to 4294967295",
        ),
        (
            scenario(flow="init_ssthresh = 4294967296\n"),
            "flows[0].init_ssthresh 4294967296 is too large; allowed: 2 to 4294967295",
        ),
        (
            scenario(flow="delack = { count = 4294967296 }\n"),
            "flows[0].delack.count 4294967296 is too large; allowed: 1 to 4294967295",
        ),
        (
            scenario(flow="init_cwnd = " + "9" * 80 + "\n"),
            "flows[0].init_cwnd 9999999999999999999999999999999999999999…99999999 is too large",
        ),
        (
            scenario(', qdisc = { kind = "fq", per_flow_limit = "1e10p" }'),
            "qdisc.per_flow_limit '1e10p' is too large; at most 4294967295p",
        ),
        (
            scenario(', qdisc = { kind = "fq_codel", quantum = "5GB" }'),
            "qdisc.quantum '5GB' is too large; at most 4294967295B",
        ),
        (
            scenario(', qdisc = { kind = "fq_codel", flows = 65537 }'),
            "qdisc.flows 65537 is too large; allowed: 1 to 65536, Linux's limit",
        ),
        (
            scenario(', qdisc = { kind = "dualpi2", step_thresh = "1e10p" }'),
            "qdisc.step_thresh '1e10p' is too large; at most 4294967295p",
        ),
        (
            scenario(', qdisc = { kind = "dualpi2", step_thresh = "5KB" }'),
            "qdisc: step_thresh must be a time such as '1ms' or packets such as '5p'",
        ),
        (
            scenario(', qdisc = { kind = "dualpi2", step_thresh = "5 parsecs" }'),
            "qdisc.step_thresh '5 parsecs' is not a time such as '1ms' or a number of packets",
        ),
        (
            scenario(', qdisc = { kind = "dualpi2", min_qlen_step = 4294967296 }'),
            "qdisc.min_qlen_step 4294967296 is too large; allowed: 0 to 4294967295",
        ),
        (
            scenario(flow="count = 100001\n"),
            "flows[0].count 100001 is too large; allowed: 1 to 100000",
        ),
    ],
)
def test_numbers_the_core_cannot_hold_are_one_sentence(text: str, fragment: str) -> None:
    assert fragment in refused(text)


def test_limits_the_core_holds_are_accepted() -> None:
    sc = loads(scenario(', qdisc = { kind = "fifo", limit = "1e12p" }'))
    link = sc.to_core_config()["links"][0]
    assert link["qdisc_ab"]["limit_pkts"] == 10**12
    edge = loads(scenario().replace("10Mbps", f"{U64_MAX}bps").replace('"1s"', '"1s"'))
    assert edge.topology.bottleneck.rate == U64_MAX  # type: ignore[union-attr]
    assert parse_time(f"{MAX_TIME_NS}ns") == MAX_TIME_NS
    with pytest.raises(UnitError, match="too large"):
        parse_time(f"{MAX_TIME_NS + 1}ns")


def test_unit_parsing_is_exact_and_bounded() -> None:
    # Beyond the 28 digits of Decimal's default context: still not a whole number.
    with pytest.raises(UnitError, match="whole number of nanoseconds"):
        parse_time("1.00000000000000000000000000000001s")
    with pytest.raises(UnitError, match="whole number of nanoseconds"):
        parse_time("1e-999999999s")
    with pytest.raises(UnitError, match="too large"):
        parse_size("1e999999999999B")
    assert parse_time("0e-99999s") == 0
    assert parse_queue_limit("1e12p").packets == 10**12


@pytest.mark.parametrize(
    ("text", "fragment"),
    [
        (
            scenario(
                flow='kind = "tcp"\n[[flows]]\nkind = "udp"\nrate = "1Mbps"\n'
                'packet_size = "70000B"\n'
            ),
            "flows[1].packet_size '70000B' is too large; at most 65535B, IPv4's largest packet",
        ),
        (
            scenario(flow='[[flows]]\nkind = "control"\npacket_size = "64KiB"\n'),
            "flows[1].packet_size '64KiB' is too large; at most 65535B",
        ),
        (scenario(flow='mss = "65536B"\n'), "flows[0].mss '65536B' is too large; at most 65535B"),
        (scenario(flow='header_size = "1MB"\n'), "flows[0].header_size '1MB' is too large"),
    ],
)
def test_packets_larger_than_ipv4_allows_are_refused(text: str, fragment: str) -> None:
    assert fragment in refused(text)


# -- nan and inf -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("bottleneck", "fragment"),
    [
        (", loss = nan", "topology.bottleneck.loss nan is not a number"),
        (", loss = inf", "topology.bottleneck.loss inf is not a number"),
        (', qdisc = { kind = "pie", alpha = nan }', "topology.bottleneck.qdisc.alpha nan"),
        (', qdisc = { kind = "pie", max_ecnth = -inf }', "qdisc.max_ecnth -inf is not a number"),
        (', qdisc = { kind = "red", max_p = inf }', "qdisc.max_p inf is not a number"),
        (', qdisc = { kind = "dualpi2", coupling = nan }', "qdisc.coupling nan is not a number"),
    ],
)
def test_nan_and_inf_are_not_numbers(bottleneck: str, fragment: str) -> None:
    message = refused(scenario(bottleneck))
    assert fragment in message
    assert "is not a number" in message


# -- file format -----------------------------------------------------------------------------


def test_a_byte_order_mark_is_accepted(tmp_path: Path) -> None:
    assert loads("\ufeff" + scenario()).duration == 10**9
    path = tmp_path / "bom.toml"
    path.write_text(scenario(), encoding="utf-8-sig")
    assert load(path).duration == 10**9


@pytest.mark.parametrize(
    ("text", "json_format"),
    [
        ("a = " + "[" * 5000 + "]" * 5000, False),
        ("a = " + "{b = " * 5000 + "1" + "}" * 5000, False),
        ('{"a": ' + "[" * 100_000 + "]" * 100_000 + "}", True),
    ],
)
def test_deep_nesting_is_one_sentence(text: str, json_format: bool) -> None:
    with pytest.raises(ScenarioError, match="nested too deeply"):
        loads(text, json_format=json_format)


def test_bare_numbers_still_have_no_unit() -> None:
    assert "has no unit" in refused(scenario().replace('"10Mbps"', "10000000"))
    assert "has no unit" in refused(scenario().replace('"1s"', "1"))


# -- round trips -----------------------------------------------------------------------------


@pytest.mark.parametrize("path", SCENARIOS, ids=[p.name for p in SCENARIOS])
def test_model_dump_round_trips(path: Path) -> None:
    sc = load(path)
    assert Scenario.model_validate(sc.model_dump()) == sc
    assert Scenario.model_validate(sc.model_dump(mode="json")) == sc
    assert Scenario.parse(sc.to_dict()).to_core_config() == sc.to_core_config()


def test_model_dump_gives_unit_strings() -> None:
    dumped = loads(scenario(', qdisc = { kind = "fifo", limit = "100p" }')).model_dump()
    assert dumped["duration"] == "1s"
    assert dumped["topology"]["bottleneck"]["rate"] == "10Mbps"
    assert dumped["topology"]["bottleneck"]["qdisc"]["limit"] == "100p"


# -- valid but doubtful ----------------------------------------------------------------------


@pytest.mark.parametrize(
    "text", [scenario().split("[[flows]]")[0], "flows = []\n" + scenario().split("[[flows]]")[0]]
)
def test_a_scenario_without_flows_is_refused(text: str) -> None:
    assert "the scenario has no flows; add at least one [[flows]] table" in refused(text)


def test_a_scenario_built_in_python_may_leave_flows_out_until_it_runs() -> None:
    data = tomllib.loads(scenario().split("[[flows]]")[0])
    sc = Scenario.parse(data)  # to inspect its topology
    assert sc.to_core_config()["flows"] == []
    with pytest.raises(ScenarioError, match="the scenario has no flows"):
        sc.require_flows()


def _warnings(text: str) -> list[str]:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        loads(text)
    assert all(w.category is ScenarioWarning for w in caught)
    return [str(w.message) for w in caught]


def test_flows_sharing_a_dumbbell_pair_warn() -> None:
    one = _warnings(scenario(flow="count = 3\n").replace('"dumbbell"', '"dumbbell"\npairs = 1'))
    assert one == [
        "topology.pairs = 1, fewer than the 3 flows without src and dst, so flows 0, 1 and 2 "
        "share s0 → d0: raise pairs to 3 or give those flows their own src and dst"
    ]
    two = _warnings(scenario(flow="count = 3\n").replace('"dumbbell"', '"dumbbell"\npairs = 2'))
    assert len(two) == 1 and "flows 0 and 2 share s0 → d0" in two[0]
    delays = scenario(flow="count = 2\n").replace(
        '"dumbbell"', '"dumbbell"\naccess_delays = ["1ms"]'
    )
    assert "topology.access_delays gives 1 pair, fewer than the 2 flows" in _warnings(delays)[0]


@pytest.mark.parametrize(
    "text",
    [
        scenario(flow="count = 3\n"),  # pairs default to the number of flows
        scenario(flow="count = 3\n").replace('"dumbbell"', '"dumbbell"\npairs = 3'),
        scenario(flow='src = "s0"\ndst = "d0"\n[[flows]]\nsrc = "s0"\ndst = "d0"\n').replace(
            '"dumbbell"', '"dumbbell"\npairs = 1'
        ),
        scenario(top='sample_interval = "1s"\n'),
    ],
)
def test_plain_scenarios_do_not_warn(text: str) -> None:
    assert _warnings(text) == []


def test_a_sample_interval_longer_than_the_run_warns() -> None:
    caught = _warnings(scenario(top='sample_interval = "2s"\n'))
    assert caught == [
        "sample_interval '2s' is longer than duration '1s', so the time series "
        "(flows.parquet, queues.parquet) have at most one row; set sample_interval to a "
        "fraction of the duration"
    ]


# -- through the CLI -------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "fragment"),
    [
        (scenario().replace("10Mbps", "1e30bps"), "'1e30bps' is too large"),
        (scenario().split("[[flows]]")[0], "has no flows"),
        ("a = " + "[" * 5000 + "]" * 5000, "nested too deeply"),
        (scenario(", loss = nan"), "loss nan is not a number"),
    ],
)
def test_the_cli_exits_2_with_one_line(
    text: str, fragment: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "bad.toml"
    path.write_text(text)
    with pytest.raises(SystemExit) as info:
        cli.main(["run", str(path), "--out", str(tmp_path / "out")])
    assert info.value.code == 2
    lines = [line for line in capsys.readouterr().err.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("error: "), lines
    assert fragment in lines[0]
    assert not (tmp_path / "out").exists()
