"""The checkers of ``contracts/train-cli-v1.yaml``: what a user who trains from the command line reads
back."""
