"""Memory and size (issue 33): the memory budget refuses runs that cannot fit with one
sentence, the time series come from the core as buffers (same frames as the list form) and
can be drained in chunks, and a flow's throughput is what got through."""

from __future__ import annotations

import json
import math
import os
from pathlib import Path
from typing import Any

import polars as pl
import pytest
from polars.testing import assert_frame_equal

pytest.importorskip("l4sim._core")

import l4sim
from l4sim import _core
from l4sim.engine import budget
from l4sim.engine.budget import MemoryBudgetError
from l4sim.engine.simulation import FLOW_SCHEMA, QUEUE_SCHEMA, Simulation, columns_to_frame

ROOT = Path(__file__).resolve().parents[1]
GiB = 2**30


def demo(**changes: Any) -> dict[str, Any]:
    return {**l4sim.load(ROOT / "scenarios" / "demo.toml").to_dict(), **changes}


def dumbbell(
    count: int, rate: str, duration: str, limit: str = "1000p", **changes: Any
) -> dict[str, Any]:
    return {
        "name": "big",
        "duration": duration,
        "topology": {
            "preset": "dumbbell",
            "access": {"rate": "1Gbps", "delay": "1ms"},
            "bottleneck": {
                "rate": rate,
                "delay": "10ms",
                "qdisc": {"kind": "fifo", "limit": limit},
            },
        },
        "flows": [{"kind": "tcp", "cca": "newreno", "count": count}],
        **changes,
    }


@pytest.fixture
def machine_with_16_gib(monkeypatch: pytest.MonkeyPatch) -> None:
    """A machine with 16 GiB available (budget 8 GiB) and no L4SIM_MEMORY_LIMIT."""
    monkeypatch.delenv(budget.ENV_VAR, raising=False)
    monkeypatch.setattr(budget, "_mem_available", lambda: 16 * GiB)


# -- the budget ------------------------------------------------------------------------------


@pytest.mark.parametrize("interval", ["1ns", "10us"])
def test_a_tiny_sample_interval_is_refused_with_one_sentence(
    interval: str, machine_with_16_gib: None
) -> None:
    # 10us on demo.toml: 33.8 million rows (~6 GiB); 1ns: 56 TiB. Before: the core aborted
    # ("memory allocation of 536870912 bytes failed", exit 134).
    limit = "2GiB" if interval == "10us" else None
    with pytest.raises(MemoryBudgetError) as e:
        Simulation(demo(sample_interval=interval), memory_limit=limit)
    msg = str(e.value)
    assert msg.count(". ") == 0 and "\n" not in msg
    assert f"raise sample_interval (now '{interval}')" in msg
    assert "scenario 'demo' would need about" in msg and "more than the budget of" in msg
    assert "L4SIM_MEMORY_LIMIT" in msg


def test_a_long_run_of_many_flows_is_refused(machine_with_16_gib: None) -> None:
    # Default sampling, 50 flows at 100 Mbit/s for 36 000 s: 90.7 million rows, ~15.6 GiB.
    with pytest.raises(MemoryBudgetError) as e:
        Simulation(dumbbell(50, "100Mbps", "36000s"))
    msg = str(e.value)
    assert "90 720 000 rows" in msg
    assert "more than the budget of 8 GiB (half of the 16 GiB of memory available)" in msg
    assert "shorten duration (now '36000s')" in msg


def test_streaming_counts_one_percent_of_the_series(machine_with_16_gib: None) -> None:
    sim = Simulation(dumbbell(50, "100Mbps", "36000s"), streaming=True)
    assert sim.now_ns == 0
    full = budget.estimate(sim.scenario.to_core_config())
    part = budget.estimate(sim.scenario.to_core_config(), streaming=True)
    assert part.series_bytes == pytest.approx(full.series_bytes / 100, rel=1e-6)


def test_many_flows_name_their_count() -> None:
    # A configuration as the core takes it (building a Scenario of 100 000 flows takes
    # seconds): the flows' state dominates.
    cfg = {
        "duration_ns": 10**9,
        "sample_interval_ns": 10 * 10**9,
        "nodes": [{"name": f"n{i}"} for i in range(2)],
        "links": [{"a": 0, "b": 1, "qdisc_ab": {"kind": "fifo"}, "qdisc_ba": {"kind": "fifo"}}],
        "flows": [{"kind": "tcp", "src": 0, "dst": 1, "start_ns": 0}] * 100_000,
    }
    with pytest.raises(MemoryBudgetError, match=r"100 000 flows .*; lower the flows' count"):
        budget.check(cfg, name="many", memory_limit="1GiB")


def test_the_budget_comes_from_the_keyword_the_environment_or_the_machine(
    monkeypatch: pytest.MonkeyPatch, machine_with_16_gib: None
) -> None:
    assert budget.resolve_limit() == (8 * GiB, "half of the 16 GiB of memory available")
    monkeypatch.setenv(budget.ENV_VAR, "4GiB")
    assert budget.resolve_limit() == (4 * GiB, budget.ENV_VAR)
    assert budget.resolve_limit("1GB") == (10**9, "memory_limit=")
    assert budget.resolve_limit(12345)[0] == 12345
    for off in ("0", "none", "None", " off "):
        monkeypatch.setenv(budget.ENV_VAR, off)
        assert budget.resolve_limit()[0] is None
    assert budget.resolve_limit(0)[0] is None
    monkeypatch.setattr(budget, "_mem_available", lambda: None)
    monkeypatch.delenv(budget.ENV_VAR)
    assert budget.resolve_limit()[0] == budget.FALLBACK_LIMIT


def test_the_check_can_be_turned_off(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(budget.ENV_VAR, "none")
    sim = Simulation(demo(sample_interval="1ns"))  # built, not run
    assert sim.now_ns == 0
    Simulation(demo(sample_interval="1ns"), memory_limit=0)


@pytest.mark.parametrize(
    ("value", "fragment"),
    [
        ("lots", "L4SIM_MEMORY_LIMIT 'lots' is not a size such as '4GiB'"),
        ("-3GiB", "is not a size such as '4GiB'"),
        ("4 parsecs", "is not a size such as '4GiB'"),
    ],
)
def test_a_bad_budget_is_one_sentence(
    monkeypatch: pytest.MonkeyPatch, value: str, fragment: str
) -> None:
    monkeypatch.setenv(budget.ENV_VAR, value)
    with pytest.raises(MemoryBudgetError, match=fragment):
        Simulation(demo())


@pytest.mark.parametrize("value", [-1, 2.5, True, [1]])
def test_a_bad_memory_limit_keyword_is_one_sentence(value: object) -> None:
    with pytest.raises(MemoryBudgetError, match="memory_limit"):
        Simulation(demo(), memory_limit=value)  # type: ignore[arg-type]


@pytest.mark.parametrize("name", ["demo", "l4s_dualpi2", "mixed", "path_2router"])
def test_the_estimate_counts_the_rows_the_core_will_hold(name: str) -> None:
    scenario = l4sim.load(ROOT / "scenarios" / f"{name}.toml")
    est = budget.estimate(scenario.to_core_config())
    sim = Simulation(scenario)
    assert (est.flow_rows, est.queue_rows) == tuple(sim._sim.series_rows_of_run())
    sim.run()
    flows, queues = sim.series_rows()
    # Every flow row; queue rows only for the link directions that carried something.
    assert flows == est.flow_rows and 0 < queues <= est.queue_rows


# -- the time series' handover -------------------------------------------------------------


@pytest.mark.parametrize("name", ["demo", "l4s_dualpi2"])
def test_buffer_frames_equal_the_list_form(name: str) -> None:
    sim = Simulation(ROOT / "scenarios" / f"{name}.toml")
    empty_f, empty_q = sim.flows(), sim.queues()
    assert empty_f.height == 0 and empty_f.schema == pl.Schema(FLOW_SCHEMA)
    assert empty_q.height == 0 and empty_q.schema == pl.Schema(QUEUE_SCHEMA)
    sim.run_until("7s")
    flows, queues = sim.flows(), sim.queues()
    assert flows.schema == pl.Schema(FLOW_SCHEMA) and queues.schema == pl.Schema(QUEUE_SCHEMA)
    assert_frame_equal(flows, columns_to_frame(sim._sim.flow_series(), FLOW_SCHEMA))
    assert_frame_equal(queues, columns_to_frame(sim._sim.queue_series(), QUEUE_SCHEMA))
    # NaN where TCP state is unset, several TCP states and classes: the text columns.
    assert flows["ssthresh_pkts"].is_nan().any()
    assert flows["ca_state"].n_unique() > 1
    if name == "l4s_dualpi2":
        assert set(queues["class"]) == {"", "L4S", "Classic"}


def test_drained_chunks_add_up_to_the_whole_run() -> None:
    whole = Simulation(ROOT / "scenarios" / "demo.toml")
    whole.run()
    sim = Simulation(ROOT / "scenarios" / "demo.toml", streaming=True)
    chunks = []
    for t in ("3s", "3s", "11.05s", "20s"):
        sim.run_until(t)
        chunks.append(sim.drain_series())
        assert sim.series_rows() == (0, 0)
        assert sim.flows().height == 0 and sim.queues().height == 0
    assert_frame_equal(pl.concat([f for f, _ in chunks]), whole.flows())
    assert_frame_equal(pl.concat([q for _, q in chunks]), whole.queues())
    assert chunks[1][0].height == 0  # nothing new since the last drain
    assert sim.summary() == whole.summary()


# -- throughput_bps is what got through ------------------------------------------------------


def test_throughput_cannot_exceed_the_link_and_send_rate_is_what_was_sent() -> None:
    # A 50 Mbit/s UDP source on a 10 Mbit/s link: it sends 50, 10 get through (before:
    # throughput_bps reported 50 Mbit/s).
    scenario = {
        "name": "udp_over",
        "duration": "2s",
        "topology": {"preset": "two_host", "rate": "10Mbps", "delay": "5ms"},
        "flows": [{"kind": "udp", "rate": "50Mbps"}],
    }
    f = l4sim.run(scenario).summary["flows"][0]
    assert 9.5e6 <= f["throughput_bps"] <= 10e6
    assert f["send_rate_bps"] == pytest.approx(50e6, rel=0.01)
    assert f["goodput_bps"] <= f["throughput_bps"]


def test_throughput_of_tcp_flows_sums_to_no_more_than_the_bottleneck() -> None:
    s = l4sim.run(dumbbell(40, "10Mbps", "5s", limit="20p")).summary
    total = sum(f["throughput_bps"] for f in s["flows"])
    sent = sum(f["send_rate_bps"] for f in s["flows"])
    assert total <= 10e6 < sent
    for f in s["flows"]:
        assert f["goodput_bps"] <= f["throughput_bps"] <= f["send_rate_bps"]
    assert all(math.isfinite(f["throughput_bps"]) for f in s["flows"])


def test_the_summary_schema_documents_every_field() -> None:
    schema = _core.contract()["schemas"]["summary"]
    flow = schema["$defs"]["FlowSummary"]["properties"]
    assert "can exceed what its" in flow["send_rate_bps"]["description"]
    assert "reached its destination" in flow["throughput_bps"]["description"]
    summary = json.loads(Simulation(demo())._sim.summary_json())
    # every field written is documented; the ones left out are those only some flows have
    # (media frames, feedback, Queue Protection's sanctions)
    written = set(summary["flows"][0])
    assert written <= set(flow)
    assert set(flow) - written == {"frames", "feedback", "qprot_sanctioned"}
    # the wifi section is written only for a run with a Wi-Fi BSS
    assert set(schema["properties"]) - set(summary) == {"wifi"}
    assert set(summary) <= set(schema["properties"])


# -- topology tables: estimated before anything is allocated -----------------------------------


def long_path(routers: int, **changes: Any) -> dict[str, Any]:
    return {
        "name": "long_path",
        "duration": "200ms",
        "topology": {
            "preset": "path",
            "routers": routers,
            "link": {"rate": "100Mbps", "delay": "1ms"},
        },
        "flows": [{"kind": "tcp", "cca": "cubic"}],
        **changes,
    }


#: Runs ``python -m l4sim ARGS`` and writes the process's own peak RSS (KiB, VmHWM of its
#: memory map) to the file named by $L4SIM_TEST_RSS when it exits. Neither RUSAGE_CHILDREN
#: (the session's largest child) nor the child's own ru_maxrss (Linux keeps the forked
#: parent's peak across exec) measures the command alone.
_MEASURED_CLI = (
    "import atexit, os, runpy, sys\n"
    "def _hwm():\n"
    "    for line in open('/proc/self/status'):\n"
    "        if line.startswith('VmHWM:'):\n"
    "            open(os.environ['L4SIM_TEST_RSS'], 'w').write(line.split()[1])\n"
    "atexit.register(_hwm)\n"
    "sys.argv[0] = 'l4sim'\n"
    "runpy.run_module('l4sim', run_name='__main__')\n"
)


def test_a_path_of_100000_routers_is_one_sentence_not_an_abort(tmp_path: Path) -> None:
    """Scenario validation asked the core for every flow's route, which built a nodes x
    routers table (40 GB for 100 000 routers: the allocation failed and the process
    aborted, exit 134) before the budget was checked. The table now holds only the columns
    of the flows' endpoints, and the budget counts it: one sentence, exit 2, little memory."""
    import subprocess
    import sys

    path = tmp_path / "huge.toml"
    path.write_text(
        'name = "huge"\nduration = "200ms"\n[topology]\npreset = "path"\nrouters = 100000\n'
        'link = { rate = "100Mbps", delay = "1ms" }\n[[flows]]\ncca = "cubic"\n'
    )
    env = {k: v for k, v in os.environ.items() if k != "L4SIM_DEBUG"}
    env["PYTHONPATH"] = str(ROOT / "python")
    env["L4SIM_TEST_RSS"] = str(tmp_path / "rss")
    proc = subprocess.run(
        [sys.executable, "-c", _MEASURED_CLI, "run", str(path), "--memory-limit", "100MiB", "-q"],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env=env,
        timeout=120,
    )
    lines = [x for x in proc.stderr.splitlines() if x.strip()]
    assert proc.returncode == 2, proc.stderr[-2000:]
    assert len(lines) == 1 and lines[0].startswith("error: "), proc.stderr[-2000:]
    assert "more than the budget of 100 MiB" in lines[0]
    assert "fewer links or routers" in lines[0]
    # Validating 100 000 links in Python; no n² table.
    assert int((tmp_path / "rss").read_text()) / 1024 < 1024


def test_the_budget_counts_the_routing_table_of_the_flows_endpoints() -> None:
    config = l4sim.Scenario.parse(long_path(1000)).to_core_config()
    est = budget.estimate(config)
    # 1 002 nodes towards r0 and r999 (h0 and h1 are leaves, reached through them).
    routes = 1002 * 2 * budget.ROUTE_ENTRY_BYTES
    assert est.state_bytes == 1 * budget.FLOW_BYTES + 2002 * budget.CHANNEL_BYTES + routes
    # The core builds such a path without a square table, and runs it.
    assert l4sim.run(long_path(100_000), memory_limit="none").summary["sim_time_s"] > 0


# -- traces and forks --------------------------------------------------------------------------


def traced(tmp_path: Path, lines: int) -> dict[str, Any]:
    trace = tmp_path / "big.trace"
    trace.write_text("".join(f"{1 + i // 4}\n" for i in range(lines)))
    return {
        "name": "traced",
        "duration": "200ms",
        "topology": {"preset": "two_host", "rate": "10Mbps", "delay": "5ms", "trace": str(trace)},
        "flows": [{"kind": "tcp", "cca": "cubic"}],
    }


def test_a_trace_counts_what_it_costs(tmp_path: Path) -> None:
    """A 45 MB trace peaked at 917 MiB under a 300 MiB budget, estimated 16 MiB: now each
    line counts TRACE_LINE_BYTES, and the run's peak stays under the estimate."""
    import subprocess
    import sys

    lines = 1_000_000
    config = l4sim.Scenario.parse(traced(tmp_path, lines)).to_core_config()
    est = budget.estimate(config)
    assert est.trace_opportunities == lines
    assert est.state_bytes >= lines * budget.TRACE_LINE_BYTES
    with pytest.raises(MemoryBudgetError, match=r"traces of 1 000 000 lines.*use a shorter trace"):
        Simulation(traced(tmp_path, lines), memory_limit=est.total - 1)
    # Peak RSS over what `import l4sim` holds, in a fresh process, against the estimate.
    script = (
        "import resource, sys, l4sim\n"
        "before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss\n"
        f"l4sim.run(l4sim.load({str(tmp_path / 's.toml')!r}), memory_limit='none')\n"
        "after = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss\n"
        "print((after - before) * 1024)\n"
    )
    import tomli_w

    (tmp_path / "s.toml").write_text(tomli_w.dumps(traced(tmp_path, lines)))
    env = {**os.environ, "PYTHONPATH": str(ROOT / "python")}
    out = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, env=env, check=True
    )
    grown = int(out.stdout.split()[-1])
    assert grown <= est.total, (grown, est.total)


def test_forks_count_against_the_budget() -> None:
    """3 000 forks reached 800 MB under a 50 MiB budget: each fork is a copy that grows to
    the run's peak, so each counts the estimate again."""
    sc = demo()
    one = budget.estimate(l4sim.Scenario.parse(sc).to_core_config()).total - budget.BASE_BYTES
    limit = budget.BASE_BYTES + 3 * one
    sim = Simulation(sc, memory_limit=limit)
    sim.run_until("1s")
    a = sim.fork()
    b = a.fork()  # a fork's fork counts too: three copies
    with pytest.raises(MemoryBudgetError, match=r"another fork of scenario 'demo' would make 4"):
        sim.fork()
    del b  # a dropped fork gives its share back
    c = sim.fork()
    c.run_until("2s")
    assert c.now == pytest.approx(2.0) and a.now == pytest.approx(1.0)
    unlimited = Simulation(sc, memory_limit="none")
    forks = [unlimited.fork() for _ in range(5)]  # no budget, no count
    assert len(forks) == 5
