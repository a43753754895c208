"""The `l4sim` command end to end (needs the compiled core, l4sim._core)."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from cli_run import run_l4sim

pytest.importorskip("l4sim._core")

ROOT = Path(__file__).resolve().parents[1]

SUMMARY_KEYS = {"sim_time_s", "wall_time_s", "events", "seed", "jain_fairness", "flows", "queues"}
FLOW_KEYS = {
    "id",
    "kind",
    "cca",
    "src",
    "dst",
    "start_s",
    "goodput_bps",
    "throughput_bps",
    "bytes_acked",
    "retransmits",
    "srtt_mean_s",
    "fct_s",
}
QUEUE_KEYS = {
    "link",
    "qdisc",
    "sojourn_mean_s",
    "sojourn_p50_s",
    "sojourn_p99_s",
    "backlog_mean_pkts",
    "drops",
    "ecn_marks",
    "utilization",
    "classes",
}

SHORT = """
name = "short"
duration = "2s"
[topology]
preset = "dumbbell"
bottleneck = { rate = "10Mbps", delay = "20ms", qdisc = { kind = "fifo", limit = "100p" } }
[[flows]]
cca = "newreno"
[[flows]]
cca = "cubic"
"""


def l4sim(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return run_l4sim(*args, cwd=cwd, timeout=600)


def assert_one_line_error(proc: subprocess.CompletedProcess[str], code: int = 2) -> str:
    assert proc.returncode == code, proc.stderr
    assert "Traceback" not in proc.stderr
    lines = [line for line in proc.stderr.splitlines() if line.strip()]
    assert len(lines) == 1, proc.stderr
    assert lines[0].startswith("error: ")
    return lines[0]


@pytest.fixture
def short_scenario(tmp_path: Path) -> Path:
    path = tmp_path / "short.toml"
    path.write_text(SHORT)
    return path


def test_bad_scenario_exits_2_with_one_line(tmp_path: Path):
    bad = tmp_path / "bad.toml"
    bad.write_text(SHORT.replace('cca = "cubic"', 'cca = "copa"'))
    line = assert_one_line_error(l4sim("run", str(bad), "--out", str(tmp_path / "out")))
    assert "bad.toml" in line and "flows[1].cca" in line and "'copa'" in line
    assert not (tmp_path / "out" / "summary.json").exists()


@pytest.mark.parametrize(
    ("content", "fragment"),
    [
        ("", "empty"),
        ('duration = "1s"\n[topology\n', "not valid TOML"),
        (SHORT.replace('"10Mbps"', "10"), "no unit"),
        (SHORT.replace('"10Mbps"', '"-10Mbps"'), "negative"),
        (SHORT.replace('kind = "fifo"', 'kind = "blue"'), "'blue'"),
    ],
)
def test_bad_inputs_exit_2(tmp_path: Path, content: str, fragment: str):
    bad = tmp_path / "bad.toml"
    bad.write_text(content)
    line = assert_one_line_error(l4sim("run", str(bad), "--out", str(tmp_path / "out")))
    assert fragment in line


def test_missing_file_and_bad_flags(tmp_path: Path, short_scenario: Path):
    assert_one_line_error(l4sim("run", str(tmp_path / "nope.toml")))
    assert_one_line_error(l4sim("run", str(short_scenario), "--seed", "abc"))
    assert_one_line_error(l4sim("run", str(short_scenario), "--duration", "10"))
    assert_one_line_error(l4sim("run", str(short_scenario), "--no-such-flag"))
    assert_one_line_error(l4sim("frobnicate"))
    assert_one_line_error(l4sim("plot", str(tmp_path / "no-such-dir")))


def test_run_writes_contract(tmp_path: Path, short_scenario: Path):
    out = tmp_path / "out"
    proc = l4sim("run", str(short_scenario), "--out", str(out), "--seed", "5")
    assert proc.returncode == 0, proc.stderr
    assert "Traceback" not in proc.stderr
    assert str(out) in proc.stdout
    summary = json.loads((out / "summary.json").read_text())
    assert set(summary) >= SUMMARY_KEYS
    assert summary["seed"] == 5
    assert summary["sim_time_s"] == pytest.approx(2.0)
    assert summary["wall_time_s"] > 0
    assert len(summary["flows"]) == 2
    for flow in summary["flows"]:
        assert set(flow) >= FLOW_KEYS
        assert flow["kind"] == "tcp" and flow["fct_s"] is None
    assert [f["cca"] for f in summary["flows"]] == ["newreno", "cubic"]
    assert summary["queues"], "the bottleneck carried traffic"
    for queue in summary["queues"]:
        assert set(queue) >= QUEUE_KEYS
    assert "r0->r1" in {q["link"] for q in summary["queues"]}

    import polars as pl

    flows = pl.read_parquet(out / "flows.parquet")
    queues = pl.read_parquet(out / "queues.parquet")
    assert {"time_s", "flow", "cwnd_pkts", "srtt_s", "goodput_bps"} <= set(flows.columns)
    assert {"time_s", "link", "backlog_pkts", "sojourn_s", "utilization"} <= set(queues.columns)
    assert flows.height > 0 and queues.height > 0

    from l4sim import load

    copy = load(out / "scenario.toml")
    assert copy.seed == 5 and copy.name == "short"


def test_quiet_run_and_duration_override(tmp_path: Path, short_scenario: Path):
    out = tmp_path / "out"
    proc = l4sim("run", str(short_scenario), "--out", str(out), "--duration", "1s", "--quiet")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == ""
    assert json.loads((out / "summary.json").read_text())["sim_time_s"] == pytest.approx(1.0)


def test_failed_run_keeps_previous_results(tmp_path: Path, short_scenario: Path):
    out = tmp_path / "out"
    assert l4sim("run", str(short_scenario), "--out", str(out), "-q").returncode == 0
    before = (out / "summary.json").read_text()
    bad = tmp_path / "bad.toml"
    bad.write_text(SHORT.replace('"2s"', '"2"'))
    assert_one_line_error(l4sim("run", str(bad), "--out", str(out)))
    assert (out / "summary.json").read_text() == before


def test_plot_writes_pngs(tmp_path: Path, short_scenario: Path):
    out = tmp_path / "out"
    assert l4sim("run", str(short_scenario), "--out", str(out), "-q").returncode == 0
    proc = l4sim("plot", str(out))
    assert proc.returncode == 0, proc.stderr
    for name in ("throughput.png", "cwnd.png", "rtt.png", "queue.png", "overview.png"):
        path = out / name
        assert path.is_file() and path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n", name


def test_version():
    proc = l4sim("version")
    assert proc.returncode == 0 and proc.stdout.startswith("l4sim ")


@pytest.mark.slow
def test_demo(tmp_path: Path):
    proc = l4sim("demo", "--out", str(tmp_path / "demo"), cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert (tmp_path / "demo" / "overview.png").is_file()
    assert "overview.png" in proc.stdout


def test_determinism(tmp_path: Path, short_scenario: Path):
    import l4sim

    a = l4sim.run(l4sim.load(short_scenario))
    b = l4sim.run(l4sim.load(short_scenario))
    strip = {"wall_time_s"}
    assert {k: v for k, v in a.summary.items() if k not in strip} == {
        k: v for k, v in b.summary.items() if k not in strip
    }
    assert a.flows.equals(b.flows, null_equal=True)


def test_fork_continues_like_the_original(short_scenario: Path):
    import l4sim

    sim = l4sim.Simulation(l4sim.load(short_scenario))
    sim.run_until("1s")
    assert sim.now == pytest.approx(1.0)
    other = sim.fork()
    sim.run()
    other.run()
    assert sim.summary() == other.summary()
    assert sim.flows().equals(other.flows(), null_equal=True)
    conservation = sim.conservation()
    assert conservation["sent"] == (
        conservation["delivered"]
        + conservation["dropped_qdisc"]
        + conservation["dropped_loss"]
        + conservation["in_flight"]
    )


def test_set_queue_limit(short_scenario: Path):
    import l4sim

    sim = l4sim.Simulation(l4sim.load(short_scenario))
    sim.run_until(0.5)
    small = sim.fork()
    small.set_queue_limit("r0->r1", "5p")
    sim.run()
    small.run()

    def drops(s: l4sim.Simulation) -> int:
        return next(q["drops"] for q in s.summary()["queues"] if q["link"] == "r0->r1")

    assert drops(small) > drops(sim)
    # A run-time limit change is an action: refused with ActionError, from Python's unit
    # check and from the core alike (the binding maps the core's error to the same class).
    with pytest.raises(l4sim.ActionError, match="no unit"):
        small.set_queue_limit("r0->r1", "5")
    with pytest.raises(l4sim.ActionError, match="no link named"):
        small.set_queue_limit("x->y", packets=5)


def test_run_table_shows_each_class_of_dualpi2(tmp_path: Path):
    """Prague + CUBIC through DualPI2: the queue table has the L4S and Classic queues'
    own rows beside the blended one, with the delays summary.json holds for them."""
    out = tmp_path / "out"
    scenario = ROOT / "scenarios" / "l4s_prague_cubic.toml"
    proc = l4sim("run", str(scenario), "--out", str(out), "--duration", "10s")
    assert proc.returncode == 0, proc.stderr
    bottleneck = json.loads((out / "summary.json").read_text())["queues"][0]
    assert bottleneck["qdisc"] == "dualpi2"
    rows = {}
    for line in proc.stdout.splitlines():
        cells = [c.strip() for c in line.split("│")[1:-1]]
        if len(cells) == 8:
            rows[cells[1].lstrip("├└ ")] = cells
    for cls in bottleneck["classes"]:
        assert rows[cls["qdisc"]][3] == f"{cls['sojourn_mean_s'] * 1e3:.2f}"
        assert rows[cls["qdisc"]][6] == str(cls["drops"])
    assert rows["dualpi2"][3] == f"{bottleneck['sojourn_mean_s'] * 1e3:.2f}"
    assert float(rows["L4S"][3]) < 2.0 < float(rows["Classic"][3])


@pytest.mark.parametrize("args", [["--help"], ["run", "--help"], ["sweep", "--help"]])
def test_help_shows_no_value_for_a_flag(args: list[str]):
    """A flag (--help, --quiet, --stream) takes no value, so its help shows no type."""
    proc = l4sim(*args)
    assert proc.returncode == 0, proc.stderr
    assert "--help" in proc.stdout and "<bool>" not in proc.stdout
    if args[0] == "run":
        assert "<int range>" in proc.stdout  # an option with a value keeps its type
