"""The checkers of ``contracts/tokenizer-v1.yaml``: the engine's byte-level BPE tokenizer, which every
pretraining run and checkpoint rests on."""
