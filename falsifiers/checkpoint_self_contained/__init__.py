"""The checkers of ``contracts/checkpoint-self-contained-v1.yaml``: every checkpoint the engine writes
is one self-contained safetensors file."""
