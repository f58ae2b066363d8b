"""The checkers of ``contracts/training-data-v1.yaml``: what training reads is what was written."""
