"""A fine-tune on fewer examples than the validation stride holds out the last one and trains on
the rest.

``tokenize_pairs`` sends every ``round(1 / val_fraction)``-th example to validation; with fewer
examples than that there is none, and the last usable example is held out instead.
FALSIFY-DATA-007 reads that rule on a set with two usable examples, where the first and the last
held out are the same.  Here every size from 2 to 8 usable examples at the default fraction (0.1)
is split against the reference rows of ``falsifiers.training_data.pair_rows`` (the recipe's tokens written out
from the tokenizers backend).
"""

from __future__ import annotations

from typing import Any

from engine.data import InstructionPair, tokenize_pairs
from engine.tokenizer import EngineTokenizer
from falsifiers.training_data.pair_rows import PAIRS, as_rows, docstring_row, fitted, split
from pv.checkers import checker

SEQ_LEN = 40


@checker(observes=["sizes", "splits_differing", "held_out_trained"], ids=["FALSIFY-DATA-009"])
def few_pairs_hold_out_the_last(engine_tokenizer: EngineTokenizer) -> dict[str, Any]:
    """tokenize_pairs on the first 2 to 8 usable docstring pairs at the default val_fraction."""

    plain = EngineTokenizer.from_json(engine_tokenizer.to_json())
    plain.chat_template = None
    # the pairs the window leaves something to learn from, so that every chosen pair is usable
    short = [(p, r) for p, r in PAIRS if fitted([docstring_row(plain.backend, plain, p, r)], plain, SEQ_LEN)]
    out: dict[str, Any] = {"sizes": [], "splits_differing": [], "held_out_trained": 0}
    for n in range(2, len(short) + 1):
        chosen = short[:n]
        data = tokenize_pairs([InstructionPair(p, r, "") for p, r in chosen], plain, SEQ_LEN)
        want_train, want_val = split(
            fitted([docstring_row(plain.backend, plain, p, r) for p, r in chosen], plain, SEQ_LEN), 0.1
        )
        train, val = as_rows(data.input_ids, data.labels), as_rows(data.val_input_ids, data.val_labels)
        out["sizes"].append([len(train), len(val)])
        if (train, val) != (want_train, want_val):
            out["splits_differing"].append(n)
        out["held_out_trained"] += sum(row in train for row in val)
    return out
