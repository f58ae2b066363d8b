"""The checkers of ``contracts/engine-files-v1.yaml``: what the engine's files and commands give a
user, read back by readers that are not the engine's."""
