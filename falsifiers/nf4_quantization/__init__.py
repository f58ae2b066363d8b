"""The checkers of ``contracts/nf4-quantization-v1.yaml``: NF4 4-bit quantization (blocksize 64) of the
engine's linear weights has bounded round-trip error and storage cost, and the engine's NF4 path
agrees code for code with bitsandbytes."""
