"""The review on GitHub: one comment updated in place, a check run that is the merge gate, annotations
on the contract's lines, a job summary; written in two steps so that pull requests from forks work.

Step one runs in the pull request's workflow with a read-only token (``pv report --out-dir DIR``):
it writes ``DIR`` (the comment, the summary, the JSON, the HTML, the check run's output and its
annotations) and the workflow uploads it as an artifact.  Step two runs in a ``workflow_run``
workflow of the base repository, which holds a token that may write and never checks out or runs the
pull request's code (``pv review publish DIR``): it reads the files and calls GitHub's REST API.

GitHub's limits are kept here: a comment's body at most 65,535 characters, a job summary at most
1 MiB, 50 annotations per request to the check-runs API (more go in further updates of the same run,
at most :data:`ANNOTATION_CAP` in all; the rest are listed in the run's summary).
"""

from __future__ import annotations

import functools
import json
import os
import urllib.error
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pv.review import html, mte
from pv.review.compare import Review, Row
from pv.review.markdown import COMMENT_LIMIT, MARKER, SUMMARY_LIMIT, render

ANNOTATIONS_PER_REQUEST = 50  # the check-runs API's limit per request
ANNOTATION_CAP = 200
WORKFLOW_ANNOTATION_CAP = 10  # GitHub shows at most 10 error annotations of one step
CHECK_NAME = "pv review"
FILES = {
    "comment": "comment.md",
    "summary": "summary.md",
    "json": "review.json",
    "html": "review.html",
    "mutation": "mutation-report.json",
    "check": "check-run.json",
}


class PublishError(Exception):
    """GitHub refused a request, or the report folder is incomplete; exit 2 with the cause."""


def annotation(row: Row) -> dict[str, Any]:
    failing = row.head_verdict in ("falsified", "error")
    level = "failure" if failing and row.ship_blocking else "warning"
    shown = ", ".join(f"{v.name} {v.base} → {v.head}" for v in row.values[:3] if v.base != v.head)
    message = f"{row.why}" + (f" ({shown})" if shown else "") + (f"\n{row.message}" if row.message else "")
    if failing:
        message += f"\nReproduce: {row.reproduce}"
    return {
        "path": row.contract_path,
        "start_line": row.line or 1,
        "end_line": row.line or 1,
        "annotation_level": level,
        "title": f"{row.falsifier_id} {row.kind}: {row.base_verdict or '—'} → {row.head_verdict or 'not run'}",
        "message": message[:64_000],
    }


def find_annotations(review: Review) -> list[dict[str, Any]]:
    """One per falsified or regressed claim, on its ``id:`` line; ship-blocking failures first."""
    rows = [r for r in review.rows if r.kind == "regressed" or r.head_verdict in ("falsified", "error")]
    rows.sort(key=lambda r: (not (r.ship_blocking and r.head_verdict in ("falsified", "error")), r.falsifier_id))
    return [annotation(r) for r in rows]


def conclusion(review: Review) -> str:
    """The merge gate: ``failure`` when a ship-blocking claim regressed or fails at the head, or a
    contract's status drops; ``neutral`` when only advisory claims did or something is missing."""
    blocking = [r for r in review.rows if r.ship_blocking]
    if any(r.kind == "regressed" or r.head_verdict in ("falsified", "error") for r in blocking):
        return "failure"
    rank = {"DRAFT": 0, "ACTIVE_ALGORITHM_LEVEL": 1, "ACTIVE": 2}
    if any(rank.get(c.after, 0) < rank.get(c.before, 0) for c in review.contracts):
        return "failure"
    if any(r.kind in ("regressed", "missing") for r in review.rows):
        return "neutral"
    return "success"


def capped_bytes(text: str, limit: int, note: str) -> str:
    """``text`` cut at a line so that it and ``note`` fit in ``limit`` UTF-8 bytes."""
    if len(text.encode()) <= limit:
        return text
    room = limit - len(note.encode()) - 1
    out, size = [], 0
    for line in text.splitlines(keepends=True):
        size += len(line.encode())
        if size > room:
            break
        out.append(line)
    return "".join(out) + note + "\n"


def workflow_commands(found: list[dict[str, Any]]) -> list[str]:
    """``::error``/``::warning`` lines for the first :data:`WORKFLOW_ANNOTATION_CAP` annotations."""

    def esc(text: str, prop: bool = False) -> str:
        text = text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")
        return text.replace(":", "%3A").replace(",", "%2C") if prop else text

    out = []
    for a in found[:WORKFLOW_ANNOTATION_CAP]:
        kind = "error" if a["annotation_level"] == "failure" else "warning"
        out.append(
            f"::{kind} file={esc(a['path'], True)},line={a['start_line']},title={esc(a['title'], True)}::"
            f"{esc(a['message'])}"
        )
    return out


class Forms:
    """Each form of one review, rendered once and only when asked (the HTML of a large project is
    megabytes): what ``pv report`` prints and what ``--out-dir`` writes are the same text."""

    SUMMARY_NOTE = "_Cut to GitHub's 1 MiB job-summary limit; the whole review is the HTML report (review.html)._"

    def __init__(self, review: Review, link: str | None = None, root: Path | None = None) -> None:
        self.review, self.link, self.root = review, link, root

    @functools.cached_property
    def markdown(self) -> str:
        return render(self.review, link=self.link)

    @functools.cached_property
    def comment(self) -> str:
        return render(self.review, COMMENT_LIMIT, self.link)

    @functools.cached_property
    def summary(self) -> str:
        return capped_bytes(self.markdown, SUMMARY_LIMIT, self.SUMMARY_NOTE)

    @functools.cached_property
    def json(self) -> str:
        return json.dumps(self.review.to_json(), indent=1, default=str) + "\n"

    @functools.cached_property
    def html(self) -> str:
        return html.render(self.review)

    @functools.cached_property
    def mutation(self) -> str:
        return json.dumps(mte.report(self.review, self.root), indent=1) + "\n"

    @functools.cached_property
    def annotations(self) -> list[dict[str, Any]]:
        return find_annotations(self.review)

    @functools.cached_property
    def check(self) -> str:
        found = self.annotations
        more = found[ANNOTATION_CAP:]
        check_summary = self.comment
        if more:
            listed = "\n".join(f"- `{a['path']}:{a['start_line']}` {a['title']}" for a in more)
            check_summary = capped_bytes(
                self.comment + f"\n\n{len(more)} more findings than annotations:\n{listed}\n", COMMENT_LIMIT, "…"
            )
        counts = self.review.counts()
        check = {
            "name": CHECK_NAME,
            "conclusion": conclusion(self.review),
            "output": {
                "title": f"{counts['regressed']} regressed, {counts['improved']} improved, {counts['missing']} missing",
                "summary": check_summary,
            },
            "annotations": found[:ANNOTATION_CAP],
        }
        return json.dumps(check, indent=1) + "\n"


def write_outputs(forms: Forms, out_dir: Path) -> dict[str, Path]:
    """Every file a pull request's review needs, in ``out_dir``; returns what was written."""
    out_dir.mkdir(parents=True, exist_ok=True)
    written = {}
    for key, name in FILES.items():
        path = out_dir / name
        path.write_text(getattr(forms, key), encoding="utf-8")
        written[key] = path
    return written


# --- publishing -------------------------------------------------------------------------------

Transport = Callable[[str, str, dict[str, Any] | None], Any]


def http_transport(api: str, token: str) -> Transport:
    """``(method, path, body) -> parsed JSON`` against GitHub's REST API at ``api``."""

    def call(method: str, path: str, body: dict[str, Any] | None) -> Any:
        request = urllib.request.Request(
            api.rstrip("/") + path,
            data=json.dumps(body).encode() if body is not None else None,
            method=method,
            headers={
                "Authorization": f"Bearer {token}",
                "Accept": "application/vnd.github+json",
                "X-GitHub-Api-Version": "2022-11-28",
                "Content-Type": "application/json",
                "User-Agent": "pv-review",
            },
        )
        try:
            with urllib.request.urlopen(request, timeout=60) as response:
                raw = response.read()
        except urllib.error.HTTPError as exc:
            detail = exc.read().decode("utf-8", "replace")[:500]
            raise PublishError(f"GitHub answered {exc.code} to {method} {path}: {detail}") from None
        except urllib.error.URLError as exc:
            raise PublishError(f"cannot reach GitHub's API at {api}: {exc.reason}") from None
        return json.loads(raw) if raw else None

    return call


@dataclass
class Published:
    comment_id: int
    comment_created: bool
    check_run_id: int
    annotations: int


def _find_comment(call: Transport, repo: str, pr: int) -> int | None:
    page = 1
    while True:
        found = call("GET", f"/repos/{repo}/issues/{pr}/comments?per_page=100&page={page}", None) or []
        for c in found:
            if MARKER in str(c.get("body", "")):
                return int(c["id"])
        if len(found) < 100:
            return None
        page += 1


def publish(out_dir: Path, repo: str, pr: int, sha: str, call: Transport) -> Published:
    """The comment (created, or updated where one carries the marker) and the check run with its
    annotations in batches of 50, from the files :func:`write_outputs` wrote."""
    try:
        comment = (out_dir / FILES["comment"]).read_text(encoding="utf-8")
        check = json.loads((out_dir / FILES["check"]).read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise PublishError(f"{out_dir} is not a review folder (`pv report --out-dir` writes one): {exc}") from None
    if MARKER not in comment:
        raise PublishError(f"{out_dir / FILES['comment']} lacks the review's marker; refusing to post it")
    existing = _find_comment(call, repo, pr)
    if existing is None:
        made = call("POST", f"/repos/{repo}/issues/{pr}/comments", {"body": comment})
        comment_id, created = int(made["id"]), True
    else:
        call("PATCH", f"/repos/{repo}/issues/comments/{existing}", {"body": comment})
        comment_id, created = existing, False
    found = list(check.get("annotations") or [])[:ANNOTATION_CAP]
    batches = [found[i : i + ANNOTATIONS_PER_REQUEST] for i in range(0, len(found), ANNOTATIONS_PER_REQUEST)] or [[]]
    output = dict(check["output"])
    run = call(
        "POST",
        f"/repos/{repo}/check-runs",
        {
            "name": check.get("name", CHECK_NAME),
            "head_sha": sha,
            "status": "completed",
            "conclusion": check["conclusion"],
            "output": {**output, "annotations": batches[0]},
        },
    )
    run_id = int(run["id"])
    for batch in batches[1:]:
        call("PATCH", f"/repos/{repo}/check-runs/{run_id}", {"output": {**output, "annotations": batch}})
    return Published(comment_id, created, run_id, len(found))


def publish_from_env(out_dir: Path, repo: str | None, pr: int, sha: str) -> Published:
    """:func:`publish` with ``GITHUB_TOKEN`` and ``GITHUB_API_URL`` (default api.github.com)."""
    token = os.environ.get("GITHUB_TOKEN")
    repo = repo or os.environ.get("GITHUB_REPOSITORY")
    if not token:
        raise PublishError("GITHUB_TOKEN is not set: the workflow passes it (`env: GITHUB_TOKEN: ${{ github.token }}`)")
    if not repo:
        raise PublishError("no repository: pass --repo OWNER/NAME or set GITHUB_REPOSITORY")
    api = os.environ.get("GITHUB_API_URL", "https://api.github.com")
    return publish(out_dir, repo, pr, sha, http_transport(api, token))
