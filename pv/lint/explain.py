"""``pv lint --explain CODE``: why a rule exists and how to fix it, from pv's one rule table."""

from __future__ import annotations

from pv import rules
from pv.lint import codes  # noqa: F401  (registers lint's own rules in the table)
from pv.lint.gates.validate import ROUTES
from pv.lint.runner import default_gates


def explain(code: str) -> str | None:
    """The explanation of a rule code, rule name or gate name; None when it is none of those."""
    text = rules.explain(code)
    if text is not None:
        return text
    for gate in default_gates():
        if gate.name == code.strip().lower():
            owned = sorted(c for c, r in rules.RULES.items() if _gate_of_code(c) == gate.name)
            listing = f"\n\nRules: {', '.join(owned)}" if owned else ""
            return f"gate {gate.name}: {gate.description}{listing}"
    return None


def _gate_of_code(code: str) -> str:

    if code in ROUTES:
        return ROUTES[code]
    if code.startswith("PVL"):
        return {
            "2": "binding",
            "3": "observations",
            "4": "falsifiability",
            "5": "coverage",
            "6": "references",
            "7": "status",
            "8": "changelog",
            "9": "duplicates",
        }.get(code[3:4], "")
    return "validate"


def known_codes() -> list[str]:
    return sorted(rules.RULES)
