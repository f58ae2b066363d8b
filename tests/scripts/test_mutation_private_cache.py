"""Each mutant's run works in its own copy of the engine's cache (scripts/mutation/mutmut_site/pv_private_cache.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
MUTANT = "engine.tokenizer.x_cached_tokenizer__mutmut_7"

# The test a mutant's run would be: it reads the cache, then writes a wrong tokenizer into it.
POISONING_TEST = """
import os
from pathlib import Path

def test_poisons_its_cache():
    cache = Path(os.environ["PV_ENGINE_CACHE"])
    Path("used-cache.txt").write_text(str(cache))
    assert (cache / "tokenizers" / "bpe.json").read_text() == '{"add_bos_token": true}'
    (cache / "tokenizers" / "bpe.json").write_text('{"add_bos_token": false}')
    (cache / "pretrained-init").mkdir()
"""


@pytest.fixture
def seed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    seed = tmp_path / "mutants" / "pv-engine-cache"
    (seed / "tokenizers").mkdir(parents=True)
    (seed / "tokenizers" / "bpe.json").write_text('{"add_bos_token": true}')
    monkeypatch.syspath_prepend(str(ROOT / "scripts" / "mutation" / "mutmut_site"))
    # monkeypatch restores what the plugin sets in this process's environment
    monkeypatch.setenv("PV_ENGINE_CACHE", str(seed))
    monkeypatch.setenv("PV_MUTMUT_CACHE_SEED", str(seed))
    monkeypatch.delenv("PV_MUTMUT_CACHE_OWNER", raising=False)
    return seed


def _used_cache(pytester: pytest.Pytester) -> Path:
    return Path((pytester.path / "used-cache.txt").read_text())


def test_a_mutants_run_writes_into_a_copy_that_is_gone_afterwards(
    pytester: pytest.Pytester, seed: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("MUTANT_UNDER_TEST", MUTANT)
    pytester.makepyfile(POISONING_TEST)
    result = pytester.runpytest("-p", "pv_private_cache")
    result.assert_outcomes(passed=1)
    used = _used_cache(pytester)
    assert used.parent == seed.with_name("pv-engine-cache-private")
    assert not used.exists()  # removed when the run ended
    assert (seed / "tokenizers" / "bpe.json").read_text() == '{"add_bos_token": true}'
    assert not (seed / "pretrained-init").exists()
    # the next mutant's run starts from the seed again
    monkeypatch.setenv("MUTANT_UNDER_TEST", MUTANT.replace("_7", "_8"))
    pytester.runpytest("-p", "pv_private_cache").assert_outcomes(passed=1)


@pytest.mark.parametrize("sentinel", ["", "stats"])
def test_mutmuts_clean_and_stats_runs_fill_the_seed_itself(
    pytester: pytest.Pytester, seed: Path, monkeypatch: pytest.MonkeyPatch, sentinel: str
) -> None:
    monkeypatch.setenv("MUTANT_UNDER_TEST", sentinel)
    pytester.makepyfile(POISONING_TEST)
    result = pytester.runpytest("-p", "pv_private_cache")
    result.assert_outcomes(passed=1)
    assert _used_cache(pytester) == seed
    assert (seed / "pretrained-init").is_dir()


def test_a_pytest_run_the_mutants_run_starts_keeps_its_parents_copy(
    pytester: pytest.Pytester, seed: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    parents = seed.with_name("parents-copy")
    parents.mkdir()
    monkeypatch.setenv("MUTANT_UNDER_TEST", MUTANT)
    monkeypatch.setenv("PV_MUTMUT_CACHE_OWNER", MUTANT)
    monkeypatch.setenv("PV_ENGINE_CACHE", str(parents))
    pytester.makepyfile(
        "import os, pathlib\n"
        "def test_cache():\n"
        "    pathlib.Path('used-cache.txt').write_text(os.environ['PV_ENGINE_CACHE'])\n"
    )
    result = pytester.runpytest("-p", "pv_private_cache")
    result.assert_outcomes(passed=1)
    assert _used_cache(pytester) == parents
    assert parents.is_dir()  # the nested run did not remove it
