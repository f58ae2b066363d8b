"""What a pytest selection (``-m``) asked for, read for hints when it selected nothing."""

from __future__ import annotations

import re
from collections.abc import Iterable

from pv.diagnostics import suggest

_KEYWORDS = frozenset({"and", "or", "not", "True", "False", "None"})


def unregistered_markers(markexpr: str, registered_lines: Iterable[str]) -> list[str]:
    """One message per name in a ``-m`` expression that no ``markers`` line registers, with a suggestion."""
    registered = {line.split(":", 1)[0].split("(", 1)[0].strip() for line in registered_lines}
    # a marker's argument list (right after its name, unlike a grouping parenthesis) names no marker
    bare = re.sub(
        r"([A-Za-z_]\w*)(\s*\([^()]*\))",
        lambda m: m.group(0) if m.group(1) in _KEYWORDS else m.group(1),
        markexpr,
    )
    words = re.findall(r"[A-Za-z_]\w*", bare)
    out: list[str] = []
    for word in dict.fromkeys(words):
        if word in _KEYWORDS or word in registered:
            continue
        close = suggest(word, sorted(registered))
        out.append(f"marker {word!r} is not registered" + (f"; did you mean {close!r}?" if close else ""))
    return out
