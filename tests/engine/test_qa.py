"""``engine.qa`` and ``python -m engine qa``: six gates, a table or JSON, exit 1 on a failed gate."""

from __future__ import annotations

import errno
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

import engine.cli_qa  # noqa: F401  (registers the command)
from engine.app import app
from engine.checkpoint import save_checkpoint
from engine.faults import FAULTS
from engine.qa import GATES, QAError, QAOptions, read_golden, run_qa
from tests.engine.core_helpers import tiny_model, tiny_tokenizer

runner = CliRunner()
ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def ckpt(tmp_path_factory: pytest.TempPathFactory) -> Path:
    tok = tiny_tokenizer()
    model = tiny_model(std=0.2)
    return save_checkpoint(tmp_path_factory.mktemp("qa") / "m.safetensors", model, tok)


def test_every_gate_runs_and_bounds_decide(ckpt: Path) -> None:
    report = run_qa(ckpt)
    assert [g.name for g in report.gates] == list(GATES)
    status = {g.name: g.status for g in report.gates}
    assert status == {
        "loads": "pass",
        "tokenizer_roundtrip": "pass",
        "finite_logits": "pass",
        "golden": "pass",
        "perplexity": "skipped",  # no bound given: measured, not judged
        "throughput": "skipped",
    }
    assert report.passed and len(report.sha256) == 64
    ppl = report.gate("perplexity").value
    assert ppl is not None and ppl > 1
    tight = run_qa(ckpt, QAOptions(max_perplexity=ppl * 0.99, min_tokens_per_s=1e9))
    assert (tight.gate("perplexity").status, tight.gate("throughput").status) == ("fail", "fail")
    assert not tight.passed
    assert run_qa(ckpt, QAOptions(max_perplexity=ppl * 1.01, min_tokens_per_s=1)).passed


def test_the_golden_gate_catches_a_drifting_cache_before_a_token_flips(ckpt: Path) -> None:
    with FAULTS.enabled("kv_cache_off_by_one"):
        gate = run_qa(ckpt, QAOptions(gates=("golden",))).gate("golden")
    assert gate.status == "fail" and ("drift" in gate.detail or "first difference" in gate.detail)


def test_a_golden_file_is_written_and_checked(ckpt: Path, tmp_path: Path) -> None:
    golden = tmp_path / "golden.json"
    assert runner.invoke(app, ["qa", str(ckpt), "--write-golden", str(golden)]).exit_code == 0
    data = read_golden(golden)
    assert data["prompt"] and len(data["new_ids"]) == data["max_new_tokens"] == 16
    assert run_qa(ckpt, QAOptions(golden=golden)).gate("golden").status == "pass"
    data["new_ids"][3] += 1
    golden.write_text(json.dumps(data))
    gate = run_qa(ckpt, QAOptions(golden=golden)).gate("golden")
    assert gate.status == "fail" and gate.detail.startswith("first difference at token 3")
    assert gate.value == 3.0


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("not json", "golden file"),
        ('{"prompt": 1}', "needs a `prompt` string"),
        ('{"prompt": "a", "new_ids": ["x"]}', "token ids"),
    ],
)
def test_a_bad_golden_file_is_bad_input(ckpt: Path, tmp_path: Path, text: str, message: str) -> None:
    golden = tmp_path / "g.json"
    golden.write_text(text)
    with pytest.raises(QAError, match=message):
        run_qa(ckpt, QAOptions(golden=golden))
    result = runner.invoke(app, ["qa", str(ckpt), "--golden", str(golden)])
    assert result.exit_code == 2 and message in result.stderr


def test_a_checkpoint_that_does_not_load_fails_the_first_gate_and_skips_the_rest(tmp_path: Path) -> None:
    bad = tmp_path / "bad.safetensors"
    bad.write_bytes(b"not a checkpoint")
    report = run_qa(bad)
    assert report.gate("loads").status == "fail" and not report.passed
    assert {g.status for g in report.gates[1:]} == {"skipped"}
    result = runner.invoke(app, ["qa", str(bad), "--json"])
    assert result.exit_code == 1 and json.loads(result.stdout)["passed"] is False


def test_special_ids_that_disagree_with_the_tokenizer_fail_loads(ckpt: Path) -> None:
    with FAULTS.enabled("checkpoint_pad_id_dropped"):
        gate = run_qa(ckpt, QAOptions(gates=())).gate("loads")
    assert gate.status == "fail" and "pad_token_id None != tokenizer's" in gate.detail


def test_the_cli_table_and_exit_codes(ckpt: Path, tmp_path: Path) -> None:
    ok = runner.invoke(app, ["qa", str(ckpt), "--min-tok-s", "1"])
    assert ok.exit_code == 0 and "PASS" in ok.stdout and "tokenizer_roundtrip" in ok.stdout
    failed = runner.invoke(app, ["qa", str(ckpt), "--max-ppl", "1.0"])
    assert failed.exit_code == 1 and "FAIL: perplexity" in failed.stdout
    text = tmp_path / "held.txt"
    text.write_text("x = 1\n" * 20)
    report = json.loads(runner.invoke(app, ["qa", str(ckpt), "--text", str(text), "--json"]).stdout)
    scored = next(g for g in report["gates"] if g["name"] == "perplexity")["detail"]
    assert scored == f"{len(tiny_tokenizer().encode(text.read_text(), add_bos=True)) - 1} tokens; no bound given"
    missing = runner.invoke(app, ["qa", str(ckpt), "--text", str(tmp_path / "none.txt")])
    assert missing.exit_code == 2 and "none.txt" in missing.stderr


def test_the_qa_contract_judges_the_checkpoint_named_on_the_command_line(ckpt: Path, tmp_path: Path) -> None:
    env = {**os.environ, "ENGINE_QA_CHECKPOINT": str(ckpt)}
    cmd = [sys.executable, "-m", "pytest", "contracts/checkpoint-qa-v1.yaml", "-k", "QA-001 or QA-004", "-q"]
    cmd += ["-p", "no:randomly", "-p", "no:cacheprovider", "--pv-evidence", "--pv-evidence-dir", str(tmp_path)]
    done = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True, timeout=300, check=False)
    assert done.returncode == 0, done.stdout + done.stderr
    (bundle,) = tmp_path.glob("checkpoint-qa-v1/*/bundle.json")
    ran = {f["id"]: f for f in json.loads(bundle.read_text())["falsifiers"] if f["verdict"] != "not_run"}
    assert set(ran) == {"FALSIFY-QA-001", "FALSIFY-QA-004"}
    for entry in ran.values():
        assert entry["observations"]["checkpoint"] == str(ckpt)
        assert entry["observations"]["checkpoint_sha256"] == run_qa(ckpt, QAOptions(gates=())).sha256


class _BusyClock:
    """Each decode lasts 0.5 s of wall time but gets only 0.1 s of CPU: a machine too busy to tell."""

    def __init__(self) -> None:
        self.wall = self.cpu = 0.0

    def perf_counter(self) -> float:
        self.wall += 0.25  # read twice per decode
        return self.wall

    def process_time(self) -> float:
        self.cpu += 0.05
        return self.cpu


def test_a_throughput_floor_the_noise_cannot_decide_is_inconclusive_not_failed(
    ckpt: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import engine.qa

    clock = _BusyClock()
    monkeypatch.setattr(engine.qa, "time", clock)
    monkeypatch.setattr(engine.qa, "cpu_seconds", clock.process_time)
    monkeypatch.setattr(engine.qa.torch, "get_num_threads", lambda: 1)
    gate = run_qa(ckpt, QAOptions(gates=("throughput",))).gate("throughput")
    assert gate.value is not None and gate.interval is not None
    low, high = gate.interval
    assert low == pytest.approx(gate.value) and high == pytest.approx(gate.value * 5)  # CPU had 1/5 of the wall
    between = run_qa(ckpt, QAOptions(gates=("throughput",), min_tokens_per_s=gate.value * 2))
    assert between.gate("throughput").status == "inconclusive" and between.passed
    assert run_qa(ckpt, QAOptions(gates=("throughput",), min_tokens_per_s=high * 2)).gate("throughput").status == "fail"
    assert run_qa(ckpt, QAOptions(gates=("throughput",), min_tokens_per_s=low / 2)).gate("throughput").status == "pass"
    result = runner.invoke(app, ["qa", str(ckpt), "--min-tok-s", str(gate.value * 2)])
    assert result.exit_code == 0, result.output
    assert "INCONCLUSIVE" in result.output and "throughput" in result.output


def test_the_cache_tolerance_follows_the_dtype() -> None:
    import torch

    from engine.qa import CACHE_LOGIT_TOLERANCE, DRIFT_ULPS, cache_logit_tolerance

    assert cache_logit_tolerance(torch.float32, 40.0) == CACHE_LOGIT_TOLERANCE  # f32 keeps its floor
    f16, bf16 = cache_logit_tolerance(torch.float16, 40.0), cache_logit_tolerance(torch.bfloat16, 40.0)
    assert f16 == pytest.approx(DRIFT_ULPS * 2**-10 * 40.0)
    assert bf16 == pytest.approx(DRIFT_ULPS * 2**-7 * 40.0)
    assert CACHE_LOGIT_TOLERANCE < f16 < bf16


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_half_precision_checkpoints_pass_golden_and_a_drifting_cache_still_fails(tmp_path: Path, dtype: str) -> None:
    import torch

    path = save_checkpoint(tmp_path / "h.safetensors", tiny_model(std=0.2).to(getattr(torch, dtype)), tiny_tokenizer())
    gate = run_qa(path, QAOptions(gates=("golden",))).gate("golden")
    assert gate.status == "pass", gate.detail
    assert dtype in gate.detail
    with FAULTS.enabled("kv_cache_off_by_one"):
        assert run_qa(path, QAOptions(gates=("golden",))).gate("golden").status == "fail"


def test_logits_after_the_decodes_part_are_not_drift(ckpt: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import engine.qa as qa

    real = qa._decode

    def parted(loaded, prompt, n, use_cache=True):  # type: ignore[no-untyped-def]
        ids, scores = real(loaded, prompt, n, use_cache)
        if use_cache:  # the cached run took the runner-up at a dead heat at step 3, then read other tokens
            ids = list(ids)
            ids[3] = int(scores[3].topk(2).indices[1])
            scores = scores.clone()
            scores[4:] += 100.0
        return ids, scores

    monkeypatch.setattr(qa, "_decode", parted)
    monkeypatch.setattr(qa, "_margin", lambda logits: 0.0)
    gate = run_qa(ckpt, QAOptions(gates=("golden",))).gate("golden")
    assert gate.status == "pass" and "near tie at step 3" in gate.detail, gate.detail


def test_tokens_may_part_only_at_a_near_tie(ckpt: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import engine.qa as qa

    real = qa._decode

    def parted(loaded, prompt, n, use_cache=True):  # type: ignore[no-untyped-def]
        ids, scores = real(loaded, prompt, n, use_cache)
        if use_cache:
            return ids, scores
        ids = list(ids)
        top2 = scores[3].topk(2).indices
        ids[3] = int(top2[1])  # the uncached run picked the runner-up at step 3
        return ids, scores

    monkeypatch.setattr(qa, "_decode", parted)
    gate = run_qa(ckpt, QAOptions(gates=("golden",))).gate("golden")
    assert gate.status == "fail" and "first difference at token 3" in gate.detail  # a clear winner: a real flip
    monkeypatch.setattr(qa, "_margin", lambda logits: 0.0)  # the same step, now a dead heat
    gate = run_qa(ckpt, QAOptions(gates=("golden",))).gate("golden")
    assert gate.status == "pass" and "near tie at step 3" in gate.detail


def test_golden_ids_must_be_token_ids(tmp_path: Path) -> None:
    from engine.faults import FAULTS

    path = tmp_path / "golden.json"
    path.write_text('{"prompt": "def ", "new_ids": [1, 2.5]}', encoding="utf-8")
    with pytest.raises(QAError, match="token ids"):
        read_golden(path)
    with FAULTS.enabled("golden_ids_unchecked"):
        assert read_golden(path)["new_ids"] == [1, 2.5]


def test_held_out_text_must_be_utf8_and_a_missing_golden_file_is_the_systems_error(tmp_path: Path) -> None:
    from engine.qa import read_held_out

    text = tmp_path / "held-out.txt"
    text.write_bytes(b"ok \xff")
    with pytest.raises(QAError, match=r"held-out text .*held-out.txt: not UTF-8 text \(byte 3\)"):
        read_held_out(text)
    text.write_text("déjà vu\n", encoding="utf-8")
    assert read_held_out(text) == "déjà vu\n"
    with pytest.raises(FileNotFoundError):  # the command line reports it as the path and the reason
        read_golden(tmp_path / "missing.json")


def test_a_golden_file_that_cannot_be_written_is_refused_and_nothing_is_left(ckpt: Path, tmp_path: Path) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("x", encoding="utf-8")
    result = runner.invoke(app, ["qa", str(ckpt), "--write-golden", str(blocker / "sub" / "golden.json")])
    assert result.exit_code == 2 and "Traceback" not in result.output
    assert f"{blocker / 'sub'}: {os.strerror(errno.ENOTDIR)}" in " ".join(result.stderr.split())
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a-file"]
