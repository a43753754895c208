"""Result files and figures, from hand-made results (no simulator core needed)."""

from __future__ import annotations

import json
import math
from pathlib import Path

import polars as pl
import pytest

from l4sim import L4simError, Result, read, write
from l4sim.plot import FIGURES, plot
from l4sim.scenario import loads

ROOT = Path(__file__).resolve().parents[1]


def fake_result() -> Result:
    scenario = loads((ROOT / "scenarios" / "demo.toml").read_text(), source="demo.toml")
    times = [0.1 * (k + 1) for k in range(50)]
    flows: dict[str, list] = {
        k: []
        for k in (
            "time_s",
            "flow",
            "cwnd_pkts",
            "ssthresh_pkts",
            "srtt_s",
            "delivered_bytes",
            "goodput_bps",
            "throughput_bps",
            "retransmits",
            "bytes_in_flight",
        )
    }
    for t in times:
        for i in range(3):
            row = {
                "time_s": t,
                "flow": i,
                "cwnd_pkts": 10 + int(20 * (t % 2)),
                "ssthresh_pkts": math.nan,
                "srtt_s": 0.05 + 0.01 * (t % 2),
                "delivered_bytes": int(t * 1e6),
                "goodput_bps": 3e6,
                "throughput_bps": 3.1e6,
                "retransmits": int(t),
                "bytes_in_flight": 15000,
            }
            for key, value in row.items():
                flows[key].append(value)
    queues = {
        "time_s": [t for t in times for _ in range(2)],
        "link": ["r0->r1", "s0->r0"] * len(times),
        "backlog_pkts": [int(50 * (t % 2)) if j == 0 else 0 for t in times for j in range(2)],
        "backlog_bytes": [0] * (2 * len(times)),
        "drops": [0] * (2 * len(times)),
        "ecn_marks": [0] * (2 * len(times)),
        "sojourn_s": [0.06 * (t % 2) if j == 0 else 0.0 for t in times for j in range(2)],
        "utilization": [0.97 if j == 0 else 0.01 for t in times for j in range(2)],
    }
    summary = {
        "scenario": "demo",
        "sim_time_s": 5.0,
        "wall_time_s": 0.01,
        "events": 1000,
        "seed": 1,
        "jain_fairness": 0.99,
        "flows": [
            {
                "id": i,
                "kind": "tcp",
                "cca": c,
                "src": f"s{i}",
                "dst": f"d{i}",
                "start_s": 0.0,
                "goodput_bps": 3e6,
                "throughput_bps": 3.1e6,
                "bytes_acked": 1,
                "retransmits": 2,
                "srtt_mean_s": 0.05,
                "fct_s": None,
            }
            for i, c in enumerate(["newreno", "newreno", "cubic"])
        ],
        "queues": [
            {
                "link": lk,
                "qdisc": "fifo",
                "sojourn_mean_s": 0.01,
                "sojourn_p50_s": 0.01,
                "sojourn_p99_s": 0.05,
                "backlog_mean_pkts": 5.0,
                "drops": 0,
                "ecn_marks": 0,
                "utilization": 0.9,
                "classes": [],
            }
            for lk in ("r0->r1", "s0->r0")
        ],
    }
    return Result(
        summary=summary, flows=pl.DataFrame(flows), queues=pl.DataFrame(queues), scenario=scenario
    )


def test_write_and_read_back(tmp_path: Path):
    result = fake_result()
    paths = write(result, tmp_path / "out")
    assert sorted(p.name for p in paths) == sorted(
        ["summary.json", "flows.parquet", "queues.parquet", "scenario.toml"]
    )
    text = (tmp_path / "out" / "summary.json").read_text()
    assert text.startswith('{\n  "scenario"')  # indent 2
    back = read(tmp_path / "out")
    assert back.summary == json.loads(text) == result.summary
    assert back.flows.equals(result.flows)
    assert back.queues.equals(result.queues)
    assert back.scenario == result.scenario
    assert not [p for p in (tmp_path / "out").iterdir() if p.name.startswith(".")]
    arrow = result.to_arrow()
    assert arrow["flows"].num_rows == result.flows.height


def test_failed_write_keeps_previous_results(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    out = tmp_path / "out"
    write(fake_result(), out)
    before = {p.name: p.read_bytes() for p in out.iterdir()}

    def broken(self, *args, **kwargs):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(pl.DataFrame, "write_parquet", broken)
    changed = fake_result()
    changed.summary["seed"] = 99
    with pytest.raises(L4simError, match="cannot write results"):
        write(changed, out)
    assert {p.name: p.read_bytes() for p in out.iterdir()} == before


def test_write_into_a_file_fails_cleanly(tmp_path: Path):
    target = tmp_path / "file"
    target.write_text("x")
    with pytest.raises(L4simError, match="not a directory"):
        write(fake_result(), target)


def test_read_missing_dir(tmp_path: Path):
    with pytest.raises(L4simError, match="does not exist"):
        read(tmp_path / "nope")
    with pytest.raises(L4simError, match=r"no summary\.json"):
        read(tmp_path)


def test_plot_writes_pngs(tmp_path: Path):
    write(fake_result(), tmp_path)
    paths = plot(tmp_path)
    assert [p.name for p in paths] == list(FIGURES)
    for p in paths:
        assert p.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_plot_empty_series(tmp_path: Path):
    result = fake_result()
    result.flows = result.flows.clear()
    result.queues = result.queues.clear()
    write(result, tmp_path)
    assert len(plot(tmp_path, tmp_path / "figs")) == len(FIGURES)


def test_queue_summary_has_a_row_per_class():
    import l4sim

    sc = l4sim.load(ROOT / "scenarios" / "l4s_prague_cubic.toml").with_overrides(duration="3s")
    res = l4sim.run(sc)
    q = res.queue_summary().filter(pl.col("link") == "r0->r1")
    assert q["class"].to_list() == ["", "L4S", "Classic"]
    assert q["qdisc"].to_list() == ["dualpi2"] * 3
    classes = res.summary["queues"][0]["classes"]
    assert q["sojourn_mean_s"].to_list()[1:] == [c["sojourn_mean_s"] for c in classes]
