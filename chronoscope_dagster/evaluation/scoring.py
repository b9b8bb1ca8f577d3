"""The vectorised scorer: ``matching``'s specification applied to whole Arrow tables.

``score_turns`` scores a table in batches of rows scored on threads: each distinct string is normalised once, with Arrow
kernels (RE2 regexes, utf8proc) or, for ASCII strings, a numpy byte table; matching is one
DuckDB join of the strings to judge to the gold values of their own row; overlap counts come
from sorted int64 keys packing (row, token or 3-gram). Rows holding a character on which
Arrow's Unicode tables could disagree with Python's go through the per-turn functions instead:
code points Python's Unicode database leaves unassigned, and capital sigma, whose lowercase
Python chooses by context (the reference normaliser, used in every mode for the overlap
counts, keeps it). Relaxed hedges come from another DuckDB join (``_hedges``): a string that
names a gold value and a rival of its row hedges when that rival lies within none of the row's
gold values; where it does, whether it hedges depends on where it occurs, and the row goes
through the per-turn functions too.

It gives the same table as ``matching.score_turns_loop``, byte for byte.
"""

from __future__ import annotations

import os
import re
import unicodedata
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from functools import cache

import duckdb
import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from chronoscope_dagster.evaluation.matching import (
    CANDIDATE_STRIP,
    COLON_PREFIXES,
    COUNT_RIVALS,
    INPUT_COLUMNS,
    LINE_BREAKS,
    NUMBER_WORDS,
    PUNCTUATION_AND_SPACE,
    REFERENCE_PREFIXES,
    SCORE_SCHEMA,
    WORD_PREFIXES,
    YES_NO_RIVALS,
    check_turns,
    is_token_char,
    score_turn,
    with_scores,
)

_BATCH_ROWS = 1 << 18
_STRINGS = pa.list_(pa.string())
_INPUT_TYPES = {
    "prediction": pa.string(),
    "candidates": _STRINGS,
    "answer": pa.string(),
    "gold_labels": _STRINGS,
    "gold_aliases": _STRINGS,
    "present_labels": _STRINGS,
    "drift_eligible": pa.bool_(),
    "answer_kind": pa.string(),
    "rival_labels": _STRINGS,
}
WHITESPACE = (
    "\t\n\x0b\x0c\r\x1c\x1d\x1e\x1f \x85\xa0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006"
    "\u2007\u2008\u2009\u200a\u2028\u2029\u202f\u205f\u3000"
)  # str.isspace, which is also what Python's \s and str.strip() use


def _re2(chars: str) -> str:
    return "".join(f"\\x{{{ord(c):x}}}" for c in chars)


_WS = _re2(WHITESPACE)
_NOT_TOKEN = r"[^\pL\pN\pM]"
_RELAXED_LINE = rf"(?s)^{_NOT_TOKEN}+|[{_re2(LINE_BREAKS)}].*"
_RELAXED_PREFIX = f"^(?:{'|'.join(COLON_PREFIXES)}|(?:{'|'.join(WORD_PREFIXES)})(?:{_NOT_TOKEN}|$))"
_REFERENCE_PREFIX = "(?s)^(?:{})".format(
    "|".join(
        "".join(f"[{c.upper()}{c}]" if c.isalpha() else _re2(c) for c in prefix)
        for prefix in REFERENCE_PREFIXES
    )
)
_REFERENCE_PREFIX_CUT = _REFERENCE_PREFIX + r"[ :\t]*(.*?)[ :\t]*$"
# RE2's \b is ASCII-only; Python's \w is \pL, \pN and "_" on every assigned code point (tested).
_ANSWER_AFTER = rf"(?s)^(?:|.*?[^\pL\pN_])(?i:answer)[{_WS}]*:[{_WS}]*(.+)$"


def _byte_table(char_map: Callable[[str], int]) -> np.ndarray:
    return np.array([char_map(chr(b)) for b in range(256)], dtype=np.int16)


_SPACE, _DELETE = 32, -1
_RELAXED_BYTES = _byte_table(lambda c: ord(c.lower()) if is_token_char(c) else _SPACE)
_REFERENCE_BYTES = _byte_table(
    lambda c: _SPACE if c.isspace() else ord(c.lower()) if re.match(r"\w", c) else _DELETE
)


@cache
def _unassigned_class() -> str:
    """An RE2 class of the code points Python's Unicode database leaves unassigned."""
    ranges: list[str] = []
    start = None
    for code in range(0x110001):
        unassigned = code <= 0x10FFFF and unicodedata.category(chr(code)) == "Cn"
        unassigned = unassigned and not 0xD800 <= code <= 0xDFFF
        if unassigned and start is None:
            start = code
        elif not unassigned and start is not None:
            ranges.append(f"\\x{{{start:x}}}-\\x{{{code - 1:x}}}")
            start = None
    return "".join(ranges)


def score_turns(turns: pa.Table, mode: str = "relaxed", *, workers: int | None = None) -> pa.Table:
    """``turns`` with the score columns (``SCORE_SCHEMA``) appended, rows and other columns
    unchanged; equal to ``score_turns_loop``. Batches of rows are scored ``workers`` at a time
    (threads: the Arrow, numpy and DuckDB calls release the GIL); by default one per CPU, at
    most four."""
    check_turns(turns, mode)
    _unassigned_class()
    inputs = {
        name: turns.column(name).cast(_INPUT_TYPES[name]).combine_chunks() for name in INPUT_COLUMNS
    }
    starts = range(0, turns.num_rows, _BATCH_ROWS)

    def batch(start: int) -> dict[str, np.ndarray]:
        return _score_batch({name: a.slice(start, _BATCH_ROWS) for name, a in inputs.items()}, mode)

    workers = min(workers or min(os.cpu_count() or 1, 4), max(len(starts), 1))
    if workers > 1:
        with ThreadPoolExecutor(workers) as pool:
            batches = list(pool.map(batch, starts))
    else:
        batches = [batch(start) for start in starts]
    return with_scores(
        turns,
        {
            field.name: np.concatenate([batch[field.name] for batch in batches])
            if batches
            else np.zeros(0, field.type.to_pandas_dtype())
            for field in SCORE_SCHEMA
        },
        mode,
    )


def _score_batch(inputs: dict[str, pa.Array], mode: str) -> dict[str, np.ndarray]:
    rows = len(inputs["prediction"])
    probes, candidate_rows = _probes(inputs)
    if mode == "reference":
        probes, golds = _reference_probes(probes), _reference_golds(inputs)
    else:
        probes, golds = _normalised_probes(probes), _normalised_golds(inputs)
    ids, kinds, whole, shadowed = _matched(probes, golds, mode)
    hedging, unsure = (
        _hedges(probes, np.setdiff1d(ids[kinds == 0], ids[(kinds == 0) & whole]), golds, inputs)
        if mode == "relaxed"
        else (np.zeros(0, np.int64), np.zeros(0, np.int64))
    )
    top = ids < rows
    owner = ids.copy()
    owner[~top] = candidate_rows[ids[~top] - rows]
    hedges = np.isin(ids, hedging)
    flags = {f.name: np.zeros(rows, dtype=bool) for f in SCORE_SCHEMA if f.type == pa.bool_()}
    named, present = (kinds == 0) & ~hedges, kinds == 1
    flags["correct_at1"][ids[top & named]] = True
    flags["correct_atk"][owner[named]] = True
    flags["present_match_at1"][ids[top & present]] = True
    flags["present_match_atk"][owner[present]] = True
    flags["hedged_at1"][hedging[hedging < rows]] = True
    plainly_present = np.zeros(rows, dtype=bool)
    plainly_present[owner[present & ~hedges]] = True
    eligible = inputs["drift_eligible"].fill_null(False).to_numpy(zero_copy_only=False)
    if mode == "reference":
        eligible = np.ones(rows, dtype=bool)
    flags["drift_at1"] = (
        eligible & ~flags["correct_at1"] & ~flags["hedged_at1"] & flags["present_match_at1"]
    )
    flags["drift_atk"] = eligible & ~flags["correct_atk"] & plainly_present
    scores = {
        **flags,
        **_overlaps(
            _reference_normalize(inputs["prediction"].fill_null("")),
            _on_distinct(inputs["answer"].fill_null(""), _reference_normalize),
        ),
    }
    needs_python = _needs_python(inputs, mode)
    needs_python[shadowed] = True
    needs_python[unsure] = True
    python_rows = np.flatnonzero(needs_python)
    if len(python_rows):
        taken = pa.array(python_rows)
        columns = [inputs[name].take(taken).to_pylist() for name in INPUT_COLUMNS]
        for row, values in zip(python_rows, zip(*columns, strict=True), strict=True):
            score = score_turn(*values, mode)
            for name, value in zip(SCORE_SCHEMA.names, score, strict=True):
                scores[name][row] = value
    return scores


def _flat(lists: pa.Array) -> tuple[pa.Array, np.ndarray]:
    return pc.list_flatten(lists), pc.list_parent_indices(lists).to_numpy().astype(np.int64)


def _probes(inputs: dict[str, pa.Array]) -> tuple[pa.Table, np.ndarray]:
    """Strings to judge: each non-null prediction (id = its row) and each candidate that differs
    from its row's prediction (id = rows + its place among all candidates)."""
    prediction = inputs["prediction"]
    rows = len(prediction)
    candidates, candidate_rows = _flat(inputs["candidates"])
    same = pc.equal(candidates, prediction.take(pa.array(candidate_rows))).fill_null(False)
    keep = pc.and_(candidates.is_valid(), pc.invert(same)).to_numpy(zero_copy_only=False)
    top = np.flatnonzero(prediction.is_valid().to_numpy(zero_copy_only=False))
    others = np.flatnonzero(keep)
    probes = pa.table(
        {
            "id": np.concatenate([top, rows + others]),
            "row": np.concatenate([top, candidate_rows[others]]),
            "text": pa.concat_arrays([prediction.take(top), candidates.take(others)]),
        }
    )
    return probes, candidate_rows


def _golds(parts: Sequence[tuple[pa.Array, np.ndarray, int]]) -> pa.Table:
    texts = pa.concat_arrays([text for text, _, _ in parts])
    valid = texts.is_valid().to_numpy(zero_copy_only=False)
    return pa.table(
        {
            "row": np.concatenate([rows for _, rows, _ in parts])[valid],
            "kind": np.concatenate([np.full(len(rows), kind, np.int8) for _, rows, kind in parts])[
                valid
            ],
            "text": texts.filter(pa.array(valid)),
        }
    )


def _gold_parts(inputs: dict[str, pa.Array]) -> list[tuple[pa.Array, np.ndarray, int]]:
    return [
        (inputs["answer"], np.arange(len(inputs["answer"]), dtype=np.int64), 0),
        (*_flat(inputs["gold_labels"]), 0),
        (*_flat(inputs["gold_aliases"]), 0),
        (*_flat(inputs["present_labels"]), 1),
    ]


def _normalised_probes(probes: pa.Table) -> pa.Table:
    return _non_empty(
        probes.set_column(
            2, "text", _on_distinct(probes["text"].combine_chunks(), _relaxed_prediction)
        )
    )


def _normalised_golds(inputs: dict[str, pa.Array]) -> pa.Table:
    golds = _golds(_gold_parts(inputs))
    texts = _on_distinct(golds["text"].combine_chunks(), _relaxed_gold)
    numbers = pc.index_in(texts, value_set=pa.array([str(i) for i in range(len(NUMBER_WORDS))]))
    spelt = numbers.is_valid()
    words = pa.table(
        {
            "row": golds["row"].filter(spelt),
            "kind": golds["kind"].filter(spelt),
            "text": pa.array(NUMBER_WORDS).take(numbers.filter(spelt)),
        }
    )
    return _non_empty(pa.concat_tables([golds.set_column(2, "text", texts), words]))


def _reference_probes(probes: pa.Table) -> pa.Table:
    """Each probe's candidates (reference_candidates), normalised: the primary one, the one
    without " (...)" groups where there is a "(", the part before a comma where there is one,
    or the whole text where all of them normalise to empty. Duplicates do not change an
    any-match and are not removed."""
    raw = probes["text"].combine_chunks()
    line = _reference_first_line_arrow(raw)
    says_answer = pc.match_substring(line, "answer", ignore_case=True)
    line = _where(line, says_answer, lambda text: _replace(text, _ANSWER_AFTER, r"\1"))
    primary = pc.utf8_trim(pc.utf8_trim(line, characters=WHITESPACE), characters=CANDIDATE_STRIP)
    grouped = np.flatnonzero(pc.match_substring(primary, "(").to_numpy(zero_copy_only=False))
    comma = np.flatnonzero(pc.match_substring(primary, ",").to_numpy(zero_copy_only=False))
    without_groups = _replace(primary.take(grouped), rf"[{_WS}]*\([^)]*\)", "")
    before_comma = _replace(primary.take(comma), r"(?s),.*", "")
    owners = probes.select(["id", "row"])
    table = pa.concat_tables([owners, owners.take(grouped), owners.take(comma)])
    texts = pa.concat_arrays(
        [
            primary,
            pc.utf8_trim(without_groups, characters=WHITESPACE),
            pc.utf8_trim(before_comma, characters=WHITESPACE),
        ]
    )
    table = table.append_column("text", _on_distinct(texts, _reference_normalize))
    owner = np.concatenate([np.arange(len(raw)), grouped, comma])
    kept = pc.not_equal(table["text"], "").to_numpy(zero_copy_only=False)
    bare = np.flatnonzero(np.bincount(owner[kept], minlength=len(raw)) == 0)
    if len(bare):
        whole = _reference_normalize(raw.take(bare))
        table = pa.concat_tables([table, owners.take(bare).append_column("text", whole)])
    return _non_empty(table)


def _reference_golds(inputs: dict[str, pa.Array]) -> pa.Table:
    present = inputs["present_labels"]
    has_present = np.flatnonzero(pc.fill_null(pc.list_value_length(present), 0).to_numpy() > 0)
    golds = _golds(
        [
            (inputs["answer"], np.arange(len(inputs["answer"]), dtype=np.int64), 0),
            (pc.list_element(present.take(has_present), 0), has_present, 1),
        ]
    )
    return _non_empty(
        golds.set_column(
            2, "text", _on_distinct(golds["text"].combine_chunks(), _reference_normalize)
        )
    )


def _non_empty(table: pa.Table) -> pa.Table:
    return table.filter(pc.not_equal(table["text"], ""))


def _matched(
    probes: pa.Table, golds: pa.Table, mode: str
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """(probe id, gold kind, whether the probe is that value) for every probe that matches a
    gold value of its own row, and the rows where a relaxed match may be a distractor's (left
    to the per-turn path).

    The reference's last resort (split on , ; / |) is not needed: a part of the postprocessed
    prediction normalises to a substring of the whole prediction's normal form, so a part equal
    to the gold is a substring match already. Only lowercasing in context could tell them
    apart, and rows with a capital sigma go through the per-turn path."""
    text = "' ' || text || ' '" if mode == "relaxed" else "text"
    condition = {
        "exact": "p.text = g.text",
        "relaxed": "contains(p.text, g.text)",
        "reference": "contains(p.text, g.text) OR contains(g.text, p.text)",
    }[mode]
    with duckdb.connect() as connection:
        connection.register("probes", probes)
        connection.register("golds", golds)
        found = connection.execute(
            f"""
            WITH p AS (SELECT id, row, {text} AS text FROM probes),
                 g AS (SELECT row, kind, {text} AS text FROM golds)
            SELECT p.id, g.kind, p.text = g.text AS whole
            FROM p JOIN g ON p.row = g.row AND ({condition})"""
        ).fetchnumpy()
        shadowed = (
            connection.execute(
                f"""
                WITH p AS (SELECT id, row, {text} AS text FROM probes),
                     g AS (SELECT row, kind, {text} AS text FROM golds)
                SELECT DISTINCT p.row FROM p
                JOIN g ON p.row = g.row AND contains(p.text, g.text)
                JOIN g AS d ON d.row = g.row AND d.kind <> g.kind AND d.text <> g.text
                           AND contains(d.text, g.text) AND contains(p.text, d.text)"""
            ).fetchnumpy()["row"]
            if mode == "relaxed"
            else []
        )
    return (
        np.asarray(found["id"], np.int64),
        np.asarray(found["kind"], np.int64),
        np.asarray(found["whole"], bool),
        np.asarray(shadowed, np.int64),
    )


def _hedges(
    probes: pa.Table, named: np.ndarray, golds: pa.Table, inputs: dict[str, pa.Array]
) -> tuple[np.ndarray, np.ndarray]:
    """The probes that hedge, and the rows left to ``judge``, among the probes ``named``: those
    that name a gold value of their row and say more (one that is a gold value and nothing more
    never hedges). Such a probe names a rival when one of its row's rivals that is no gold value
    occurs in it on whole tokens: an entity turn's rival or present label, a token of
    ``COUNT_RIVALS`` (count turns) or yes/no (yes/no turns). It hedges when such a rival occurs
    within none of the row's gold values (so within no occurrence of one); where every rival
    it names does, whether it hedges depends on where they occur, and its row is left to
    ``judge``."""
    probe_ids = probes["id"].to_numpy()
    is_named = np.zeros(int(probe_ids.max(initial=-1)) + 1, dtype=bool)
    is_named[named] = True
    longer = probes.filter(is_named[probe_ids])
    rivals, kinds, vocabulary = _rivals(inputs, longer["row"].to_numpy())
    with duckdb.connect() as connection:
        connection.register("longer", longer)
        connection.register("golds", golds.filter(pc.equal(golds["kind"], 0)))
        connection.register("rivals", rivals)
        connection.register("kinds", kinds)
        connection.register("vocabulary", vocabulary)
        found = connection.execute(
            """
            WITH padded AS (SELECT id, row, ' ' || text || ' ' AS text FROM longer),
                 tokens AS (SELECT l.id, l.row, k.kind,
                                   unnest(string_split(l.text, ' ')) AS token
                            FROM longer l JOIN kinds k USING (row)),
                 hits AS (SELECT p.id, p.row, r.text FROM padded p JOIN rivals r
                          ON p.row = r.row AND contains(p.text, ' ' || r.text || ' ')
                          UNION ALL
                          SELECT t.id, t.row, t.token FROM tokens t
                          JOIN vocabulary v USING (kind, token)),
                 rivals_named AS (
                     SELECT h.id, h.row, EXISTS (
                         SELECT 1 FROM golds g WHERE g.row = h.row
                         AND contains(' ' || g.text || ' ', ' ' || h.text || ' ')) AS within
                     FROM hits h
                     WHERE NOT EXISTS (
                         SELECT 1 FROM golds g WHERE g.row = h.row AND g.text = h.text))
            SELECT id, row, bool_and(within) AS unsure FROM rivals_named GROUP BY id, row"""
        ).fetchnumpy()
    ids, rows, unsure = (np.asarray(found[c]) for c in ("id", "row", "unsure"))
    return ids[~unsure].astype(np.int64), np.unique(rows[unsure]).astype(np.int64)


def _rivals(inputs: dict[str, pa.Array], rows: np.ndarray) -> tuple[pa.Table, ...]:
    """For the turns ``rows``: the normalised rival and present labels of the entity turns (row,
    text); the yes/no and count turns (row, kind: "count" or "yes_no " and the normalised
    answer); and the tokens each such kind takes as rivals (kind, token)."""
    kind = inputs["answer_kind"]
    entity = pc.invert(pc.is_in(kind, value_set=pa.array(["count", "yes_no"]))).fill_null(True)
    entity = entity.to_numpy(zero_copy_only=False)
    wanted = np.zeros(len(kind), dtype=bool)
    wanted[rows] = True
    texts, owners = [], []
    for name in ("rival_labels", "present_labels"):
        flat, parents = _flat(inputs[name])
        keep = (wanted & entity)[parents]
        texts.append(flat.filter(pa.array(keep)))
        owners.append(parents[keep])
    rivals = pa.table({"row": np.concatenate(owners), "text": pa.concat_arrays(texts)})
    rivals = rivals.filter(rivals["text"].is_valid())
    rivals = _non_empty(
        rivals.set_column(1, "text", _on_distinct(rivals["text"].combine_chunks(), _relaxed_gold))
    )
    analytic = np.flatnonzero(wanted & ~entity)
    answers = _on_distinct(inputs["answer"].take(analytic).fill_null(""), _relaxed_gold)
    kinds = pa.table(
        {
            "row": analytic,
            "kind": pc.if_else(
                pc.equal(kind.take(analytic), "count"),
                "count",
                pc.binary_join_element_wise("yes_no", answers, " "),
            ),
        }
    )
    vocabulary = pa.table(
        {
            "kind": ["count"] * len(COUNT_RIVALS) + [f"yes_no {a}" for a in YES_NO_RIVALS],
            "token": [*COUNT_RIVALS, *YES_NO_RIVALS.values()],
        }
    )
    return rivals, kinds, vocabulary


def _needs_python(inputs: dict[str, pa.Array], mode: str = "relaxed") -> np.ndarray:
    """The rows holding a character on which Arrow and Python could disagree, in a string the
    mode normalises (only relaxed matching reads the rival labels)."""
    pattern = f"[{_unassigned_class()}Σ]"
    rows = len(inputs["prediction"])
    needs = np.zeros(rows, dtype=bool)
    skipped = {"drift_eligible", "answer_kind"} | ({"rival_labels"} if mode != "relaxed" else set())
    for name in (name for name in INPUT_COLUMNS if name not in skipped):
        column = inputs[name]
        texts, owners = (
            _flat(column) if pa.types.is_list(column.type) else (column, np.arange(rows))
        )
        texts = texts.fill_null("")
        unusual = np.flatnonzero(~pc.string_is_ascii(texts).to_numpy(zero_copy_only=False))
        if len(unusual):
            hits = pc.match_substring_regex(texts.take(unusual), pattern).to_numpy(
                zero_copy_only=False
            )
            needs[owners[unusual[hits]]] = True
    return needs


# --- normalisation on Arrow arrays ---


def _replace(values: pa.Array, pattern: str, replacement: str) -> pa.Array:
    return pc.replace_substring_regex(values, pattern=pattern, replacement=replacement)


def _where(values: pa.Array, mask: pa.Array, transform: Callable[[pa.Array], pa.Array]) -> pa.Array:
    """``transform`` of the strings where ``mask`` (a cheap test) holds; the others unchanged."""
    selected = values.filter(mask)
    return pc.replace_with_mask(values, mask, transform(selected)) if len(selected) else values


def _first_line(values: pa.Array) -> pa.Array:
    """Each string up to its first line feed, as the reference's split on it keeps."""
    return _where(
        values, pc.match_substring(values, "\n"), lambda text: _replace(text, r"(?s)\n.*", "")
    )


def _on_distinct(values: pa.Array, transform: Callable[[pa.Array], pa.Array]) -> pa.Array:
    """``transform`` of each distinct value once (gold labels repeat across turns)."""
    encoded = pc.dictionary_encode(values)
    return transform(encoded.dictionary).take(encoded.indices)


def _by_ascii(
    values: pa.Array,
    ascii_path: Callable[[pa.Array], pa.Array],
    unicode_path: Callable[[pa.Array], pa.Array],
) -> pa.Array:
    """``ascii_path`` on the ASCII strings, ``unicode_path`` on the others, in the input order."""
    is_ascii = pc.string_is_ascii(values).to_numpy(zero_copy_only=False)
    if is_ascii.all():
        return ascii_path(values)
    if not is_ascii.any():
        return unicode_path(values)
    ascii_rows, other_rows = np.flatnonzero(is_ascii), np.flatnonzero(~is_ascii)
    merged = pa.concat_arrays(
        [ascii_path(values.take(ascii_rows)), unicode_path(values.take(other_rows))]
    )
    position = np.empty(len(values), dtype=np.int64)
    position[np.concatenate([ascii_rows, other_rows])] = np.arange(len(values))
    return merged.take(position)


def _fold_arrow(values: pa.Array) -> pa.Array:
    values = pc.utf8_normalize(values, form="NFKC")
    values = _replace(values, "[\u201c\u201d]", '"')
    values = _replace(values, "[\u2018\u2019]", "'")
    values = pc.utf8_lower(values)
    values = pc.replace_substring(values, "ß", "ss")
    values = pc.replace_substring(values, "ς", "σ")
    return _replace(pc.utf8_normalize(values, form="NFKD"), r"\p{Mn}+", "")


def _relaxed_unicode_tokens(values: pa.Array) -> pa.Array:
    return pc.utf8_trim(_replace(values, f"{_NOT_TOKEN}+", " "), characters=" ")


def _answer_line(values: pa.Array) -> pa.Array:
    values = _replace(values, _RELAXED_LINE, "")
    prefixed = pc.match_substring_regex(values, _RELAXED_PREFIX)
    return _where(values, prefixed, lambda text: _replace(text, _RELAXED_PREFIX, " "))


def _relaxed_gold(values: pa.Array) -> pa.Array:
    return _by_ascii(
        values,
        lambda ascii: _translate_ascii(ascii, _RELAXED_BYTES),
        lambda other: _relaxed_unicode_tokens(_fold_arrow(other)),
    )


def _relaxed_prediction(values: pa.Array) -> pa.Array:
    return _by_ascii(
        values,
        lambda ascii: _translate_ascii(_answer_line(pc.ascii_lower(ascii)), _RELAXED_BYTES),
        lambda other: _relaxed_unicode_tokens(_answer_line(_fold_arrow(other))),
    )


def _reference_first_line_arrow(values: pa.Array) -> pa.Array:
    values = _first_line(pc.utf8_trim(values, characters=WHITESPACE))
    return pc.utf8_trim(values, characters=WHITESPACE)


def _reference_normalize(values: pa.Array) -> pa.Array:
    """normalize_for_match. Its straight-quote mapping is left out: quotes are deleted anyway."""
    values = _reference_first_line_arrow(values)
    prefixed = pc.match_substring_regex(values, _REFERENCE_PREFIX)
    values = _where(values, prefixed, lambda text: _replace(text, _REFERENCE_PREFIX_CUT, r"\1"))
    values = pc.utf8_trim(
        pc.utf8_trim(values, characters=WHITESPACE), characters=PUNCTUATION_AND_SPACE
    )
    return _by_ascii(
        values, lambda ascii: _translate_ascii(ascii, _REFERENCE_BYTES), _reference_unicode_tail
    )


def _reference_unicode_tail(values: pa.Array) -> pa.Array:
    values = _replace(pc.utf8_lower(values), rf"[^\pL\pN_{_WS}]+", "")
    return pc.utf8_trim(_replace(values, f"[{_WS}]+", " "), characters=" ")


def _utf8(values: pa.Array) -> tuple[np.ndarray, np.ndarray]:
    """The bytes and (int64, zero-based) offsets of a string array without nulls."""
    _, offset_buffer, data_buffer = values.buffers()
    offsets = np.frombuffer(offset_buffer, dtype=np.int32)[
        values.offset : values.offset + len(values) + 1
    ]
    offsets = offsets.astype(np.int64)
    data = (
        np.frombuffer(data_buffer, dtype=np.uint8)
        if data_buffer is not None
        else np.zeros(0, np.uint8)
    )
    return data[offsets[0] : offsets[-1]], offsets - offsets[0]


def _string_array(data: np.ndarray, offsets: np.ndarray) -> pa.Array:
    return pa.Array.from_buffers(
        pa.string(),
        len(offsets) - 1,
        [None, pa.py_buffer(offsets.astype(np.int32)), pa.py_buffer(data)],
    )


def _compact(
    data: np.ndarray, offsets: np.ndarray, keep: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    kept_before = np.concatenate([[0], np.cumsum(keep, dtype=np.int64)])
    return data[keep], kept_before[offsets]


def _translate_ascii(values: pa.Array, table: np.ndarray) -> pa.Array:
    """ASCII strings mapped byte by byte through ``table`` (a byte, _SPACE or _DELETE), then runs
    of spaces collapsed and trimmed."""
    data, offsets = _utf8(values)
    mapped = table[data]
    data, offsets = _compact(mapped.astype(np.uint8), offsets, mapped != _DELETE)
    space = data == _SPACE
    after_space = np.ones(len(data), dtype=bool)
    after_space[1:] = space[:-1]
    after_space[offsets[:-1][offsets[:-1] < len(data)]] = True
    data, offsets = _compact(data, offsets, ~(space & after_space))
    last = np.zeros(len(data), dtype=bool)
    last[offsets[1:][np.diff(offsets) > 0] - 1] = True
    data, offsets = _compact(data, offsets, ~(last & (data == _SPACE)))
    return _string_array(data, offsets)


# --- overlap counts on Arrow arrays ---


def _overlap(rows: int, pred_keys: np.ndarray, gold_keys: np.ndarray, width: int) -> np.ndarray:
    """Per row, the size of the multiset intersection of its predicted and gold items, each item
    given as the key row * width + item code. Keys arrive grouped by row, so a stable sort
    (timsort) is close to linear; sorting beats Arrow's hash kernels here."""
    gold = np.sort(gold_keys, kind="stable")
    if not len(gold):
        return np.zeros(rows, dtype=np.int64)
    first = np.flatnonzero(np.concatenate([[True], gold[1:] != gold[:-1]]))
    keys, counts = gold[first], np.diff(np.append(first, len(gold)))
    pred = np.sort(pred_keys, kind="stable")
    at = np.minimum(np.searchsorted(keys, pred), len(keys) - 1)
    tp = np.minimum(np.bincount(at[keys[at] == pred], minlength=len(keys)), counts)
    return np.bincount(keys // width, weights=tp, minlength=rows).astype(np.int64)


def _overlaps(predicted: pa.Array, expected: pa.Array) -> dict[str, np.ndarray]:
    """The six overlap counts of normalised predictions against normalised golds. A prediction
    equal to its gold shares every item, so only the other rows are counted item by item."""
    same = pc.equal(predicted, expected).to_numpy(zero_copy_only=False)
    spaces = pc.count_substring(expected, " ").to_numpy().astype(np.int64)
    length = pc.utf8_length(expected).to_numpy().astype(np.int64) - spaces
    totals = {
        "tok": np.where(length > 0, spaces + 1, 0),
        "ch": np.where(length >= 3, length - 2, np.minimum(length, 1)),
    }
    counts = {
        f"{prefix}_{part}": np.where(same, total, 0)
        for prefix, total in totals.items()
        for part in ("tp", "pred", "gold")
    }
    differ = np.flatnonzero(~same)
    pairs = (predicted.take(differ), expected.take(differ))
    for prefix, counted in (("tok", _token_overlap(*pairs)), ("ch", _char3_overlap(*pairs))):
        for part, values in zip(("tp", "pred", "gold"), counted, strict=True):
            counts[f"{prefix}_{part}"][differ] = values
    return counts


def _token_overlap(predicted: pa.Array, expected: pa.Array) -> tuple[np.ndarray, ...]:
    """Tokens are coded by their place among the distinct gold tokens; a predicted token that is
    no gold token anywhere cannot be shared and is dropped."""
    rows = len(predicted)
    flat = []
    for texts in (predicted, expected):
        tokens, owners = _flat(pc.split_pattern(texts, " "))
        non_empty = pc.not_equal(tokens, "").to_numpy(zero_copy_only=False)
        flat.append((owners[non_empty], tokens.filter(pa.array(non_empty))))
    (pred_rows, pred_tokens), (gold_rows, gold_tokens) = flat
    tp = _coded_overlap(rows, pred_rows, pred_tokens, gold_rows, gold_tokens)
    return (
        tp,
        np.bincount(pred_rows, minlength=rows).astype(np.int64),
        np.bincount(gold_rows, minlength=rows).astype(np.int64),
    )


def _coded_overlap(
    rows: int,
    pred_rows: np.ndarray,
    pred_values: pa.Array,
    gold_rows: np.ndarray,
    gold_values: pa.Array,
) -> np.ndarray:
    """Shared (row, value) pairs per row, values coded by the gold side's dictionary."""
    gold_codes = pc.dictionary_encode(gold_values)
    width = max(len(gold_codes.dictionary), 1)
    pred_codes = pc.index_in(pred_values, value_set=gold_codes.dictionary)
    known = pred_codes.is_valid().to_numpy(zero_copy_only=False)
    return _overlap(
        rows,
        pred_rows[known] * width + pred_codes.drop_null().to_numpy().astype(np.int64),
        gold_rows * width + gold_codes.indices.to_numpy().astype(np.int64),
        width,
    )


def _char3_overlap(predicted: pa.Array, expected: pa.Array) -> tuple[np.ndarray, ...]:
    """A gram is three dense character codes (1-based; 0 marks the empty places of a string
    under three characters) in base ``alphabet``, so (row, gram) packs into one int64 key when
    the batch uses fewer than 2**15 distinct characters; otherwise grams are coded like tokens."""
    rows = len(predicted)
    (pred_rows, pred_chars, pred_lengths), (gold_rows, gold_chars, gold_lengths) = (
        _code_points(pc.replace_substring(texts, " ", "")) for texts in (predicted, expected)
    )
    seen = np.zeros(0x110000, dtype=bool)
    seen[pred_chars] = True
    seen[gold_chars] = True
    dense = np.cumsum(seen)
    alphabet = int(dense[-1]) + 1
    pred_rows, pred_grams = _packed_char3(pred_rows, dense[pred_chars], pred_lengths, alphabet)
    gold_rows, gold_grams = _packed_char3(gold_rows, dense[gold_chars], gold_lengths, alphabet)
    width = alphabet**3
    if rows * width < 2**62:
        tp = _overlap(rows, pred_rows * width + pred_grams, gold_rows * width + gold_grams, width)
    else:
        tp = _coded_overlap(rows, pred_rows, pa.array(pred_grams), gold_rows, pa.array(gold_grams))
    return (
        tp,
        np.bincount(pred_rows, minlength=rows).astype(np.int64),
        np.bincount(gold_rows, minlength=rows).astype(np.int64),
    )


def _code_points(values: pa.Array) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The row and code point of every character of a string array, and each row's length."""
    data, offsets = _utf8(values)
    if not (data >= 0x80).any():
        lengths = np.diff(offsets)
        return (
            np.repeat(np.arange(len(values), dtype=np.int64), lengths),
            data.astype(np.int64),
            lengths,
        )
    lead = np.flatnonzero((data & 0xC0) != 0x80)
    first = data[lead].astype(np.int64)
    width = 1 + (first >= 0xC0) + (first >= 0xE0) + (first >= 0xF0)
    code = first & np.array([0, 0x7F, 0x1F, 0x0F, 0x07])[width]
    for extra in (1, 2, 3):
        longer = width > extra
        code[longer] = (code[longer] << 6) | (data[lead[longer] + extra] & 0x3F)
    lengths = np.diff(np.searchsorted(lead, offsets))
    return np.repeat(np.arange(len(values), dtype=np.int64), lengths), code, lengths


def _packed_char3(
    char_rows: np.ndarray, codes: np.ndarray, lengths: np.ndarray, alphabet: int
) -> tuple[np.ndarray, np.ndarray]:
    """(row, gram) of every sliding 3-gram, and of each string under three characters whole."""
    starts = np.concatenate([[0], np.cumsum(lengths)])
    sliding = np.flatnonzero(np.arange(len(codes)) + 2 < starts[1:][char_rows])
    short = np.flatnonzero((lengths > 0) & (lengths < 3))
    first = starts[short]
    second = np.where(lengths[short] == 2, codes[np.minimum(first + 1, max(len(codes) - 1, 0))], 0)
    grams = np.concatenate(
        [
            (codes[sliding] * alphabet + codes[sliding + 1]) * alphabet + codes[sliding + 2],
            (codes[first] * alphabet + second) * alphabet,
        ]
    )
    return np.concatenate([char_rows[sliding], short]), grams
