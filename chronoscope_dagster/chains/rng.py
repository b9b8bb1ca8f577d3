"""Randomness that does not depend on order: one generator per (seed, family, item key)."""

from __future__ import annotations

import hashlib
import random


def rng_for(seed: int, family: str, *key: object) -> random.Random:
    """A generator seeded by the global seed, the family and the item, so families and
    partitions can run in any order, or in parallel, with identical output."""
    digest = hashlib.sha256(repr((seed, family, key)).encode()).digest()
    return random.Random(int.from_bytes(digest[:8], "big"))
