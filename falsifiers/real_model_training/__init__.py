"""The checkers of ``contracts/real-model-training-v1.yaml``: training on a model someone else trained."""
