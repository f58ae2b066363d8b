"""The checkers of ``contracts/generation-v1.yaml``: generation stops where it must (EOS,
max_new_tokens), the KV cache changes nothing but speed, and greedy decoding is deterministic."""
