"""The checkers of ``contracts/quantized-decode-v1.yaml``: a GGUF file's Q4_0, Q4_1 and Q8_0 blocks
are read exactly and run through torch's int kernels within the bfloat16 rounding those kernels
take, in a layer and in a whole model decoded from the engine's own quantized export."""
