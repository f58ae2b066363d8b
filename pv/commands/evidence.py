"""``pv evidence verify``, ``gc``, ``merge`` and ``pv promote`` (``pv report`` is in :mod:`pv.commands.review`).

Exit codes: 0 success, 1 a finding (a bundle that does not verify, a status that would change
under ``--check``, nothing to verify), 2 usage (a path that does not exist, a bad option).
"""

from __future__ import annotations

import json
import os
from collections import Counter
from pathlib import Path
from typing import Annotated, Any

import typer

from pv.app import app
from pv.config import ConfigError, PvConfig
from pv.project import Project

evidence_app = typer.Typer(name="evidence", help="Check and tidy evidence bundles.", no_args_is_help=True)
app.add_typer(evidence_app, name="evidence")

EvidenceOpt = Annotated[
    Path | None, typer.Option("--evidence", help="Evidence directory (default: [tool.pv] evidence).")
]
KeysOpt = Annotated[
    Path | None,
    typer.Option(
        "--trusted-keys",
        help="PEM file of ed25519 public keys; only bundles signed by one count "
        "(default: $PV_TRUSTED_KEYS, else [tool.pv] trusted_keys).",
    ),
]


SignedOpt = Annotated[
    bool | None,
    typer.Option(
        "--require-signed/--no-require-signed",
        help="Only bundles signed by a trusted key count; fail without trusted keys "
        "(default: $PV_REQUIRE_SIGNED, else [tool.pv] require_signed).",
    ),
]


def _usage(command: str, message: str) -> typer.Exit:
    typer.echo(f"pv {command}: {message}", err=True)
    return typer.Exit(2)


def _project(
    command: str,
    evidence: Path | None = None,
    contracts: Path | None = None,
    trusted_keys: Path | None = None,
    require_signed: bool | None = None,
) -> Project:
    try:
        return Project.open(
            evidence=evidence, contracts=contracts, trusted_keys=trusted_keys, require_signed=require_signed
        )
    except ConfigError as exc:
        raise _usage(command, str(exc)) from None


def _keys(command: str, config: PvConfig, say_trust: bool = False) -> Any:
    """The trusted keys; with ``say_trust``, first one line (stderr) on which keys count, or that none do."""
    try:
        ring = config.key_ring()
        if say_trust:
            typer.echo(f"pv {command}: {config.trust_statement()}", err=True)
        return ring
    except ConfigError as exc:
        raise _usage(command, str(exc)) from None


def _contract_files(command: str, project: Project, paths: list[Path] | None) -> list[Path]:
    targets = paths or [project.config.contracts]
    missing = [p for p in targets if not p.exists()]
    if missing:
        raise _usage(command, f"no such file or directory: {', '.join(map(str, missing))}")
    files = project.files(targets)
    if not files:
        raise _usage(command, f"no contract files under {', '.join(map(str, targets))}")
    return files


@evidence_app.command("verify")
def verify(
    path: Annotated[
        Path | None, typer.Argument(help="A bundle, a contract's evidence folder, or the evidence folder.")
    ] = None,
    allow_stale: Annotated[
        bool, typer.Option("--allow-stale", help="Intact bundles of since-edited contracts or code do not fail.")
    ] = False,
    allow_untrusted: Annotated[
        bool,
        typer.Option(
            "--allow-untrusted",
            help="Intact bundles without a trusted signature (a pull request's own run) do not fail; "
            "they still never back a status.",
        ),
    ] = False,
    trusted_keys: KeysOpt = None,
    require_signed: SignedOpt = None,
) -> None:
    """Recompute every digest, check each bundle against its schema, its signature (a signature
    that does not match its statement is tampering, with or without trusted keys) and the current
    contract.  Superseded bundles (bound to an earlier contract version) are
    history, not failures; `pv evidence gc` removes them."""
    # the command's modules load when it runs, so every pv command starts without the others' imports
    from pv.evidence.verify import leftover_tmp_dirs, verify_path

    project = _project("evidence verify", trusted_keys=trusted_keys, require_signed=require_signed)
    config = project.config
    keys = _keys("evidence verify", config, say_trust=True)
    target = path if path is not None else config.evidence
    if not target.exists():
        raise _usage("evidence verify", f"{target} does not exist")
    reports = verify_path(target, config.root, keys, project)
    counts = Counter(r.status for r in reports)
    for r in reports:
        signed = f"  (signed by {r.signed_by[:16]})" if r.signed_by else ""
        typer.echo(f"{r.status:<12} {config.relpath(r.path)}{signed}")
        for p in r.problems:
            typer.echo(f"    {p.format()}")
        for note in r.notes:
            typer.echo(f"    note: {note}")
    chain_problems, chain_notes = _ledger_findings(config, reports, target)
    for line in chain_problems:
        typer.echo(f"ledger       {line}")
    for line in chain_notes:
        typer.echo(f"    note: {line}")
    tmp = leftover_tmp_dirs(target)
    summary = ", ".join(f"{n} {s}" for s, n in sorted(counts.items())) or "none"
    trust = f"; signatures checked against {len(keys.keys)} trusted key(s)" if keys is not None else ""
    typer.echo(
        f"{len(reports)} bundles: {summary}{trust}" + (f"; {len(tmp)} unfinished .tmp-* folders ignored" if tmp else "")
    )
    if not reports:
        typer.echo("pv evidence verify: no bundles found", err=True)
        raise typer.Exit(1)
    allowed = {"superseded"} | ({"stale"} if allow_stale else set()) | ({"untrusted"} if allow_untrusted else set())
    failed = [r for r in reports if not (r.ok or {p.kind for p in r.problems} <= allowed)]
    if counts.get("superseded") and not failed:
        typer.echo("superseded bundles are history of earlier contract versions; `pv evidence gc` removes them")
    if chain_problems:
        typer.echo(f"{len(chain_problems)} ledger finding(s): the evidence chain does not hold")
    raise typer.Exit(1 if failed or chain_problems else 0)


def _ledger_findings(config: PvConfig, reports: list[Any], target: Path) -> tuple[list[str], list[str]]:
    """(problems, notes) of the ledgers of every contract folder the reports and ``target`` cover."""
    # the command's modules load when it runs, so every pv command starts without the others' imports
    from pv.evidence import ledger

    folders = {r.path.parent for r in reports}
    if (target / ledger.LEDGER_FILE).is_file():
        folders.add(target)
    elif target == config.evidence and target.is_dir():
        folders |= {p for p in target.iterdir() if (p / ledger.LEDGER_FILE).is_file()}
    problems: list[str] = []
    notes: list[str] = []
    by_path = {r.path: r for r in reports}
    for folder in sorted(folders):
        chain = ledger.read(folder)
        present = {p.name: p for p in by_path if p.parent == folder}
        checked = ledger.check(chain, present, {p.name: by_path[p].bundle for p in by_path if p.parent == folder})
        seen = ledger.history(chain.path, chain)
        where = config.relpath(chain.path)
        problems += [f"{where}: {p}" for p in [*checked.problems, *seen.problems]]
        notes += [f"{where}: {n}" for n in seen.notes[:1]]
        removed = chain.removed()
        for path in checked.unrecorded:
            if path.name not in removed:
                problems.append(
                    f"{config.relpath(path)}: not recorded in {where}, so it never counts; a bundle written "
                    "before the ledger is taken in by `pv evidence ledger adopt`"
                )
    return problems, list(dict.fromkeys(notes))


@evidence_app.command("forget")
def forget(
    run_id: Annotated[str, typer.Argument(help="The run id of the lost bundle (its folder's name).")],
    reason: Annotated[str, typer.Option("--reason", help="Why it is gone; recorded in the ledger.")] = "",
    evidence: EvidenceOpt = None,
) -> None:
    """Record in its contract's ledger that a bundle was lost by accident (a rebase, a bad checkout).

    The ledger keeps the line, so the loss stays visible in review; the falsifiers whose newest
    verdict it held are pending until they run again.  A bundle that is still present is refused:
    `pv evidence gc` removes bundles that are no longer needed."""
    # the command's modules load when it runs, so every pv command starts without the others' imports
    from pv.evidence import ledger

    config = _project("evidence forget", evidence).config
    if not reason.strip():
        raise _usage("evidence forget", "say why the bundle is gone with --reason; it is recorded in the ledger")
    folders = sorted(p for p in config.evidence.iterdir() if p.is_dir()) if config.evidence.is_dir() else []
    for folder in folders:
        chain = ledger.read(folder)
        entry = chain.recorded().get(run_id)
        line = None if entry is not None else ledger.history(chain.path).lost.get(run_id)
        if entry is None and line is None:
            continue
        if (folder / run_id).exists():
            raise _usage("evidence forget", f"{config.relpath(folder / run_id)} is present: nothing was lost")
        if entry is None:
            raw = json.loads(line or "{}")
            digest, verdicts = str(raw.get("digest", "")), dict(raw.get("verdicts") or {})
        else:
            digest, verdicts = entry.digest, entry.verdicts
        with ledger.locked(folder) as locked_chain:
            written = ledger.append(
                locked_chain, "forgotten", run_id, digest, verdicts=verdicts, reason=reason.strip(), force=True
            )
        typer.echo(f"{config.relpath(locked_chain.path)}: line {written.seq} records {run_id} as forgotten")
        decided = sorted(f for f, v in verdicts.items() if v in ledger.DECIDED)
        if decided:
            typer.echo(f"run these again, their newest verdicts were in it: {', '.join(decided)}")
        return
    raise _usage("evidence forget", f"no ledger under {config.relpath(config.evidence)} records a bundle {run_id}")


ledger_app = typer.Typer(name="ledger", help="The per-contract evidence ledgers.", no_args_is_help=True)
evidence_app.add_typer(ledger_app, name="ledger")


@ledger_app.command("adopt")
def adopt(evidence: EvidenceOpt = None) -> None:
    """Take the bundles written before the ledger into each contract's ledger, oldest first.

    Only bundles that carry no chain link (written by a pv without the ledger) are adopted, each as
    an `adopted` line that names its digest; they record no code, so they are history that `pv
    evidence gc` can prune with a trace, never evidence of the code as it is now."""
    # the command's modules load when it runs, so every pv command starts without the others' imports
    from pv.evidence import ledger
    from pv.evidence.status import bundle_time
    from pv.evidence.verify import find_bundles, verify_content

    config = _project("evidence ledger adopt", evidence).config
    if not config.evidence.is_dir():
        raise _usage("evidence ledger adopt", f"{config.relpath(config.evidence)} does not exist")
    adopted = 0
    for folder in sorted(p for p in config.evidence.iterdir() if p.is_dir() and not p.name.startswith(".")):
        with ledger.locked(folder) as chain:
            known = {e.run_id for e in chain.entries}
            candidates = []
            for path in find_bundles(folder):
                report = verify_content(path)
                if path.name in known or report.bundle is None or report.bundle.chain is not None:
                    continue
                if not report.intact:
                    typer.echo(f"not adopted: {config.relpath(path)} is {report.status}")
                    continue
                candidates.append((bundle_time(report.bundle), path, report.bundle))
            for _, path, bundle in sorted(candidates, key=lambda c: c[0]):
                ledger.append(
                    chain, "adopted", path.name, ledger.bundle_digest(path) or "", verdicts=ledger.verdicts_of(bundle)
                )
                typer.echo(f"adopted {config.relpath(path)}")
                adopted += 1
        if not any(folder.iterdir()) or (folder / ledger.LEDGER_FILE).stat().st_size == 0:
            (folder / ledger.LEDGER_FILE).unlink(missing_ok=True)
    typer.echo(f"{adopted} bundle(s) adopted")


@evidence_app.command("keygen")
def keygen(
    output: Annotated[
        Path, typer.Argument(help="Where to write the private key (PEM); the public key goes to OUTPUT.pub.")
    ],
    force: Annotated[bool, typer.Option("--force", help="Overwrite existing files.")] = False,
) -> None:
    """Make an ed25519 signing key for evidence: keep the private key secret (a CI secret); commit
    the public key and name it in [tool.pv] trusted_keys."""
    # the command's modules load when it runs, so every pv command starts without the others' imports
    from pv.bundle.signing import generate

    public = output.with_name(output.name + ".pub")
    existing = [p for p in (output, public) if p.exists()]
    if existing and not force:
        raise _usage("evidence keygen", f"{', '.join(map(str, existing))} exists; use --force to overwrite")
    private_pem, public_pem = generate()
    fd = os.open(output, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)  # a secret: owner only
    with os.fdopen(fd, "wb") as f:
        f.write(private_pem)
    public.write_bytes(public_pem)
    typer.echo(f"private key: {output} (mode 0600; give it to CI as the secret PV_SIGNING_KEY)")
    typer.echo(f'public key:  {public} (commit it; [tool.pv] trusted_keys = "{public.name}")')


@evidence_app.command("recover")
def recover(evidence: EvidenceOpt = None) -> None:
    """Turn the journals of pytest sessions that died (a crash, a kill) into bundles: every verdict
    reached is kept, and the falsifier that was running is recorded as an error."""
    # the command's modules load when it runs, so every pv command starts without the others' imports
    from pv.bundle.environment import capture
    from pv.evidence.journal import died, recover_all

    config = _project("evidence recover", evidence).config
    for line in died(config.evidence):
        typer.echo(line)
    outcomes = recover_all(config.evidence, config.root, lambda: capture(config.root, exclude=[config.evidence]))
    for o in outcomes:
        shown = config.relpath(o.path) if o.path is not None else f"NOT written: {o.reason}"
        typer.echo(f"{o.contract_id}: {shown}")
    typer.echo(f"{len(outcomes)} bundle(s) recovered" if outcomes else "no journal of a dead session to recover")


@evidence_app.command("merge")
def merge(
    parts: Annotated[
        list[Path],
        typer.Argument(help="Part folders written by `pytest --pv-shard K/N --pv-evidence` (or folders holding them)."),
    ],
    evidence: EvidenceOpt = None,
    trusted_keys: KeysOpt = None,
    signing_key: Annotated[
        Path | None,
        typer.Option(
            "--signing-key",
            help="ed25519 private key (PEM) to sign the bundles with (default: $PV_SIGNING_KEY, $PV_SIGNING_KEY_FILE).",
        ),
    ] = None,
) -> None:
    """Merge the parts of one sharded run into one run's bundles: refused for parts of other commits,
    splits or contract bytes, a shard or falsifier given twice, a falsifier its shard did not run, and
    parts no trusted key signed. A missing shard leaves its falsifiers not_run (a partial run)."""
    # the command's modules load when it runs, so every pv command starts without the others' imports
    from pv.bundle.model import Environment
    from pv.bundle.signing import Signer, SigningError
    from pv.evidence import shards
    from pv.evidence.writer import write_run

    project = _project("evidence merge", evidence, trusted_keys=trusted_keys)
    config = project.config
    keys = _keys("evidence merge", config, say_trust=True)
    folders: list[Path] = []
    for path in parts:
        if not path.exists():
            raise _usage("evidence merge", f"no such file or directory: {path}")
        found, unfinished = shards.find_parts(path)
        for folder in unfinished:
            typer.echo(f"skipped {config.relpath(folder)}: an unfinished part (its shard stopped while writing it)")
        if not found:
            raise _usage("evidence merge", f"{path} holds no finished part ({shards.PART_FILE})")
        folders.extend(found)
    try:
        signer = Signer.from_environment(signing_key)
        read = [shards.read_part(f, keys) for f in folders]
        merged = shards.merge(read)
    except (shards.ShardError, SigningError) as exc:
        typer.echo(f"pv evidence merge: refused: {exc}", err=True)
        raise typer.Exit(1) from None
    for part in sorted(read, key=lambda p: p.shard):
        signed = f"signed by {part.signed_by[:16]}" if part.signed_by else ", ".join(part.notes) or "unsigned"
        typer.echo(f"shard {part.shard} of {part.shards}: {config.relpath(part.path)} ({signed})")
    if merged.missing_shards:
        typer.echo(
            f"pv evidence merge: WARNING: shard(s) {', '.join(map(str, merged.missing_shards))} of {merged.shards} "
            f"missing: {len(merged.not_run)} falsifier(s) not run, so this run is partial and supersedes nothing",
            err=True,
        )
    first = min(read, key=lambda p: p.shard)
    environment = Environment.model_validate(first.environment)
    outcomes = write_run(merged.run, config.evidence, config.root, environment, signer)
    failed = 0
    for o in outcomes:
        failed += o.path is None
        typer.echo(f"{o.contract_id}: {config.relpath(o.path) if o.path is not None else f'NOT written: {o.reason}'}")
    if failed:
        raise typer.Exit(1)


def _unsigned_only(report: Any) -> bool:
    return {p.kind for p in report.problems} <= {"untrusted", "stale", "superseded"}


@evidence_app.command("gc")
def gc(
    keep: Annotated[int, typer.Option("--keep", min=1, help="Current bundles to keep per contract, newest first.")] = 5,
    evidence: EvidenceOpt = None,
    contracts: Annotated[
        Path | None, typer.Option("--contracts", help="Contracts directory (default: [tool.pv] contracts).")
    ] = None,
    dry_run: Annotated[bool, typer.Option("--dry-run", help="Print what would be removed.")] = False,
    trusted_keys: KeysOpt = None,
) -> None:
    """Remove stale and superseded bundles (bound to contract bytes or code that changed since, or
    to a contract that is gone) and, with trusted keys, bundles no trusted key signed; keep the
    newest N current bundles per contract and every bundle whose verdicts back a status or that
    the changelog names while it is current; remove .tmp-* folders that killed writers left.
    Each removal is recorded in the contract's ledger."""
    # the command's modules load when it runs, so every pv command starts without the others' imports
    from pv.evidence import gc as gc_mod
    from pv.evidence.status import assess
    from pv.evidence.verify import find_bundles, verify_content

    project = _project("evidence gc", evidence, contracts, trusted_keys)
    config = project.config
    keys = _keys("evidence gc", config)
    if not config.evidence.is_dir():
        raise _usage("evidence gc", f"{config.evidence} does not exist")
    backing: list[Path] = []
    history: list[Path] = []
    known_ids: set[str] = set()
    if config.contracts.is_dir():
        for path in _contract_files("evidence gc", project, None):
            current = project.take(path)
            found = assess(config.evidence, path, current.id, config.root, keys=keys, current=current)
            known_ids.add(current.id)
            backing.extend(found.contributing)
            counted = {r.path.resolve() for r in found.counted}
            backing.extend(b for b in gc_mod.changelog_bundles(current.data, config.root) if b.resolve() in counted)
            # with trusted keys, an intact bundle no trusted key signed (written before signing, or a
            # pull request's own run) never backs a status: history like a stale one
            history.extend(r.path for r in found.rejected if r.intact or (keys is not None and _unsigned_only(r)))
    for bundle_dir in find_bundles(config.evidence):  # evidence of contracts that no longer exist
        if bundle_dir.parent.name not in known_ids and verify_content(bundle_dir, keys).intact:
            history.append(bundle_dir)
    plan = gc_mod.plan(config.evidence, keep, backing, history)
    verb = "would remove" if dry_run else "removed"
    for p in [*plan.tmp, *plan.remove]:
        why = " (stale or superseded)" if p in plan.history else ""
        typer.echo(f"{verb} {config.relpath(p)}{why}")
    if not dry_run:
        gc_mod.apply(plan)
    typer.echo(
        f"{len(plan.remove)} bundles ({len(plan.history)} stale or superseded) and {len(plan.tmp)} .tmp-* folders "
        f"{verb}; {len(plan.keep) + len(plan.protected)} kept ({len(plan.protected)} back a status)"
    )


@app.command()
def promote(
    contracts: Annotated[
        list[Path] | None, typer.Argument(help="Contract files or folders (default: [tool.pv] contracts).")
    ] = None,
    check: Annotated[
        bool,
        typer.Option("--check", help="Change nothing; exit 1 if any status is not exactly what the evidence supports."),
    ] = False,
    evidence: EvidenceOpt = None,
    trusted_keys: KeysOpt = None,
    require_signed: SignedOpt = None,
) -> None:
    """Move each contract's status to exactly what its verified, current evidence supports.

    A contract whose evidence is blocked (its ledger broken, a recorded bundle gone or tampered)
    is left as it is and fails the command, with or without --check."""
    # the command's modules load when it runs, so every pv command starts without the others' imports
    from pv.promote import PromoteError, apply, decide, locked

    project = _project("promote", evidence, trusted_keys=trusted_keys, require_signed=require_signed)
    config = project.config
    keys = _keys("promote", config, say_trust=True)
    changed = errors = blocked = 0
    for path in _contract_files("promote", project, contracts):
        shown = config.relpath(path)
        current = project.take(path)
        if not current.ok:
            errors += 1
            typer.echo(f"{shown}: not promoted: the contract does not validate (run `pv validate`)", err=True)
            continue
        try:
            with locked(path):  # decide and write under one lock: a concurrent promote waits, then sees this
                # the file as just validated, unless another promote rewrote it while we waited
                decision = decide(path, config.evidence, config.root, keys, current)
                if decision.blocked:
                    blocked += 1
                    typer.echo(f"{shown}: {decision.current.value}, BLOCKED ({decision.reason})")
                    continue
                if not decision.changed:
                    typer.echo(f"{shown}: {decision.current.value} ({decision.reason})")
                    continue
                changed += 1
                arrow = f"{decision.current.value} -> {decision.target.value}"
                if check:
                    typer.echo(f"{shown}: would change {arrow} ({decision.reason})")
                else:
                    apply(decision, root=config.root)
                    typer.echo(f"{shown}: {arrow} ({decision.reason})")
        except BrokenPipeError:
            raise  # our own output's reader left (`pv promote | head`), not this contract's problem
        except (PromoteError, OSError, UnicodeDecodeError) as exc:
            errors += 1
            typer.echo(f"{shown}: not promoted: {exc}", err=True)
    if errors:
        raise typer.Exit(2)
    if blocked:
        typer.echo(
            f"{blocked} contract(s) blocked: their evidence does not hold (`pv evidence verify` says where); "
            "a bundle lost by accident is recorded with `pv evidence forget`",
            err=True,
        )
    raise typer.Exit(1 if blocked or (check and changed) else 0)
