"""`l4sim report`: one self-contained HTML page, checked in a real headless browser.

The browser is Debian's Chromium, driven directly (``--headless --dump-dom`` and
``--screenshot``, console messages through ``--enable-logging=stderr``): no driver package
to keep in step with the browser. ``scripts/test.sh`` installs Chromium with apt-get when it
is missing and it may; where it cannot, the browser checks are skipped and say why.
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("l4sim._core")

import l4sim
from l4sim import cli
from l4sim.cli.report import build_report
from l4sim.sweep import parse_spec, run_sweep

ROOT = Path(__file__).resolve().parents[1]
from browser import chromium, needs_browser  # noqa: E402


def check_in_browser(page: Path, tmp: Path) -> Path:
    """The page loads with no console message, every figure decodes; returns a screenshot."""
    dom, console = chromium(page, tmp, "--dump-dom")
    assert console == "", console
    body = re.search(r"<body([^>]*)>", dom)
    assert body is not None, dom[:500]
    attrs = dict(re.findall(r'data-([a-z-]+)="([^"]*)"', body.group(1)))
    assert attrs.get("ready") == "1", attrs
    assert int(attrs["figures"]) > 0 and attrs["figures-loaded"] == attrs["figures"], attrs
    shot = tmp / f"{page.parent.name}.png"
    chromium(page, tmp, "--window-size=1280,1600", f"--screenshot={shot}")
    return shot


def assert_shows_figures(shot: Path) -> None:
    """A screenshot of figures has many colours, not a blank or error page."""
    import matplotlib.image as mpimg
    import numpy as np

    img = mpimg.imread(shot)
    assert img.shape[0] >= 1000 and img.shape[1] >= 1000
    colours = np.unique((img[..., :3] * 255).astype(np.uint8).reshape(-1, 3), axis=0)
    assert len(colours) > 500, len(colours)


def self_contained(page: Path) -> str:
    text = page.read_text()
    assert "<img" in text and 'src="data:image/png;base64,' in text
    assert not re.search(r'(src|href)="(https?:)?//', text)
    return text


@pytest.fixture(scope="module")
def dirs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    tmp = tmp_path_factory.mktemp("report")
    sc = l4sim.load(ROOT / "scenarios" / "demo.toml").with_overrides(duration="5s")
    l4sim.write(l4sim.run(sc), tmp / "run")
    spec = parse_spec(
        {
            "base": str(ROOT / "scenarios" / "bench_1flow_10M.toml"),
            "seeds": 2,
            "grid": {
                "duration": ["3s"],
                "topology.bottleneck.qdisc.limit": ["20p", "50p", "100p"],
                "flows.0.cca": ["newreno", "cubic"],
                "topology.bottleneck.loss": [0.001],
            },
        }
    )
    run_sweep(spec, tmp / "sweep")
    l4s = parse_spec(
        {
            "base": str(ROOT / "scenarios" / "l4s_prague_cubic.toml"),
            "grid": {"duration": ["5s"], "topology.bottleneck.qdisc.target": ["25ms", "5ms"]},
        }
    )
    run_sweep(l4s, tmp / "l4s-sweep")
    sc = l4sim.load(ROOT / "scenarios" / "l4s_prague_cubic.toml").with_overrides(duration="2s")
    l4sim.write(l4sim.run(sc), tmp / "l4s-run")
    args = ["reproduce", "aqm-004", "--only", "codel", "--jobs", "2", "--out", str(tmp / "aqm-004")]
    proc = subprocess.run(
        [sys.executable, "-m", "l4sim", *args],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr
    return {
        "run": tmp / "run",
        "sweep": tmp / "sweep",
        "aqm-004": tmp / "aqm-004",
        "l4s-sweep": tmp / "l4s-sweep",
        "l4s-run": tmp / "l4s-run",
    }


def test_reproduction_report_has_paper_vs_ours(dirs: dict[str, Path]) -> None:
    text = self_contained(build_report(dirs["aqm-004"]))
    assert "Paper vs ours" in text and "46.57" in text  # the paper's CoDel 10 Mbps, no ECN
    assert text.count("<figure") == 4  # one overview per case
    assert "[topology.bottleneck]" in text or "[topology]" in text  # a case's scenario


def test_sweep_report_plots_each_axis(dirs: dict[str, Path]) -> None:
    text = self_contained(build_report(dirs["sweep"]))
    # Two axes vary (the limit and the CC); the one-value ones get no figure.
    assert "metrics by topology.bottleneck.qdisc.limit" in text and "metrics by flows.0.cca" in text
    assert "metrics by duration" not in text
    assert text.count("<tr>") == 1 + 12  # header + one row per point


def test_l4s_sweep_report_draws_each_class_and_flow_in_numeric_order(
    dirs: dict[str, Path],
) -> None:
    """A DualPI2 target sweep: the L4S and Classic queues' delays and each flow's goodput
    are metrics of their own, the target is a number (5 ms before 25 ms) labelled as
    written."""
    from l4sim.cli.report import _axis_order, _metrics, point_metrics
    from l4sim.sweep import read_sweep

    df, meta = read_sweep(dirs["l4s-sweep"])
    axis = "topology.bottleneck.qdisc.target"
    points = point_metrics(df, meta["axes"])
    labels = dict(_metrics(points, df))
    assert labels["l4s_mean_ms"] == "l4s queue mean delay (ms)"
    assert labels["classic_mean_ms"] == "classic queue mean delay (ms)"
    assert labels["l4s_p99_ms"] == "l4s queue p99 delay (ms)"
    assert labels["sojourn_p99_ms"] == "bottleneck p99 sojourn (ms)"
    assert labels["flow0_mbps"] == "flow 0 prague goodput (Mbit/s)"
    assert labels["flow1_mbps"] == "flow 1 cubic goodput (Mbit/s)"
    by = {r[axis + "_str"]: r for r in points.iter_rows(named=True)}
    assert by["5ms"][axis] == pytest.approx(0.005) and by["25ms"][axis] == pytest.approx(0.025)
    assert _axis_order(points[axis].to_list()) == pytest.approx([0.005, 0.025])
    for r in by.values():
        assert r["l4s_mean_ms"] < 2 < r["classic_mean_ms"]
        assert r["l4s_mean_ms"] <= r["l4s_p99_ms"] < r["classic_p99_ms"]
    assert by["5ms"]["classic_mean_ms"] < by["25ms"]["classic_mean_ms"]
    text = self_contained(build_report(dirs["l4s-sweep"]))
    assert f"metrics by {axis}" in text and "<td>5ms</td>" in text


def test_l4s_run_report_has_class_rows_and_the_flows_ecn(dirs: dict[str, Path]) -> None:
    text = self_contained(build_report(dirs["l4s-run"]))
    assert "<td>dualpi2 / L4S</td>" in text and "<td>dualpi2 / Classic</td>" in text
    assert "<td>accecn</td>" in text


def test_report_cli_and_bad_directories(dirs: dict[str, Path], tmp_path: Path, capsys) -> None:
    with pytest.raises(SystemExit) as info:
        cli.main(["report", str(dirs["run"]), "--out", str(tmp_path / "r.html")])
    assert info.value.code == 0 and (tmp_path / "r.html").is_file()
    self_contained(tmp_path / "r.html")
    capsys.readouterr()
    for bad in (tmp_path / "nope", tmp_path):
        with pytest.raises(SystemExit) as info:
            cli.main(["report", str(bad)])
        err = capsys.readouterr().err
        assert info.value.code == 2 and err.startswith("error: ") and "Traceback" not in err


@needs_browser
@pytest.mark.parametrize("kind", ["run", "l4s-run", "l4s-sweep", "aqm-004"])
def test_report_fits_1280_pixels_with_legible_figures(
    kind: str, dirs: dict[str, Path], tmp_path: Path
) -> None:
    """At 1280 px nothing runs past the page (wide tables and code scroll in their own
    boxes) and no figure is drawn at less than half its size."""
    page = build_report(dirs[kind])
    dom, console = chromium(page, tmp_path, "--window-size=1280,1600", "--dump-dom")
    assert console == "", console
    body = re.search(r"<body([^>]*)>", dom)
    assert body is not None, dom[:500]
    attrs = dict(re.findall(r'data-([a-z-]+)="([^"]*)"', body.group(1)))
    assert attrs.get("ready") == "1", attrs
    assert attrs["overflow-px"] == "0", attrs
    assert float(attrs["min-figure-scale"]) >= 0.5, attrs


@needs_browser
def test_the_browser_check_catches_a_script_error(tmp_path: Path) -> None:
    page = tmp_path / "bad" / "report.html"
    page.parent.mkdir()
    page.write_text("<!DOCTYPE html><html><body><script>noSuchFunction();</script></body></html>")
    _, console = chromium(page, tmp_path, "--dump-dom")
    assert "noSuchFunction" in console


@needs_browser
@pytest.mark.parametrize("kind", ["run", "sweep", "aqm-004", "l4s-sweep"])
def test_report_loads_in_chromium_and_shows_figures(
    kind: str, dirs: dict[str, Path], tmp_path: Path
) -> None:
    page = build_report(dirs[kind])
    assert_shows_figures(check_in_browser(page, tmp_path))
