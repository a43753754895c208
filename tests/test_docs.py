"""The documentation: generated references current, the JSON Schemas accepting every shipped
scenario and sweep spec and rejecting bad ones, a short README whose every link stays in the
repository, and the built site (``mkdocs build --strict`` in scripts/test.sh) loading in
headless Chromium with no console message."""

from __future__ import annotations

import contextlib
import functools
import http.server
import json
import re
import subprocess
import sys
import threading
import tomllib
from collections.abc import Iterator
from pathlib import Path

import pytest

pytest.importorskip("l4sim._core")
jsonschema = pytest.importorskip("jsonschema")

from browser import chromium, needs_browser  # noqa: E402
from l4sim import cli  # noqa: E402
from l4sim.schema import schema_json, shipped_schema  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
SHIPPED = sorted([*ROOT.glob("scenarios/*.toml"), *ROOT.glob("examples/*.toml")])


def test_generated_references_are_current():
    done = subprocess.run(
        [sys.executable, str(ROOT / "scripts" / "gen_docs.py"), "--check"],
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0, done.stderr


@pytest.mark.parametrize("kind", ["scenario", "sweep"])
def test_the_shipped_schema_is_the_generated_one(kind: str):
    assert shipped_schema(kind) == schema_json(kind)


def _schema_from_cli(kind: str, capsys: pytest.CaptureFixture[str]) -> dict:
    with pytest.raises(SystemExit) as e:
        cli.main(["schema", kind])
    assert e.value.code == 0
    out = json.loads(capsys.readouterr().out)
    jsonschema.Draft202012Validator.check_schema(out)
    return out


def _is_sweep(data: dict) -> bool:
    return "base" in data


@pytest.mark.parametrize("path", SHIPPED, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_the_schema_accepts_every_shipped_file(path: Path, capsys):
    data = tomllib.loads(path.read_text(encoding="utf-8"))
    schema = _schema_from_cli("sweep" if _is_sweep(data) else "scenario", capsys)
    errors = [e.message for e in jsonschema.Draft202012Validator(schema).iter_errors(data)]
    assert errors == []


BAD_SCENARIOS = {
    "unknown top-level key": {"durration": "10s"},
    "rate without a unit": {"topology.bottleneck.rate": "10"},
    "unknown unit": {"topology.bottleneck.delay": "20 parsecs"},
    "unknown qdisc kind": {"topology.bottleneck.qdisc": "sfq"},
    "unknown cca": {"flows.0.cca": "copa"},
    "unknown cca option": {"flows.0.cca": {"kind": "cubic", "rtt_independence": True}},
    "count zero": {"flows.0.count": 0},
    "loss of one": {"topology.bottleneck.loss": 1.0},
    "ecn as a string": {"flows.0.ecn": "yes"},
}


def _set(data: dict, key: str, value: object) -> None:
    node = data
    parts = [int(p) if p.isdigit() else p for p in key.split(".")]
    for p in parts[:-1]:
        node = node[p]
    node[parts[-1]] = value


@pytest.mark.parametrize("case", list(BAD_SCENARIOS))
def test_the_schema_rejects_bad_scenarios(case: str, capsys):
    data = tomllib.loads((ROOT / "scenarios" / "demo.toml").read_text(encoding="utf-8"))
    for key, value in BAD_SCENARIOS[case].items():
        _set(data, key, value)
    schema = _schema_from_cli("scenario", capsys)
    assert list(jsonschema.Draft202012Validator(schema).iter_errors(data)), case


@pytest.mark.parametrize(
    "spec",
    [
        {"base": "x.toml", "grids": {}},
        {"base": "x.toml", "seeds": 0},
        {"base": "x.toml", "grid": {"flows.0.cca": []}},
        {"base": "x.toml", "draw": {"seed": 1}},
        {"seeds": 3},
    ],
)
def test_the_sweep_schema_rejects_bad_specs(spec: dict, capsys):
    schema = _schema_from_cli("sweep", capsys)
    assert list(jsonschema.Draft202012Validator(schema).iter_errors(spec)), spec


def test_schema_command_errors(tmp_path: Path, capsys):
    with pytest.raises(SystemExit) as e:
        cli.main(["schema", "topology"])
    assert e.value.code == 2
    assert "is not a schema kind" in capsys.readouterr().err
    with pytest.raises(SystemExit) as e:
        cli.main(["schema", "--out", str(tmp_path / "missing" / "s.json")])
    assert e.value.code == 2
    assert "does not exist" in capsys.readouterr().err
    with pytest.raises(SystemExit) as e:
        cli.main(["schema", "sweep", "--out", str(tmp_path / "s.json")])
    assert e.value.code == 0
    assert json.loads((tmp_path / "s.json").read_text())["title"] == "l4sim sweep spec"


# -- README and links --------------------------------------------------------------------------

_LINK = re.compile(r"(?<!!)\[[^\]]*\]\(([^)\s]+)\)|!\[[^\]]*\]\(([^)\s]+)\)")
PAGES = sorted(ROOT.glob("docs/**/*.md"))


def test_readme_is_short_and_names_the_two_commands():
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    assert len(text.splitlines()) <= 200
    assert "bash scripts/demo.sh" in text and "bash scripts/test.sh" in text


@pytest.mark.parametrize(
    "page", [ROOT / "README.md", ROOT / "CHANGELOG.md", *PAGES], ids=lambda p: p.name
)
def test_links_stay_inside_the_repository(page: Path):
    """Every relative link resolves to a file in the repository (no ../shared/..., no
    absolute paths); the site build checks the docs' own links and anchors strictly."""
    text = page.read_text(encoding="utf-8")
    for m in _LINK.finditer(text):
        target = (m.group(1) or m.group(2)).split("#", 1)[0]
        if not target or re.match(r"^[a-z]+:", target):
            continue
        assert not target.startswith("/"), f"{page.name}: absolute link {target}"
        resolved = (page.parent / target).resolve()
        assert resolved.is_relative_to(ROOT), f"{page.name}: {target} leaves the repository"
        if resolved.is_relative_to(ROOT / "docs" / "api" / "rust" / "doc"):
            continue  # cargo doc's pages, added by docs/hooks.py; the strict build checks them
        assert resolved.exists(), f"{page.name}: {target} does not exist"


def test_the_summary_reference_names_every_field_a_run_writes():
    import l4sim

    sc = l4sim.load(ROOT / "scenarios" / "l4s_dualpi2.toml").with_overrides(duration="2s")
    summary = l4sim.run(sc).summary
    page = (ROOT / "docs" / "reference" / "summary.md").read_text(encoding="utf-8")
    keys = set(summary) | {k for f in summary["flows"] for k in f}
    keys |= {k for q in summary["queues"] for k in q}
    keys |= {k for q in summary["queues"] for c in q.get("classes") or [] for k in c}
    missing = sorted(k for k in keys if f"| `{k}` |" not in page)
    assert missing == [], missing


def test_cli_help_names_the_docs(capsys):
    with pytest.raises(SystemExit):
        cli.main(["--help"])
    out = capsys.readouterr().out
    assert "docs/index.md" in " ".join(out.split())


# -- the built site in a browser ----------------------------------------------------------------

SITE = ROOT / "site"


@contextlib.contextmanager
def _serve(directory: Path) -> Iterator[str]:
    handler = functools.partial(http.server.SimpleHTTPRequestHandler, directory=str(directory))
    handler.log_message = lambda *a, **k: None  # type: ignore[attr-defined]
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


@needs_browser
@pytest.mark.skipif(
    not (SITE / "index.html").is_file(),
    reason="the site is not built (scripts/test.sh runs mkdocs build --strict first)",
)
@pytest.mark.parametrize(
    "page", ["", "reference/scenario/", "reproductions/aqm-004/", "api/python/"]
)
def test_the_site_loads_in_chromium(page: str, tmp_path: Path):
    """Served over HTTP on the loopback as a user's ``mkdocs serve`` would: no console
    message (a missing script, a broken search index, a failed load) and a rendered page."""
    import matplotlib.image as mpimg
    import numpy as np

    shot = tmp_path / "page.png"
    with _serve(SITE) as base:
        dom, console = chromium(f"{base}/{page}", tmp_path, "--dump-dom")
        assert console == "", console
        assert "<article" in dom and "md-content" in dom, dom[:300]
        chromium(f"{base}/{page}", tmp_path, "--window-size=1280,1000", f"--screenshot={shot}")
    img = mpimg.imread(shot)
    colours = np.unique((img[..., :3] * 255).astype(np.uint8).reshape(-1, 3), axis=0)
    assert len(colours) > 50, (page, len(colours))  # text and the header, not a blank page


#: Measures the page in the frame at the probe's width: how far it runs past the window
#: (wide tables and code scroll in their own boxes), the code blocks and table boxes whose
#: right edge is past the content column's (``out-what`` names them), and the smallest
#: figure's drawn size over its own.
_PROBE = """<!DOCTYPE html><html><body>
<iframe id="f" src="%s" style="width:1280px;height:1000px;border:0"></iframe>
<script>
document.getElementById("f").addEventListener("load", () => {
  const d = document.getElementById("f").contentDocument;
  const root = d.documentElement;
  // The theme's table boxes reach into the content's side margin (.md-content__inner's):
  // the edge that counts is the content column's own.
  const content = d.querySelector(".md-content") || d.body;
  const edge = content.getBoundingClientRect().right + 1;
  const boxes = Array.from(d.querySelectorAll(".md-typeset pre, .md-typeset__scrollwrap"));
  const out = boxes.filter(b => b.getBoundingClientRect().right > edge);
  const past = b => b.className + ":" + Math.round(b.getBoundingClientRect().right - edge);
  document.body.dataset.outWhat = out.map(past).join(" ");
  const imgs = Array.from(d.querySelectorAll(".md-typeset img")).filter(i => i.naturalWidth);
  const scales = imgs.map(i => Math.min(1, i.clientWidth / i.naturalWidth));
  const data = document.body.dataset;
  data.overflowPx = String(Math.max(0, root.scrollWidth - root.clientWidth));
  data.boxesOut = String(out.length);
  data.boxes = String(boxes.length);
  data.minFigureScale = scales.length ? Math.min(...scales).toFixed(2) : "1";
  data.done = "1";
});
</script></body></html>"""


def _measure(site: Path, page: str, tmp_path: Path) -> dict[str, str]:
    """What :data:`_PROBE` measured of ``site``'s ``page``, served over HTTP at 1280 px."""
    root = tmp_path / "served"
    root.mkdir()
    (root / "site").symlink_to(site, target_is_directory=True)
    (root / "probe.html").write_text(_PROBE % f"/site/{page}", encoding="utf-8")
    with _serve(root) as base:
        dom, _ = chromium(
            f"{base}/probe.html",
            tmp_path,
            "--window-size=1300,1000",
            "--virtual-time-budget=10000",
            "--dump-dom",
        )
    body = re.search(r"<body([^>]*)>", dom)
    assert body is not None, dom[:300]
    attrs = dict(re.findall(r'data-([a-z-]+)="([^"]*)"', body.group(1)))
    assert attrs.get("done") == "1", (page, attrs)
    return attrs


@needs_browser
def test_the_width_probe_sees_a_code_block_past_the_content(tmp_path: Path):
    site = tmp_path / "site"
    (site / "wide").mkdir(parents=True)
    (site / "wide" / "index.html").write_text(
        '<html><body><div class="md-content" style="width:600px"><div class="md-typeset">'
        '<pre style="width:900px">a long line</pre></div></div></body></html>',
        encoding="utf-8",
    )
    attrs = _measure(site, "wide/", tmp_path)
    assert attrs["boxes"] == "1" and attrs["boxes-out"] == "1", attrs


@needs_browser
@pytest.mark.skipif(
    not (SITE / "index.html").is_file(),
    reason="the site is not built (scripts/test.sh runs mkdocs build --strict first)",
)
@pytest.mark.parametrize(
    "page",
    [
        "getting-started/",
        "first-l4s/",
        "train-deploy/",
        "scenarios/",
        "reproductions/aqm-004/",
        "reproductions/l4s-rtt-fairness/",
        "reproductions/a3c-004/",
        "reproductions/lfq-001/",
    ],
)
def test_pages_fit_1280_pixels(page: str, tmp_path: Path):
    """At 1280 px no code block or table runs past the page's content (they scroll in
    their own boxes) and figures are drawn at least at a third of their size."""
    attrs = _measure(SITE, page, tmp_path)
    assert int(attrs["boxes"]) > 0, (page, attrs)  # the probe saw the page's code or tables
    assert attrs["overflow-px"] == "0" and attrs["boxes-out"] == "0", (page, attrs)
    assert float(attrs["min-figure-scale"]) >= 0.33, (page, attrs)
