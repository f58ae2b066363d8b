"""The checkers of ``contracts/real-model-smollm2-v1.yaml``: the engine on a model someone else trained
and published."""
