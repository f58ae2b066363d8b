"""The checkers of ``contracts/device-memory-class-v1.yaml``: the engine's GPU memory classification
(integrated/unified vs discrete) is a total function of what NVML reports, the environment override
wins, a machine without NVML or a GPU answers "no GPU" cleanly, and a real discrete card is
classified discrete."""
