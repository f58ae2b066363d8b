"""engine.native_blocks: which kernel a quantized layer runs, why, and what the native one computes."""

from __future__ import annotations

import hashlib
import os
import shutil
from pathlib import Path

import numpy as np
import pytest
import torch
import torch.utils.cpp_extension

from engine import native_blocks
from engine.config import preset
from engine.errors import BlocksError
from engine.faults import FAULTS
from engine.generate import GenerationOutput, generate
from engine.gguf_export import export_gguf
from engine.gguf_import import import_gguf
from engine.model import DecoderLayer, DecoderLM, KVCache, build_model
from engine.quantized import Int4Linear, Int8BlockLinear, quantized_linear, stacked, unpack
from engine.tokenizer import cached_tokenizer
from falsifiers.quantized_decode.blocks import quantized_matrix
from falsifiers.quantized_decode.model import SHAPE  # the shape every projection of which stacks


def _raw(kind: str, rows: int, k: int, seed: int) -> np.ndarray:
    """Seeded blocks of ``kind`` as a file holds them: random codes, float16 scales in [0.001, 0.02)
    (and Q4_1's m in [-0.1, 0.1))."""
    rng = np.random.default_rng(seed)
    size = {"Q4_0": 18, "Q4_1": 20, "Q8_0": 34}[kind]
    blocks = rng.integers(0, 256, (rows, k // 32, size), dtype=np.uint8)
    blocks[..., 0:2] = rng.uniform(0.001, 0.02, (rows, k // 32, 1)).astype(np.float16).view(np.uint8)
    if kind == "Q4_1":
        blocks[..., 2:4] = rng.uniform(-0.1, 0.1, (rows, k // 32, 1)).astype(np.float16).view(np.uint8)
    return blocks.reshape(rows, -1)


@pytest.fixture(scope="module")
def native() -> native_blocks.BlockMatmul:
    with native_blocks.forced("auto"):
        status = native_blocks.kernel_status()
    if status.kernel != "native":
        pytest.skip(f"the native block kernel is not available here: {status.reason}")
    op = native_blocks.native_kernel("Q4_1")
    assert op is not None
    return op


@pytest.mark.parametrize("kind", ["Q4_0", "Q4_1", "Q8_0"])
@pytest.mark.parametrize("rows", [1, 2, 4, 6, 9])
def test_the_native_kernel_is_the_dequantized_product_within_int16_rounding(
    native: native_blocks.BlockMatmul, kind: str, rows: int
) -> None:
    raw = _raw(kind, 80, 96, seed=rows)
    w = torch.from_numpy(unpack(kind, raw, (80, 96)).dequantize()).double()
    x = torch.randn(rows, 96, generator=torch.Generator().manual_seed(rows)) * 3
    got = native(x, torch.from_numpy(raw), native_blocks.KINDS[kind], 0).double()
    want = x.double() @ w.T
    step = (x.abs().double().reshape(rows, 3, 32).amax(-1) / 65534).repeat_interleave(32, dim=-1)
    bound = step @ w.abs().T + 2.0**-20 * (x.abs().double() @ w.abs().T) + 1e-6
    assert got.shape == (rows, 80)
    assert bool(((got - want).abs() <= bound).all())
    # the bound is tight enough to see a wrong weight: a bfloat16 rounding of the input is not within it
    rounded = x.bfloat16().double() @ w.T
    assert not bool(((rounded - want).abs() <= bound).all())


def test_a_zero_input_block_gives_the_zero_product(native: native_blocks.BlockMatmul) -> None:
    raw = _raw("Q4_1", 8, 64, seed=0)
    x = torch.zeros(1, 64)
    x[0, 32:] = 1.0  # the first block all zeros: its int16 scale is 0, and nothing divides by it
    w = torch.from_numpy(unpack("Q4_1", raw, (8, 64)).dequantize()).double()
    got = native(x, torch.from_numpy(raw), native_blocks.KINDS["Q4_1"], 0).double()
    assert torch.allclose(got, x.double() @ w.T, atol=1e-5)


@pytest.mark.parametrize("bad", [float("nan"), float("inf")])
@pytest.mark.parametrize("kind", ["Q4_0", "Q8_0"])
def test_a_nan_or_infinite_input_reaches_its_row_of_the_output_alone(
    native: native_blocks.BlockMatmul, kind: str, bad: float
) -> None:
    raw = _raw(kind, 16, 64, seed=1)
    x = torch.randn(3, 64, generator=torch.Generator().manual_seed(2))
    x[1, 40] = bad
    got = native(x, torch.from_numpy(raw), native_blocks.KINDS[kind], 0)
    assert bool(got[1].isnan().all())  # never a finite number made of an undefined int16 cast
    clean = native(x[[0, 2]].contiguous(), torch.from_numpy(raw), native_blocks.KINDS[kind], 0)
    assert torch.equal(got[[0, 2]], clean)


@pytest.mark.parametrize(
    ("fault", "kind"),
    [
        ("q4_block_halves_swapped", "Q4_0"),
        ("q4_1_zero_off_by_8", "Q4_1"),
        ("q8_block_scales_shifted", "Q8_0"),
        ("q4_scales_transposed", "Q4_1"),
    ],
)
def test_each_planted_fault_reaches_the_native_kernel(native: native_blocks.BlockMatmul, fault: str, kind: str) -> None:
    blocks = unpack(kind, _raw(kind, 64, 128, seed=3), (64, 128))
    x = torch.randn(2, 128, generator=torch.Generator().manual_seed(0))
    with native_blocks.forced("native"):
        layer = quantized_linear(blocks)
        clean = layer(x)
        assert native_blocks.defects(kind) == 0
        with FAULTS.enabled(fault):
            assert native_blocks.defects(kind) != 0
            faulty = layer(x)
    assert (faulty - clean).abs().max() > 0.1


def test_a_fault_of_another_kind_leaves_the_kernel_alone() -> None:
    with FAULTS.enabled("q4_1_zero_off_by_8"):
        assert native_blocks.defects("Q4_0") == 0
        assert native_blocks.defects("Q8_0") == 0
        assert native_blocks.defects("Q4_1") == 2


def test_layers_and_a_stacked_layer_give_torch_kernels_results_within_their_bound(
    native: native_blocks.BlockMatmul,
) -> None:
    parts = [Int4Linear.from_blocks(unpack("Q4_1", _raw("Q4_1", 64, 96, seed=s), (64, 96))) for s in range(3)]
    x = torch.randn(3, 96, generator=torch.Generator().manual_seed(1))
    joint = stacked(parts)
    assert joint.kernel_blocks is not None and tuple(joint.kernel_blocks.shape) == (192, 60)
    with native_blocks.forced("native"):
        ours = joint(x)
        each = torch.cat([part(x) for part in parts], dim=-1)
    with native_blocks.forced("torch"):
        theirs = joint(x)
    assert torch.equal(ours, each)  # stacked rows run as the rows they were
    assert not torch.equal(ours, theirs)  # another kernel ran, and both are the same matrix
    assert (ours - theirs).abs().max() < 0.05 * theirs.abs().max()


def test_a_stack_of_two_kinds_keeps_no_joined_blocks_and_runs_on_torch() -> None:
    a = Int4Linear.from_blocks(unpack("Q4_0", _raw("Q4_0", 64, 64, seed=0), (64, 64)))
    b = Int4Linear.from_blocks(unpack("Q4_1", _raw("Q4_1", 64, 64, seed=1), (64, 64)))
    joint = stacked([a, b])
    assert joint.kind == "Q4_0+Q4_1" and joint.kernel_blocks is None
    x = torch.randn(1, 64)
    with native_blocks.forced("native"):
        packed, scale_zeros = joint.layout()
        assert torch.equal(
            joint(x), torch.ops.aten._weight_int4pack_mm_for_cpu(x.bfloat16(), packed, 32, scale_zeros).float()
        )


def test_torch_layout_is_built_on_first_use_by_torch_kernels_only(native: native_blocks.BlockMatmul) -> None:
    layer = quantized_linear(unpack("Q4_1", _raw("Q4_1", 64, 96, seed=4), (64, 96)))
    x = torch.randn(2, 96, generator=torch.Generator().manual_seed(4))
    with native_blocks.forced("native"):
        layer(x)
    assert layer._layouts == {}  # the model holds its weights once, as the file's blocks
    with native_blocks.forced("torch"):
        first = layer(x)
        built = layer.layout()
        assert layer(x).equal(first) and layer.layout() is built  # built once
    assert list(layer._layouts) == [frozenset()]


@pytest.mark.parametrize(
    ("fault", "kind"),
    [("q4_block_halves_swapped", "Q4_0"), ("q4_scales_transposed", "Q4_1"), ("q6_k_scales_unsigned", "Q6_K")],
)
def test_a_layout_built_under_a_planted_fault_never_serves_a_clean_run(fault: str, kind: str) -> None:
    raw, _ = quantized_matrix(kind, (64, 256), 5)
    blocks = unpack(kind, raw, (64, 256))
    layer = quantized_linear(blocks)
    x = torch.randn(2, layer.in_features, generator=torch.Generator().manual_seed(5))
    with native_blocks.forced("torch"):
        with FAULTS.enabled(fault):
            faulty = layer(x)  # the first use: built from the file's bytes under the fault
        clean = layer(x)
        with FAULTS.enabled(fault):
            assert layer(x).equal(faulty)
    assert (faulty - clean).abs().max() > 0.01 * clean.abs().max()
    fresh = quantized_linear(blocks)
    with native_blocks.forced("torch"):
        assert fresh(x).equal(clean)


def test_kinds_the_native_kernel_does_not_read_run_on_torch() -> None:
    with native_blocks.forced("native"):
        assert native_blocks.native_kernel("Q4_K") is None
        assert native_blocks.native_kernel("Q6_K") is None


def test_torch_is_chosen_without_building(monkeypatch: pytest.MonkeyPatch) -> None:
    def no_build() -> str:
        raise AssertionError("ENGINE_BLOCK_KERNEL=torch must not build the native kernel")

    monkeypatch.setattr(native_blocks, "_build", no_build)
    monkeypatch.setattr(native_blocks, "_RESOLVED", {})
    monkeypatch.setenv(native_blocks.ENV, "torch")
    assert native_blocks.kernel_status() == native_blocks.KernelStatus("torch", "ENGINE_BLOCK_KERNEL=torch")
    assert native_blocks.native_kernel("Q4_1") is None
    layer = Int8BlockLinear(unpack("Q8_0", _raw("Q8_0", 32, 64, seed=0), (32, 64)))
    assert layer(torch.randn(1, 64)).shape == (1, 32)


def test_an_unbuildable_kernel_falls_back_with_its_reason_or_fails_when_asked_for(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(native_blocks, "_build", lambda: "it did not build (OSError: no compiler)")
    monkeypatch.setattr(native_blocks, "_RESOLVED", {})
    monkeypatch.delenv(native_blocks.ENV, raising=False)
    status = native_blocks.kernel_status()
    assert status == native_blocks.KernelStatus(
        "torch", "the native block kernel is not available: it did not build (OSError: no compiler)"
    )
    assert native_blocks.native_kernel("Q4_0") is None
    monkeypatch.setenv(native_blocks.ENV, "native")
    with pytest.raises(
        BlocksError,
        match=r"^ENGINE_BLOCK_KERNEL=native, but the native block kernel is not available: "
        r"it did not build \(OSError: no compiler\)$",
    ):
        native_blocks.kernel_status()


def test_a_bad_choice_is_refused_with_the_choices(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(native_blocks.ENV, "fast")
    with pytest.raises(
        BlocksError, match=r"^ENGINE_BLOCK_KERNEL='fast' is not a kernel choice; use one of auto, torch, native$"
    ):
        native_blocks.choice()
    with (
        pytest.raises(BlocksError, match=r"^'gpu' is not a kernel choice; use one of auto, torch, native$"),
        native_blocks.forced("gpu"),
    ):
        pass


def test_forced_wins_over_the_environment_and_nests(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(native_blocks.ENV, "native")
    with native_blocks.forced("torch"):
        assert native_blocks.choice() == "torch"
        with native_blocks.forced("auto"):
            assert native_blocks.choice() == "auto"
        assert native_blocks.choice() == "torch"
    assert native_blocks.choice() == "native"


def test_a_cpu_without_avx2_is_named(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(torch.backends.cpu, "get_cpu_capability", lambda: "DEFAULT")
    native_blocks._build.cache_clear()
    try:
        assert native_blocks._build() == "this CPU's vector capability is DEFAULT; the native kernel needs AVX2"
    finally:
        native_blocks._build.cache_clear()


def test_the_ninja_package_is_put_on_path_where_none_is_found(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    ninja = pytest.importorskip("ninja")  # the engine extra installs it
    monkeypatch.setenv("PATH", str(tmp_path))  # a venv's python run unactivated: its scripts not on PATH
    native_blocks._ninja_on_path()
    assert os.environ["PATH"].split(os.pathsep)[:2] == [ninja.BIN_DIR, str(tmp_path)]
    assert shutil.which("ninja") is not None
    native_blocks._ninja_on_path()  # found now: PATH is left as it is
    assert os.environ["PATH"].split(os.pathsep)[:2] == [ninja.BIN_DIR, str(tmp_path)]


def test_the_built_kernel_is_named_for_its_source_and_torch_version(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    names: list[str] = []

    def load(name: str, **_: object) -> None:
        names.append(name)
        raise OSError("no compiler")

    monkeypatch.setattr(torch.utils.cpp_extension, "load", load)
    monkeypatch.setenv("TORCH_EXTENSIONS_DIR", str(tmp_path))
    monkeypatch.setenv("PATH", os.environ["PATH"])  # the build may put ninja on PATH: undone after the test
    monkeypatch.setattr(torch, "__version__", "2.99.1+cpu")
    native_blocks._build.cache_clear()
    try:
        assert native_blocks._build() == "it did not build (OSError: no compiler)"
    finally:
        native_blocks._build.cache_clear()
    digest = hashlib.sha256(native_blocks.SOURCE.read_bytes()).hexdigest()[:16]
    assert names == [f"engine_blocks_{digest}_torch_2_99_1_cpu"]


# --- the whole decoder layer for one token (engine_blocks::decode_layer) -------------------------


@pytest.fixture(scope="module")
def q4_model(tmp_path_factory: pytest.TempPathFactory) -> DecoderLM:
    torch.manual_seed(0)
    model = build_model(preset("tiny", **SHAPE)).eval()
    with torch.no_grad():
        for p in model.parameters():
            if p.dim() == 2:
                p.normal_(0.0, 0.2)
    path = export_gguf(model, cached_tokenizer(512), tmp_path_factory.mktemp("q4") / "tiny.gguf", "q4_0")
    return import_gguf(path, quantized=True).model


def _greedy(model: DecoderLM, prompt: torch.Tensor, mask: torch.Tensor | None = None) -> GenerationOutput:
    return generate(model, prompt, mask, max_new_tokens=8, eos_token_id=[], return_logits=True)


def test_one_sequence_decodes_through_one_call_a_layer_as_its_separate_calls_do(
    native: native_blocks.BlockMatmul, q4_model: DecoderLM
) -> None:
    prompt = torch.tensor([[1, 17, 99, 240, 7]])
    before = native_blocks.DECODE_LAYER_CALLS[0]
    with native_blocks.forced("native"):
        one = _greedy(q4_model, prompt)
        calls = native_blocks.DECODE_LAYER_CALLS[0] - before
        with native_blocks.separate_calls():
            assert native_blocks.decode_layer() is None
            separate = _greedy(q4_model, prompt)
    assert calls == 7 * 2  # 7 steps after the prompt's, 2 layers
    assert native_blocks.DECODE_LAYER_CALLS[0] - before == calls  # the separate calls made none
    assert one.scores is not None and separate.scores is not None
    assert one.new_tokens == separate.new_tokens
    assert (one.scores - separate.scores).abs().max() <= 1e-3 * separate.scores.abs().max()


def test_the_planted_unrotated_key_reaches_the_decoder_layer(
    native: native_blocks.BlockMatmul, q4_model: DecoderLM
) -> None:
    prompt = torch.tensor([[1, 17, 99, 240, 7]])
    with native_blocks.forced("native"):
        clean = _greedy(q4_model, prompt)
        with FAULTS.enabled("native_decode_key_unrotated"):
            assert native_blocks.layer_defects() == 16
            faulty = _greedy(q4_model, prompt)
    assert clean.scores is not None and faulty.scores is not None
    assert (clean.scores - faulty.scores).abs().max() > 0.05 * clean.scores.abs().max()


def test_a_batch_or_a_padded_prompt_runs_the_separate_calls(
    native: native_blocks.BlockMatmul, q4_model: DecoderLM
) -> None:
    before = native_blocks.DECODE_LAYER_CALLS[0]
    with native_blocks.forced("native"):
        _greedy(q4_model, torch.tensor([[1, 17, 99], [1, 5, 6]]))
        _greedy(q4_model, torch.tensor([[0, 17, 99]]), torch.tensor([[0, 1, 1]]))
    assert native_blocks.DECODE_LAYER_CALLS[0] == before


def test_torch_kernels_never_take_the_decoder_layer(q4_model: DecoderLM) -> None:
    before = native_blocks.DECODE_LAYER_CALLS[0]
    with native_blocks.forced("torch"):
        assert native_blocks.decode_layer() is None
        _greedy(q4_model, torch.tensor([[1, 17, 99]]))
    assert native_blocks.DECODE_LAYER_CALLS[0] == before


def test_the_decoder_layer_refuses_a_position_outside_its_cache(native: native_blocks.BlockMatmul) -> None:
    op = torch.ops.engine_blocks.decode_layer
    raw = torch.from_numpy(_raw("Q4_0", 64, 64, seed=0))
    norm, row = torch.ones(64), torch.ones(32)
    keys = torch.zeros(1, 4, 32)
    with pytest.raises(RuntimeError, match="position 4 is outside the cache of 4"):
        op(torch.zeros(64), norm, raw, 0, 0, raw, 0, 0, norm, raw, 0, 0, raw, 0, 0, 1e-5, row, row, keys,
           keys.clone(), 4, 1, 1, 0)  # fmt: skip


def test_reserve_keeps_what_the_cache_held_and_spans_the_new_positions() -> None:
    cache = KVCache.empty(1)
    k = torch.arange(2 * 3 * 4, dtype=torch.float32).view(1, 2, 3, 4)
    cache.update(0, k, -k)
    (keys, values), first = cache.reserve(0, k, 40)  # past the first storage's capacity of 16
    assert first == 3
    assert keys.shape[2] >= 43 and cache.keys[0] is not None and cache.keys[0].shape[2] == 43
    assert torch.equal(keys[:, :, :3], k) and torch.equal(values[:, :, :3], -k)
    assert cache.values[0] is not None and cache.values[0].data_ptr() == values.data_ptr()


def test_a_layer_with_a_bias_keeps_its_separate_calls(q4_model: DecoderLM, monkeypatch: pytest.MonkeyPatch) -> None:
    layer = q4_model.model.layers[0]
    assert isinstance(layer, DecoderLayer)
    fused = layer.fuse()
    assert fused is not None and fused.blocks is not None
    q = layer.self_attn.q_proj
    monkeypatch.setattr(q, "bias", torch.nn.Parameter(torch.zeros(q.out_features), requires_grad=False))
    biased = layer.fuse()
    assert biased is not None and biased.blocks is None  # fused, but never one native call
