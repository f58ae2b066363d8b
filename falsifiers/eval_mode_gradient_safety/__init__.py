"""The checkers of ``contracts/eval-mode-gradient-safety-v1.yaml``: an eval-mode forward through a
QLoRA model does not corrupt later training."""
