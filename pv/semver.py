"""Semantic versions: the one place that parses them and orders them (semver 2.0 precedence).

The pattern itself is :data:`pv.model.SEMVER_RE`, which the contract model validates with.
"""

from __future__ import annotations

from pv.model import SEMVER_RE

SemverKey = tuple[int, int, int, tuple[tuple[int, int | str], ...]]


def parts(version: str) -> tuple[int, int, int, str | None] | None:
    """(major, minor, patch, pre-release or None), or None when ``version`` is not semver."""
    m = SEMVER_RE.match(version)
    if m is None:
        return None
    return int(m.group(1)), int(m.group(2)), int(m.group(3)), m.group(4)


def semver_key(version: str) -> SemverKey | None:
    """A sort key with semver 2.0 precedence (build metadata ignored), or None if not semver."""
    p = parts(version)
    if p is None:
        return None
    major, minor, patch, pre = p
    if pre is None:
        # a release sorts after all of its pre-releases
        return (major, minor, patch, ((2, 0),))
    idents: list[tuple[int, int | str]] = []
    for ident in pre.split("."):
        # numeric identifiers sort before alphanumeric ones, and numerically among themselves
        idents.append((0, int(ident)) if ident.isdigit() else (1, ident))
    return (major, minor, patch, tuple(idents))
