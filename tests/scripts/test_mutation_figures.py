"""docs/mutation-results.md is written from the kept results, never by hand."""

from __future__ import annotations

from pv.mutation import MutantOutcome, summarize
from tests.scripts_loader import load_script

figures = load_script("scripts/mutation/figures.py")


def test_the_committed_page_is_what_the_kept_results_give() -> None:
    assert figures.main(["--check"]) == 0


def test_the_page_shows_each_module_and_names_each_mutant_left_alive() -> None:
    outcomes = [
        MutantOutcome("engine.a.x_f__mutmut_1", "engine/a.py", "killed"),
        MutantOutcome("engine.a.x_f__mutmut_2", "engine/a.py", "survived"),
        MutantOutcome("engine.a.x_f__mutmut_3", "engine/a.py", "survived"),
        MutantOutcome("engine.b.x_g__mutmut_1", "engine/b.py", "killed"),
    ]
    summary = summarize(outcomes, {}, {"engine.a.x_f__mutmut_3": "same value"})
    text = figures.render(summary, len(outcomes))
    assert "**2 killed of 4: 50.0 % raw, 66.7 % without the 1 reviewed equivalents.**" in text
    assert "| `engine/a.py` | 1 | 3 | 33.3 % | 1 | 0 | 1 | 50.0 % |" in text
    assert "## Neither killed nor reviewed as equivalent (1)" in text
    assert "| `engine.a.x_f__mutmut_2` | survived |" in text
    assert "mutmut_3` |" not in text
