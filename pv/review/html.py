"""The review as one self-contained HTML file: no script, no server, no CDN; plots as inline SVG.

Every falsifier the change moved gets a plot per observation shown: its history over the base's
line of commits (oldest left), the base run ringed, the head drawn as a diamond past the last
commit, the bound as a dashed line.  The falsifiers the change left alone are folded per contract,
with a plot for each observation that has a bound.
"""

from __future__ import annotations

import html
import json

from pv.review.cells import mutant, noise, num, pct, sections, shown_values, verdict
from pv.review.compare import KINDS, Review, Row, Value

SERIES = "#1f6feb"  # the history line: the screenshot test looks for this colour
BOUND = "#cf222e"
BASE = "#1a7f37"
HEAD = "#fb8500"
WIDTH, HEIGHT, PAD_L, PAD_R, PAD_Y = 380, 130, 58, 44, 16

_CSS = """
body{font:14px/1.45 system-ui,-apple-system,"Segoe UI",sans-serif;margin:24px auto;max-width:1180px;color:#1f2328}
h1{font-size:22px} h2{font-size:18px;margin-top:28px;border-bottom:1px solid #d0d7de}
.callout{border-left:4px solid #0969da;background:#ddf4ff;padding:8px 14px;margin:12px 0}
.callout.caution{border-color:#cf222e;background:#ffebe9} .callout.warning{border-color:#9a6700;background:#fff8c5}
table{border-collapse:collapse;margin:8px 0;font-size:13px}
td,th{border:1px solid #d0d7de;padding:3px 7px;vertical-align:top}
th{background:#f6f8fa} td.n{text-align:right;font-variant-numeric:tabular-nums}
.card{display:inline-block;vertical-align:top;margin:6px 12px 6px 0} .card figcaption{font-size:12px;color:#57606a}
code{background:#f6f8fa;padding:0 3px;border-radius:3px} details{margin:8px 0} summary{cursor:pointer}
.legend span{margin-right:14px;font-size:12px}
"""


def _e(text: object) -> str:
    return html.escape(str(text), quote=True)


def plot(row: Row, value: Value) -> str:
    """An SVG of one observation over the history, base ringed, head as a diamond, bound dashed."""
    points = [(p.run_id, p.commit, p.values[value.name]) for p in row.history if value.name in p.values]
    head = value.head if isinstance(value.head, float) else None
    ys = [v for _, _, v in points] + ([head] if head is not None else [])
    if value.limit is not None:
        ys.append(value.limit)
    for interval in (value.base_interval, value.head_interval):
        ys += interval or []
    if not ys:
        return ""
    low, high = min(ys), max(ys)
    if high == low:
        low, high = low - (abs(low) * 0.1 or 1.0), high + (abs(high) * 0.1 or 1.0)
    n = len(points) + (1 if head is not None else 0)
    inner_w, inner_h = WIDTH - PAD_L - PAD_R, HEIGHT - 2 * PAD_Y

    def x(i: int) -> float:
        return PAD_L + (inner_w * i / max(n - 1, 1) if n > 1 else inner_w / 2)

    def y(v: float) -> float:
        return PAD_Y + inner_h * (1 - (v - low) / (high - low))

    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" height="{HEIGHT}" viewBox="0 0 {WIDTH} {HEIGHT}" '
        f'role="img" aria-label="{_e(row.falsifier_id)} {_e(value.name)}">',
        f'<rect x="{PAD_L}" y="{PAD_Y}" width="{inner_w}" height="{inner_h}" fill="#fff" stroke="#d0d7de"/>',
        f'<text x="{PAD_L - 4}" y="{PAD_Y + 4}" font-size="10" text-anchor="end">{_e(num(high))}</text>',
        f'<text x="{PAD_L - 4}" y="{PAD_Y + inner_h}" font-size="10" text-anchor="end">{_e(num(low))}</text>',
    ]
    if value.limit is not None:
        ly = y(value.limit)
        parts.append(
            f'<line x1="{PAD_L}" x2="{PAD_L + inner_w}" y1="{ly:.1f}" y2="{ly:.1f}" stroke="{BOUND}" '
            f'stroke-width="2" stroke-dasharray="6 4"/>'
            f'<text x="{PAD_L + inner_w + 2}" y="{ly + 4:.1f}" font-size="10" fill="{BOUND}">bound</text>'
        )
    if value.head_interval and head is not None:
        lo, hi = value.head_interval
        parts.append(
            f'<line x1="{x(n - 1):.1f}" x2="{x(n - 1):.1f}" y1="{y(lo):.1f}" y2="{y(hi):.1f}" '
            f'stroke="{HEAD}" stroke-width="2"/>'
        )
    coords = [(x(i), y(v)) for i, (_, _, v) in enumerate(points)]
    if len(coords) > 1:
        parts.append(
            f'<polyline fill="none" stroke="{SERIES}" stroke-width="2.5" points="'
            + " ".join(f"{a:.1f},{b:.1f}" for a, b in coords)
            + '"/>'
        )
    for (run_id, commit, v), (cx, cy) in zip(points, coords, strict=True):
        is_base = run_id == row.base_run
        fill, stroke, r, width = ("#fff", BASE, 6, 3) if is_base else (SERIES, SERIES, 3.5, 1)
        label = f"{(commit or '')[:12]} {run_id}: {num(v)}{' (base)' if is_base else ''}"
        parts.append(
            f'<circle cx="{cx:.1f}" cy="{cy:.1f}" r="{r}" fill="{fill}" stroke="{stroke}" stroke-width="{width}">'
            f"<title>{_e(label)}</title></circle>"
        )
    if head is not None:
        hx, hy = x(n - 1), y(head)
        parts.append(
            f'<path d="M{hx:.1f},{hy - 7:.1f} L{hx + 7:.1f},{hy:.1f} L{hx:.1f},{hy + 7:.1f} L{hx - 7:.1f},{hy:.1f} Z" '
            f'fill="{HEAD}"><title>head: {_e(num(head))}</title></path>'
        )
    if points:
        first, last = points[0][1] or "", points[-1][1] or ""
        parts.append(f'<text x="{PAD_L}" y="{HEIGHT - 2}" font-size="10">{_e(first[:7])}</text>')
        if len(points) > 1:
            parts.append(
                f'<text x="{x(len(points) - 1):.1f}" y="{HEIGHT - 2}" font-size="10" text-anchor="middle">'
                f"{_e(last[:7])}</text>"
            )
    if head is not None:
        parts.append(
            f'<text x="{x(n - 1):.1f}" y="{PAD_Y - 4}" font-size="10" text-anchor="middle" fill="{HEAD}">head</text>'
        )
    parts.append("</svg>")
    return "".join(parts)


def _row_table(rows: list[Row], every_value: bool = False) -> str:
    head = (
        "<tr><th>falsifier</th><th>observation</th><th>base</th><th>head</th><th>Δ</th><th>Δ %</th><th>bound</th>"
        "<th>used</th><th>noise</th><th>verdict</th><th>mutant</th><th>why</th><th>expect at the head</th></tr>"
    )
    body = []
    for r in rows:
        values = (r.values if every_value else shown_values(r)) or [Value("", None, None)]
        for i, v in enumerate(values):
            first = i == 0
            role = "ship-blocking" if r.ship_blocking else "advisory"
            failing = r.head_verdict in ("falsified", "error")
            cells = [
                f"<code>{_e(r.falsifier_id)}</code><br>{role}" if first else "",
                _e(v.name),
                f'<span class="n">{_e(num(v.base))}</span>',
                _e(num(v.head)),
                _e(num(v.delta, signed=True)) if v.delta is not None else "—",
                _e(pct(v.delta_pct, signed=True)),
                _e(f"{'≥' if v.better == 'higher' else '≤'} {num(v.limit)}") if v.limit is not None else "",
                _e(pct(v.used)),
                _e(noise(v)),
                _e(verdict(r, icons=False).replace("**", "")) if first else "",
                _e(mutant(r).replace("**", "")) if first else "",
                _e(r.why) + (f"<br><code>{_e(r.reproduce)}</code>" if failing else "") if first else "",
                (
                    f"<code>{_e(r.expect_now)}</code>"
                    + (f"<br>{_e(r.note)}" if r.note else "")
                    + "".join(f"<br><code>{_e(c)}</code>" for c in r.cases)
                )
                if first
                else "",
            ]
            body.append("<tr>" + "".join(f"<td>{c}</td>" for c in cells) + "</tr>")
    return f"<table>{head}{''.join(body)}</table>"


def _cards(rows: list[Row], bounded_only: bool = False) -> str:
    out = []
    for r in rows:
        values = [v for v in r.values if v.limit is not None] if bounded_only else shown_values(r)
        for v in values:
            svg = plot(r, v)
            if svg:
                caption = f"{r.falsifier_id} · {v.name}"
                out.append(f'<figure class="card">{svg}<figcaption>{_e(caption)}</figcaption></figure>')
    return "".join(out)


def render(review: Review) -> str:
    counts = review.counts()
    caution = counts["regressed"] or any(c.after == "DRAFT" for c in review.status_changes())
    kind = "caution" if caution else ("warning" if counts["missing"] else "note")
    summary = " · ".join(f"{counts[k]} {k}" for k in KINDS) + f" · {len(review.bounds_moved())} bounds moved"
    status = (
        "".join(
            f"<div>Status: <code>{_e(c.id)}</code> {_e(c.before)} → <b>{_e(c.after)}</b> ({_e(c.reason)})</div>"
            for c in review.status_changes()
        )
        or "<div>No contract changes status.</div>"
    )
    base = (
        f"base <code>{_e(review.base_ref)}</code> (<code>{_e((review.base_commit or '')[:12])}</code>)"
        if review.base_ref
        else "no base"
    )
    body = [
        f"<h1>pv review: {base} → head <code>{_e((review.head_commit or 'working tree')[:12])}</code></h1>",
        f'<div class="callout {kind}"><b>{_e(summary)}</b>{status}</div>',
        '<div class="legend">'
        f'<span style="color:{SERIES}">━ history on the base\'s line</span>'
        f'<span style="color:{BASE}">◯ base run</span><span style="color:{HEAD}">◆ head</span>'
        f'<span style="color:{BOUND}">┅ bound</span></div>',
    ]
    for title, rows in sections(review):
        body += [f"<h2>{_e(title)} ({len(rows)})</h2>", _row_table(rows), _cards(rows)]
    body.append(f"<h2>Every contract ({len(review.contracts)})</h2>")
    for c in review.contracts:
        rows = [r for r in review.rows if r.contract_id == c.id]
        title = f"{c.id}: {c.before}" + (f" → {c.after}" if c.before != c.after else "")
        base_line = (
            f"base run <code>{_e(c.base_run)}</code>, digest <code>{_e((c.base_digest or '')[:16])}</code>"
            if c.base_run
            else f"no base: {_e(c.base_missing or 'no --base given')}"
        )
        body.append(
            f"<details><summary>{_e(title)} · {len(rows)} falsifiers</summary><div>{base_line}; head run(s): "
            f"{', '.join(f'<code>{_e(r)}</code>' for r in c.head_runs) or '—'}</div>"
            f"{_row_table(rows, every_value=True)}{_cards(rows, bounded_only=True)}</details>"
        )
    data = json.dumps(review.to_json(), default=str).replace("</", "<\\/")  # never closes the script element
    return (
        "<!doctype html><html lang=en><head><meta charset=utf-8>"
        f"<title>pv review</title><style>{_CSS}</style></head><body>{''.join(body)}"
        f'<script type="application/json" id="pv-review">{data}</script></body></html>\n'
    )
