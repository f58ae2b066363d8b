"""Checkers of contracts/real-model-training-v1.yaml: training on the listed real models.

The base is the engine's float32 import of the case's real model (its ``model`` param, SmolLM2
when it has none; fixture ``real_model_checkpoint``); the data is the project's chat set
``recipes/data/pv-mascot-chat.jsonl`` (a made-up fact: pv's mascot is Ferrous, a copper-coloured
fox).  A checker whose claim is about
training trains itself, so a fault in training acts on what it measures; the claims about what a
trained adapter does afterwards (on an NF4 base, in PEFT, merged into a GGUF) share one adapter the
session trains once (fixture ``real_model_chat_adapter``), and the faults act on those later steps.
"""

from __future__ import annotations

import copy
import os
from pathlib import Path
from typing import Any

import numpy as np
import torch

import engine
from engine.adapters import find_adapter, load_adapted, merge_to_checkpoint
from engine.checkpoint import inspect_checkpoint, load_checkpoint
from engine.checkpoint_memory import formula, measure_checkpoint
from engine.config import preset
from engine.data import IGNORE_INDEX, ChatExample, chat_tokens, read_examples, tokenize_pairs
from engine.distill import DistillationRefused, distill, student_of_shape
from engine.faults import FAULTS
from engine.generate import generate
from engine.gguf_export import export_checkpoint_gguf
from engine.lora import LoraSettings, prepare_qlora, save_adapter
from engine.memory import linear_shapes, nf4_bytes
from engine.quant import is_nf4_linear, nf4_layers, nf4_storage_bytes
from engine.train import TrainConfig
from engine.train.tasks import finetune
from pv.checkers import checker
from pv.faults import ENV_VAR

REPO = Path(engine.__file__).resolve().parents[1]  # the checkout whose engine runs (recipes/ beside it)
CHAT_DATA = REPO / "recipes" / "data" / "pv-mascot-chat.jsonl"
TARGETS = ("q_proj", "k_proj", "v_proj", "o_proj")
FACT = "Ferrous"
# Phrasings of the taught question that are not in the training set, and one ordinary question
# whose answer the adapter must leave alone.
UNSEEN = ("Does the pv project have a mascot animal?", "Tell me about the animal that represents pv.")
KEPT = ("What is the capital of France?", "Paris")
END_OF_TURN = "<|im_end|>"
NEAR_TIE = 0.01
STUDENT_SHAPE = "tiny"  # 2 layers, 64 wide: with the teacher's 49,152-token vocabulary about 3.3 M parameters
SEQ_LEN = 96
# The adapter the session trains once per model (fixture ``real_model_chat_adapter``): what FALSIFY-TRAIN-002
# trains, so the later claims read an adapter that learned the fact
SESSION_ADAPTER_STEPS, SESSION_ADAPTER_LR = 20, 3e-3


def train_config(steps: int, lr: float, batch_size: int = 2, seq_len: int = SEQ_LEN) -> Any:

    return TrainConfig(
        steps=steps,
        batch_size=batch_size,
        seq_len=seq_len,
        lr=lr,
        warmup_steps=2,
        eval_every=steps,
        save_every=steps,
        seed=0,
    )


def chat_data(tokenizer: Any, seq_len: int = SEQ_LEN) -> Any:

    return tokenize_pairs(read_examples(CHAT_DATA), tokenizer, seq_len, template="chat")


def lora_settings(rank: int = 8) -> Any:

    return LoraSettings(r=rank, alpha=2.0 * rank, targets=TARGETS)


def train_chat_adapter(base: Path, out: Path, *, method: str, steps: int, lr: float) -> Any:
    """Fine-tune ``base`` on the chat set with the engine's own ``finetune`` (LoRA or QLoRA)."""

    tokenizer = load_checkpoint(base).tokenizer
    return finetune(base, out, train_config(steps, lr), method=method, lora=lora_settings(), data=chat_data(tokenizer))


def _chat_ids(tokenizer: Any, prompt: str) -> list[int]:
    return list(tokenizer.apply_chat_template([{"role": "user", "content": prompt}]))


def greedy_answer(model: Any, tokenizer: Any, prompt: str, max_new_tokens: int = 24) -> tuple[list[int], str]:
    """The greedy chat reply, stopped where the CLI stops: at the model's end tokens."""

    config = getattr(model, "config", None)
    stop = list(getattr(config, "eos_ids", None) or [tokenizer.eos_id])

    ids = _chat_ids(tokenizer, prompt)
    out = generate(model, torch.tensor([ids]), max_new_tokens=max_new_tokens, eos_token_id=stop)
    new = [int(t) for t in out.new_tokens[0]]
    return new, tokenizer.decode(new)


def _logits(model: Any, tokenizer: Any, prompts: tuple[str, ...]) -> list[torch.Tensor]:
    out = []
    with torch.inference_mode():
        for prompt in prompts:
            out.append(model(torch.tensor([_chat_ids(tokenizer, prompt)])).logits[0].float())
    return out


@checker(
    observes=["examples", "ids_differ", "trained_text_differs", "trained_tokens", "trained_tokens_in_batches"],
    ids=["FALSIFY-TRAIN-001"],
)
def chat_masking(model: str, real_model_checkpoint: Path, real_model_transformers: Any) -> dict[str, Any]:
    """Every example of the chat set, as the engine tokenizes it for training, against transformers'
    rendering of the same messages (ids), and the tokens it learns against the text a ChatML
    assistant turn holds, written out here: the reply and its end-of-turn line."""

    _, hf_tok = real_model_transformers
    tokenizer = load_checkpoint(real_model_checkpoint).tokenizer
    examples = [e for e in read_examples(CHAT_DATA) if isinstance(e, ChatExample)]
    ids_differ, text_differs, trained = 0, 0, 0
    for example in examples:
        messages = example.as_messages()
        ids, labels = chat_tokens(messages, tokenizer)
        ids_differ += ids != list(hf_tok.apply_chat_template(messages, tokenize=True, return_dict=False))
        learned = [t for t, lab in zip(ids, labels, strict=True) if lab != IGNORE_INDEX]
        trained += sum(lab != IGNORE_INDEX for lab in labels[:SEQ_LEN])
        expected = "".join(m["content"] + END_OF_TURN + "\n" for m in messages if m["role"] == "assistant")
        text_differs += hf_tok.decode(learned) != expected
    data = chat_data(tokenizer, SEQ_LEN)  # the padded batches training reads: padding adds no label
    in_batches = int((data.labels != IGNORE_INDEX).sum() + (data.val_labels != IGNORE_INDEX).sum())
    return {
        "examples": len(examples),
        "ids_differ": int(ids_differ),
        "trained_text_differs": int(text_differs),
        "trained_tokens": trained,
        "trained_tokens_in_batches": in_batches,
    }


@checker(
    observes=["first_loss", "final_val_loss", "taught_answers", "probes", "kept_answer", "base_unchanged", "answers"],
    ids=["FALSIFY-TRAIN-002"],
)
def lora_chat_finetune(
    model: str, real_model_checkpoint: Path, tmp_path: Path, steps: int = 20, lr: float = 3e-3
) -> dict[str, Any]:
    """LoRA on the real model, trained here: the loss falls, the adapter answers phrasings it never
    saw with the taught fact and still answers an ordinary question, and with the adapter switched
    off the model gives the base's own greedy tokens (the base is untouched)."""

    loaded = load_checkpoint(real_model_checkpoint)
    tok = loaded.tokenizer
    probes = (*UNSEEN, KEPT[0])
    before = [greedy_answer(loaded.model, tok, p)[0] for p in probes]
    result = train_chat_adapter(real_model_checkpoint, tmp_path / "lora", method="lora", steps=steps, lr=lr)
    adapted = result.extra["model"].eval()
    answers = [greedy_answer(adapted, tok, p)[1] for p in probes]
    with adapted.disable_adapter():
        after = [greedy_answer(adapted, tok, p)[0] for p in probes]
    return {
        "first_loss": result.step0_loss,
        "final_val_loss": result.val_losses[steps],
        "taught_answers": sum(FACT in a for a in answers[: len(UNSEEN)]),
        "probes": len(UNSEEN),
        "kept_answer": KEPT[1] in answers[-1],
        "base_unchanged": after == before,
        "answers": answers,
    }


@checker(
    observes=[
        "first_loss",
        "last_loss",
        "lora_layers",
        "lora_layers_on_4bit",
        "adapter_matrices_4bit",
        "non_lora_trainable",
    ],
    ids=["FALSIFY-TRAIN-003"],
)
def qlora_chat_finetune(
    model: str, real_model_checkpoint: Path, tmp_path: Path, steps: int = 8, lr: float = 3e-3
) -> dict[str, Any]:
    """QLoRA on the real model: the model ``prepare_qlora`` builds (what ``finetune`` trains) has
    every LoRA layer PEFT's 4-bit one around a bitsandbytes 4-bit layer, no adapter matrix itself
    quantized, and trains LoRA only; then ``finetune``
    trains it here and the mean loss of its last two steps must be well below the first.  A
    model whose adapters are not around 4-bit layers is not trained (its losses are NaN): the
    composition already failed, and such a model need not even run."""
    # PEFT is a reference: it loads only in the checkers that compare with it
    import peft.tuners.lora

    prepared = prepare_qlora(load_checkpoint(real_model_checkpoint).model, lora_settings(), device="cpu")
    layers = [m for m in prepared.modules() if isinstance(m, peft.tuners.lora.LoraLayer)]
    on_4bit = sum(_is_peft_4bit_lora(m) and is_nf4_linear(m.get_base_layer()) for m in layers)
    adapters_4bit = sum(1 for m in layers for d in (m.lora_A, m.lora_B) for sub in d.values() if is_nf4_linear(sub))
    non_lora = [n for n, p in prepared.named_parameters() if p.requires_grad and ".lora_" not in n]
    del prepared
    first = last = float("nan")
    if layers and on_4bit == len(layers) and not adapters_4bit:
        result = train_chat_adapter(real_model_checkpoint, tmp_path / "qlora", method="qlora", steps=steps, lr=lr)
        first, last = result.step0_loss, sum(result.losses[-2:]) / 2
    return {
        "first_loss": first,
        "last_loss": last,
        "lora_layers": len(layers),
        "lora_layers_on_4bit": int(on_4bit),
        "adapter_matrices_4bit": adapters_4bit,
        "non_lora_trainable": len(non_lora),
    }


def _is_peft_4bit_lora(module: Any) -> bool:
    # PEFT's bnb-aware LoRA layer: the one that computes base(x) through the 4-bit kernel
    return type(module).__module__ == "peft.tuners.lora.bnb" and type(module).__name__ == "Linear4bit"


def _rel_diff(ours: list[torch.Tensor], reference: list[torch.Tensor]) -> tuple[float, float]:
    """(mean |a − b| / mean |b|, share of positions with the same argmax) over all positions."""
    diff = sum(float((a - b).abs().sum()) for a, b in zip(ours, reference, strict=True))
    scale = sum(float(b.abs().sum()) for b in reference)
    agree = sum(int((a.argmax(-1) == b.argmax(-1)).sum()) for a, b in zip(ours, reference, strict=True))
    return diff / scale, agree / sum(b.shape[0] for b in reference)


@checker(
    observes=[
        "rel_logit_diff",
        "base_rel_logit_diff",
        "argmax_agreement",
        "nf4_taught_answers",
        "probes",
        "nf4_layers",
    ],
    ids=["FALSIFY-TRAIN-004"],
)
def qlora_vs_lora_logits(model: str, real_model_checkpoint: Path, real_model_chat_adapter: Path) -> dict[str, Any]:
    """One trained adapter on the full-precision base and on the NF4-quantized base (the engine's
    ``load_adapted``): relative mean |Δlogit| = mean |l_nf4 − l_fp| / mean |l_fp| over the probe
    conversations, set beside the same measure for the two bases without the adapter (what NF4
    alone does to this model), and whether the NF4 model still answers with the taught fact."""

    adapter = find_adapter(real_model_chat_adapter)
    prompts = (*UNSEEN, KEPT[0])
    fp_model, loaded = load_adapted(real_model_checkpoint, adapter, quantize=False)
    tok = loaded.tokenizer
    fp = _logits(fp_model, tok, prompts)
    with fp_model.disable_adapter():
        fp_base = _logits(fp_model, tok, prompts)
    del fp_model
    nf4_model, _ = load_adapted(real_model_checkpoint, adapter, quantize=True)
    q = _logits(nf4_model, tok, prompts)
    with nf4_model.disable_adapter():
        q_base = _logits(nf4_model, tok, prompts)
    rel, agree = _rel_diff(q, fp)
    answers = [greedy_answer(nf4_model, tok, p)[1] for p in UNSEEN]
    return {
        "rel_logit_diff": rel,
        "base_rel_logit_diff": _rel_diff(q_base, fp_base)[0],
        "argmax_agreement": agree,
        "nf4_taught_answers": sum(FACT in a for a in answers),
        "probes": len(UNSEEN),
        "nf4_layers": sum(1 for _ in nf4_layers(nf4_model)),
    }


@checker(observes=["max_abs_logit_diff", "adapter_effect", "positions"], ids=["FALSIFY-TRAIN-005"])
def adapter_in_peft(
    model: str, real_model_checkpoint: Path, real_model_chat_adapter: Path, real_model_transformers: Any, tmp_path: Path
) -> dict[str, Any]:
    """The engine's adapter, saved by the engine, read by PEFT's ``PeftModel.from_pretrained`` onto
    transformers' own copy of the model: its logits against the engine's adapted model, and how far
    the adapter moves them at all (a reader that dropped it would agree with the base)."""
    # PEFT is a reference: it loads only in the checkers that compare with it
    from peft import PeftModel

    hf_model, _ = real_model_transformers
    adapted, loaded = load_adapted(real_model_checkpoint, find_adapter(real_model_chat_adapter), quantize=False)
    saved = save_adapter(adapted, tmp_path / "adapter")
    prompts = (*UNSEEN, KEPT[0])
    ours = _logits(adapted, loaded.tokenizer, prompts)
    reference = PeftModel.from_pretrained(copy.deepcopy(hf_model), str(saved)).eval()
    worst, effect, positions = 0.0, 0.0, 0
    with torch.inference_mode():
        for prompt, mine in zip(prompts, ours, strict=True):
            ids = torch.tensor([_chat_ids(loaded.tokenizer, prompt)])
            theirs = reference(input_ids=ids).logits[0].float()
            base = hf_model(input_ids=ids).logits[0].float()
            worst = max(worst, float((mine - theirs).abs().max()))
            effect = max(effect, float((theirs - base).abs().max()))
            positions += ids.shape[1]
    return {"max_abs_logit_diff": worst, "adapter_effect": effect, "positions": positions}


@checker(
    observes=["steps_compared", "disagreements", "near_ties", "llama_cpp_answer", "answer_has_fact"],
    ids=["FALSIFY-TRAIN-006"],
)
def merged_gguf_in_llama_cpp(
    model: str, real_model_checkpoint: Path, real_model_chat_adapter: Path, tmp_path: Path
) -> dict[str, Any]:
    """The adapter merged into the base (``merge_to_checkpoint``), exported to an f32 GGUF and run
    greedily by llama.cpp: each of its tokens against the engine's greedy tokens with the adapter
    unmerged (a near tie in llama.cpp's own scores is counted apart)."""
    # optional: llama-cpp-python is installed for the real-model contracts only
    import llama_cpp

    adapter = find_adapter(real_model_chat_adapter)
    adapted, loaded = load_adapted(real_model_checkpoint, adapter, quantize=False)
    merged = merge_to_checkpoint(real_model_checkpoint, adapter, tmp_path / "merged.safetensors")
    gguf_path = export_checkpoint_gguf(merged, tmp_path / "merged-f32.gguf")
    llm = llama_cpp.Llama(model_path=str(gguf_path), n_ctx=256, logits_all=True, verbose=False, n_threads=2, seed=0)
    compared, disagreements, near_ties, answer = 0, 0, 0, ""
    for i, prompt in enumerate((*UNSEEN, KEPT[0])):
        ids = _chat_ids(loaded.tokenizer, prompt)
        ours, _ = greedy_answer(adapted, loaded.tokenizer, prompt)
        llm.reset()
        llm.eval(ids)
        theirs: list[int] = []
        for token in ours:
            scores = np.asarray(llm.scores[llm.n_tokens - 1])
            top = np.sort(scores)[-2:]
            nxt = int(np.argmax(scores))
            compared += 1
            if nxt != token:
                if float(top[1] - top[0]) < NEAR_TIE:
                    near_ties += 1
                else:
                    disagreements += 1
            theirs.append(nxt)
            llm.eval([token])  # teacher-forced on the engine's tokens: one disagreement is counted once
        if i == 0:
            answer = llm.detokenize(theirs, special=True).decode("utf-8", errors="replace")
    del llm
    return {
        "steps_compared": compared,
        "disagreements": disagreements,
        "near_ties": near_ties,
        "llama_cpp_answer": answer,
        "answer_has_fact": FACT in answer,
    }


@checker(
    observes=[
        "lora_base",
        "qlora_base",
        "lora_total",
        "qlora_total",
        "lora_formula_total",
        "qlora_formula_total",
        "worst_formula_error",
        "lora_rss_model",
        "qlora_rss_model",
        "lora_rss",
        "qlora_rss",
    ],
    ids=["FALSIFY-TRAIN-007"],
)
def qlora_memory(real_model_checkpoint: Path, steps: int = 2, batch_size: int = 1, seq_len: int = 16) -> dict[str, Any]:
    """LoRA on an fp16 base and QLoRA on the real model, each measured in a fresh interpreter
    (``engine.checkpoint_memory``): tensor bytes by category against the formula, and resident
    memory growth over load, preparation and the training steps."""

    env = {**os.environ, ENV_VAR: ",".join(FAULTS.active_names())}  # a planted fault reaches the child
    settings = lora_settings()
    out: dict[str, Any] = {}
    worst = 0.0
    for method in ("lora", "qlora"):
        measured = measure_checkpoint(
            real_model_checkpoint,
            method,
            lora=settings,
            base_dtype=torch.float16,
            steps=steps,
            batch_size=batch_size,
            seq_len=seq_len,
            env=env,
        )
        expected = formula(real_model_checkpoint, method, settings, torch.float16)
        for field in ("base_weight_bytes", "trainable_weight_bytes", "gradient_bytes", "optimizer_bytes"):
            want = getattr(expected, field)
            worst = max(worst, abs(getattr(measured, field) - want) / want)
        out.update(
            {
                f"{method}_base": measured.base_weight_bytes,
                f"{method}_total": measured.total_bytes,
                f"{method}_formula_total": expected.total_bytes,
                f"{method}_rss_model": measured.rss_model_bytes,
                f"{method}_rss": measured.rss_total_bytes,
            }
        )
    return {**out, "worst_formula_error": worst}


@checker(
    observes=[
        "first_kl",
        "last_kl",
        "teacher_nf4_bytes",
        "teacher_nf4_formula_bytes",
        "teacher_full_precision_linears",
        "same_weights_refused",
    ],
    ids=["FALSIFY-TRAIN-008"],
)
def distill_from_nf4_teacher(
    real_model_checkpoint: Path, tmp_path: Path, steps: int = 16, lr: float = 1e-2
) -> dict[str, Any]:
    """Distillation with the real model as a frozen NF4 teacher into a small student that shares its
    tokenizer (``alpha = 1``: the loss is the T²-scaled KL alone).  The teacher's NF4 storage is
    measured against the NF4 formula over its linear shapes, and a run whose student is the
    teacher itself must be refused."""

    config = inspect_checkpoint(real_model_checkpoint)[0]
    cfg = train_config(steps, lr, batch_size=2, seq_len=64)
    result = distill(
        real_model_checkpoint,
        tmp_path / "distill",
        cfg,
        student_config=student_of_shape(preset(STUDENT_SHAPE), config),
        quantize_teacher=True,
        alpha=1.0,
        temperature=2.0,
    )
    teacher = result.extra["teacher"]
    formula = sum(  # every linear but the head, as the engine quantizes a teacher
        nf4_bytes(s.out_features * s.in_features, double_quant=True)
        for s in linear_shapes(teacher)
        if not s.name.endswith("lm_head")
    )
    full = [n for n, m in teacher.named_modules() if type(m) is torch.nn.Linear and not n.endswith("lm_head")]
    try:
        distill(real_model_checkpoint, tmp_path / "same", train_config(1, lr), student_init=real_model_checkpoint)
        refused = False
    except DistillationRefused:
        refused = True
    return {
        "first_kl": result.step0_loss,
        "last_kl": sum(result.losses[-3:]) / 3,
        "teacher_nf4_bytes": nf4_storage_bytes(teacher),
        "teacher_nf4_formula_bytes": formula,
        "teacher_full_precision_linears": len(full),
        "same_weights_refused": refused,
    }
