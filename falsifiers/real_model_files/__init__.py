"""Checkers of contracts/real-model-files-v1.yaml."""
