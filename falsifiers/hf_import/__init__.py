"""The checkers of ``contracts/hf-import-v1.yaml``: `python -m engine import` on a Hugging Face folder
as transformers writes it reads what transformers reads from the same folder."""
