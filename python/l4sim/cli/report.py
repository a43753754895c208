"""``l4sim report DIR``: one self-contained HTML page for a run, a sweep or a reproduction.

The page carries everything inline (figures as PNG data URIs, CSS, a few lines of JS that
sort a table when its header is clicked), so it can be mailed or archived as one file:

- a run (``l4sim run``): its figures, the flow and queue tables, the scenario;
- a sweep (``l4sim sweep``): each metric over each grid / draw axis (mean over the other
  axes and the seeds, with every point behind it), the table of points, the base scenario;
- a reproduction (``l4sim reproduce``): its figures, our numbers beside the paper's (or the
  testbed's), the whole table, and a case's scenario.
"""

from __future__ import annotations

import base64
import csv
import html
import importlib
import io
import json
import math
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from l4sim.errors import L4simError
from l4sim.units import format_number

__all__ = ["build_report", "detect"]

REPORT = "report.html"
#: Figures of a reproduction's cases beyond this many are left out (the page stays small).
MAX_CASE_FIGURES = 40

#: What each reproduction compares with the paper: key columns, then (label, ours, theirs).
PAPER_VS_OURS: dict[str, tuple[list[str], list[tuple[str, str, str]]]] = {
    "aqm-comparison": (
        ["aqm", "rate", "ecn", "cca"],
        [("data MB", "data_mbytes", "paper_mbytes")],
    ),
    "l4s-rtt-fairness": (
        ["qdisc", "rate_mbps", "flow1", "flow2"],
        [
            ("flow 1 Mbit/s", "l4sim1_mbps", "testbed1_mbps"),
            ("flow 2 Mbit/s", "l4sim2_mbps", "testbed2_mbps"),
        ],
    ),
}


@dataclass
class Page:
    title: str
    subtitle: str = ""
    sections: list[str] = field(default_factory=list)


# --------------------------------------------------------------------------------------------
# HTML pieces.


def _esc(x: Any) -> str:
    return html.escape("" if x is None else str(x))


def _fmt(v: Any) -> str:
    if isinstance(v, float) and not math.isnan(v):
        return format_number(v, "{:.4g}" if abs(v) < 1e5 else "{:,.0f}")
    return format_number(v, "{}")


def _table(columns: list[str], rows: list[list[Any]], caption: str = "") -> str:
    head = "".join(f'<th title="click to sort">{_esc(c)}</th>' for c in columns)
    body = "\n".join(
        "<tr>" + "".join(f"<td>{_esc(_fmt(v))}</td>" for v in r) + "</tr>" for r in rows
    )
    cap = f"<caption>{_esc(caption)}</caption>" if caption else ""
    return (
        f'<div class="scroll"><table class="sortable">{cap}<thead><tr>{head}</tr></thead>'
        f"<tbody>\n{body}\n</tbody></table></div>"
    )


#: A figure at least this wide (px) takes the page's width: drawn at half a column, a
#: multi-panel figure's labels would be too small to read.
WIDE_PX = 1100


def _png(data: bytes, caption: str, wide: bool = False) -> str:
    wide = wide or int.from_bytes(data[16:20], "big") >= WIDE_PX  # PNG IHDR width
    b64 = base64.b64encode(data).decode("ascii")
    return (
        f"<figure{' class=wide' if wide else ''}>"
        f'<img alt="{_esc(caption)}" src="data:image/png;base64,{b64}">'
        f"<figcaption>{_esc(caption)}</figcaption></figure>"
    )


def _figures(figs: list[str]) -> str:
    return '<div class="figures">' + "\n".join(figs) + "</div>" if figs else ""


def _section(title: str, body: str) -> str:
    return f"<section><h2>{_esc(title)}</h2>\n{body}\n</section>" if body else ""


def _pre(text: str, summary: str) -> str:
    return f"<details open><summary>{_esc(summary)}</summary><pre>{_esc(text)}</pre></details>"


_CSS = """
body{font:14px/1.4 system-ui,sans-serif;margin:24px;color:#222;max-width:1400px}
h1{margin:0 0 4px}h2{border-bottom:1px solid #ccc;padding-bottom:2px;margin-top:28px}
.sub{color:#555;margin:0 0 12px}
.figures{display:flex;flex-wrap:wrap;gap:12px}
figure{margin:0;flex:1 1 560px;max-width:680px}figure.wide{max-width:100%;flex-basis:100%}
figure img{width:100%;border:1px solid #ddd}
figcaption{font-size:12px;color:#555}
.scroll{overflow-x:auto;max-height:640px;overflow-y:auto}
table{border-collapse:collapse;font-size:12.5px}
th,td{border:1px solid #ddd;padding:3px 7px;text-align:right;white-space:nowrap}
th{background:#f3f3f3;cursor:pointer;position:sticky;top:0}
th.asc::after{content:" \\25B2"}th.desc::after{content:" \\25BC"}
tbody tr:nth-child(even){background:#fafafa}
pre{background:#f6f6f6;padding:10px;overflow-x:auto;font-size:12px}
"""

# Click a header to sort by that column (numbers as numbers); the body's data attributes
# tell a headless browser the page ran and how many figures decoded.
_JS = """
function cellValue(row, i) {
  const t = row.children[i].textContent.trim().replace(/,/g, "");
  const n = parseFloat(t);
  return (t !== "" && t !== "-" && !isNaN(n) && /^[-+0-9.eE]+$/.test(t)) ? n : t;
}
function sortBy(th) {
  const table = th.closest("table");
  const i = Array.prototype.indexOf.call(th.parentNode.children, th);
  const asc = !th.classList.contains("asc");
  table.querySelectorAll("th").forEach(h => h.classList.remove("asc", "desc"));
  th.classList.add(asc ? "asc" : "desc");
  const body = table.tBodies[0];
  const rows = Array.from(body.rows);
  rows.sort((a, b) => {
    const x = cellValue(a, i), y = cellValue(b, i);
    const c = (typeof x === "number" && typeof y === "number") ? x - y
      : String(x).localeCompare(String(y));
    return asc ? c : -c;
  });
  rows.forEach(r => body.appendChild(r));
}
document.querySelectorAll("table.sortable th").forEach(th => {
  th.addEventListener("click", () => sortBy(th));
});
window.addEventListener("load", () => {
  const imgs = Array.from(document.images);
  document.body.dataset.figures = String(imgs.length);
  const loaded = imgs.filter(i => i.naturalWidth > 0);
  document.body.dataset.figuresLoaded = String(loaded.length);
  // Layout at this window's width: how far the page runs past it (tables and code scroll
  // in their own boxes), and the smallest figure's drawn size over its own (legibility).
  const over = document.documentElement.scrollWidth - window.innerWidth;
  document.body.dataset.overflowPx = String(Math.max(0, over));
  const scales = loaded.map(i => i.clientWidth / i.naturalWidth);
  document.body.dataset.minFigureScale = scales.length ? Math.min(...scales).toFixed(2) : "1";
  document.body.dataset.ready = "1";
});
"""


def _render(page: Page) -> str:
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        f"<title>{_esc(page.title)}</title><style>{_CSS}</style></head>\n<body>\n"
        f"<h1>{_esc(page.title)}</h1><p class='sub'>{_esc(page.subtitle)}</p>\n"
        + "\n".join(s for s in page.sections if s)
        + f"\n<script>{_JS}</script>\n</body></html>\n"
    )


# --------------------------------------------------------------------------------------------
# Matplotlib helpers.


def _fig_png(fig: Any) -> bytes:
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    FigureCanvasAgg(fig)
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=100)
    return buf.getvalue()


# --------------------------------------------------------------------------------------------
# A run.

RUN_FLOW_COLUMNS = (
    "id kind cca ecn src dst start_s goodput_bps retransmits srtt_mean_s fct_s drops ecn_marks"
)
RUN_QUEUE_COLUMNS = (
    "link qdisc utilization sojourn_mean_s sojourn_p99_s backlog_mean_pkts drops ecn_marks"
)


def _run_page(d: Path) -> Page:
    from l4sim.engine.results import read
    from l4sim.plot import plot

    result = read(d)
    s = result.summary
    with tempfile.TemporaryDirectory() as tmp:
        paths = plot(d, tmp)
        figs = [_png(p.read_bytes(), p.stem) for p in paths]
    flow_cols = RUN_FLOW_COLUMNS.split()
    queue_cols = RUN_QUEUE_COLUMNS.split()
    flows = [[f.get(c) for c in flow_cols] for f in s.get("flows", [])]
    queues = []
    for q in s.get("queues", []):
        queues.append([q.get(c) for c in queue_cols])
        # Each class of a multi-class qdisc (DualPI2's L4S and Classic) under the queue.
        for c in q.get("classes") or []:
            named = c | {"qdisc": f"{q.get('qdisc')} / {c.get('qdisc')}"}
            queues.append([named.get(k) for k in queue_cols])
    scenario = (d / "scenario.toml").read_text() if (d / "scenario.toml").is_file() else ""
    jain = s.get("jain_fairness")
    return Page(
        title=f"l4sim run: {s.get('scenario', d.name)}",
        subtitle=f"{_fmt(s.get('sim_time_s'))} s simulated in {_fmt(s.get('wall_time_s'))} s, "
        f"{s.get('events', 0):,} events, seed {s.get('seed')}, Jain fairness {_fmt(jain)}",
        sections=[
            _section("Figures", _figures(figs)),
            _section("Flows", _table(flow_cols, flows)),
            _section("Queues", _table(queue_cols, queues)),
            _section("Scenario", _pre(scenario, "scenario.toml") if scenario else ""),
        ],
    )


# --------------------------------------------------------------------------------------------
# A sweep.

#: Flows beyond this many get no goodput panel of their own in a sweep's figures.
MAX_FLOW_METRICS = 8

#: Per-point metrics drawn over the axes: (column, label).
SWEEP_METRICS = (
    ("goodput_mbps", "goodput, all flows (Mbit/s)"),
    ("jain_fairness", "Jain fairness"),
    ("sojourn_mean_ms", "bottleneck mean sojourn (ms)"),
    ("sojourn_p99_ms", "bottleneck p99 sojourn (ms)"),
    ("drops", "bottleneck drops"),
)


def point_metrics(df: Any, axes: list[str]) -> Any:
    """One row per point: its parameters, status and metrics (the bottleneck is the point's
    busiest queue)."""
    import polars as pl

    shown = [c for a in axes for c in (a, a + "_str") if c in df.columns]
    head = list(dict.fromkeys(["point_index", "seed", *shown, "status"]))  # seed may be an axis
    points = df.group_by("point_index").agg(
        [pl.col(c).first() for c in head if c != "point_index"]
        + [pl.col("jain_fairness").first(), pl.col("error").first()]
    )
    if "goodput_bps" in df.columns:
        flows = (
            df.filter(pl.col("record") == "flow")
            .group_by("point_index")
            .agg(
                (pl.col("goodput_bps").sum() / 1e6).alias("goodput_mbps"),
                pl.col("retransmits").sum().alias("retransmits"),
            )
        )
        points = points.join(flows, on="point_index", how="left")
    if "goodput_bps" in df.columns and "id" in df.columns:
        per_flow = (
            df.filter(pl.col("record") == "flow")
            .group_by("point_index")
            .agg(
                (pl.col("goodput_bps").filter(pl.col("id") == i).first() / 1e6).alias(
                    f"flow{i}_mbps"
                )
                for i in _flow_ids(df)
            )
        )
        points = points.join(per_flow, on="point_index", how="left")
    if "utilization" in df.columns:
        # The busiest queue's, and its classes' (class.l4s.sojourn_mean_s -> l4s_mean_ms).
        classes = [
            (c, c.split(".")[1] + ("_mean_ms" if c.endswith("mean_s") else "_p99_ms"))
            for c in df.columns
            if c.startswith("class.") and c.endswith(("sojourn_mean_s", "sojourn_p99_s"))
        ]
        queues = (
            df.filter(pl.col("record") == "queue")
            .sort("utilization", descending=True)
            .group_by("point_index")
            .agg(
                pl.col("link").first().alias("bottleneck"),
                (pl.col("sojourn_mean_s").first() * 1e3).alias("sojourn_mean_ms"),
                (pl.col("sojourn_p99_s").first() * 1e3).alias("sojourn_p99_ms"),
                *[(pl.col(c).first() * 1e3).alias(name) for c, name in classes],
                pl.col("drops").first().alias("drops"),
                pl.col("ecn_marks").first().alias("ecn_marks"),
            )
        )
        points = points.join(queues, on="point_index", how="left")
    return points.sort("point_index")


def _flow_ids(df: Any) -> list[int]:
    import polars as pl

    ids = df.filter(pl.col("record") == "flow")["id"].drop_nulls().unique().sort()
    return [int(i) for i in ids.to_list()][:MAX_FLOW_METRICS]


def _metrics(points: Any, df: Any) -> list[tuple[str, str]]:
    """The metrics a sweep's figures draw: :data:`SWEEP_METRICS`, each class's mean and p99
    delay (DualPI2's L4S and Classic queues: L4S is judged by its tail) and each flow's
    goodput."""
    import polars as pl

    out = [(c, label) for c, label in SWEEP_METRICS if c in points.columns]
    for suffix, what in (("_mean_ms", "mean"), ("_p99_ms", "p99")):
        out += [
            (c, f"{c.removesuffix(suffix)} queue {what} delay (ms)")
            for c in points.columns
            if c.endswith(suffix) and not c.startswith("sojourn_")
        ]
    flows = df.filter(pl.col("record") == "flow") if "cca" in df.columns else None
    for c in points.columns:
        if c.startswith("flow") and c.endswith("_mbps"):
            i = int(c[4:].removesuffix("_mbps"))
            ccas = [] if flows is None else flows.filter(pl.col("id") == i)["cca"].unique()
            name = f" {ccas[0]}" if len(ccas) == 1 and ccas[0] else ""
            out.append((c, f"flow {i}{name} goodput (Mbit/s)"))
    return out


def _axis_order(values: list[Any]) -> list[Any]:
    """Numbers and quantities in one unit in numeric order, anything else as first seen."""
    from l4sim.units import split_quantity

    def key(v: Any) -> tuple[str, float]:
        if isinstance(v, int | float):
            return ("", float(v))
        return split_quantity(str(v))[::-1]

    try:
        keys = {v: key(v) for v in values}
    except ValueError:
        return list(dict.fromkeys(values))
    if len({k[0] for k in keys.values()}) > 1:
        return list(dict.fromkeys(values))
    return sorted(dict.fromkeys(values), key=lambda v: keys[v][1])


def _axis_figure(
    points: Any,
    axis: str,
    group: str | None,
    metrics: list[tuple[str, str]],
    text: dict[str, dict[Any, str]],
) -> bytes:
    """Each metric over ``axis`` (one panel each, four to a row), a line per value of
    ``group``; ``text[axis]`` labels an axis's values as written ("15ms" for 0.015)."""
    import polars as pl
    from matplotlib.figure import Figure

    ok = points.filter(pl.col("status") == "ok")
    order = _axis_order(ok[axis].to_list())
    x_of = {v: i for i, v in enumerate(order)}
    cols = min(4, len(metrics))
    rows = -(-len(metrics) // cols)
    fig = Figure(figsize=(3.4 * cols, 3.1 * rows))
    axs = fig.subplots(rows, cols, squeeze=False).flatten()
    for ax in axs[len(metrics) :]:
        ax.set_visible(False)
    groups = _axis_order(ok[group].to_list()) if group else [None]
    named = text.get(group or "", {})
    for ax, (col, label) in zip(axs, metrics, strict=False):
        for g in groups:
            sub = ok if g is None else ok.filter(pl.col(group) == g)  # type: ignore[arg-type]
            if sub.is_empty():
                continue
            xs = [x_of[v] for v in sub[axis].to_list()]
            ys = sub[col].cast(pl.Float64).to_list()
            ax.scatter(xs, ys, s=8, alpha=0.25)
            stats = sub.group_by(axis).agg(pl.col(col).cast(pl.Float64).mean().alias("m"))
            pairs = sorted((x_of[v], m) for v, m in zip(stats[axis], stats["m"], strict=True))
            ax.plot(
                [p[0] for p in pairs],
                [p[1] for p in pairs],
                marker="o",
                label=None if g is None else f"{group} = {named.get(g, g)}",
            )
        ticks = [text.get(axis, {}).get(v, str(v)) for v in order]
        ax.set_xticks(range(len(order)), ticks, rotation=30, fontsize=8)
        ax.set_xlabel(axis, fontsize=9)
        ax.set_title(label, fontsize=9)
        ax.grid(alpha=0.3)
    if group:
        axs[0].legend(fontsize=7)
    fig.suptitle(f"mean over the other axes and seeds, by {axis}", fontsize=10)
    fig.tight_layout()
    return _fig_png(fig)


def _sweep_page(d: Path) -> Page:
    from l4sim.sweep import read_sweep

    df, meta = read_sweep(d)
    axes = [a for a in meta.get("axes", []) if a in df.columns]
    points = point_metrics(df, axes) if df.height else None
    figs = []
    if points is not None:
        metrics = _metrics(points, df)
        # A quantity axis is a number in SI units: its ticks say it as written ("15ms").
        text = {
            a: dict(zip(df[a].to_list(), df[a + "_str"].to_list(), strict=True))
            for a in axes
            if a + "_str" in df.columns
        }
        varying = [a for a in axes if points[a].n_unique() > 1]
        for axis in varying[:6]:
            group = next((a for a in varying if a != axis and points[a].n_unique() <= 6), None)
            png = _axis_figure(points, axis, group, metrics, text)
            figs.append(_png(png, f"metrics by {axis}", wide=True))
    table = ""
    if points is not None:
        cols = [c for c in points.columns if c != "error"] + ["error"]
        table = _table(cols, [[r[c] for c in cols] for r in points.iter_rows(named=True)])
    ok, n = meta.get("ok", "?"), meta.get("points", "?")
    base = meta.get("base")
    scenario = ""
    if isinstance(base, dict):
        from l4sim.scenario import Scenario

        try:
            scenario = Scenario.parse(base).to_toml()
        except L4simError:
            scenario = json.dumps(base, indent=2)
    spec = {k: meta[k] for k in ("grid", "draw", "seeds") if k in meta}
    return Page(
        title=f"l4sim sweep: {meta.get('name', d.name)}",
        subtitle=f"{n} points, {ok} ok, {meta.get('failed', '?')} failed; axes: "
        + (", ".join(axes) or "none"),
        sections=[
            _section("Metrics over the axes", _figures(figs)),
            _section("Points (click a header to sort)", table),
            _section(
                "Sweep and base scenario",
                _pre(json.dumps(spec, indent=2), "grid, draws, seeds")
                + (_pre(scenario, f"base: {meta.get('base_source', '')}") if scenario else ""),
            ),
        ],
    )


# --------------------------------------------------------------------------------------------
# A reproduction.


def _experiment(d: Path) -> tuple[str, Any] | None:
    from l4sim.experiments import EXPERIMENTS

    for name, module in EXPERIMENTS.items():
        mod = importlib.import_module(module)
        if (d / f"{Path(mod.TABLE).stem}.csv").is_file():
            return name, mod
    return None


def _num(v: str) -> float | None:
    try:
        return float(v)
    except (TypeError, ValueError):
        return None


def _paper_table(name: str, rows: list[dict[str, str]]) -> str:
    if name not in PAPER_VS_OURS or not rows:
        return ""
    keys, pairs = PAPER_VS_OURS[name]
    cols = list(keys)
    for label, _, _ in pairs:
        cols += [f"{label} ours", f"{label} paper", "ours / paper"]
    out = []
    for r in rows:
        line: list[Any] = [r.get(k) for k in keys]
        for _, ours, theirs in pairs:
            a, b = _num(r.get(ours, "")), _num(r.get(theirs, ""))
            line += [a, b, a / b if a is not None and b else None]
        out.append(line)
    return _table(cols, out)


def _reproduction_page(d: Path, name: str, mod: Any) -> Page:
    stem = Path(mod.TABLE).stem
    with open(d / f"{stem}.csv", newline="") as fh:
        rows = list(csv.DictReader(fh))
    figs = [_png(p.read_bytes(), p.stem) for p in sorted(d.glob("*.png"))]
    case_dirs = [r.get("case", "") for r in rows]
    case_figs = [
        d / c / "overview.png" for c in case_dirs if c and (d / c / "overview.png").is_file()
    ]
    figs += [_png(p.read_bytes(), p.parent.name) for p in case_figs[:MAX_CASE_FIGURES]]
    scenario = next(
        ((d / c / "scenario.toml") for c in case_dirs if c and (d / c / "scenario.toml").is_file()),
        None,
    )
    cols = list(rows[0]) if rows else []
    md = d / mod.TABLE
    note = ""
    if md.is_file():  # the closing sentence of the Markdown table (e.g. the agreement)
        tail = md.read_text().strip().split("\n\n")
        note = tail[-1] if len(tail) > 1 else ""
    more = len(case_figs) - MAX_CASE_FIGURES
    return Page(
        title=f"l4sim reproduce {name}",
        subtitle=(mod.__doc__ or "").strip().split("\n")[0]
        + (f" {len(rows)} cases." if rows else ""),
        sections=[
            _section(
                "Paper vs ours", _paper_table(name, rows) + (f"<p>{_esc(note)}</p>" if note else "")
            ),
            _section(
                "Figures",
                _figures(figs)
                + (f"<p>{more} more case figures are in {_esc(d)}.</p>" if more > 0 else ""),
            ),
            _section(
                f"{stem}.csv (click a header to sort)",
                _table(cols, [list(r.values()) for r in rows]),
            ),
            _section(
                "Scenario",
                _pre(scenario.read_text(), f"{scenario.parent.name}/scenario.toml")
                if scenario
                else "",
            ),
        ],
    )


# --------------------------------------------------------------------------------------------
# Entry point.


def detect(d: Path) -> str:
    """``"sweep"``, ``"reproduction"`` or ``"run"``; a sentence when ``d`` is none of them."""
    if not d.is_dir():
        raise L4simError(f"{str(d)!r} is not a directory")
    if (d / "sweep.parquet").is_file():
        return "sweep"
    if _experiment(d) is not None:
        return "reproduction"
    if (d / "summary.json").is_file():
        return "run"
    raise L4simError(
        f"{str(d)!r} holds no summary.json (l4sim run), sweep.parquet (l4sim sweep) or "
        "reproduction table (l4sim reproduce)"
    )


def build_report(d: str | Path, out: str | Path | None = None) -> Path:
    """Write the report of directory ``d`` to ``out`` (default ``d/report.html``)."""
    d = Path(d)
    kind = detect(d)
    if kind == "sweep":
        page = _sweep_page(d)
    elif kind == "reproduction":
        found = _experiment(d)
        assert found is not None
        page = _reproduction_page(d, *found)
    else:
        page = _run_page(d)
    path = Path(out) if out is not None else d / REPORT
    tmp = path.with_name(f".{path.name}.tmp")
    try:
        tmp.write_text(_render(page), encoding="utf-8")
        tmp.replace(path)
    except OSError as e:
        tmp.unlink(missing_ok=True)
        raise L4simError(f"cannot write {str(path)!r} ({e.strerror or e})") from None
    return path
