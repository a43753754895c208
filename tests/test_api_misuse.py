"""Python API misuse (issue 33): a wrong argument to l4sim.run, Simulation or
SimulationBatch is one sentence naming the argument and what it allows, an L4simError (not
an AttributeError, nor a bare "OverflowError: int too big to convert")."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import numpy as np
import pytest

pytest.importorskip("l4sim._core")

import l4sim
from l4sim import ActionError, EnvConfigError, L4simError, ScenarioError
from l4sim.engine.simulation import Simulation, SimulationBatch

ROOT = Path(__file__).resolve().parents[1]
DEMO = ROOT / "scenarios" / "demo.toml"
CWND = {"kind": "set_cwnd", "flow": 0, "cwnd": 10}


@pytest.fixture(scope="module")
def sim() -> Simulation:
    return Simulation(DEMO)


def one_sentence(e: pytest.ExceptionInfo[BaseException]) -> str:
    msg = str(e.value)
    assert "\n" not in msg and not msg.endswith(".")
    assert isinstance(e.value, L4simError)
    return msg


@pytest.mark.parametrize("bad", [None, 42, 3.5, ["demo.toml"], b"demo.toml"])
def test_a_scenario_of_the_wrong_type(bad: object) -> None:
    for make in (Simulation, l4sim.run):
        with pytest.raises(ScenarioError) as e:
            make(bad)  # type: ignore[arg-type]
        msg = one_sentence(e)
        assert "must be a Scenario (l4sim.load(path)), a path to a scenario file or a " in msg
        assert f"not {bad!r}" in msg


def test_a_scenario_given_as_a_path_or_a_dict_still_works() -> None:
    assert Simulation(str(DEMO)).scenario.name == "demo"
    assert Simulation(l4sim.load(DEMO).to_dict()).scenario.name == "demo"


@pytest.mark.parametrize(
    ("call", "fragment"),
    [
        (lambda s: s.run_until(2**70), "run_until time 1180591620717411303424 is too large"),
        (lambda s: s.run_until(math.nan), "run_until time nan must be seconds"),
        (lambda s: s.run_until(-1), "run_until time -1 must be seconds"),
        (lambda s: s.run_until("1e30s"), "run_until time '1e30s' is too large"),
        (lambda s: s.run_until([1]), "run_until time [1] (list) must be seconds"),
        (lambda s: s.run_until_ns(2**70), "run_until_ns t_ns 1180591620717411303424 is out"),
        (lambda s: s.run_until_ns(-5), "run_until_ns t_ns -5 is out of range; allowed: 0 to"),
        (lambda s: s.run_until_ns(1.5), "run_until_ns t_ns 1.5 is not a whole number"),
        (lambda s: s.run_until_trigger(math.inf), "run_until_trigger time inf must be"),
        (lambda s: s.run_until_trigger_ns(-1), "run_until_trigger_ns t_ns -1 is out of range"),
    ],
)
def test_times_out_of_range(sim: Simulation, call: Any, fragment: str) -> None:
    with pytest.raises(EnvConfigError) as e:
        call(sim)
    assert fragment in one_sentence(e)
    assert sim.now_ns == 0


@pytest.mark.parametrize(
    ("call", "fragment"),
    [
        (lambda s: s.set_queue_limit("r0->r1", "1e30p"), "queue limit '1e30p' is too large"),
        (
            lambda s: s.set_queue_limit("r0->r1", packets=2**64),
            "set_queue_limit packets 18446744073709551616 is out of range; allowed: 1 to",
        ),
        (lambda s: s.set_queue_limit("r0->r1", bytes=-1), "set_queue_limit bytes -1 is out"),
        (lambda s: s.set_queue_limit(None, "5p"), "set_queue_limit link None is not a link"),
        (lambda s: s.schedule(CWND, 1e300), "schedule delay 1e+300 is too large"),
        (lambda s: s.schedule(CWND, -1), "schedule delay -1 must be seconds"),
        (lambda s: s.schedule_ns(CWND, 2**64), "schedule_ns delay_ns 18446744073709551616 is"),
        (lambda s: s.set_packet_trigger("r0->r1", -1), "set_packet_trigger every -1 is out"),
        (lambda s: s.set_packet_trigger("r0->r1", 0), "allowed: 1 to 18446744073709551615"),
        (lambda s: s.send_control(-1, CWND), "send_control flow -1 is out of range"),
        (lambda s: s.send_message(0, 2**63), "send_message token 9223372036854775808 is out"),
        (lambda s: s.send_message(0, -1), "send_message token -1 is out of range"),
    ],
)
def test_control_arguments_out_of_range(sim: Simulation, call: Any, fragment: str) -> None:
    with pytest.raises(ActionError) as e:
        call(sim)
    assert fragment in one_sentence(e)


@pytest.mark.parametrize(
    ("action", "fragment"),
    [
        (
            {**CWND, "cwnd": 2**70},
            "action set_cwnd: cwnd 1180591620717411303424 is out of range; allowed: 0 to "
            "4294967295",
        ),
        ({**CWND, "flow": -1}, "action set_cwnd: flow -1 is out of range"),
        ({**CWND, "cwnd": 2.5}, "action set_cwnd: cwnd 2.5 is not a whole number"),
        ({"kind": "set_cwnd", "flow": 0}, "action set_cwnd needs cwnd"),
        ({**CWND, "speed": 1}, "action set_cwnd has no field 'speed'; its fields: flow, cwnd"),
        ({"kind": "faster"}, "action kind 'faster' is not one of set_cwnd, set_drop_prob"),
        ({"flow": 0}, "action kind None is not one of"),
        (None, "action None is not a dict"),
        (42, "action 42 is not a dict"),
        (
            {"kind": "set_link_rate", "link": "r0->r1", "rate_bps": 1e30},
            "action set_link_rate: rate_bps 1e+30 is not a whole number",
        ),
        (
            {"kind": "set_queue_limit", "link": 7, "packets": 5},
            "action set_queue_limit: link 7 is not a string",
        ),
    ],
)
def test_actions_the_core_cannot_read(sim: Simulation, action: Any, fragment: str) -> None:
    for call in (
        lambda: sim.apply(action),
        lambda: sim.schedule(action, "1ms"),
        lambda: sim.send_control(0, action),
    ):
        with pytest.raises(ActionError) as e:
            call()
        assert fragment in one_sentence(e)


def test_actions_the_core_refuses_keep_its_sentence(sim: Simulation) -> None:
    with pytest.raises(ActionError, match="has no 'external' qdisc"):
        sim.apply({"kind": "set_drop_prob", "link": "r0->r1", "prob": 0.5})


def test_numpy_numbers_are_accepted(sim: Simulation) -> None:
    fork = sim.fork()
    fork.run_until_ns(np.int64(1_000_000))
    fork.run_until(np.float64(0.002))
    fork.set_queue_limit("r0->r1", packets=np.int32(50))
    assert fork.now_ns == 2_000_000


def test_batch_arguments() -> None:
    batch = SimulationBatch([Simulation(DEMO), Simulation(DEMO)])
    with pytest.raises(
        EnvConfigError,
        match="run_until_ns needs 2 times, got 1; give one time in ns per simulation",
    ):
        batch.run_until_ns([1])
    with pytest.raises(EnvConfigError, match="start_ns t_ns 5 must be a list of 2 times"):
        batch.start_ns(5)  # type: ignore[arg-type]
    with pytest.raises(EnvConfigError, match=r"start_ns t_ns\[1\] -1 is out of range"):
        batch.start_ns([1, -1])
    with pytest.raises(EnvConfigError, match=r"t_ns\[0\] 1180591620717411303424 is out of range"):
        batch.run_until_ns([2**70, 0])
    with pytest.raises(ActionError, match="action set_cwnd: cwnd -3 is out of range"):
        batch.apply(0, {**CWND, "cwnd": -3})
    with pytest.raises(IndexError, match=r"batch index 2 is outside 0\.\.2"):
        batch.apply(2, CWND)
    batch.run_until_ns([10**9, 2 * 10**9])
    assert [batch.get(i).now_ns for i in range(2)] == [10**9, 2 * 10**9]


# -- values the core refused (CoreError) and raw Python errors, now one sentence --------------


def _demo(**bottleneck_qdisc: Any) -> dict[str, Any]:
    d = l4sim.load(DEMO).to_dict()
    d["topology"]["bottleneck"]["qdisc"] = bottleneck_qdisc
    return d


@pytest.mark.parametrize(
    ("qdisc", "fragment"),
    [
        ({"kind": "red", "burst": 4294967295}, "burst is a parameter of the linux variant"),
        ({"kind": "red", "variant": "linux", "limit": "1B"}, "need 0 < min_th < max_th"),
        ({"kind": "red", "variant": "linux", "limit": "40B"}, "burst 0 is too small for min_th 3"),
    ],
)
def test_red_parameters_the_core_refuses_are_scenario_errors(
    qdisc: dict[str, Any], fragment: str
) -> None:
    with pytest.raises(ScenarioError, match=fragment):
        Simulation(_demo(**qdisc))
    # A Linux RED the core takes still builds.
    Simulation(_demo(kind="red", variant="linux", limit="400KB"))


def test_min_rto_above_max_rto_is_a_scenario_error() -> None:
    d = l4sim.load(DEMO).to_dict()
    d["flows"][0].update(min_rto="2s", max_rto="1s")
    with pytest.raises(ScenarioError, match=r"min_rto '2s' is above max_rto '1s'"):
        Simulation(d)
    d["flows"][0].update(min_rto="200s", max_rto=None)
    del d["flows"][0]["max_rto"]
    with pytest.raises(ScenarioError, match=r"above max_rto '2min'|above max_rto '120s'"):
        Simulation(d)


def test_wrong_types_to_the_api_are_one_sentence(sim: Simulation) -> None:
    with pytest.raises(EnvConfigError, match=r"SimulationBatch takes a list of Simulations"):
        SimulationBatch([1, 2])  # type: ignore[list-item]
    with pytest.raises(ActionError, match=r"capture flows \['a'\] \(list\) must be flow indices"):
        sim.capture("r0->r1", "/dev/null", flows=["a"])
    from l4sim.envs.remote import RemoteTcpEnv

    with pytest.raises(EnvConfigError, match=r"scenario 'x' must be a Scenario"):
        RemoteTcpEnv(scenario="x")  # type: ignore[arg-type]


def test_an_error_quoting_emoji_codes_prints_them_as_they_are(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A trace line ``root:x:0`` printed as ``root❌0`` (rich's emoji codes)."""
    from l4sim import cli

    (tmp_path / "bad.trace").write_text("root:x:0\n")
    text = DEMO.read_text().replace('rate = "10Mbps"', 'rate = "10Mbps"\ntrace = "bad.trace"', 1)
    (tmp_path / "s.toml").write_text(text)
    with pytest.raises(SystemExit):
        cli.main(["run", str(tmp_path / "s.toml"), "-q", "--out", str(tmp_path / "o")])
    err = capsys.readouterr().err
    assert "('root:x:0')" in err and "❌" not in err


def test_assigning_a_bad_value_to_a_loaded_scenario_is_one_sentence() -> None:
    """``sc.duration = 'banana'`` was accepted and failed later as a raw TypeError."""
    sc = l4sim.load(DEMO)
    with pytest.raises(ScenarioError, match=r"^demo: duration 'banana' is not a time"):
        sc.duration = "banana"  # type: ignore[assignment]
    with pytest.raises(ScenarioError, match="seed -1 must be at least 0"):
        sc.seed = -1
    assert sc.duration == 20 * 10**9 and sc.seed == l4sim.load(DEMO).seed  # unchanged
    sc.duration = "5s"  # type: ignore[assignment]
    assert sc.duration == 5 * 10**9
    assert l4sim.run(sc).summary["sim_time_s"] == pytest.approx(5.0)
