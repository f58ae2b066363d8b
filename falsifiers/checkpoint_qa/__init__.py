"""The checkers of ``contracts/checkpoint-qa-v1.yaml``: QA gates a checkpoint must pass before it is
served (`python -m engine qa CKPT`)."""
