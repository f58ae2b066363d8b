"""The checkers of ``contracts/data-parallel-v1.yaml``: data-parallel training under torchrun is the
single-process run spread over ranks."""
