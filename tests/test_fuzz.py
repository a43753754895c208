"""Property-based fuzzing of every entry a user feeds: scenario files (as text and as
tables), sweep specs, the CLI's arguments and the Python API. Any input gives a result or a
documented :class:`l4sim.errors.L4simError` with one sentence — never another exception
type, a core panic, an abort or a hang (each example is time-boxed).

A ``CoreError`` counts as a failure here: it means the Python validation let through
something the core refused. The example budget is fixed and the search derandomised, so the
suite stays fast and gives the same verdict on every run.
"""

from __future__ import annotations

import contextlib
import copy
import math
import signal
import tomllib
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("l4sim._core")
hypothesis = pytest.importorskip("hypothesis")

from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

import l4sim  # noqa: E402
from l4sim import cli  # noqa: E402
from l4sim.errors import CoreError, L4simError  # noqa: E402
from l4sim.scenario import Scenario, loads  # noqa: E402
from l4sim.sweep import parse_spec  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
BASE = tomllib.loads((ROOT / "scenarios" / "demo.toml").read_text(encoding="utf-8"))
BASE["duration"] = "3s"
TIME_BOX_S = 20

FUZZ = settings(
    max_examples=100,
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)


class Hang(Exception):
    """An example ran past its time box."""


@contextlib.contextmanager
def time_box(seconds: int = TIME_BOX_S) -> Iterator[None]:
    def expire(*_: Any) -> None:
        raise Hang(f"an example ran over {seconds} s")

    old = signal.signal(signal.SIGALRM, expire)
    signal.alarm(seconds)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, old)


def one_sentence(e: BaseException) -> None:
    """A documented l4sim error (not the core refusing what Python let through), one line."""
    assert isinstance(e, L4simError), f"{type(e).__name__}: {e}"
    assert not isinstance(e, CoreError), f"the core refused what validation passed: {e}"
    text = str(e)
    assert text and "\n" not in text and len(text) < 1000, text


# -- values -----------------------------------------------------------------------------------

UNITS = ["bps", "Mbps", "Gbps", "ns", "us", "ms", "s", "B", "KB", "MiB", "p", "", "parsec"]
numbers = st.one_of(
    st.integers(min_value=-(2**70), max_value=2**70),
    st.floats(allow_nan=True, allow_infinity=True),
    st.sampled_from([0, 1, -1, 2**32, 2**63, 2**64, 10**30, 1e-9, 1e300]),
)
quantities = st.builds(
    lambda n, u: f"{n}{u}",
    st.one_of(st.integers(-5, 10**25), st.floats(allow_nan=True, allow_infinity=True)),
    st.sampled_from(UNITS),
)
leaves = st.one_of(
    numbers,
    quantities,
    st.booleans(),
    st.text(max_size=12),
    st.sampled_from(["newreno", "cubic", "prague", "fifo", "fq_codel", "dualpi2", "red", "tcp"]),
)
values = st.recursive(
    leaves,
    lambda inner: st.one_of(
        st.lists(inner, max_size=3), st.dictionaries(st.text(max_size=8), inner, max_size=3)
    ),
    max_leaves=6,
)

KEYS = [
    "name",
    "seed",
    "duration",
    "sample_interval",
    "topology.preset",
    "topology.pairs",
    "topology.access.rate",
    "topology.access.delay",
    "topology.access_delays",
    "topology.bottleneck.rate",
    "topology.bottleneck.delay",
    "topology.bottleneck.loss",
    "topology.bottleneck.jitter",
    "topology.bottleneck.overhead",
    "topology.bottleneck.qdisc",
    "topology.bottleneck.qdisc.kind",
    "topology.bottleneck.qdisc.limit",
    "topology.bottleneck.qdisc_reverse",
    "flows",
    "flows.0.kind",
    "flows.0.cca",
    "flows.0.count",
    "flows.0.start",
    "flows.0.stop",
    "flows.0.size",
    "flows.0.ecn",
    "flows.0.mss",
    "flows.0.init_cwnd",
    "flows.0.rwnd",
    "flows.0.delack",
    "flows.1.src",
    "flows.1.dst",
    "flows.1.rate",
    "flows.1.packet_size",
    "unknown_key",
]


def _set(data: Any, key: str, value: Any) -> None:
    node = data
    parts = key.split(".")
    for p in parts[:-1]:
        if isinstance(node, list):
            i = int(p)
            if i >= len(node):
                return
            node = node[i]
        elif isinstance(node, dict):
            node = node.setdefault(p, {})
        else:
            return
    if isinstance(node, dict):
        node[parts[-1]] = value
    elif isinstance(node, list) and parts[-1].isdigit() and int(parts[-1]) < len(node):
        node[int(parts[-1])] = value


mutations = st.lists(st.tuples(st.sampled_from(KEYS), values), min_size=1, max_size=3)


def _mutated(changes: list[tuple[str, Any]]) -> dict[str, Any]:
    data = copy.deepcopy(BASE)
    for key, value in changes:
        _set(data, key, value)
    return data


# -- scenarios --------------------------------------------------------------------------------


@FUZZ
@given(changes=mutations)
def test_scenario_tables(changes: list[tuple[str, Any]]):
    data = _mutated(changes)
    with time_box(), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            sc = Scenario.parse(data, source="fuzz")
        except BaseException as e:
            one_sentence(e)
            return
        try:
            sim = l4sim.Simulation(sc)  # the core accepts what validation passed
            sim.run_until("10ms")
        except BaseException as e:
            one_sentence(e)


@FUZZ
@given(text=st.text(max_size=200))
def test_scenario_text(text: str):
    with time_box():
        try:
            loads(text)
        except BaseException as e:
            one_sentence(e)


@FUZZ
@given(depth=st.integers(1, 6000), kind=st.sampled_from(["[", "{a="]))
def test_deeply_nested_scenario_text(depth: int, kind: str):
    text = "x = " + kind * depth
    with time_box():
        try:
            loads(text)
        except BaseException as e:
            one_sentence(e)


# -- sweep specs ------------------------------------------------------------------------------

SPEC_KEYS = ["name", "seeds", "keep_results", "grid", "draw", "draw.count", "draw.seed", "base"]
grid_keys = st.sampled_from([*KEYS, "", ".", "flows.9.cca", "topology.nothing.rate"])


@FUZZ
@given(
    changes=st.lists(st.tuples(st.sampled_from(SPEC_KEYS), values), max_size=3),
    grid=st.dictionaries(grid_keys, st.lists(values, max_size=3), max_size=2),
)
def test_sweep_specs(changes: list[tuple[str, Any]], grid: dict[str, Any]):
    spec: dict[str, Any] = {"base": copy.deepcopy(BASE), "grid": grid}
    for key, value in changes:
        _set(spec, key, value)
    with time_box(), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            parsed = parse_spec(spec, where="fuzz")
        except BaseException as e:
            one_sentence(e)
            return
        assert parsed.size() >= 1


# -- the CLI ----------------------------------------------------------------------------------

TOKENS = [
    "run",
    "plot",
    "sweep",
    "report",
    "reproduce",
    "schema",
    "version",
    "train",
    "emulate",
    "--out",
    "--seed",
    "--duration",
    "--quiet",
    "-q",
    "--jobs",
    "--only",
    "--help",
    "--fig-dir",
    "scenarios/demo.toml",
    "nonexistent.toml",
    "-1",
    "0",
    "1e400",
    "18446744073709551616",
    "10ms",
    "1e20s",
    "nan",
    "",
    "sweep",
    "aqm-004",
]


@FUZZ
@given(args=st.lists(st.sampled_from(TOKENS), min_size=1, max_size=5))
def test_cli_arguments(args: list[str], tmp_path_factory: pytest.TempPathFactory, capsys):
    tmp = tmp_path_factory.mktemp("cli")
    # Anything the fuzzer writes lands in tmp (--out is added to a run); a run is kept short
    # by the scenario's own duration unless --duration says otherwise: the time box bounds it.
    if "reproduce" in args or "train" in args or "emulate" in args:
        args = [*args, "--help"]  # long commands: their argument parsing only
    with contextlib.chdir(ROOT), time_box():
        try:
            cli.main([*args, "--out", str(tmp / "o")] if "run" in args else args)
        except SystemExit as e:
            code = e.code
        else:  # pragma: no cover - main always exits
            code = 0
    err = capsys.readouterr().err
    assert code in (0, 2, 130), (args, code, err)
    assert "internal error" not in err, (args, err)


# -- the Python API ---------------------------------------------------------------------------

times = st.one_of(numbers, quantities, st.text(max_size=6))


@FUZZ
@given(
    t=times,
    link=st.sampled_from(["r0->r1", "r1->r0", "s0->r0", "nowhere", "", "r0->r0"]),
    limit=st.one_of(quantities, numbers, st.text(max_size=6)),
    action=st.dictionaries(
        st.sampled_from(["kind", "flow", "cwnd", "link", "probability", "x"]), values, max_size=4
    ),
)
def test_python_api(t: Any, link: str, limit: Any, action: dict[str, Any]):
    sc = Scenario.parse(copy.deepcopy(BASE))
    sim = l4sim.Simulation(sc)
    calls = [
        lambda: sim.run_until(t),
        lambda: sim.set_queue_limit(link, limit),
        lambda: sim.apply(action),
        lambda: sim.schedule(action, t),
        lambda: sim.set_packet_trigger(link, limit if isinstance(limit, int) else None),
    ]
    with time_box():
        for call in calls:
            try:
                call()
            except BaseException as e:
                one_sentence(e)


actions = st.one_of(
    numbers,
    st.none(),
    st.booleans(),
    st.text(max_size=4),
    st.lists(st.one_of(numbers, st.none()), max_size=3),
    st.dictionaries(st.text(max_size=8), numbers, max_size=2),
)
_ENVS: dict[str, Any] = {}


def _env(kind: str) -> Any:
    """One env per kind for the whole property (reset before each example)."""
    if kind not in _ENVS:
        from l4sim.envs import AqmDropEnv, DualPi2Env, MultiCCEnv, TcpCwndEnv

        make = {
            "delta": lambda: TcpCwndEnv(),
            "continuous": lambda: TcpCwndEnv(action_set="continuous"),
            "aqm": lambda: AqmDropEnv(),
            "dualpi2": lambda: DualPi2Env(coupling=(1.0, 4.0)),
            "macc": lambda: MultiCCEnv(),
        }
        _ENVS[kind] = make[kind]()
    return _ENVS[kind]


@FUZZ
@given(
    kind=st.sampled_from(["delta", "continuous", "aqm", "dualpi2", "macc"]),
    action=actions,
    seed=st.one_of(st.none(), numbers),
)
def test_env_actions_and_seeds(kind: str, action: Any, seed: Any):
    """Any action is taken as its space allows or refused in one sentence (ActionError),
    never misread; any seed is a seed or one sentence."""
    env = _env(kind)
    with time_box():
        try:
            env.reset(seed=seed)
        except BaseException as e:
            one_sentence(e)
            env.reset(seed=1)
        if kind == "macc" and not isinstance(action, dict):
            action = {env.possible_agents[0]: action}
        try:
            env.step(action)
        except BaseException as e:
            one_sentence(e)
            assert isinstance(e, l4sim.ActionError), e
        else:  # taken: a discrete action was a whole number in range, not misread
            taken = next(iter(action.values()), 0) if kind == "macc" else action
            if kind in ("delta", "macc"):
                n = 5 if kind == "delta" else 3
                assert type(taken) is int and 0 <= taken < n, taken


@FUZZ
@given(
    kind=st.sampled_from(["scenario", "spec", "trace", "weights"]),
    special=st.sampled_from(["/dev/zero", "/dev/null", "/", "fifo", "big", "missing"]),
)
def test_special_and_oversized_input_files(
    kind: str, special: str, tmp_path_factory: pytest.TempPathFactory
):
    """Every entry that reads a file refuses a special, oversized or missing one in one
    sentence within the time box (a FIFO never blocks)."""
    import os

    from l4sim.sweep import load_spec

    tmp = tmp_path_factory.mktemp("files")
    path = str(tmp / special)
    if special == "fifo":
        os.mkfifo(path)
    elif special == "big":
        with open(path, "wb") as fh:
            fh.truncate(700 * 2**20)  # sparse: above every cap
    elif special != "missing":
        path = special
    text = f"""
duration = "1s"
[topology]
preset = "two_host"
rate = "10Mbps"
delay = "5ms"
{"trace = " + repr(path) if kind == "trace" else ""}
qdisc = {{ kind = "fq"{", lfq_policy = " + repr(path) if kind == "weights" else ""} }}
[[flows]]
cca = "cubic"
"""
    with time_box():
        try:
            if kind == "scenario":
                l4sim.load(path)
            elif kind == "spec":
                load_spec(path)
            else:
                loads(text)
        except BaseException as e:
            one_sentence(e)
        else:
            assert special == "/dev/null" and kind not in ("trace", "weights"), special


@pytest.mark.parametrize("bad", [None, 42, 3.5, b"x", ["a"], object()])
def test_run_and_simulation_refuse_what_is_not_a_scenario(bad: Any):
    for entry in (l4sim.run, l4sim.Simulation):
        with pytest.raises(L4simError) as e:
            entry(bad)
        one_sentence(e.value)


def test_time_box_catches_a_hang():
    with pytest.raises(Hang), time_box(1):
        while True:
            math.sqrt(2.0)
