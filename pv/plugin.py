"""pytest plugin: compiles contracts' FALSIFY entries into pytest items (see pv.plugin docs)."""
