"""The adapter API's refusals, word for word.

FALSIFY-LORA-012 requires a broken adapter folder to be refused naming the folder.  What a user acts
on is the whole sentence: which of the two files an adapter folder needs is missing (either one),
which PEFT type a foreign adapter declares, which LoRA matrices the model has no place for (the
first five, in the order PEFT reports them), and, when saving, which adapters the model does hold.
Each message is written out here; the stray matrices are read from PEFT's own
``set_peft_model_state_dict`` on a model that has never seen the engine's loader.
"""

from __future__ import annotations

import json
from functools import partial
from pathlib import Path
from typing import Any

from safetensors.torch import load_file

from engine.lora import ADAPTER_CONFIG, ADAPTER_WEIGHTS, LoraSettings, apply_lora, load_adapter, save_adapter
from falsifiers.shared.refusals import refusals_differing
from falsifiers.shared.workdir import fresh_dir
from pv.checkers import checker

DEPTH = 4  # layers of the model the stray adapter was trained on; the model it is loaded into has 2


@checker(observes=["refusals", "refusals_differing", "differing", "stray_keys"], ids=["FALSIFY-LORA-016"])
def adapter_refusals_word_for_word(tiny_model_factory: Any, tmp_path: Path, seed: int = 0) -> dict[str, Any]:
    """An adapter saved from a tiny model; copies of its folder without its weights, without its
    config, declaring PREFIX_TUNING; an adapter of a 4-layer model loaded into a 2-layer one; and
    save_adapter asked for an adapter the model does not hold."""
    # PEFT is a reference: it loads only in the checkers that compare with it
    from peft import LoraConfig, get_peft_model, set_peft_model_state_dict

    work = fresh_dir(tmp_path, "adapter-refusals-")
    settings = LoraSettings(r=4, alpha=8)
    model = apply_lora(tiny_model_factory(seed), settings)
    saved = save_adapter(model, work / "saved")
    config_text = (saved / ADAPTER_CONFIG).read_text(encoding="utf-8")
    weights = (saved / ADAPTER_WEIGHTS).read_bytes()

    def folder(name: str, config: str | None, with_weights: bool) -> Path:
        path = work / name
        path.mkdir()
        if config is not None:
            (path / ADAPTER_CONFIG).write_text(config, encoding="utf-8")
        if with_weights:
            (path / ADAPTER_WEIGHTS).write_bytes(weights)
        return path

    needs = f"(needs {ADAPTER_CONFIG} and {ADAPTER_WEIGHTS})"
    no_weights = folder("no-weights", config_text, with_weights=False)
    no_config = folder("no-config", None, with_weights=True)
    foreign = folder("prefix", json.dumps({**json.loads(config_text), "peft_type": "PREFIX_TUNING"}), with_weights=True)

    deep = save_adapter(
        apply_lora(tiny_model_factory(seed, num_hidden_layers=DEPTH), settings), work / f"{DEPTH}-layers"
    )  # fmt: skip
    # PEFT's own reading of that adapter (its saved config, its weights) on a 2-layer model: which
    # LoRA matrices have no place
    reference = get_peft_model(tiny_model_factory(seed), LoraConfig.from_pretrained(str(deep)))
    result: Any = set_peft_model_state_dict(reference, load_file(str(deep / ADAPTER_WEIGHTS)))
    unexpected = result.unexpected_keys
    stray = [k for k in unexpected if "lora_" in k]

    def load(path: Path) -> object:
        return load_adapter(tiny_model_factory(seed), path)

    requests = [
        (partial(load, no_weights), FileNotFoundError, f"{no_weights} is not an adapter folder {needs}"),
        (partial(load, no_config), FileNotFoundError, f"{no_config} is not an adapter folder {needs}"),
        (partial(load, foreign), ValueError, f"{foreign / ADAPTER_CONFIG}: peft_type 'PREFIX_TUNING' is not LORA"),
        (partial(load, deep), ValueError, f"adapter at {deep} does not fit this model: unexpected keys {stray[:5]}"),
    ]
    differing = refusals_differing(requests)
    # KeyError's str() quotes its argument: the message is the argument
    try:
        save_adapter(model, work / "other", "other")
        differing.append("save_adapter('other'): not refused")
    except KeyError as exc:
        want = "no adapter 'other'; the model has ['default']"
        if exc.args != (want,):
            differing.append(f"save_adapter('other'): {exc.args!r} != {(want,)!r}")
    return {
        "refusals": len(requests) + 1,
        "refusals_differing": len(differing),
        "differing": differing,
        "stray_keys": len(stray),
    }
