"""The checkers of ``contracts/export-interop-v1.yaml``: the engine's exports are usable by the
established tools."""
