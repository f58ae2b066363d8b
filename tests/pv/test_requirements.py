"""`requires:` parsing and evaluation against a described machine."""

from __future__ import annotations

import pytest

from pv.requirements import Machine, RequirementError, needs_gpu, parse_requirement, unmet

NO_GPU = Machine()
ONE_24G = Machine(cuda=True, gpu_count=1, gpu_mem_gib=[24.0])
TWO_80G = Machine(cuda=True, gpu_count=2, gpu_mem_gib=[80.0, 80.0])


@pytest.mark.parametrize(
    ("text", "kind", "value"),
    [
        ("cpu", "cpu", None),
        ("cuda", "cuda", None),
        ("cuda_mem_gib>=40", "cuda_mem_gib", 40.0),
        ("cuda_mem_gib >= 7.5", "cuda_mem_gib", 7.5),
        ("gpus>=2", "gpus", 2.0),
        ("package:bitsandbytes", "package", "bitsandbytes"),
        ("package:nvidia-ml-py", "package", "nvidia-ml-py"),
    ],
)
def test_parse(text: str, kind: str, value: object) -> None:
    req = parse_requirement(text)
    assert (req.kind, req.value) == (kind, value)


@pytest.mark.parametrize("text", ["tpu", "cuda_mem_gib>40", "gpus>=two", "package:", "package:os system", ""])
def test_malformed_requirements_are_rejected(text: str) -> None:
    with pytest.raises(RequirementError, match="unknown requirement"):
        parse_requirement(text)


@pytest.mark.parametrize(
    ("entries", "machine", "reasons"),
    [
        (["cpu"], NO_GPU, []),
        (["cuda"], NO_GPU, ["no CUDA"]),
        (["cuda"], ONE_24G, []),
        (["cuda_mem_gib>=40"], NO_GPU, ["no CUDA"]),
        (["cuda_mem_gib>=40"], ONE_24G, ["needs 40 GiB of GPU memory, found 24.0 GiB"]),
        (["cuda_mem_gib>=40"], TWO_80G, []),
        (["gpus>=2"], ONE_24G, ["needs 2 GPUs, found 1"]),
        (["gpus>=2", "cuda_mem_gib>=40"], TWO_80G, []),
        (["package:pytest"], NO_GPU, []),
        (["package:surely_not_installed_pkg", "cuda"], NO_GPU, ["missing package surely_not_installed_pkg", "no CUDA"]),
    ],
)
def test_unmet(entries: list[str], machine: Machine, reasons: list[str]) -> None:
    assert unmet(entries, machine) == reasons


def test_cpu_only_entries_never_probe_the_machine(monkeypatch: pytest.MonkeyPatch) -> None:
    import pv.requirements

    def boom() -> Machine:
        raise AssertionError("probed")

    monkeypatch.setattr(pv.requirements, "current_machine", boom)
    assert unmet(["cpu", "package:pytest"]) == []
    with pytest.raises(AssertionError, match="probed"):
        unmet(["cuda"])


def test_needs_gpu() -> None:
    assert needs_gpu(["cpu", "gpus>=2"])
    assert not needs_gpu(["cpu", "package:peft"])
    assert not needs_gpu(["nonsense"])
