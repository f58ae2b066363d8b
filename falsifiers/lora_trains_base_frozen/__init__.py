"""The checkers of ``contracts/lora-trains-base-frozen-v1.yaml``: LoRA fine-tuning learns through the
adapters alone and leaves the base bit-for-bit unchanged."""
