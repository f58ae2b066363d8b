"""Rule codes of lint's own gates, registered in pv's one rule table (:mod:`pv.rules`).

The validate gate reports validate's codes unchanged; the codes here are what the later gates
add.  ``pv lint --explain CODE`` reads the same table for both.
"""

from __future__ import annotations

from pv.diagnostics import Severity
from pv.rules import Rule, register

E, W = Severity.ERROR, Severity.WARNING


def _r(code: str, name: str, severity: Severity, summary: str, explanation: str, hint: str) -> str:
    register(Rule(code, name, severity, summary, explanation, hint))
    return code


# --- binding -------------------------------------------------------------------------------
CHECK_MISSING = _r(
    "PVL201",
    "no-checker",
    W,
    "A falsifier names no checker.",
    "Without `check:` a falsifier cannot run: it is documentation, not a test, and no evidence can "
    "ever back it. Contracts in the Rust dialect start this way; the binding is added later. It is a "
    "warning by default and an error with `--strict-test-binding`.",
    "Add `check: package.module:function` naming a `@pv.checker` function.",
)
CHECK_UNRESOLVED = _r(
    "PVL202",
    "checker-unresolved",
    E,
    "A falsifier's checker does not import or is not registered.",
    "The `check:` reference names a module that fails to import, a function that does not exist, or "
    "a function not decorated with `@pv.checker`. The falsifier could only ever be an `error` verdict, "
    "so this is an error, with the closest registered checker suggested when one is near.",
    "Fix the module path or function name (see the suggestion), or decorate the function with "
    "`@pv.checker(observes=[...])`.",
)
CHECK_ORPHAN = _r(
    "PVL203",
    "checker-orphan",
    W,
    "A checker is registered for FALSIFY ids no contract declares.",
    "`@checker(ids=[...])` records which falsifiers a checker was written for. When none of the "
    "contracts declares such an id any more, the checker is dead code, or a contract lost a falsifier "
    "by accident.",
    "Restore the falsifier in its contract, or drop the id from the checker's `ids`.",
)
CHECK_PACKAGE_BROKEN = _r(
    "PVL204",
    "checker-package-broken",
    W,
    "A checker package fails to import.",
    "lint imports every module of the configured checker packages to find orphaned checkers; a module "
    "that fails to import will also fail every falsifier bound to it.",
    "Fix the import error, or correct `[tool.pv] checker_packages` / `--checker-package`.",
)
CHECK_PARAMS = _r(
    "PVL205",
    "checker-params",
    E,
    "A falsifier's params name a parameter its checker does not take.",
    "Every key of `params:` is passed to the checker by keyword (except `seed`, which the harness "
    "consumes). A key the checker's signature cannot take would make the falsifier an `error` verdict "
    "at run time; lint reads the signature without calling the checker and says so first.",
    "Rename the param to the checker's parameter (see the suggestion), or add it to the checker's signature.",
)
# --- observations --------------------------------------------------------------------------
OBSERVATION_UNKNOWN = _r(
    "PVL301",
    "unknown-observation",
    E,
    "An expect predicate reads a name that nothing provides.",
    "Every name in `expect` must be a key of the falsifier's `params` or an observation the bound "
    "checker declares in `@checker(observes=[...])`. Otherwise the predicate fails with an `error` "
    "verdict at run time, usually after the expensive part of the measurement.",
    "Correct the name, add it to `params`, or declare it in the checker's `observes`.",
)
EXPECT_UNPARSABLE = _r(
    "PVL302",
    "expect-unparsable",
    E,
    "An expect predicate does not parse.",
    "The predicate must be valid in pv's safe expression language; see PV109.",
    "Fix the expression at the reported column.",
)
# --- falsifiability -----------------------------------------------------------------------------
MUTANT_MISSING = _r(
    "PVL401",
    "no-mutant",
    E,
    "A ship-blocking falsifier names no mutant.",
    "Every falsifier must be able to fail. The mutant is a planted defect the harness switches on to "
    "show that the checker then reports `falsified`; a ship-blocking falsifier without one may be "
    "vacuous and still block or pass a release.",
    "Add `mutant: module:fault` naming a fault registered in the system's FAULTS registry.",
)
MUTANT_UNRESOLVED = _r(
    "PVL402",
    "mutant-unresolved",
    E,
    "A falsifier's mutant is not in any fault registry.",
    "The `mutant:` module does not import, exposes no `FAULTS` registry, or its registry has no fault "
    "of that name, so the mutant run could not happen.",
    "Correct the fault name (see the registry's names) or register the fault.",
)
# --- coverage ---------------------------------------------------------------------------------
OBLIGATION_UNCOVERED = _r(
    "PVL501",
    "obligation-uncovered",
    E,
    "A proof obligation is covered by no falsifier.",
    "An obligation with an id that no falsifier cites (`obligation: ID`) is a claim nothing tests; "
    "its contract would look complete while one of its properties is never measured.",
    "Add a falsifier with `obligation:` set to the id, or remove the obligation.",
)
# --- status -----------------------------------------------------------------------------------
STATUS_UNBACKED = _r(
    "PVL701",
    "status-unbacked",
    E,
    "A contract's status is above what its verified evidence backs.",
    "Status comes from evidence, never from a hand edit. The newest verified, non-stale bundle for the "
    "contract supports a lower status than the one written in `metadata.status` (or the evidence "
    "was recorded against other contract bytes).",
    "Run the falsifiers and `pv promote`, or set the status back to what the evidence supports.",
)
STATUS_NO_EVIDENCE = _r(
    "PVL702",
    "status-without-evidence",
    E,
    "A status above DRAFT has no evidence at all.",
    "Until a verified evidence bundle exists for a contract, its only honest status is DRAFT.",
    "Set `metadata.status: DRAFT`, or record evidence and promote with `pv promote`.",
)
STATUS_BEHIND = _r(
    "PVL703",
    "status-behind-evidence",
    E,
    "A contract's status is below what its verified evidence supports.",
    "The status must be exactly what the evidence supports, in both directions: the same rule as "
    "`pv promote --check`. A status left below its evidence hides a claim that has been shown to hold "
    "(and a status the evidence moved down must be written down too).",
    "Run `pv promote` and commit the status change it writes.",
)
STATUS_PENDING = _r(
    "PVL704",
    "status-pending-this-change",
    W,
    "On a pull request, a status's evidence measured other code or contract bytes than the PR's.",
    "Evidence is bound to the code it measured. A pull request that edits a checker, the system "
    "under test or a contract leaves the protected branch's evidence stale for its own tree, and its "
    "own run is unsigned; neither backs a status, and neither says the claim is false. The protected "
    "branch's CI measures and signs the change after it merges (`pv lint --pr`).",
    "Nothing on the pull request; if CI on the protected branch then backs another status, `pv promote`.",
)
# --- changelog ----------------------------------------------------------------------------------
CHANGELOG_TOP_MISMATCH = _r(
    "PVL801",
    "changelog-version-mismatch",
    E,
    "The newest changelog entry is not `metadata.version`.",
    "The changelog is newest-first; its top entry must describe the version the contract declares, "
    "or a version bump went unrecorded (or the changelog was edited without a bump).",
    "Add a changelog entry for the new version at the top, or correct `metadata.version`.",
)
CHANGELOG_ORDER = _r(
    "PVL802",
    "changelog-order",
    E,
    "Changelog versions do not strictly decrease down the list.",
    "Entries are newest first, so each version must be lower than the one above it; a repeated or "
    "out-of-order version makes the history ambiguous.",
    "Order entries newest first and give each one a distinct version.",
)
CHANGELOG_DATE = _r(
    "PVL803",
    "changelog-date",
    E,
    "A changelog date is not an ISO date.",
    "Dates are `YYYY-MM-DD` so that they sort and parse everywhere.",
    "Write the date as, for example, `2026-11-21` (quoted).",
)
CHANGELOG_VERSION = _r(
    "PVL804",
    "changelog-semver",
    E,
    "A changelog version is not semantic versioning.",
    "Changelog versions are compared with each other and with `metadata.version`; see PV104.",
    "Write the version as `MAJOR.MINOR.PATCH`.",
)
CHANGELOG_EMPTY = _r(
    "PVL805",
    "changelog-empty",
    W,
    "The contract has no changelog.",
    "Without a changelog nobody can tell what a version bump changed, or whether evidence recorded "
    "against an older version still means anything.",
    "Add `metadata.changelog` with an entry for the current version, e.g. "
    '`changelog: [{version: 1.0.0, date: "2026-01-01", change: initial}]`; `pv promote` also writes one '
    "when it promotes, without making the evidence stale.",
)
VERSION_BUMP_TOO_SMALL = _r(
    "PVL806",
    "version-bump-too-small",
    E,
    "The version did not bump enough for what changed since the last commit (or `--base REF`).",
    "Compared with the contract at git `HEAD`, or at `pv lint --base REF` (in pull-request CI, the "
    "target branch), when there is git history: removing a falsifier or "
    "loosening a bound needs a major bump, adding one a minor bump, rewording a patch bump; `pv diff "
    "--git HEAD` lists the changes. Status and changelog edits made by `pv promote` need no bump.",
    "Raise `metadata.version` (and the top changelog entry) to at least the bump `pv diff` reports.",
)
# --- duplicates ---------------------------------------------------------------------------------
DUPLICATE_STEM = _r(
    "PVL902",
    "duplicate-file-stem",
    E,
    "Two contract files share a file stem.",
    "The file stem is the contract's id for evidence and `depends_on`; two files with the same stem "
    "in different folders collide even when only one declares the id.",
    "Rename one of the files (and its metadata.id).",
)
