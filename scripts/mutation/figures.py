"""docs/mutation-results.md, written from the campaign's kept results: ``python scripts/mutation/figures.py``.

The page is never written by hand: ``run.py`` writes it after each chunk, and ``--check`` (run by the
tests) exits 1 when the committed page differs from what ``mutation/results.jsonl`` and
``mutation/equivalent.txt`` give.  It shows the figures per module (raw, and without the mutants
reviewed as equivalent), the mutants neither killed nor reviewed.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent.parent
sys.path.insert(0, str(ROOT))

from pv.mutation import MutationSummary, read_equivalent, read_results, summarize  # noqa: E402

RESULTS = ROOT / "mutation" / "results.jsonl"
EQUIVALENT = ROOT / "mutation" / "equivalent.txt"
PAGE = ROOT / "docs" / "mutation-results.md"


def _pct(ratio: float | None) -> str:
    return "—" if ratio is None else f"{100 * ratio:.1f} %"


def render(summary: MutationSummary, kept: int) -> str:
    total = summary.total
    lines = [
        "# The engine's mutation campaign: figures",
        "",
        "<!-- written by scripts/mutation/figures.py from mutation/results.jsonl; do not edit -->",
        "",
        f"Every verdict kept in `mutation/results.jsonl` ({kept:,} mutants of `engine/`), scored by "
        "`pv mutation report` with the mutants reviewed as equivalent in "
        "`mutation/equivalent.txt` left out of the second ratio.  A verdict is kept while what it rests on "
        "is unchanged (docs/mutation.md); `python scripts/mutation/run.py` runs what is not kept and writes "
        "this page again.",
        "",
        f"**{total.killed:,} killed of {total.tested + total.equivalent:,}: {_pct(total.raw_ratio)} raw, "
        f"{_pct(total.ratio)} without the {total.equivalent:,} reviewed equivalents.**",
        "",
        "| module | killed | counted | raw | survived | reached by none | equivalent | w/o equivalents |",
        "|---|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for s in [*summary.modules.values(), total]:
        name = "**all**" if s is total else f"`{s.module}`"
        lines.append(
            f"| {name} | {s.killed:,} | {s.tested + s.equivalent:,} | {_pct(s.raw_ratio)} | "
            f"{s.counts.get('survived', 0):,} | {s.counts.get('no tests', 0):,} | {s.equivalent:,} | {_pct(s.ratio)} |"
        )
    lines += ["", f"## Neither killed nor reviewed as equivalent ({len(summary.survivors)})", ""]
    if summary.survivors:
        lines += ["| mutant | verdict |", "|---|---|"]
        lines += [f"| `{m.name}` | {m.status} |" for m in summary.survivors]
    else:
        lines.append("None.")
    if summary.contradicted:
        lines += ["", f"## Listed as equivalent, yet killed ({len(summary.contradicted)}; counted as killed)", ""]
        lines += [f"- `{name}`" for name in summary.contradicted]
    return "\n".join(lines) + "\n"


def page() -> str:
    outcomes, runs = read_results(RESULTS)
    equivalent = read_equivalent(EQUIVALENT) if EQUIVALENT.is_file() else {}
    return render(summarize(outcomes, runs, equivalent), len(outcomes))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--check", action="store_true", help="exit 1 if the committed page is not current")
    args = parser.parse_args(argv)
    text = page()
    if args.check:
        if not PAGE.is_file() or PAGE.read_text(encoding="utf-8") != text:
            print(f"{PAGE.relative_to(ROOT)} is not current: run python scripts/mutation/figures.py", file=sys.stderr)
            return 1
        return 0
    PAGE.write_text(text, encoding="utf-8")
    print(f"wrote {PAGE.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
