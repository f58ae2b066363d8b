"""pv promote: promotion, demotion, refusals, and an edit that keeps every other byte."""

from __future__ import annotations

import datetime as dt
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pv.evidence.status import backing_status
from pv.evidence.verify import verify_bundle
from pv.loader import load_contract_file
from pv.model import Status
from pv.promote import PromoteError, apply, decide, edit_text
from pv.results import Verdict
from tests.pv.evidence.conftest import CONTRACT, Project, Writer, all_survive, result

TODAY = dt.date(2026, 3, 2)
S, F, K = Verdict.SURVIVED, Verdict.FALSIFIED, Verdict.SKIPPED


def promote(project: Project) -> tuple[Status, Status]:
    decision = decide(project.contract, project.evidence, project.root)
    if decision.changed:
        apply(decision, TODAY, project.root)
    return decision.current, decision.target


def test_promotion_edits_only_status_and_one_changelog_line(project: Project, write: Writer) -> None:
    bundle = write(all_survive())
    before = project.contract.read_bytes()
    assert promote(project) == (Status.DRAFT, Status.ACTIVE)
    rel = bundle.relative_to(project.root).as_posix()
    entry = (
        '    - {version: 1.0.0, date: "2026-03-02", change: "status DRAFT -> ACTIVE from verified evidence", '
        f'evidence: "{rel}"}}\n'
    )
    expected = (
        before.decode()
        .replace("status: DRAFT", "status: ACTIVE", 1)
        .replace("  changelog:\n", "  changelog:\n" + entry)
    )
    assert project.contract.read_bytes() == expected.encode()
    # the bytes outside the two edits are the original bytes, comments included
    assert b"# Demo contract: every comment here must survive" in project.contract.read_bytes()
    loaded = load_contract_file(project.contract)
    assert loaded.ok and loaded.contract is not None
    assert loaded.contract.metadata.status is Status.ACTIVE
    assert loaded.contract.metadata.changelog[0].evidence == rel
    # the promotion did not stale the bundle it came from
    assert verify_bundle(bundle).ok
    assert backing_status(project.evidence, project.contract) == (Status.ACTIVE, bundle)
    assert promote(project) == (Status.ACTIVE, Status.ACTIVE)  # idempotent


def test_hardware_skips_promote_to_algorithm_level(project: Project, write: Writer) -> None:
    write(
        [
            result("FALSIFY-DEMO-001", S),
            result("FALSIFY-DEMO-002", K, skip_reason="no CUDA", skip_kind="hardware", mutant=None),
        ]
    )
    assert promote(project) == (Status.DRAFT, Status.ACTIVE_ALGORITHM_LEVEL)
    assert "status: ACTIVE_ALGORITHM_LEVEL" in project.contract.read_text()


def test_falsified_ship_blocker_demotes_and_says_why(project: Project, write: Writer) -> None:
    write(all_survive(), started="2026-03-01T10:00:00+00:00")
    promote(project)
    failing = [
        result("FALSIFY-DEMO-001", F, mutant=None, observations={"step0_loss": 4.2}),
        result("FALSIFY-DEMO-002", S),
    ]
    failing[0].message = "step0_loss(=4.2) <= 3.0 is false"
    newer = write(failing, started="2026-03-05T10:00:00+00:00")
    assert promote(project) == (Status.ACTIVE, Status.DRAFT)
    loaded = load_contract_file(project.contract)
    assert loaded.contract is not None
    top = loaded.contract.metadata.changelog[0]
    assert top.change.startswith(
        "status ACTIVE -> DRAFT: FALSIFY-DEMO-001: falsified: step0_loss(=4.2) <= 3.0 is false"
    )
    assert top.evidence == newer.relative_to(project.root).as_posix()
    assert [e.version for e in loaded.contract.metadata.changelog] == ["1.0.0", "1.0.0", "1.0.0"]


def test_advisory_falsified_does_not_demote(project: Project, write: Writer) -> None:
    write(all_survive(), started="2026-03-01T10:00:00+00:00")
    promote(project)
    write(
        [result("FALSIFY-DEMO-001", S), result("FALSIFY-DEMO-002", S), result("FALSIFY-DEMO-003", F, mutant=None)],
        started="2026-03-05T10:00:00+00:00",
    )
    assert promote(project) == (Status.ACTIVE, Status.ACTIVE)


def test_stale_evidence_never_promotes(project: Project, write: Writer) -> None:
    write(all_survive())
    project.contract.write_text(project.contract.read_text().replace("<= 3.0", "<= 2.5"))
    before = project.contract.read_bytes()
    decision = decide(project.contract, project.evidence, project.root)
    assert not decision.changed
    with pytest.raises(PromoteError):
        apply(decision, TODAY)
    assert project.contract.read_bytes() == before


def test_tampered_evidence_never_promotes(project: Project, write: Writer) -> None:
    bundle = write(all_survive())
    (bundle / "statement.intoto.json").write_text("{}\n")
    assert promote(project) == (Status.DRAFT, Status.DRAFT)


def test_missing_evidence_never_promotes_and_moves_an_unbacked_status_down(project: Project) -> None:
    # the one rule of lint and promote --check: a status is exactly what the evidence supports
    project.contract.write_text(project.contract.read_text().replace("status: DRAFT ", "status: ACTIVE"))
    decision = decide(project.contract, project.evidence, project.root)
    assert decision.changed and decision.target is Status.DRAFT
    assert decision.reason.startswith("demoted: no evidence")


def test_retired_is_left_alone(project: Project, write: Writer) -> None:
    write(all_survive())
    project.contract.write_text(project.contract.read_text().replace("status: DRAFT ", "status: RETIRED"))
    assert promote(project) == (Status.RETIRED, Status.RETIRED)


ENTRY = {"version": "1.0.0", "date": "2026-03-02", "change": "promoted", "evidence": "evidence/x/1"}


@pytest.mark.parametrize(
    ("source", "expected"),
    [
        (  # block entries, indentless, quoted status
            'metadata:\n  version: 1.0.0\n  status: "DRAFT"\n  changelog:\n  - version: 1.0.0\n    date: "2026-01-01"\n'
            "    change: initial\nx: 1\n",
            'metadata:\n  version: 1.0.0\n  status: "ACTIVE"\n  changelog:\n'
            '  - version: 1.0.0\n    date: "2026-03-02"\n'
            '    change: "promoted"\n    evidence: "evidence/x/1"\n  - version: 1.0.0\n    date: "2026-01-01"\n'
            "    change: initial\nx: 1\n",
        ),
        (  # neither status nor changelog: both are added inside metadata, at its indentation
            "metadata:\n    version: 1.0.0\n    description: d   # note\n# comment\nx: 1\n",
            "metadata:\n    version: 1.0.0\n    status: ACTIVE\n    description: d   # note\n    changelog:\n"
            '      - {version: 1.0.0, date: "2026-03-02", change: "promoted", evidence: "evidence/x/1"}\n'
            "# comment\nx: 1\n",
        ),
        (  # an empty flow list
            "metadata:\n  version: 1.0.0\n  status: DRAFT\n  changelog: []\n",
            'metadata:\n  version: 1.0.0\n  status: ACTIVE\n  changelog: [{version: 1.0.0, date: "2026-03-02", '
            'change: "promoted", evidence: "evidence/x/1"}]\n',
        ),
        (  # Windows line endings are kept
            "metadata:\r\n  version: 1.0.0\r\n  status: DRAFT\r\n  changelog:\r\n"
            "    - {version: 1.0.0, date: '2026-01-01', change: x}\r\n",
            "metadata:\r\n  version: 1.0.0\r\n  status: ACTIVE\r\n  changelog:\r\n"
            '    - {version: 1.0.0, date: "2026-03-02", change: "promoted", evidence: "evidence/x/1"}\r\n'
            "    - {version: 1.0.0, date: '2026-01-01', change: x}\r\n",
        ),
        (  # the last value a literal block followed by blank lines and a comment: inserted after its text
            "metadata:\n  id: d\n  description: |\n    line one\n    line two\n\n# a comment\nx: {}\n",
            "metadata:\n  id: d\n  description: |\n    line one\n    line two\n  status: ACTIVE\n  changelog:\n"
            '    - {version: 1.0.0, date: "2026-03-02", change: "promoted", evidence: "evidence/x/1"}\n'
            "\n# a comment\nx: {}\n",
        ),
        (  # the last value a list of mappings with trailing spaces: inserted after its last scalar's line
            "metadata:\n  id: d\n  authors:\n    - name: a\n      email: b  \n\n\nx: 1\n",
            "metadata:\n  id: d\n  authors:\n    - name: a\n      email: b  \n  status: ACTIVE\n  changelog:\n"
            '    - {version: 1.0.0, date: "2026-03-02", change: "promoted", evidence: "evidence/x/1"}\n\n\nx: 1\n',
        ),
        (  # a list of plain values last
            "metadata:\n  id: d\n  tags:\n  - a\n  - b   \n",
            "metadata:\n  id: d\n  tags:\n  - a\n  - b   \n  status: ACTIVE\n  changelog:\n"
            '    - {version: 1.0.0, date: "2026-03-02", change: "promoted", evidence: "evidence/x/1"}\n',
        ),
        (  # no final line break: the file gains one, and the insertions lines of their own
            "metadata:\n  id: d\n  version: 1.0.0",
            "metadata:\n  id: d\n  version: 1.0.0\n  status: ACTIVE\n  changelog:\n"
            '    - {version: 1.0.0, date: "2026-03-02", change: "promoted", evidence: "evidence/x/1"}\n',
        ),
        (  # the same with Windows line endings
            "metadata:\r\n  id: d\r\n  version: 1.0.0",
            "metadata:\r\n  id: d\r\n  version: 1.0.0\r\n  status: ACTIVE\r\n  changelog:\r\n"
            '    - {version: 1.0.0, date: "2026-03-02", change: "promoted", evidence: "evidence/x/1"}\r\n',
        ),
    ],
)
def test_edit_shapes(source: str, expected: str) -> None:
    assert edit_text(source, Status.ACTIVE, ENTRY) == expected


def test_flow_metadata_is_refused() -> None:
    with pytest.raises(PromoteError, match="flow style"):
        edit_text("metadata: {version: 1.0.0, status: DRAFT}\n", Status.ACTIVE, ENTRY)


def test_fixture_contract_has_comments_to_lose() -> None:
    assert CONTRACT.count("#") >= 4  # the byte-preservation test would be vacuous without them


def test_written_file_is_replaced_atomically(project: Project, write: Writer, tmp_path: Path) -> None:
    write(all_survive())
    promote(project)
    assert sorted(p.name for p in project.contract.parent.iterdir()) == ["demo-v1.yaml"]


def _spans(node: object) -> list[tuple[int, int, object]]:
    import yaml

    assert isinstance(node, yaml.Node)
    own = [(node.start_mark.index, node.end_mark.index, getattr(node, "style", None))]
    if isinstance(node, yaml.MappingNode):
        return own + [s for pair in node.value for n in pair for s in _spans(n)]
    if isinstance(node, yaml.SequenceNode):
        return own + [s for n in node.value for s in _spans(n)]
    return own


@pytest.mark.parametrize(
    "text",
    [
        CONTRACT,
        "\ufeffmetadata:\n  id: x\n  status: DRAFT\n",
        "metadata:\r\n  id: é ü\r\n  status: 'DRAFT'\r\n  changelog: [{a: 1}]\r\n",
        'a: b\x85c: d\u2028e: "ñ"\n',
        "a: 😀x\nb: [1, 😀]\nc: {d: 😀}\n",
        "a: |\n  x\n\n  y\n\nb: &anchor c\nd: *anchor\n",
    ],
)
def test_the_fast_composer_marks_characters_as_pyyaml_does(text: str) -> None:
    """The edit composes with libyaml and rebuilds each mark's index from its line and column;
    every node must sit where PyYAML's own loader puts it, or the edit lands in the wrong place."""
    import yaml

    from pv.loader import compose_marked

    expected = yaml.compose(text, Loader=yaml.SafeLoader)
    assert _spans(compose_marked(text)) == _spans(expected)


_TEXT = st.text(st.characters(blacklist_categories=("Cs", "Cc")), max_size=12)
_DATA = st.recursive(
    st.none() | st.booleans() | st.integers() | _TEXT,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(_TEXT, inner, max_size=4),
    max_leaves=20,
)


@settings(max_examples=150, deadline=None)
@given(
    data=st.dictionaries(_TEXT, _DATA, min_size=1, max_size=5),
    flow=st.booleans(),
    newline=st.sampled_from(["\n", "\r\n"]),
    bom=st.booleans(),
)
def test_the_fast_composer_agrees_with_pyyaml_on_any_document(data: dict, flow: bool, newline: str, bom: bool) -> None:
    import yaml

    from pv.loader import compose_marked

    text = yaml.safe_dump(data, allow_unicode=True, default_flow_style=flow, width=40)
    text = ("\ufeff" if bom else "") + text.replace("\n", newline)
    assert _spans(compose_marked(text)) == _spans(yaml.compose(text, Loader=yaml.SafeLoader))


# --- a contract with no changelog, and every refusal naming its cause and its fix -------------


def _without_changelog(text: str) -> str:
    return text.replace('  changelog:\n    - {version: 1.0.0, date: "2026-01-01", change: initial}\n', "")


def test_a_contract_without_a_changelog_is_promoted_and_its_evidence_stays_current(
    project: Project, write: Writer
) -> None:
    project.contract.write_text(_without_changelog(CONTRACT), encoding="utf-8")
    bundle = write(all_survive())  # the run saw the contract as it is: no changelog at all
    assert promote(project) == (Status.DRAFT, Status.ACTIVE)
    loaded = load_contract_file(project.contract)
    assert loaded.contract is not None and loaded.contract.metadata.status is Status.ACTIVE
    assert [e.evidence for e in loaded.contract.metadata.changelog] == [bundle.relative_to(project.root).as_posix()]
    assert verify_bundle(bundle).ok  # the changelog pv wrote did not stale the bundle
    assert backing_status(project.evidence, project.contract) == (Status.ACTIVE, bundle)


def test_an_empty_changelog_and_none_bind_evidence_alike() -> None:
    from pv.bundle.digest import binding_digest_of

    base = {"metadata": {"id": "x", "version": "1.0.0"}}
    empty = {"metadata": {"id": "x", "version": "1.0.0", "changelog": []}}
    promoted = {"metadata": {"id": "x", "version": "1.0.0", "changelog": [{"change": "p", "evidence": "e"}]}}
    authored = {"metadata": {"id": "x", "version": "1.0.0", "changelog": [{"change": "initial"}]}}
    assert binding_digest_of(base) == binding_digest_of(empty) == binding_digest_of(promoted)
    assert binding_digest_of(authored) != binding_digest_of(base)  # an authored entry is part of the claim


def _says_cause_and_fix(message: str, cause: str) -> None:
    assert cause in message, message
    assert "pv promote" in message or "pv validate" in message, f"no command to run next: {message}"


@pytest.mark.parametrize(
    ("text", "cause"),
    [
        ("metadata: [\n", "not valid YAML"),
        ("proof_obligations: []\n", "no `metadata:` mapping"),
        ("metadata: {version: 1.0.0, status: DRAFT}\n", "flow style"),
        ("metadata:\n  version: 1.0.0\n  status: |\n    DRAFT\n", "one-line value"),
        ("metadata:\n  version: 1.0.0\n  status: DRAFT\n  changelog: not a list\n", "neither a list nor empty"),
    ],
    ids=["not-yaml", "no-metadata", "flow", "block-status", "changelog-scalar"],
)
def test_edit_refusals_name_the_cause_and_the_fix(text: str, cause: str) -> None:
    with pytest.raises(PromoteError) as exc:
        edit_text(text, Status.ACTIVE, ENTRY)
    _says_cause_and_fix(str(exc.value), cause)


@pytest.mark.parametrize(
    ("mangle", "cause"),
    [
        (lambda t: t.replace("metadata:\n", "metadata: [\n", 1), "does not load"),
        (lambda t: t.replace("status: DRAFT", "status: SHIPPED"), "is not a status pv knows"),
    ],
    ids=["unloadable", "unknown-status"],
)
def test_decide_refusals_name_the_cause_and_the_fix(project: Project, mangle: Any, cause: str) -> None:
    project.contract.write_text(mangle(CONTRACT), encoding="utf-8")
    with pytest.raises(PromoteError) as exc:
        decide(project.contract, project.evidence, project.root)
    _says_cause_and_fix(str(exc.value), cause)
    if cause.startswith("is not a status"):
        assert "DRAFT" in str(exc.value) and "ACTIVE" in str(exc.value)


def test_apply_refusals_name_the_cause_and_the_fix(
    project: Project, write: Writer, monkeypatch: pytest.MonkeyPatch
) -> None:
    import pv.promote

    write(all_survive())
    decision = decide(project.contract, project.evidence, project.root)
    # the file changed after the decision
    project.contract.write_text(CONTRACT + "\n# edited\n", encoding="utf-8")
    with pytest.raises(PromoteError) as exc:
        apply(decision, TODAY, project.root)
    _says_cause_and_fix(str(exc.value), "changed since the decision was taken")
    # pv's edit would not be exactly the promotion: nothing is written, the lines to write are given
    project.contract.write_text(CONTRACT, encoding="utf-8")
    decision = decide(project.contract, project.evidence, project.root)
    real = pv.promote.edit_text
    monkeypatch.setattr(pv.promote, "edit_text", lambda *a: real(*a).replace("kind: training-loop", "kind: kernel"))
    with pytest.raises(PromoteError) as exc:
        apply(decision, TODAY, project.root)
    message = str(exc.value)
    assert "nothing was written" in message and "status: ACTIVE" in message and "evidence:" in message
    assert "pv promote --check" in message
    assert project.contract.read_text(encoding="utf-8") == CONTRACT
    # and the one a library caller can reach: nothing to do
    monkeypatch.undo()
    apply(decision, TODAY, project.root)
    again = decide(project.contract, project.evidence, project.root)
    with pytest.raises(PromoteError, match="nothing to change"):
        apply(again, TODAY, project.root)


def test_each_decisions_reason(project: Project, write: Writer) -> None:
    assert decide(project.contract, project.evidence, project.root).reason == "not ACTIVE: no evidence"  # DRAFT
    bundle = write(all_survive(), started="2026-03-01T10:00:00+00:00")
    rel = bundle.relative_to(project.root).as_posix()
    decision = decide(project.contract, project.evidence, project.root)
    assert (decision.target, decision.reason, decision.bundle) == (Status.ACTIVE, f"promoted from {rel}", bundle)
    assert decision.raw == project.contract.read_bytes() and decision.data is not None and not decision.blocked
    apply(decision, TODAY, project.root)
    again = decide(project.contract, project.evidence, project.root)
    assert (again.changed, again.reason) == (False, "unchanged")


def test_a_status_held_below_active_says_why(project: Project, write: Writer) -> None:
    skip = result("FALSIFY-DEMO-002", K, skip_reason="no CUDA", skip_kind="hardware", mutant=None)
    bundle = write([result("FALSIFY-DEMO-001", S), skip])
    up = decide(project.contract, project.evidence, project.root)
    assert (up.target, up.reason) == (
        Status.ACTIVE_ALGORITHM_LEVEL,
        f"promoted from {bundle.relative_to(project.root).as_posix()}",
    )
    apply(up, TODAY, project.root)
    held = decide(project.contract, project.evidence, project.root)
    reasons = held.assessment.reasons if held.assessment else []
    assert reasons and held.reason == "not ACTIVE: " + "; ".join(reasons) and not held.changed


def test_statuses_and_contracts_promote_refuses(project: Project) -> None:
    text = project.contract.read_text()
    project.contract.write_text(text.replace("status: DRAFT", "status: SHIPPED", 1))
    with pytest.raises(PromoteError) as caught:
        decide(project.contract, project.evidence, project.root)
    assert str(caught.value) == (
        f"{project.contract}: metadata.status 'SHIPPED' is not a status pv knows; set it to one of "
        "DRAFT, ACTIVE_ALGORITHM_LEVEL, ACTIVE, RETIRED (DRAFT if unsure), then run `pv promote` again"
    )
    project.contract.write_text(text.replace("status: DRAFT", "status: RETIRED", 1))
    retired = decide(project.contract, project.evidence, project.root)
    assert (retired.current, retired.target, retired.reason) == (Status.RETIRED, Status.RETIRED, "retired: left alone")
    project.contract.write_text("metadata: [1\n")
    with pytest.raises(PromoteError) as caught:
        decide(project.contract, project.evidence, project.root)
    assert str(caught.value).startswith(f"{project.contract}: the contract does not load (")
    assert str(caught.value).endswith(
        f"fix it (`pv validate {project.contract}` shows where), then run `pv promote` again"
    )


def test_the_text_positions_an_edit_is_placed_by() -> None:
    import yaml

    from pv.promote import _after_line, _content_end

    assert [_after_line(t, 0) for t in ("a\nb", "ab", "\nab")] == [2, 2, 1]
    text = "a:\nb: |\n  valueX\n\n\nc: [1, 2]   \nd: plain  \n"
    mapping = yaml.compose(text)
    (_, empty), (_, block), (_, flow), (_, plain) = mapping.value
    assert _content_end(text, empty) == empty.start_mark.index  # an empty value ends where it starts
    # a block scalar's mark runs on over the blank lines after it: they are left out, nothing else
    assert text[: _content_end(text, block)].endswith("  valueX")
    assert text[: _content_end(text, flow)].endswith("c: [1, 2]")
    assert text[: _content_end(text, plain)].endswith("d: plain")
    assert _content_end(text, mapping) == _content_end(text, plain)  # a block mapping ends at its last value


def test_the_refusal_to_edit_a_layout_gives_the_two_lines_to_write_by_hand(tmp_path: Path) -> None:
    from pv.model import Status
    from pv.promote import Decision, _by_hand

    decision = Decision(tmp_path / "c.yaml", "c-v1", "1.0.0", Status.DRAFT, Status.ACTIVE, "verified")
    entry = {"version": "1.0.0", "date": "2026-12-02", "change": "status DRAFT -> ACTIVE"}
    assert _by_hand(decision, entry) == (
        f"{tmp_path / 'c.yaml'}: pv cannot place its edit in this file's layout without changing something else, "
        "so nothing was written; set `status: ACTIVE` under metadata and add this first entry to "
        'metadata.changelog by hand:\n    - {version: 1.0.0, date: "2026-12-02", change: "status DRAFT -> ACTIVE"}\n'
        "then `pv promote --check` confirms the status"
    )
