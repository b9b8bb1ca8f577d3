"""The probe's corpus as the pipeline builds it: the authored items and the generated ones,
validated together (above both ``corpus`` and ``generator``, which it joins)."""

from __future__ import annotations

from pathlib import Path

from chronoscope_dagster.probe.corpus import (
    AUTHORED_FILE,
    DEFAULT_GENERATED,
    DEFAULT_SEED,
    Corpus,
    combine,
    load_authored,
    refuse_problems,
)
from chronoscope_dagster.probe.generator import generate


def build_corpus(
    n_generated: int = DEFAULT_GENERATED,
    seed: int = DEFAULT_SEED,
    authored: str | Path = AUTHORED_FILE,
) -> Corpus:
    """The authored items followed by ``n_generated`` generated ones, validated as a whole.
    Its id names the authored corpus and the generator's seed and size."""
    first = load_authored(authored)
    if n_generated == 0:
        return first
    second = generate(n_generated, seed)
    corpus = combine(f"{first.id}+{second.id}", first, second)
    refuse_problems(corpus)
    return corpus
