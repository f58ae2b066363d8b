"""``pv lint --explain CODE``: why a rule exists and how to fix it, from pv's one rule table."""

from __future__ import annotations

from pv import rules
from pv.lint.runner import default_gates  # the gates register their codes as they load


def explain(code: str) -> str | None:
    """The explanation of a rule code, rule name or gate name; None when it is none of those."""
    text = rules.explain(code)
    if text is not None:
        return text
    for gate in default_gates():
        if gate.name == code.strip().lower():
            owned = rules.codes_of(gate.name)
            listing = f"\n\nRules: {', '.join(owned)}" if owned else ""
            return f"gate {gate.name}: {gate.description}{listing}"
    return None


def known_codes() -> list[str]:
    return sorted(rules.RULES)
