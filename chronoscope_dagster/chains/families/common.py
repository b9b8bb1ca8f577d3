"""Small pieces every family uses."""

from __future__ import annotations

import random


def pick(templates, rng: random.Random, pid: str, slot: str, **values: object) -> str:
    """A phrasing of ``slot`` for ``pid``, drawn from the item's generator, rendered."""
    phrasings = templates.phrasings(pid, slot)
    return templates.render(pid, slot, rng.randrange(len(phrasings)), **values)
