"""``--pv-shard K/N`` in a pytest session: which falsifiers are this shard's, and the split handed
from xdist workers to the controller (the split itself is :mod:`pv.evidence.shards`')."""

from __future__ import annotations

from typing import Any

import pytest

from pv.cases import split_name
from pv.evidence.shards import ShardError, key_of, parse_shard, recorded_durations, split
from pv.pytest_settings import settings_of

_SHARD_KEY = pytest.StashKey["tuple[int, int] | None"]()
_SPLIT_KEY = pytest.StashKey["dict[str, int]"]()
_SPLIT_OUTPUT = "pv_shard_split"  # how an xdist worker hands the split to the controller


def configure_shard(config: pytest.Config) -> None:
    """Read ``--pv-shard`` once; a value that is not K/N is a usage error."""
    text = config.getoption("pv_shard", None)
    try:
        config.stash[_SHARD_KEY] = parse_shard(text) if text else None
    except ShardError as exc:
        raise pytest.UsageError(f"pv: {exc}") from None


def shard_of(config: pytest.Config) -> tuple[int, int] | None:
    """The ``--pv-shard`` this session runs, checked at configure time."""
    return config.stash.get(_SHARD_KEY, None)


def shard_split(config: pytest.Config) -> dict[str, int] | None:
    """The split of a sharded session's selection (on the xdist controller, once a worker handed it
    over); None when the session is not sharded."""
    return config.stash.get(_SPLIT_KEY, None) if shard_of(config) is not None else None


def keep_shard(config: pytest.Config, items: list[pytest.Item], falsifier: type) -> None:
    """Deselect every selected falsifier outside this session's shard (in place), all of a
    parametrized falsifier's cases together; the split is stashed for the part.  Other items (a
    contract that does not load) stay in shard 1."""
    shard = shard_of(config)
    if shard is None:
        return
    k, n = shard

    def key(item: pytest.Item) -> str:
        return key_of(item.contract.contract_id, split_name(item.nodeid.split("::", 1)[1])[0])  # type: ignore[attr-defined]

    keys = [key(i) if isinstance(i, falsifier) else None for i in items]
    plan = split({x for x in keys if x is not None}, recorded_durations(settings_of(config).evidence), n)
    config.stash[_SPLIT_KEY] = plan
    kept: list[pytest.Item] = []
    dropped: list[pytest.Item] = []
    for item, item_key in zip(items, keys, strict=True):
        mine = plan[item_key] == k if item_key is not None else k == 1
        (kept if mine else dropped).append(item)
    if dropped:
        config.hook.pytest_deselected(items=dropped)
        items[:] = kept


def hand_over_split(session: pytest.Session) -> None:
    """On an xdist worker: the split, for the controller (:func:`take_split`)."""
    workeroutput: dict[str, Any] | None = getattr(session.config, "workeroutput", None)
    split_done = session.config.stash.get(_SPLIT_KEY, None)
    if workeroutput is not None and split_done is not None:
        workeroutput[_SPLIT_OUTPUT] = split_done


def take_split(node: Any) -> None:
    """On the xdist controller, as a worker ends: the split it computed (every worker's is the same)."""
    split_done = getattr(node, "workeroutput", {}).get(_SPLIT_OUTPUT)
    if split_done is not None:  # every worker computed the same split
        node.config.stash[_SPLIT_KEY] = split_done
