"""The review as Markdown: verdict first, then the falsifiers the change moved, the rest folded away.

Written for a pull-request comment (GitHub's alert syntax, ``<details>``), cut to a size limit at a
row boundary with a note that says how much was left out and where the whole report is.
"""

from __future__ import annotations

from pv.review.cells import bound, history, mutant, noise, num, pct, sections, shown_values, verdict
from pv.review.compare import KINDS, ContractReview, Review, Row, Value

MARKER = "<!-- pv-review -->"  # finds the comment to update in place
COMMENT_LIMIT = 65_535  # GitHub's limit on a comment's body, in characters
SUMMARY_LIMIT = 1_048_576  # GitHub's limit on a step's job summary, in bytes


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


TABLE_HEAD = (
    "| falsifier | observation | base | head | Δ | Δ % | bound | used | noise | history | verdict | mutant |\n"
    "|---|---|---:|---:|---:|---:|---|---:|---|---|---|---|"
)


def row_lines(row: Row) -> list[str]:
    """One table line per observation shown; the falsifier's cells on the first."""
    name = f"`{row.falsifier_id}`<br>{'ship-blocking' if row.ship_blocking else 'advisory'} · `{row.contract_id}`"
    values = shown_values(row) or [Value("", None, None)]
    out = []
    for i, v in enumerate(values):
        first = i == 0
        out.append(
            f"| {name if first else ''} | {_cell(v.name)} | {num(v.base)} | {num(v.head)} | "
            f"{num(v.delta, signed=True) if v.delta is not None else '—'} | {pct(v.delta_pct, signed=True)} | "
            f"{bound(v)} | {pct(v.used)} | {noise(v)} | {history(row, v)} | "
            f"{verdict(row) if first else ''} | {mutant(row) if first else ''} |"
        )
    return out


def _notes(row: Row) -> list[str]:
    out = []
    if row.bound_moved:
        out.append(f"bound moved: `{_cell(row.base_expect or '')}` → `{_cell(row.head_expect or '')}`")
    if row.head_verdict == "falsified" and row.expect_now:
        out.append(f"falsified: `{_cell(row.expect_now)}`")
    elif row.head_verdict in ("falsified", "error") and row.message:
        out.append(f"{row.head_verdict}: {_cell(row.message[:300])}")
    if row.changed:
        out.append("touched by: " + "; ".join(row.changed))
    if row.head_verdict in ("falsified", "error"):
        out.append(f"reproduce: `{row.reproduce}`")
    return out


def _callout(review: Review) -> list[str]:
    counts = review.counts()
    moved = len(review.bounds_moved())
    drops = review.status_changes()
    kind = "CAUTION" if counts["regressed"] or any(c.after == "DRAFT" for c in drops) else "NOTE"
    if kind == "NOTE" and counts["missing"]:
        kind = "WARNING"
    parts = [f"**{counts[k]} {k}**" if counts[k] and k != "unchanged" else f"{counts[k]} {k}" for k in KINDS]
    lines = [f"> [!{kind}]", "> " + " · ".join(parts) + f" · {moved} bound{'s' if moved != 1 else ''} moved"]
    for c in drops:
        lines.append(f"> Status: `{c.id}` {c.before} → **{c.after}** ({_cell(c.reason)})")
    if not drops:
        lines.append("> No contract changes status.")
    decided = [r.head_mutant for r in review.rows if r.head_mutant is not None]
    measured = sum(r.head_verdict not in (None, "not_run") for r in review.rows)
    lines.append(
        f"> Head: {measured} of {len(review.rows)} falsifiers run on the current code; "
        f"mutants caught {sum(decided)} of {len(decided)} run."
    )
    return lines


def _heading(review: Review) -> str:
    head = f"`{review.head_commit[:12]}`" if review.head_commit else "the working tree"
    if review.base_ref is None:
        return f"## pv review: {head} (no base given)"
    return f"## pv review: `{review.base_ref}` (`{(review.base_commit or '')[:12]}`) → {head}"


def _evidence_table(contracts: list[ContractReview]) -> list[str]:
    lines = [
        "| contract | status | why | base run | base digest | head run(s) | base missing because |",
        "|---|---|---|---|---|---|---|",
    ]
    for c in contracts:
        status = c.after if c.before == c.after else f"{c.before} → **{c.after}**"
        lines.append(
            f"| `{c.id}` | {status} | {_cell(c.reason)} | {f'`{c.base_run}`' if c.base_run else '—'} | "
            f"{f'`{c.base_digest[:16]}`' if c.base_digest else '—'} | "
            f"{', '.join(f'`{r}`' for r in c.head_runs) or '—'} | {_cell(c.base_missing)} |"
        )
    return lines


def _missing(review: Review, rows: list[Row]) -> list[Block]:
    """One line per contract and reason: a missing base is the contract's, not each falsifier's."""
    by_contract = {c.id: c for c in review.contracts}
    groups: dict[tuple[str, str], list[str]] = {}
    for r in rows:
        why = r.why
        if r.base_verdict is None and by_contract[r.contract_id].base_missing:
            why = "no base: " + by_contract[r.contract_id].base_missing
        groups.setdefault((r.contract_id, why), []).append(r.falsifier_id)
    lines = [f"### Missing ({len(rows)})", ""]
    for (cid, why), ids in groups.items():
        shown = ", ".join(f"`{i}`" for i in ids[:6]) + (f" and {len(ids) - 6} more" if len(ids) > 6 else "")
        lines.append(f"- `{cid}`: {len(ids)} falsifier{'s' if len(ids) != 1 else ''} ({shown}): {_cell(why)}")
    return [("text", [*lines, ""])]


Block = tuple[str, list[str]]  # (kind: "text" | "table", lines); a table's first two lines are its head


def _table(title: str, rows: list[Row]) -> list[Block]:
    """A heading, a table of the rows' observations, and under it each row's why and notes."""
    if not rows:
        return []
    table: list[str] = TABLE_HEAD.splitlines()
    notes: list[str] = []
    for r in rows:
        table += row_lines(r)
        extra = ([f"`{r.falsifier_id}`: {r.why}"] if r.why else []) + _notes(r)
        notes += [f"- {n}" for n in extra[:1]] + [f"  - {n}" for n in extra[1:]]
    return [("text", [f"### {title} ({len(rows)})", ""]), ("table", table), ("text", ["", *notes, ""])]


def blocks(review: Review, link: str | None = None) -> list[Block]:
    out: list[Block] = [("text", [MARKER, _heading(review), "", *_callout(review), ""])]
    if review.trust:
        out.append(("text", [f"_{_cell(review.trust[:1].upper() + review.trust[1:])}._", ""]))
    for title, rows in sections(review):
        if title == "Missing":
            out += _missing(review, rows)
        elif title == "Bounds moved":
            table = TABLE_HEAD.splitlines() + [line for r in rows for line in row_lines(r)]
            notes = [f"- `{r.falsifier_id}`: {_notes(r)[0]}" for r in rows]
            out += [("text", [f"### {title} ({len(rows)})", ""]), ("table", table), ("text", ["", *notes, ""])]
        else:
            out += _table(title, rows)
    unchanged = review.counts()["unchanged"]
    out.append(("text", ["<details><summary>" + f"Unchanged: {unchanged} falsifiers; the evidence read</summary>", ""]))
    out.append(("table", _evidence_table(review.contracts)))
    out.append(("text", ["", "</details>", ""]))
    if link:
        out.append(("text", [f"Every falsifier with its history plots: [the HTML report]({link})."]))
    return out


def fit(parts: list[Block], limit: int, link: str | None = None) -> str:
    """The blocks joined, cut at a line boundary to stay under ``limit`` characters, with a note."""
    whole = "\n".join(line for _, lines in parts for line in lines).rstrip() + "\n"
    if len(whole) <= limit:
        return whole
    where = f" [the HTML report]({link})" if link else " the HTML report (`pv report --format html`)"
    room = limit - 400  # the note and closing lines
    kept: list[str] = []
    size = 0
    left_out = 0
    for index, (kind, lines) in enumerate(parts):
        cut = None
        for i, line in enumerate(lines):
            if size + len(line) + 1 > room:
                cut = i
                break
            kept.append(line)
            size += len(line) + 1
        if cut is not None:
            left_out += len(lines) - max(cut, 2) if kind == "table" else 0
            left_out += sum(max(len(rest) - 2, 0) for k, rest in parts[index + 1 :] if k == "table")
            break
    if "<details>" in "\n".join(kept) and "</details>" not in "\n".join(kept):
        kept.append("</details>")
    kept += ["", f"_Cut to GitHub's {limit:,}-character limit: {left_out} more table rows are in{where}._"]
    return "\n".join(kept) + "\n"


def render(review: Review, limit: int | None = None, link: str | None = None) -> str:
    parts = blocks(review, link)
    if limit is None:
        return "\n".join(line for _, lines in parts for line in lines).rstrip() + "\n"
    return fit(parts, limit, link)
