"""The refusal for a weight left in bitsandbytes' CPU-packed layout, as the engine must word it."""

from __future__ import annotations

MESSAGE = "weight is in bitsandbytes' CPU-packed layout; the AVX512-BF16 repack was left on"
