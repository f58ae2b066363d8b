"""The checkers of ``contracts/multi-adapter-v1.yaml``: several LoRA adapters train on one frozen base
loaded once."""
