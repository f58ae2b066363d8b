"""The lint gates, one module each, in the order :mod:`pv.lint.runner` runs them.

A gate module holds the gate's class (``name``, ``description``, ``run(ctx) -> GateOutcome``) and
registers the rule codes the gate reports in pv's one rule table (:mod:`pv.rules`): its own with
``lint_rule(NAME, ...)``, and the cross-file codes of ``pv validate`` it reports with
``route(code, NAME)``.  ``pv lint --explain``, the validate gate's routing and the docs read that
table.  Adding a gate: a module here and a line in :data:`GATES`.
"""

from __future__ import annotations

from pv.lint.gates.base import Gate
from pv.lint.gates.binding import BindingGate
from pv.lint.gates.changelog import ChangelogGate
from pv.lint.gates.coverage import CoverageGate
from pv.lint.gates.duplicates import DuplicatesGate
from pv.lint.gates.falsifiability import FalsifiabilityGate
from pv.lint.gates.observations import ObservationsGate
from pv.lint.gates.references import ReferencesGate
from pv.lint.gates.status import StatusGate
from pv.lint.gates.validate import ValidateGate

GATES: tuple[type[Gate], ...] = (
    ValidateGate,
    BindingGate,
    ObservationsGate,
    FalsifiabilityGate,
    CoverageGate,
    ReferencesGate,
    StatusGate,
    ChangelogGate,
    DuplicatesGate,
)
