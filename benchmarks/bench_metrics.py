"""Matching throughput: score_turns (vectorised) against score_turns_loop (per turn).

    python benchmarks/bench_metrics.py [--rows 1000000] [--modes relaxed exact reference]

Builds synthetic scored turns (seeded) and, per mode, times both implementations on the same
table, checks that their outputs are equal, and prints rows/s, the ratios and the peak resident
memory (cumulative: the vectorised runs come first, so their peak is the first printed). The
vectorised scorer runs once with one thread and once with --workers threads, each mode after a
warm-up call on 1,000 rows (the first call builds a class of unassigned code points, 0.2 s).

The turns: gold labels of 1-3 words from 60,000 synthetic entities (8% with accents, 2% in
Cyrillic or CJK), a second gold value on 10% of turns, aliases (the acronym and the last word)
for 30% of the multi-word entities, a present-day value on 40% of turns (drift-eligible unless a
count), and 5% count questions (gold "0".."30"; predicted as the number, a sentence, a number
word, a wrong number or a hedge "between n and n + 1"). An entity turn's rivals: the other
entity its wrong answers name and 0-6 more, with their aliases. The predictions of the other
turns: 32% the gold label, 12% a sentence holding it, 8% an answer prefix then the gold
("Answer:", "It is", "Final answer:", ...), 5% an alias (the gold when there is none), 10% the
present-day value bare or in a sentence (another entity when there is none), 20% another entity
bare or in a sentence, 3% a sentence naming nothing, 2% a hedge (the gold "or" a rival), 4% the
gold then an explanation on further lines, 2% empty, 2% null (a backend error). 20% of turns
have k = 3 candidates, the rest k = 1.
"""

from __future__ import annotations

import argparse
import resource
import sys
import time

import numpy as np
import pyarrow as pa

from chronoscope_dagster.evaluation.matching import MODES, score_turns_loop
from chronoscope_dagster.evaluation.scoring import score_turns

SYLLABLES = [
    "ka", "ro", "lin", "mar", "te", "su", "vi", "an", "del", "or", "bra", "ne", "gu", "li", "sto",
    "ham", "per", "ic", "ton", "wel", "fa", "ri", "ber",
]  # fmt: skip
ACCENTED = ["é", "ü", "ã", "ø", "ñ", "ç", "ô"]
FOREIGN = ["Моск", "Пет", "град", "東京", "大阪", "Бер"]
SENTENCES = [
    "The answer to that is {}.",
    "In that year it was {}, according to the records.",
    "{} held the position at the time.",
    "I believe it was {}",
    "That would be {} (as far as I know).",
]
PREFIXES = ["Answer: {}", "It is {}.", "Final answer: {}", "The answer is {}", "It's {}"]
NOTHING = ["I'm not sure about that.", "There is no record of it.", "Unknown"]
NUMBER_WORDS = ["zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine"]


def entity_labels(count: int, rng: np.random.Generator) -> list[str]:
    labels = []
    for _ in range(count):
        words = []
        for _ in range(rng.choice([1, 2, 2, 3])):
            word = "".join(rng.choice(SYLLABLES, rng.integers(1, 4))).capitalize()
            if rng.random() < 0.04:
                word = word[:-1] + str(rng.choice(ACCENTED))
            words.append(word)
        if rng.random() < 0.02:
            words = [str(rng.choice(FOREIGN)) + str(rng.choice(FOREIGN))]
        labels.append(" ".join(words))
    return labels


def aliases_of(label: str) -> list[str]:
    words = label.split()
    return ["".join(word[0] for word in words), words[-1]] if len(words) > 1 else []


def synthetic_turns(rows: int, seed: int = 0) -> pa.Table:
    rng = np.random.default_rng(seed)
    labels = entity_labels(60_000, rng)
    has_alias = rng.random(len(labels)) < 0.3
    gold = rng.integers(0, len(labels), rows)
    second = np.where(rng.random(rows) < 0.1, rng.integers(0, len(labels), rows), -1)
    present = np.where(rng.random(rows) < 0.4, rng.integers(0, len(labels), rows), -1)
    other = rng.integers(0, len(labels), rows)
    count = rng.random(rows) < 0.05
    number = rng.integers(0, 31, rows)
    kinds = rng.choice(
        11, rows, p=[0.32, 0.12, 0.08, 0.05, 0.10, 0.20, 0.03, 0.04, 0.02, 0.02, 0.02]
    )
    more_rivals = rng.integers(0, len(labels), (rows, 6))
    rival_count = rng.integers(0, 7, rows)
    template = rng.integers(0, 5, rows)
    extra = rng.random(rows) < 0.2
    columns: dict[str, list] = {name: [] for name in (
        "prediction", "candidates", "answer", "gold_labels", "gold_aliases", "present_labels",
        "drift_eligible", "answer_kind", "rival_labels",
    )}  # fmt: skip
    for i in range(rows):
        if count[i]:
            n = int(number[i])
            answer, golds, aliases, rivals = str(n), [str(n)], [], []
            prediction = (
                str(n),
                f"There were {n} of them.",
                NUMBER_WORDS[n % 10],
                str(n + 10),
                f"between {n} and {n + 1}",
            )[int(template[i])]
        else:
            answer = labels[gold[i]]
            golds = [answer] + ([labels[second[i]]] if second[i] >= 0 else [])
            aliases = aliases_of(answer) if has_alias[gold[i]] else []
            now = labels[present[i]] if present[i] >= 0 else labels[other[i]]
            wrong = labels[other[i]]
            rivals = []
            for rival in (other[i], *more_rivals[i, : rival_count[i]]):
                if labels[rival] not in golds:
                    rivals += [
                        labels[rival],
                        *(aliases_of(labels[rival]) if has_alias[rival] else []),
                    ]
            kind, t = int(kinds[i]), int(template[i])
            prediction = (
                answer,
                SENTENCES[t].format(answer),
                PREFIXES[t].format(answer),
                aliases[0] if aliases else answer,
                now if t < 2 else SENTENCES[t].format(now),
                wrong if t < 2 else SENTENCES[t].format(wrong),
                NOTHING[t % 3],
                f"{answer}\nExplanation: the records list {wrong} later.",
                "",
                None,
                f"{answer} or {wrong}",
            )[kind]
        presents = [labels[present[i]]] if present[i] >= 0 else []
        candidates = [] if prediction is None else [prediction]
        if extra[i] and prediction is not None:
            candidates += [labels[other[i]], presents[0] if presents else answer]
        columns["prediction"].append(prediction)
        columns["candidates"].append(candidates)
        columns["answer"].append(answer)
        columns["gold_labels"].append(golds)
        columns["gold_aliases"].append(aliases)
        columns["present_labels"].append(presents)
        columns["drift_eligible"].append(bool(presents) and not count[i])
        columns["answer_kind"].append("count" if count[i] else "entity")
        columns["rival_labels"].append(rivals)
    strings = pa.list_(pa.string())
    return pa.table(
        {
            "chain_id": pa.array(np.char.add("c", np.arange(rows).astype(str))),
            "prediction": pa.array(columns["prediction"], pa.string()),
            "candidates": pa.array(columns["candidates"], strings),
            "answer": pa.array(columns["answer"], pa.string()),
            "gold_labels": pa.array(columns["gold_labels"], strings),
            "gold_aliases": pa.array(columns["gold_aliases"], strings),
            "present_labels": pa.array(columns["present_labels"], strings),
            "drift_eligible": pa.array(columns["drift_eligible"], pa.bool_()),
            "answer_kind": pa.array(columns["answer_kind"], pa.string()),
            "rival_labels": pa.array(columns["rival_labels"], strings),
        }
    )


def peak_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawTextHelpFormatter
    )
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--modes", nargs="+", choices=MODES, default=list(MODES))
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--workers", type=int, default=2, help="threads of score_turns")
    args = parser.parse_args()
    started = time.perf_counter()
    turns = synthetic_turns(args.rows, args.seed)
    print(f"{args.rows:,} turns built in {time.perf_counter() - started:.1f} s; "
          f"peak RSS {peak_mb():,.0f} MB\n")  # fmt: skip
    fast = {}
    for mode in args.modes:
        score_turns(turns.slice(0, 1000), mode)
        timings = []
        for workers in (1, args.workers):
            started = time.perf_counter()
            scored = score_turns(turns, mode, workers=workers)
            timings.append(time.perf_counter() - started)
        fast[mode] = (scored, *timings)
        print(f"vectorised {mode:9} 1 thread {timings[0]:6.2f} s, {args.workers} threads "
              f"{timings[1]:6.2f} s; peak RSS {peak_mb():,.0f} MB")  # fmt: skip
    print(f"\n{'':>9}{'vectorised, 1 thread':>22}{f'{args.workers} threads':>22}{'loop':>20}"
          f"{'ratio':>7}\n{'mode':>9}{'s':>8}{'rows/s':>14}{'s':>8}{'rows/s':>14}{'s':>8}"
          f"{'rows/s':>12}{'(1, N)':>12}{'equal':>7}{'acc@1':>7}{'drift@1':>9}{'hedged':>8}")  # fmt: skip
    for mode in args.modes:
        scored, one, many = fast[mode]
        started = time.perf_counter()
        looped = score_turns_loop(turns, mode)
        loop = time.perf_counter() - started
        equal = scored.equals(looped)
        accuracy = np.mean(scored["correct_at1"].to_numpy())
        drift = np.mean(scored["drift_at1"].to_numpy())
        hedged = np.mean(scored["hedged_at1"].to_numpy())
        print(f"{mode:>9}{one:>8.2f}{args.rows / one:>14,.0f}{many:>8.2f}{args.rows / many:>14,.0f}"
              f"{loop:>8.2f}{args.rows / loop:>12,.0f}{loop / one:>6.1f}{loop / many:>6.1f}"
              f"{equal!s:>7}{accuracy:>7.3f}{drift:>9.3f}{hedged:>8.3f}")  # fmt: skip
        del looped
        if not equal:
            return 1
    print(f"\npeak RSS {peak_mb():,.0f} MB (the loops convert the table to Python objects)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
