"""The checkers of ``contracts/qlora-compose-v1.yaml``: an NF4-quantized base with full-precision LoRA
adapters composes correctly."""
