"""Publishing: one comment updated in place, a check run with its annotations in batches of 50,
against a local stand-in for GitHub's REST API."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from pv.review.compare import Value
from pv.review.github import (
    ANNOTATIONS_PER_REQUEST,
    CHECK_NAME,
    FILES,
    Forms,
    PublishError,
    capped_bytes,
    conclusion,
    http_transport,
    publish,
    workflow_commands,
    write_outputs,
)
from pv.review.markdown import MARKER
from tests.pv.review.helpers import review, row


class FakeGitHub:
    def __init__(self) -> None:
        self.comments: dict[int, str] = {7: "an unrelated comment"}
        self.calls: list[tuple[str, str, Any]] = []
        self.next_id = 100
        self.refuse: int | None = None
        self.refusal: Any = {"message": "Resource not accessible by integration"}
        self.headers: list[dict[str, str]] = []
        self.lengths: list[str | None] = []
        self.pages: list[list[dict[str, Any]]] | None = None  # comment pages, when given


@pytest.fixture
def github() -> Iterator[tuple[FakeGitHub, str]]:
    state = FakeGitHub()

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args: object) -> None:
            pass

        def _answer(self, body: Any, code: int = 200) -> None:
            raw = json.dumps(body).encode()
            self.send_response(code)
            self.send_header("Content-Length", str(len(raw)))
            self.end_headers()
            self.wfile.write(raw)

        def _handle(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            body: Any = json.loads(self.rfile.read(length)) if length else None
            # the target as sent: http.server folds a leading "//" of self.path into one "/"
            state.calls.append((self.command, self.requestline.split()[1], body))
            state.headers.append({k.lower(): v for k, v in self.headers.items()})
            state.lengths.append(self.headers.get("Content-Length"))
            assert self.headers["Authorization"] == "Bearer t0ken"
            if state.refuse:
                return self._answer(state.refusal, state.refuse)
            if self.command == "GET" and "/comments" in self.path:
                if state.pages is not None:
                    page = int(self.path.rsplit("page=", 1)[1])
                    if page < 1:
                        return self._answer({"message": "page must be at least 1"}, 422)
                    return self._answer(state.pages[page - 1] if page <= len(state.pages) else [])
                return self._answer([{"id": k, "body": v} for k, v in state.comments.items()])
            if self.command == "POST" and self.path.endswith("/comments"):
                state.next_id += 1
                state.comments[state.next_id] = body["body"]
                return self._answer({"id": state.next_id}, 201)
            if self.command == "PATCH" and "/issues/comments/" in self.path:
                state.comments[int(self.path.rsplit("/", 1)[1])] = body["body"]
                return self._answer({})
            if self.path.endswith("/check-runs"):
                return self._answer({"id": 555}, 201)
            return self._answer({})

        do_GET = do_POST = do_PATCH = _handle

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield state, f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()


def _folder(tmp_path: Path, failing: int) -> Path:
    values = [Value("loss", 1.0, 3.0, 2.0, 2.0, 2.0, "lower", 1.5, 0.5, moved="worse")]
    rows = [row(f"FALSIFY-DEMO-{i:03d}", "regressed", head="falsified", values=values) for i in range(failing)]
    rows.append(row("FALSIFY-DEMO-999"))
    write_outputs(Forms(review(rows)), tmp_path / "review")
    return tmp_path / "review"


def test_the_comment_is_posted_once_then_updated_in_place(github: tuple[FakeGitHub, str], tmp_path: Path) -> None:
    state, api = github
    call = http_transport(api, "t0ken")
    folder = _folder(tmp_path, failing=120)
    first = publish(folder, "o/r", 12, "f" * 40, call)
    assert first.comment_created and set(state.comments) == {7, first.comment_id}
    assert ("POST", "/repos/o/r/issues/12/comments") in [(m, p) for m, p, _ in state.calls]
    second = publish(folder, "o/r", 12, "f" * 40, call)
    assert not second.comment_created and second.comment_id == first.comment_id
    assert state.calls[-4][:2] == ("PATCH", f"/repos/o/r/issues/comments/{first.comment_id}")
    assert len(state.comments) == 2 and state.comments[7] == "an unrelated comment"
    assert state.comments[first.comment_id].startswith(MARKER)
    # the check run: created with the first 50 annotations, updated with the next batches
    runs = [(m, p, b) for m, p, b in state.calls if "check-runs" in p]
    assert [m for m, _, _ in runs[:3]] == ["POST", "PATCH", "PATCH"]
    created = runs[0][2]
    assert created["name"] == "pv review" and runs[0][1] == "/repos/o/r/check-runs"
    assert created["head_sha"] == "f" * 40 and created["conclusion"] == "failure" and created["status"] == "completed"
    sizes = [len(b["output"]["annotations"]) for _, _, b in runs[:3]]
    assert sizes == [ANNOTATIONS_PER_REQUEST, ANNOTATIONS_PER_REQUEST, 20]
    assert created["output"]["annotations"][0]["path"] == "contracts/demo-v1.yaml"
    assert created["output"]["annotations"][0]["start_line"] == 7


def test_a_refusal_is_an_error_with_githubs_answer(github: tuple[FakeGitHub, str], tmp_path: Path) -> None:
    state, api = github
    state.refuse = 403
    with pytest.raises(PublishError, match=r"GitHub answered 403 to GET .*not accessible"):
        publish(_folder(tmp_path, 1), "o/r", 12, "f" * 40, http_transport(api, "t0ken"))


def test_a_folder_that_is_not_a_review_is_refused(tmp_path: Path) -> None:
    def never(*args: object) -> None:
        raise AssertionError("no request for a folder that is not a review")

    with pytest.raises(PublishError, match="not a review folder"):
        publish(tmp_path, "o/r", 1, "f" * 40, never)
    folder = _folder(tmp_path, 1)
    (folder / "comment.md").write_text("hello")
    with pytest.raises(PublishError, match="lacks the review's marker"):
        publish(folder, "o/r", 1, "f" * 40, never)


def test_conclusion_is_the_merge_gate() -> None:
    assert conclusion(review([row("A")])) == "success"
    assert conclusion(review([row("A", "regressed", head="falsified")])) == "failure"
    advisory = row("A", "regressed", head="falsified", ship_blocking=False)
    assert conclusion(review([advisory])) == "neutral"
    assert conclusion(review([row("A")], "ACTIVE", "DRAFT")) == "failure"
    assert conclusion(review([row("A", "missing", head="survived", base=None)])) == "neutral"


def test_outputs_keep_githubs_limits(tmp_path: Path) -> None:
    folder = _folder(tmp_path, failing=3000)
    assert len((folder / "comment.md").read_text()) <= 65_535
    assert len((folder / "summary.md").read_bytes()) <= 1_048_576
    check = json.loads((folder / "check-run.json").read_text())
    assert len(check["annotations"]) == 200 and len(check["output"]["summary"]) <= 65_535
    assert capped_bytes("é\n" * 10, 10, "…") == "é\né\n…\n"  # bytes, not characters: é is two
    (line,) = workflow_commands([{**check["annotations"][0], "message": "a, b: c\nd"}])
    assert line.startswith("::error file=contracts/demo-v1.yaml,line=7,title=FALSIFY-DEMO-000 regressed%3A ")
    assert line.endswith("::a, b: c%0Ad")


def test_each_request_carries_githubs_headers(github: tuple[FakeGitHub, str]) -> None:
    state, api = github
    call = http_transport(api + "/", "t0ken")  # a trailing slash on the API URL is not doubled
    call("GET", "/repos/o/r/issues/1/comments?per_page=100&page=1", None)
    call("POST", "/repos/o/r/check-runs", {"a": 1})
    assert [p for _, p, _ in state.calls] == [
        "/repos/o/r/issues/1/comments?per_page=100&page=1",
        "/repos/o/r/check-runs",
    ]
    for headers in state.headers:
        # header names are case-insensitive (urllib sends them capitalized its own way)
        assert headers["authorization"] == "Bearer t0ken"
        assert headers["accept"] == "application/vnd.github+json"
        assert headers["x-github-api-version"] == "2022-11-28"
        assert headers["content-type"] == "application/json"
        assert headers["user-agent"] == "pv-review"
    assert state.lengths[0] in (None, "0") and state.calls[0][2] is None  # a GET sends no body
    assert state.calls[1][2] == {"a": 1}


def test_a_long_refusal_is_cut_and_an_unreachable_api_named(github: tuple[FakeGitHub, str]) -> None:
    state, api = github
    state.refuse, state.refusal = 422, "x" * 2000
    with pytest.raises(PublishError) as caught:
        http_transport(api, "t0ken")("POST", "/p", {})
    assert str(caught.value) == f"GitHub answered 422 to POST /p: {json.dumps('x' * 2000)[:500]}"
    with pytest.raises(PublishError, match=r"^cannot reach GitHub's API at http://127\.0\.0\.1:9: "):
        http_transport("http://127.0.0.1:9", "t0ken")("GET", "/p", None)


@pytest.mark.parametrize("where", [1, 2, 3])
def test_the_marked_comment_is_found_on_any_page(github: tuple[FakeGitHub, str], where: int) -> None:
    from pv.review.github import _find_comment

    state, api = github
    pages = [[{"id": p * 1000 + i, "body": "other"} for i in range(100)] for p in range(3)]
    pages[where - 1][7]["body"] = f"{MARKER}\nthe review"
    state.pages = pages
    assert _find_comment(http_transport(api, "t0ken"), "o/r", 5) == (where - 1) * 1000 + 7
    state.pages = [[{"id": i, "body": "other"} for i in range(100)], []]  # a full page, then none
    assert _find_comment(http_transport(api, "t0ken"), "o/r", 5) is None
    state.pages = [[{"id": 1, "body": "other"}]]  # a short page is the last
    before = len(state.calls)
    assert _find_comment(http_transport(api, "t0ken"), "o/r", 5) is None and len(state.calls) == before + 1


def test_publish_from_the_environment(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, github: tuple[FakeGitHub, str]
) -> None:
    from pv.review.github import publish_from_env

    state, api = github
    folder = _folder(tmp_path, failing=1)
    monkeypatch.delenv("GITHUB_TOKEN", raising=False)
    with pytest.raises(PublishError, match=r"^GITHUB_TOKEN is not set"):
        publish_from_env(folder, "o/r", 3, "f" * 40)
    monkeypatch.setenv("GITHUB_TOKEN", "t0ken")
    monkeypatch.delenv("GITHUB_REPOSITORY", raising=False)
    with pytest.raises(PublishError, match=r"^no repository: pass --repo"):
        publish_from_env(folder, None, 3, "f" * 40)
    monkeypatch.setenv("GITHUB_REPOSITORY", "own/repo")
    monkeypatch.setenv("GITHUB_API_URL", api)
    done = publish_from_env(folder, None, 3, "f" * 40)
    assert done.comment_created and done.check_run_id == 555 and done.annotations == 1
    assert state.calls[0][1] == "/repos/own/repo/issues/3/comments?per_page=100&page=1"
    assert publish_from_env(folder, "o/r", 3, "f" * 40).comment_id == done.comment_id  # --repo wins


def test_the_environment_s_words_and_github_com_by_default(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import pv.review.github as github_module
    from pv.review.github import publish_from_env

    monkeypatch.setenv("GITHUB_TOKEN", "t0ken")
    monkeypatch.delenv("GITHUB_REPOSITORY", raising=False)
    with pytest.raises(PublishError) as refused:
        publish_from_env(tmp_path, None, 3, "f" * 40)
    assert str(refused.value) == "no repository: pass --repo OWNER/NAME or set GITHUB_REPOSITORY"
    monkeypatch.delenv("GITHUB_API_URL", raising=False)
    seen: list[tuple[str, str]] = []
    monkeypatch.setattr(github_module, "http_transport", lambda api, token: seen.append((api, token)) or "call")
    monkeypatch.setattr(github_module, "publish", lambda out, repo, pr, sha, call: (out, repo, pr, sha, call))
    assert publish_from_env(tmp_path, "o/r", 3, "f" * 40) == (tmp_path, "o/r", 3, "f" * 40, "call")  # type: ignore[comparison-overlap]
    assert seen == [("https://api.github.com", "t0ken")]


def test_a_check_file_without_a_name_is_posted_under_pv_s(github: tuple[FakeGitHub, str], tmp_path: Path) -> None:
    state, api = github
    folder = _folder(tmp_path, failing=1)
    check_file = folder / FILES["check"]
    check = json.loads(check_file.read_text(encoding="utf-8"))
    check.pop("name")
    check_file.write_text(json.dumps(check), encoding="utf-8")
    publish(folder, "o/r", 12, "f" * 40, http_transport(api, "t0ken"))
    (created,) = [b for m, p, b in state.calls if m == "POST" and p.endswith("/check-runs")]
    assert created["name"] == CHECK_NAME == "pv review"
    check["name"] = "claims"
    check_file.write_text(json.dumps(check), encoding="utf-8")
    publish(folder, "o/r", 12, "f" * 40, http_transport(api, "t0ken"))
    assert [b["name"] for m, p, b in state.calls if m == "POST" and p.endswith("/check-runs")][-1] == "claims"


class _Response:
    def __init__(self, raw: bytes) -> None:
        self.raw = raw

    def __enter__(self) -> _Response:
        return self

    def __exit__(self, *exc: object) -> None:
        pass

    def read(self) -> bytes:
        return self.raw


def test_a_call_waits_a_minute_reads_an_empty_answer_as_nothing_and_any_bytes_of_a_refusal(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import io
    import urllib.error
    import urllib.request

    seen: list[tuple[str, float | None]] = []

    def answer_nothing(request: urllib.request.Request, timeout: float | None = None) -> _Response:
        seen.append((request.full_url, timeout))
        return _Response(b"")

    monkeypatch.setattr(urllib.request, "urlopen", answer_nothing)
    call = http_transport("https://ghe.example/apiX/", "t0ken")
    assert call("PATCH", "/repos/o/r/issues/comments/1", {"body": "x"}) is None  # 204: no content
    assert seen == [("https://ghe.example/apiX/repos/o/r/issues/comments/1", 60)]

    def refuse(request: urllib.request.Request, timeout: float | None = None) -> _Response:
        raise urllib.error.HTTPError(request.full_url, 502, "Bad Gateway", {}, io.BytesIO(b"proxy \xff\xfe said no"))  # type: ignore[arg-type]

    monkeypatch.setattr(urllib.request, "urlopen", refuse)
    with pytest.raises(PublishError) as refused:
        call("GET", "/repos/o/r", None)
    assert str(refused.value) == "GitHub answered 502 to GET /repos/o/r: proxy \ufffd\ufffd said no"
