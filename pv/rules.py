"""Rule codes: one table of every diagnostic pv emits, with its explanation and fix hint.

``pv validate`` uses the ``PV0xx`` (reading a file) and ``PV1xx`` (the contract itself) codes;
``pv lint`` registers its own with :func:`register` and ``pv lint --explain CODE`` reads
:func:`explain`.  Codes are stable: a code is never reused for a different meaning.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, replace

from pv.diagnostics import Diagnostic, Severity


@dataclass(frozen=True)
class Rule:
    code: str
    name: str  # short slug, e.g. "unknown-key"
    severity: Severity
    summary: str  # one line
    explanation: str  # one paragraph: what it means and why it matters
    hint: str  # the default fix hint attached to each diagnostic
    gate: str = "validate"  # the `pv lint` gate that reports it (pv.lint.gates.<gate> registers its own)

    def diagnostic(
        self,
        path: str | os.PathLike[str],
        line: int,
        col: int,
        message: str,
        *,
        hint: str | None = None,
        severity: Severity | None = None,
    ) -> Diagnostic:
        return Diagnostic(
            path=os.fspath(path),
            line=line,
            col=col,
            code=self.code,
            message=message,
            hint=self.hint if hint is None else hint,
            severity=self.severity if severity is None else severity,
        )


RULES: dict[str, Rule] = {}


def register(rule: Rule) -> Rule:
    """Add a rule to the table; re-registering the same code with a different meaning is a bug."""
    existing = RULES.get(rule.code)
    if existing is not None and existing != rule:
        raise ValueError(f"rule code {rule.code} is already registered as {existing.name!r}")
    RULES[rule.code] = rule
    return rule


def rule(code: str) -> Rule:
    return RULES[code]


def lint_rule(gate: str, code: str, name: str, severity: Severity, summary: str, explanation: str, hint: str) -> str:
    """Register a rule of the lint gate ``gate`` (called by that gate's module); returns its code."""
    return register(Rule(code, name, severity, summary, explanation, hint, gate)).code


def route(code: str, gate: str) -> str:
    """Hand a rule of ``pv validate`` that looks across files to the lint gate ``gate``, which then
    reports it (called by that gate's module); returns the code."""
    RULES[code] = replace(RULES[code], gate=gate)
    return code


def gate_of(code: str) -> str:
    """The lint gate that reports ``code`` (``validate`` for a code no gate claimed)."""
    found = RULES.get(code)
    return found.gate if found is not None else "validate"


def codes_of(gate: str) -> list[str]:
    """Every code the lint gate ``gate`` reports, sorted."""
    return sorted(code for code, r in RULES.items() if r.gate == gate)


def by_name(name: str) -> Rule:
    for r in RULES.values():
        if r.name == name:
            return r
    raise KeyError(name)


def explain(code_or_name: str) -> str | None:
    """The text ``--explain`` prints, or None for an unknown code."""
    key = code_or_name.strip()
    r = RULES.get(key.upper())
    if r is None:
        try:
            r = by_name(key.lower())
        except KeyError:
            return None
    return f"{r.code} ({r.name}, {r.severity.value}): {r.summary}\n\n{r.explanation}\n\nFix: {r.hint}"


def _r(code: str, name: str, severity: Severity, summary: str, explanation: str, hint: str) -> Rule:
    return register(Rule(code, name, severity, summary, explanation, hint))


E, W = Severity.ERROR, Severity.WARNING

# --- reading the file -------------------------------------------------------------------------
UNREADABLE = _r(
    "PV001",
    "unreadable-path",
    E,
    "The path cannot be read.",
    "The path does not exist, is a broken or looping symlink, is not a regular file, or cannot be "
    "opened. Nothing in it was checked, so every claim it may hold is unverified.",
    "Check the path and its permissions; remove dangling symlinks from the contracts tree.",
)
NOT_UTF8 = _r(
    "PV002",
    "not-utf8",
    E,
    "The file is not UTF-8 text.",
    "Contracts are YAML text in UTF-8. The file holds bytes that do not decode (or NUL bytes, which "
    "mark a binary file named like a contract), so it cannot be parsed.",
    "Re-save the file as UTF-8, or move binary files out of the contracts tree.",
)
EMPTY_FILE = _r(
    "PV003",
    "empty-file",
    E,
    "The file holds no YAML document.",
    "An empty contract (or one with only comments) declares nothing; counting it as a clean "
    "contract would be a silent success.",
    "Write the contract, or delete the file.",
)
YAML_SYNTAX = _r(
    "PV004",
    "yaml-syntax",
    E,
    "The YAML does not parse.",
    "The parser stopped at the reported position. Nothing after that point was read.",
    "Fix the YAML at the reported line (indentation, an unclosed quote or bracket, a tab).",
)
NOT_MAPPING = _r(
    "PV005",
    "not-a-mapping",
    E,
    "The document is not a mapping.",
    "A contract is a mapping with `metadata`, `falsification_tests` and the other sections at the "
    "top level; a list or a scalar document cannot be one.",
    "Make the top level a mapping that starts with `metadata:`.",
)
MULTI_DOCUMENT = _r(
    "PV006",
    "multiple-documents",
    E,
    "The file holds more than one YAML document.",
    "One file is one contract; a second document after `---` would be ignored by tools that read "
    "only the first, so its claims would vanish.",
    "Split the documents into one file per contract.",
)
FORBIDDEN_TAG = _r(
    "PV007",
    "forbidden-tag",
    E,
    "A non-standard YAML tag is used.",
    "Tags such as `!!python/object` or custom `!tag`s ask the loader to build objects; contracts are "
    "plain data, and pv refuses any tag outside YAML's core schema.",
    "Remove the tag and write the value as plain YAML.",
)
ALIAS_LIMIT = _r(
    "PV008",
    "alias-expansion",
    E,
    "Aliases expand beyond the limit.",
    "YAML aliases (`*name`) can repeat a node many times over (the 'billion laughs' attack). pv caps "
    "the number of nodes an alias expansion may produce.",
    "Write the repeated values out, or use fewer nested aliases.",
)
TOO_LARGE = _r(
    "PV009",
    "file-too-large",
    E,
    "The file is larger than the size limit.",
    "Contracts are small text files; a file over the limit (1 MiB by default) is refused unread so "
    "that a stray data file cannot stall validation.",
    "Split the contract, or move data out of the contracts tree.",
)
DUPLICATE_KEY = _r(
    "PV010",
    "duplicate-key",
    E,
    "A mapping repeats a key.",
    "YAML loaders silently keep the last of two equal keys, so the first value (a whole "
    "`falsification_tests` list, say) would vanish without a word.",
    "Merge the two entries or rename one of them.",
)
NO_CONTRACTS = _r(
    "PV011",
    "no-contracts",
    E,
    "No contract files were found.",
    "Validation over zero contracts proves nothing; treating it as success would hide a wrong path "
    "or a misnamed folder.",
    "Pass the folder or files that hold the contracts (`*.yaml` / `*.yml`).",
)

# --- the contract itself ---------------------------------------------------------------------
SCHEMA = _r(
    "PV100",
    "schema",
    E,
    "A value has the wrong type or form.",
    "The value does not match the contract schema (for example a string where a list is expected). "
    "The published JSON Schema (`pv schema`) describes every field.",
    "Change the value to the type named in the message.",
)
MISSING_KEY = _r(
    "PV101",
    "missing-key",
    E,
    "A required key is missing.",
    "The section lacks a key the contract format requires (for example `prediction` on a "
    "falsifier, `version` in `metadata`).",
    "Add the key named in the message.",
)
UNKNOWN_KEY = _r(
    "PV102",
    "unknown-key",
    E,
    "A key is not part of the contract format.",
    "Unknown keys are errors because a misspelled section (`falsification_test:`) would otherwise "
    "make every falsifier in it vanish silently.",
    "Correct the spelling (see the suggestion) or remove the key.",
)
INVALID_ENUM = _r(
    "PV103",
    "invalid-enum",
    E,
    "A value is outside its closed set.",
    "Fields such as `status`, `kind` and obligation `type` take one of a fixed set of values.",
    "Use one of the values listed in the message.",
)
INVALID_SEMVER = _r(
    "PV104",
    "invalid-semver",
    E,
    "A version is not semantic versioning.",
    "Contract and changelog versions must be `MAJOR.MINOR.PATCH` (with optional pre-release and "
    "build parts) so that evidence and changes can be ordered.",
    "Write the version as, for example, `1.0.0`.",
)
INVALID_ID = _r(
    "PV105",
    "invalid-id",
    E,
    "An id does not follow its pattern.",
    "Contract ids are lower-case slugs; falsifier ids are `FALSIFY-<PREFIX>-NNN`, Kani harness ids "
    "`KANI-<PREFIX>-NNN`, obligation ids `<PREFIX>-NNN` (upper case, three or more digits).",
    "Rename the id to match the pattern in the message.",
)
STEM_MISMATCH = _r(
    "PV106",
    "id-stem-mismatch",
    E,
    "`metadata.id` differs from the file name.",
    "The file stem is how other contracts (`depends_on`) and the evidence tree find a contract; an "
    "id that disagrees with it makes the contract reachable under two names.",
    "Rename the file or change `metadata.id` so that they agree.",
)
EMPTY_PREDICTION = _r(
    "PV107",
    "empty-prediction",
    E,
    "A falsifier's `prediction` is empty.",
    "A falsification test states what a measurement would show if the claim is true; without a "
    "prediction there is nothing a result could falsify.",
    "Write the prediction as a sentence a measurement could contradict.",
)
EMPTY_REFERENCES = _r(
    "PV108",
    "empty-references",
    W,
    "`metadata.references` is empty.",
    "A claim without a source (paper, spec, upstream implementation) is hard to review; reviewers "
    "cannot tell where the bound came from.",
    "Add at least one reference to `metadata.references`.",
)
EXPECT_SYNTAX = _r(
    "PV109",
    "expect-syntax",
    E,
    "An `expect` predicate is not a valid expression.",
    "`expect` is parsed by pv's safe expression language: numbers, names, arithmetic, comparisons "
    "(chains allowed), and/or/not, and the functions abs, min, max, ln, log, log2, log10, sqrt, exp, "
    "len, isfinite, all, any. Attribute access, subscripts and other calls are refused.",
    "Fix the expression at the reported column.",
)
BAD_REFERENCE = _r(
    "PV110",
    "bad-code-reference",
    E,
    "A `check:` or `mutant:` is not of the form `module:function`.",
    "Checkers and mutants are named as a dotted module path, a colon and a function name, for "
    "example `falsifiers.qlora_compose.qlora:logit_agreement`.",
    "Write the reference as `package.module:name`.",
)
CHECK_OUTSIDE = _r(
    "PV111",
    "checker-outside-packages",
    E,
    "A `check:` names a module outside the checker packages.",
    "Only modules inside the configured checker packages (default `falsifiers`; `pv_checker_packages` "
    "in pytest's ini or `[tool.pv] checker_packages` in pyproject.toml) may be bound, so that a "
    "contract can never make the harness import or call arbitrary code. Nothing was imported.",
    "Move the checker into a checker package, or add its package to the configuration.",
)
MUTANT_OUTSIDE = _r(
    "PV113",
    "mutant-outside-packages",
    E,
    "A `mutant:` names a module outside the checker and fault packages.",
    "A mutant's module is imported to switch its fault on, so it must live in a package the project "
    "trusts: the checker packages or the fault packages (`pv_fault_packages` in pytest's ini or "
    "`[tool.pv] fault_packages`). Otherwise a contract could make `pv lint` or `pytest --pv-mutants` "
    "import any module on the machine. Nothing was imported.",
    "Name a fault in a registry inside a configured package, or add that package to `fault_packages`.",
)
LAUNCH_TOO_MANY = _r(
    "PV114",
    "launch-too-many-processes",
    E,
    "A `launch: {nproc: N}` asks for more processes than the configured cap.",
    "Each rank is a full Python process with the checker's imports (about a quarter of a GB each "
    "with torch), so a contract could exhaust the machine's memory by asking for hundreds. The cap is "
    "`max_nproc` in `[tool.pv]` (or `pv_max_nproc` in pytest's ini), 8 by default.",
    "Lower `nproc`, or raise the cap in the project's configuration.",
)
BAD_PARAMETRIZE = _r(
    "PV115",
    "bad-parametrize",
    E,
    "A falsifier's `parametrize:`, `seeds:` or `aggregate:` cannot make a set of cases.",
    "Each case of a parametrized falsifier is a pytest item and an entry of its evidence; an empty "
    "axis would run the falsifier zero times, two cases with one id would overwrite each other, and "
    "an `aggregate:` without cases has nothing to aggregate.",
    "Give every axis at least one value, make the cases differ, keep under 256 cases, and declare "
    "`parametrize:` or `seeds:` wherever `aggregate:` is used.",
)
NO_EXPECT = _r(
    "PV112",
    "no-expect",
    E,
    "A falsifier binds a checker but states no `expect` predicate.",
    "A checker only measures; the claim is the `expect` predicate in the contract. A bound falsifier "
    "without one has nothing its observations could contradict, so the plugin refuses to run it.",
    "Add `expect:` with the prediction as an expression over the observations and params.",
)
DUPLICATE_CONTRACT = _r(
    "PV120",
    "duplicate-contract-id",
    E,
    "Two files declare the same contract id.",
    "Contract ids key dependencies and evidence; two contracts with one id make both ambiguous.",
    "Rename one of the contracts.",
)
DUPLICATE_FALSIFIER = _r(
    "PV121",
    "duplicate-falsify-id",
    E,
    "A FALSIFY id is declared twice in the tree.",
    "FALSIFY ids name pytest items and evidence entries across the whole tree; a repeated id makes "
    "one result overwrite the other.",
    "Give each falsifier its own id.",
)
DUPLICATE_OBLIGATION = _r(
    "PV122",
    "duplicate-obligation-id",
    E,
    "A proof obligation id is declared twice in the tree.",
    "Obligation ids are what falsifiers and Kani harnesses point at; a repeated id makes those references ambiguous.",
    "Give each obligation its own id.",
)
DUPLICATE_KANI = _r(
    "PV123",
    "duplicate-kani-id",
    E,
    "A Kani harness id is declared twice in the tree.",
    "Kani harness ids must be unique across the tree so that proofs map to one obligation each.",
    "Give each harness its own id.",
)
UNRESOLVED_OBLIGATION = _r(
    "PV124",
    "unresolved-obligation",
    E,
    "A falsifier or Kani harness names an obligation that does not exist.",
    "The `obligation:` reference resolves to no proof obligation id in the contract tree, so the "
    "test supports no stated property.",
    "Correct the obligation id, or add the obligation to `proof_obligations`.",
)
UNKNOWN_DEPENDENCY = _r(
    "PV125",
    "unknown-dependency",
    E,
    "`depends_on` names a contract that does not exist.",
    "Each entry of `metadata.depends_on` must be the id of a contract in the validated tree.",
    "Correct the contract id, or validate the folder that holds the dependency too.",
)
DEPENDENCY_CYCLE = _r(
    "PV126",
    "dependency-cycle",
    E,
    "`depends_on` forms a cycle.",
    "Contracts build on one another; a cycle means no contract in it can be established first.",
    "Remove one edge of the cycle shown in the message.",
)
PARAM_NAMED_LIKE_FIXTURE = _r(
    "PV127",
    "param-named-like-fixture",
    E,
    "A param has the name of a pytest fixture.",
    "Every checker parameter that no param names is a pytest fixture, requested by name; a param "
    "with a fixture's name would silently replace it (a contract deciding where `tmp_path` points, or "
    "what `pv_artifacts` is), so the run refuses it. Validate knows pytest's and pv's own fixtures; the "
    "run also knows the project's conftest fixtures.",
    "Rename the param (and the checker's parameter it feeds).",
)
