"""The compact engine: a small Llama/Qwen2-style decoder stack, pv's default system under test."""
