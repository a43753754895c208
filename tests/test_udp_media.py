"""UDP media flows: RFC 8888 feedback, the video / trace / periodic sources, per-frame delay
(``crates/l4sim-core/src/app/``, ``l4sim.scenario.media``, docs/media.md)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import polars as pl
import pytest
from tests.cli_run import run_l4sim

import l4sim
from l4sim import cli
from l4sim.engine import results
from l4sim.errors import ScenarioError
from l4sim.plot import plot

ROOT = Path(__file__).resolve().parents[1]


def two_host(
    flow: dict[str, Any], *, rate: str = "10Mbps", duration: str = "5s", **link: Any
) -> l4sim.Scenario:
    """h0 → h1 over one link of ``rate`` and 10 ms (two_host preset), one UDP flow."""
    return l4sim.Scenario.parse(
        {
            "name": "media",
            "duration": duration,
            "topology": {"preset": "two_host", "rate": rate, "delay": "10ms", **link},
            "flows": [{"kind": "udp", **flow}],
        }
    )


def dualpi2(flows: list[dict[str, Any]], duration: str = "5s") -> l4sim.Scenario:
    return l4sim.Scenario.parse(
        {
            "name": "media-dualpi2",
            "duration": duration,
            "topology": {
                "preset": "dumbbell",
                "access": {"rate": "1Gbps", "delay": "1ms"},
                "bottleneck": {"rate": "10Mbps", "delay": "10ms", "qdisc": "dualpi2"},
            },
            "flows": flows,
        }
    )


def udp_file(tmp_path: Path, flow: str) -> Path:
    """A 1 s scenario file in ``tmp_path``: two hosts over 10 Mbit/s / 5 ms, one UDP flow
    with the TOML lines ``flow``."""
    path = tmp_path / "s.toml"
    path.write_text(
        f"""duration = "1s"
[topology]
preset = "two_host"
rate = "10Mbps"
delay = "5ms"
[[flows]]
kind = "udp"
{flow}
"""
    )
    return path


def summary_of(sc: l4sim.Scenario) -> dict[str, Any]:
    sim = l4sim.Simulation(sc)
    sim.run()
    return sim.summary()


VIDEO = {"kind": "video"}
FEEDBACK = {"kind": "rfc8888"}


def test_a_cbr_flow_is_configured_and_summarised_as_before() -> None:
    """The new keys are absent from a plain UDP flow's core configuration and summary, and
    spelling the default source out changes nothing."""
    plain = two_host({"rate": "2Mbps"})
    explicit = two_host({"rate": "2Mbps", "source": "cbr"})
    core = plain.to_core_config()["flows"][0]["udp"]
    assert set(core) <= {"rate_bps", "packet_bytes", "ecn"}, core
    assert explicit.to_core_config() == plain.to_core_config()
    s = summary_of(plain)["flows"][0]
    assert "frames" not in s and "feedback" not in s
    assert s == summary_of(explicit)["flows"][0]


def test_feedback_reports_every_packet_once_with_dualpi2s_ce_marks() -> None:
    """Video at 1.3 times the DualPI2 bottleneck, ECT(1), stopping a second before the end:
    every packet it sent is reported, arrived or lost, and the CE marks the reports carry are
    those the receiver saw."""
    sc = dualpi2(
        [
            {
                "kind": "udp",
                "rate": "13Mbps",
                "ecn": "ect1",
                "stop": "4s",
                "source": VIDEO,
                "feedback": FEEDBACK,
            }
        ]
    )
    f = summary_of(sc)["flows"][0]
    fb = f["feedback"]
    assert fb["cc"] == "none" and fb["reports_received"] == fb["reports_sent"] > 100
    sent_packets = sum(json_frames(sc)["packets"])
    assert fb["packets_acked"] + fb["packets_lost"] == sent_packets
    assert fb["packets_ce"] == f["ecn_marks"] > 100
    assert fb["packets_lost"] == f["drops"]


def json_frames(sc: l4sim.Scenario) -> pl.DataFrame:
    result = l4sim.run(sc)
    assert result.frames is not None
    return result.frames


def test_the_sender_learns_the_packets_lost_on_the_link() -> None:
    """2 % loss each way: the reports that arrive name as lost at most the packets lost (some
    reports are lost too), and most of them."""
    sc = two_host(
        {"rate": "3Mbps", "stop": "4s", "source": VIDEO, "feedback": FEEDBACK},
        rate="20Mbps",
        loss=0.02,
    )
    f = summary_of(sc)["flows"][0]
    fb = f["feedback"]
    lost_reports = fb["reports_sent"] - fb["reports_received"]
    data_lost = f["drops"] - lost_reports
    assert lost_reports > 0 and data_lost > 20
    assert 0.8 * data_lost <= fb["packets_lost"] <= data_lost


def test_frame_delay_on_an_idle_link_is_serialisation_plus_propagation() -> None:
    """10 frames/s of 12 500 B in one burst over 10 Mbit/s / 10 ms: 8 packets of 1500 B and
    one of 860 B (40 B of headers each) take 10.288 ms to serialise, then 10 ms."""
    sc = two_host(
        {
            "rate": "1Mbps",
            "source": {"kind": "video", "fps": 10, "noise": 0, "key_ratio": 1, "pacing": 0},
        },
        duration="3s",
    )
    frames = json_frames(sc)
    done = frames.filter(pl.col("delay_s").is_not_nan())
    assert done.height >= 29
    assert set(done["bytes"]) == {12_500} and set(done["packets"]) == {9}
    assert done["delay_s"].to_list() == pytest.approx([0.020288] * done.height, abs=1e-9)
    assert not frames["late"].any()


def test_uncontrolled_video_at_one_and_a_half_times_the_link_finishes_with_late_frames(
    tmp_path: Path,
) -> None:
    """No congestion control on a saturated link: the run ends on time (the CLI exits 0) and
    most frames miss their deadline."""
    sc = two_host(
        {"rate": "6Mbps", "source": VIDEO, "feedback": FEEDBACK},
        rate="4Mbps",
        duration="10s",
        qdisc={"kind": "fifo", "limit": "100p"},
    )
    path = tmp_path / "sat.toml"
    path.write_text(sc.to_toml())
    out = run_l4sim("run", str(path), "-o", str(tmp_path / "out"), timeout=120)
    assert out.returncode == 0, out.stderr
    assert "Frames of flow 0:" in out.stdout and "late (> 150 ms)" in out.stdout, out.stdout
    s = json.loads((tmp_path / "out" / "summary.json").read_text())
    fr = s["flows"][0]["frames"]
    assert s["sim_time_s"] == 10.0
    assert fr["late"] > fr["produced"] / 2 and fr["complete"] < fr["produced"] / 2
    assert fr["target_rate_bps"] == 6e6
    assert fr["delivered_rate_bps"] < 4e6 < fr["sent_rate_bps"]


def test_a_frame_trace_is_sent_frame_by_frame_and_loops(tmp_path: Path) -> None:
    (tmp_path / "frames.txt").write_text("# sizes\n3000\n1000\n\n2000  # a P frame\n")
    path = udp_file(tmp_path, 'source = { kind = "trace", file = "frames.txt", fps = 10 }')
    result = l4sim.run(l4sim.load(path))
    assert result.frames is not None
    # Frames at 0, 0.1, ... 1 s (the run's last instant included).
    assert result.frames["bytes"].to_list() == [3000, 1000, 2000] * 3 + [3000, 1000]
    assert result.frames["packets"].to_list()[:3] == [3, 1, 2]


def test_periodic_messages_come_every_interval() -> None:
    sc = two_host({"source": {"kind": "periodic", "interval": "10ms", "size": "200B"}})
    frames = json_frames(sc)
    assert frames.height == 501  # at 0, 10 ms, ... 5 s (the run's last instant included)
    assert frames["created_s"].diff().drop_nulls().to_list() == pytest.approx([0.01] * 500)
    # One 240-byte packet at 10 Mbit/s (0.192 ms) and 10 ms of propagation each; the last
    # two, sent less than that before the end, have not arrived.
    delays = frames["delay_s"].to_list()
    assert delays[:-2] == pytest.approx([0.010192] * 499, abs=1e-9)


def test_results_hold_a_frames_table_and_a_frame_delay_figure(tmp_path: Path) -> None:
    sc = dualpi2(
        [
            {"kind": "udp", "rate": "4Mbps", "ecn": "ect1", "source": VIDEO, "feedback": FEEDBACK},
            {"kind": "tcp", "cca": "prague"},
        ],
        duration="3s",
    )
    result = l4sim.run(sc)
    results.write(result, tmp_path)
    back = results.read(tmp_path)
    assert back.frames is not None and back.frames.equals(result.frames, null_equal=True)
    figures = [p.name for p in plot(tmp_path)]
    assert figures[-1] == "frame_delay.png" and (tmp_path / "frame_delay.png").stat().st_size
    # A run without media flows writes no frames table.
    plain = tmp_path / "plain"
    results.write(l4sim.run(two_host({"rate": "1Mbps"}, duration="1s")), plain)
    assert not (plain / "frames.parquet").exists()


def test_the_same_seed_gives_the_same_frames() -> None:
    sc = dualpi2(
        [
            {"kind": "udp", "rate": "4Mbps", "ecn": "ect1", "source": VIDEO, "feedback": FEEDBACK},
            {"kind": "tcp", "cca": "prague"},
        ],
        duration="2s",
    )
    a, b = l4sim.run(sc), l4sim.run(sc)
    assert a.frames is not None and a.frames.equals(b.frames, null_equal=True)
    strip = {"wall_time_s"}
    assert {k: v for k, v in a.summary.items() if k not in strip} == {
        k: v for k, v in b.summary.items() if k not in strip
    }


@pytest.mark.parametrize(
    ("flow", "fragment"),
    [
        ('rate = "0Mbps"\nsource = "video"', "positive rate"),
        ('rate = "-1Mbps"\nsource = "video"', "negative"),
        ('source = "video"', "required for a video source"),
        ('rate = "1Mbps"\nfeedback = { kind = "rfc8888", interval = "0ms" }', "positive time"),
        ('rate = "1Mbps"\nsource = { kind = "video", fps = 0 }', "greater than 0"),
        ('rate = "1Mbps"\nsource = { kind = "video", pacing = 0.5 }', "pacing 0.5"),
        ('rate = "1Mbps"\npacket_size = "40B"\nsource = "video"', "leaves no payload"),
        ('source = { kind = "trace", file = "bad.txt" }', "line 3"),
        ('source = { kind = "trace", file = "empty.txt" }', "is empty"),
        ('source = { kind = "trace", file = "none.txt" }', "does not exist"),
        ('source = { kind = "periodic", interval = "0s" }', "positive time"),
        ('rate = "1Mbps"\nsource = { kind = "periodic", interval = "1s" }', "drop rate"),
        ('rate = "1Mbps"\ncc = "scream"', "give the flow a frame source"),
        ('rate = "1Mbps"\nsource = "video"\ncc = "scream"', 'feedback = "rfc8888"'),
        (
            'rate = "1Mbps"\nsource = "video"\nfeedback = "rfc8888"\n'
            'cc = { kind = "scream", min_rate = "5Mbps", max_rate = "1Mbps" }',
            "is above max_rate",
        ),
        (
            'rate = "1Mbps"\nsource = "video"\ncc = { kind = "scream", max_rate = "0Mbps" }',
            "positive rate",
        ),
        (
            'rate = "1Mbps"\nsource = "video"\ncc = { kind = "scream", mode = "fast" }',
            "'l4s' or 'classic'",
        ),
    ],
)
def test_bad_media_input_is_one_sentence(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], flow: str, fragment: str
) -> None:
    (tmp_path / "bad.txt").write_text("1200\n800\n12x0\n")
    (tmp_path / "empty.txt").write_text("# nothing\n")
    path = udp_file(tmp_path, flow)
    with pytest.raises(ScenarioError, match=fragment):
        l4sim.load(path)
    with pytest.raises(SystemExit) as info:
        cli.main(["run", str(path), "-o", str(tmp_path / "out"), "-q"])
    err = capsys.readouterr().err
    lines = [x for x in err.splitlines() if x.strip()]
    assert info.value.code != 0
    assert len(lines) == 1 and fragment in lines[0] and "Traceback" not in err, err


def test_the_example_scenario_runs() -> None:
    sc = l4sim.load(ROOT / "scenarios" / "media_video_dualpi2.toml")
    f = summary_of(sc.with_overrides(duration="2s"))["flows"]
    assert f[0]["frames"]["complete"] > 0 and f[1]["cca"] == "prague"
