"""Collect the embedded model's raw paraphrases of varied benchmark questions, for labelling.

python scripts/paraphrase_samples.py --home HOME --out tests/data/paraphrase_labelled.json

HOME is a home with ``turns`` and ``labels`` built from the embedded sample (``chronoscope
run``). Questions are drawn by a seeded hash, spread over the kind of question (explicit,
implicit follow-up, yes/no, count) and the property; each is paraphrased with the paper's
prompt once per temperature, with one torch thread. Every distinct reply that is a question
other than the original is kept, and the first ``OTHERS`` of the rest by a seeded hash. The
items of another ``--batch`` in OUT stay, and a reply they hold is not repeated; a reply
already labelled keeps its verdict and note, a new one gets ``verdict: null`` to be labelled
by hand. A home built from other templates gives other questions.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import re
import sys
from collections import defaultdict
from pathlib import Path

from chronoscope_dagster.llm.base import Decoding
from chronoscope_dagster.llm.cache import CachedChat, ResponseCache
from chronoscope_dagster.llm.embedded import EMBEDDED_MODEL
from chronoscope_dagster.llm.registry import parse_entry
from chronoscope_dagster.paraphrase.filter import ParaphraseTurn, clean_reply, fold
from chronoscope_dagster.paraphrase.rewrite import PARAPHRASE_MAX_NEW_TOKENS, paraphrase_request
from chronoscope_dagster.paraphrase.tables import entity_names, turns_for_paraphrase
from chronoscope_dagster.storage.paraphrase import turns_and_labels
from chronoscope_dagster.warehouse import Warehouse, parquet_source

KINDS = {"explicit": 80, "implicit": 80, "yes_no": 40, "count": 40}
"""Questions drawn per kind."""
TEMPERATURES = (0.0, 0.7, 1.0)
OTHERS = 40
"""Replies kept that are not a question or repeat the original (the filter's easy cases):
the first ones by a seeded hash; every other reply is kept."""


def is_easy(original: str, reply: str) -> bool:
    """Not a question, or the original's words again."""
    words = re.compile(r"\w+")
    return not reply.rstrip(" \"'\u201d").endswith("?") or words.findall(
        fold(original)
    ) == words.findall(fold(reply))


def kind_of(row: dict) -> str:
    if row["answer_kind"] in ("yes_no", "count"):
        return row["answer_kind"]
    return "explicit" if row["is_explicit"] else "implicit"


def draw(store: Warehouse, seed: int) -> list[dict]:
    """One turn per distinct question, the first of each kind's properties taken in turn."""
    rows = store.query(
        f"""SELECT chain_id, turn_index, question, answer_kind, is_explicit, pid
            FROM {parquet_source(store.data_path("turns"))}
            QUALIFY row_number() OVER (PARTITION BY question ORDER BY chain_id, turn_index) = 1"""
    ).to_pylist()
    rank = {
        r["question"]: hashlib.sha256(f"{seed}:{r['question']}".encode()).hexdigest() for r in rows
    }
    by_kind: dict[str, dict[str, list[dict]]] = defaultdict(lambda: defaultdict(list))
    for row in sorted(rows, key=lambda r: rank[r["question"]]):
        by_kind[kind_of(row)][row["pid"]].append(row)
    chosen = []
    for kind, size in KINDS.items():
        queues = [by_kind[kind][pid] for pid in sorted(by_kind[kind])]
        picked: list[dict] = []
        while len(picked) < size and any(queues):
            for queue in queues:
                if queue and len(picked) < size:
                    picked.append(queue.pop(0))
        chosen += picked
    return chosen


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawTextHelpFormatter
    )
    parser.add_argument("--home", required=True)
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--seed", type=int, default=15)
    parser.add_argument(
        "--batch", default="1", help="the items of this batch in OUT are replaced, others kept"
    )
    parser.add_argument("--cache", type=Path, help="a response cache, so a rerun asks nothing")
    args = parser.parse_args()
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    store = Warehouse(args.home)
    chosen = draw(store, args.seed)
    keys = ", ".join(f"('{r['chain_id']}', {r['turn_index']})" for r in chosen)
    turns, labels = turns_and_labels(
        store,
        f"SELECT DISTINCT chain_id FROM (VALUES {keys}) v(chain_id, turn_index)",
    )
    wanted = {(r["chain_id"], r["turn_index"]) for r in chosen}
    rows = {(r["chain_id"], r["turn_index"]): r for r in turns.to_pylist()}
    items = [
        t for t in turns_for_paraphrase(turns, entity_names(labels))
        if (t.chain_id, t.turn_index) in wanted
    ]  # fmt: skip
    kept: list[dict] = []
    previous = {}
    notes: dict = {}
    if args.out.exists():
        notes = json.loads(args.out.read_text(encoding="utf-8"))
        for item in notes.pop("items"):
            previous[(item["original"], item["paraphrase"])] = item
            if item["batch"] != args.batch:
                kept.append(item)
    spec = parse_entry({"name": "embedded", "backend": "local", "model": EMBEDDED_MODEL})
    backend = spec.build()
    chat = CachedChat(backend, ResponseCache(args.cache) if args.cache else None)
    replies: list[tuple[ParaphraseTurn, float, str]] = []
    try:
        for temperature in TEMPERATURES:
            decoding = Decoding(
                max_new_tokens=PARAPHRASE_MAX_NEW_TOKENS, temperature=temperature, seed=args.seed
            )
            completions = chat.complete([paraphrase_request(t.question) for t in items], decoding)
            replies += [
                (turn, temperature, completion.text or "")
                for turn, completion in zip(items, completions, strict=True)
            ]
    finally:
        backend.close()
    out: list[dict] = []
    easy: list[dict] = []
    seen: set[tuple[str, str]] = set()
    earlier = {(i["original"], i["paraphrase"]) for i in kept}
    for turn, temperature, raw in replies:
        reply = clean_reply(raw)
        if (turn.question, reply) in seen or (turn.question, reply) in earlier:
            continue
        seen.add((turn.question, reply))
        row = rows[(turn.chain_id, turn.turn_index)]
        old = previous.get((turn.question, reply), {})
        item = {
            "batch": args.batch,
            "seed": args.seed,
            "pid": row["pid"],
            "subject_label": row["subject_label"],
            "subject": list(turn.subject),
            "kind": kind_of(row),
            "is_explicit": turn.is_explicit,
            "entity_names": [list(names) for names in turn.entity_names],
            "answers": list(turn.answers),
            "gold": row["answer"],
            "original": turn.question,
            "raw_reply": raw,
            "paraphrase": reply,
            "temperature": temperature,
            "verdict": old.get("verdict"),
            "note": old.get("note", ""),
        }
        (easy if is_easy(turn.question, reply) else out).append(item)
    easy.sort(key=lambda i: hashlib.sha256(f"{args.seed}:{i['paraphrase']}".encode()).digest())
    out = [*kept, *out, *easy[:OTHERS]]
    batches = sorted({(item["batch"], item["seed"]) for item in out})
    header = {
        "about": "Real replies of the embedded model to the paraphrase prompt, labelled by "
        "hand: verdict is true when the paraphrase asks the same question (subject, "
        "property, time scope) with the same gold answer.",
        "generated_by": [
            f"OMP_NUM_THREADS=1 .venv/bin/python scripts/paraphrase_samples.py --home HOME "
            f"--out {args.out} --batch {batch} --seed {seed}"
            for batch, seed in batches
        ],
        "home": "the embedded sample (chronoscope run --home HOME)",
        "model": EMBEDDED_MODEL,
        "temperatures": list(TEMPERATURES),
        "max_new_tokens": PARAPHRASE_MAX_NEW_TOKENS,
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(
        json.dumps({**notes, **header, "items": out}, indent=1, ensure_ascii=False) + "\n",
        encoding="utf-8",
    )
    print(f"{len(out) - len(kept)} of {len(seen)} distinct replies to {len(items)} questions")
    return 0


if __name__ == "__main__":
    sys.exit(main())
