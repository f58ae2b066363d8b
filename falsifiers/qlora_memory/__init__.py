"""The checkers of ``contracts/qlora-memory-v1.yaml``: QLoRA on an NF4 base uses a fraction of
fp16-base LoRA's weight memory, and its training footprint (gradients, optimizer state) covers the
LoRA parameters only."""
