"""The checkers of ``contracts/bench-report-v1.yaml``: what `python -m engine bench` reports around its
times is exactly what ran."""
