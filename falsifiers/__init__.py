"""Checkers bound to the engine contracts' FALSIFY ids: they measure, they never judge.

Layout: ``falsifiers/<family>/`` holds the checkers of ``contracts/<family>-vN.yaml`` (the contract's
id, dashes written as underscores, without its version), one module per aspect of the claim;
``falsifiers/shared/`` holds what several families use (work folders, the engine CLI runner,
refusal comparisons, training runs, reference models, file readers) and no checker.

The import rule (``python scripts/import_rules.py`` checks it, and CI runs that check):

1. A family's module imports from its own family and from ``falsifiers.shared``, never from another
   family; ``falsifiers.shared`` imports no family.  What two families need goes to ``shared``.
2. Imports sit at the top of the module: the standard library, torch, the engine, pv, the family's
   modules, ``shared``.  Planted faults and mutmut's mutants act when a function is called, never
   when it is imported, so a checker that imported the engine at the top measures the same code.
3. An import inside a function says why in a comment above it.  The one reason used here: an
   independent reference or an optional library (transformers, PEFT, bitsandbytes, gguf,
   llama-cpp-python, matplotlib) loads only in the checkers that use it, so that a module's other
   checkers, and each mutant's run of the mutation campaign, do not pay for it (transformers alone
   takes seconds).
"""
