"""What several checker families share: work folders, the engine CLI runner, refusal comparisons,
training runs, reference models, file readers.  Nothing here is a checker, and nothing here imports
a family (falsifiers/__init__.py states the import rule)."""
