"""Checkers bound to the engine contracts' FALSIFY ids: they measure, they never judge."""
