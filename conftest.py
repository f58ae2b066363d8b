"""Repository-level pytest wiring only; the pv plugin itself loads through its pytest11 entry point."""
