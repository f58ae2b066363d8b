"""The checkers of ``contracts/qa-gates-v1.yaml``: the QA gates say the right thing."""
