"""The checkers of ``contracts/bench-stability-v1.yaml``: the engine's benchmark bricks
(engine/bricks.py, what `python -m engine bench` reports) are stable enough to compare."""
