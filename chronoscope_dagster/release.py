"""The benchmark as a dataset that the Hugging Face ``datasets`` library loads as it is.

A release is a folder: one Parquet file per split under ``data/``, named as the Hub names its
own shards (``data/<split>-00000-of-00001.parquet``, so ``load_dataset("parquet",
data_dir=...)`` finds the splits by name), and a dataset card, ``README.md``, whose YAML
header lists the same files per split (``configs``: ``load_dataset(folder)`` reads them).
Every split has the columns of ``turns`` (``RELEASE_SCHEMA``, documented in ``COLUMNS``), one
row per turn, ordered by family, chain and turn. The card's figures come from where the
pipeline computes them (``benchmark_stats`` for Table 2 and the validity figures, the chain
families' refusals, the reference systems' ``metrics``); a figure the home does not hold is
stated as not available, with the reason.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import date
from decimal import Decimal
from importlib import metadata

import pyarrow as pa
import pyarrow.compute as pc
import yaml

from chronoscope_dagster.chains.benchmark import REFUSAL_MEANINGS, REFUSAL_REASONS
from chronoscope_dagster.chains.families import FAMILIES
from chronoscope_dagster.chains.records import MERGED_TURNS_SCHEMA
from chronoscope_dagster.chains.stats import (
    BALANCE_TARGETS,
    OVERALL,
    VALIDITY_COLUMNS,
    balance_misses,
    table2_markdown,
    validity_markdown,
)
from chronoscope_dagster.evaluation.metrics import SCOPE_METRIC
from chronoscope_dagster.evaluation.prompts import Setting
from chronoscope_dagster.evaluation.reference_systems import REFERENCE_BACKENDS
from chronoscope_dagster.evaluation.report import headline_markdown
from chronoscope_dagster.llm.blind import (
    BLIND_COLUMNS,
    COUNT_MARGIN,
    ENTITY_BOUND,
    MIN_MEASURED,
    YES_NO_BOUND,
    bound_misses,
)
from chronoscope_dagster.markdown import markdown_table

SPLITS = {
    "full": "every chain of the benchmark",
    "eval_sample": "the evaluation sample: the chains every model answers in gold context, "
    "questions only and explicit scope",
    "self_conditioned": "the self-conditioned subset of the evaluation sample: the chains "
    "answered with the model's own earlier answers",
    "paraphrased": "the chains of the paraphrased subset every question of which has an "
    "accepted paraphrase (`paraphrased_question`); the subset's other chains are left out",
}
"""The splits, in the card's order, with what each is for."""
DATA_FOLDER = "data"
CARD_FILE = "README.md"
SHARD_PATTERN = re.compile(r"(?P<split>\w+)-\d{5}-of-\d{5}\.parquet")
RELEASE_SCHEMA = MERGED_TURNS_SCHEMA.append(pa.field("paraphrased_question", pa.string()))
COLUMNS = {
    "chain_id": "the chain's id: a hash of its family and of each turn's subject, property, "
    "scope and gold",
    "family": f"the chain family of the paper's Table 2 ({', '.join(FAMILIES)})",
    "anchor": "the scope the chain opens on (a year, a day `YYYY-MM-DD` or a span `Y1-Y2`)",
    "chain_length": "turns in the chain",
    "scope_shifts": "turns whose time scope differs from the turn before",
    "implicit_share": "share of the chain's turns that do not state their scope",
    "span_years": "largest distance in years between a turn's scope year and the snapshot year",
    "turn_index": "position in the chain, from 0; turns are scored from 1 (the paper's setting)",
    "question": "the question as asked in the conversation",
    "answer": "the canonical answer: an English label, `yes`/`no`, or a count",
    "answer_kind": "`entity`, `yes_no` or `count`",
    "pid": "the Wikidata property asked about",
    "subject_qid": "the Wikidata item asked about",
    "subject_label": "its English label",
    "gold_qids": "every value valid in the turn's scope (entity turns; any of them is correct)",
    "gold_labels": "their English labels",
    "gold_aliases": "their English aliases (an answer naming one is correct)",
    "canonical_qid": "the value `answer` names (by rank, then most recent start, then QID)",
    "asked_qid": "the value a yes/no question asks about",
    "asked_label": "its English label",
    "scope_year": "the first year of the turn's scope (null: the present)",
    "scope_end_year": "the last year of a span scope (null otherwise)",
    "scope_anchor": "the scope: a year, a day `YYYY-MM-DD` or a span `Y1-Y2` (null: the present)",
    "is_explicit": "whether the question states its scope",
    "present_qids": "the values today (the dump's present)",
    "present_labels": "their English labels",
    "drift_eligible": "an entity turn with a value today that is not a correct answer in its "
    "scope: answering today's value is measurable drift",
    "explicit_question": "the turn asked alone, naming its subject and stating its scope (the "
    "`explicit_scope` setting; null where it cannot be rendered)",
    "rival_labels": "labels of other values of the property and of the chain's other answers: "
    "an answer naming one beside the gold hedges, and is wrong",
    "scope_dependent": "an implicit turn whose gold is not today's value (or, with no value "
    "today, shares nothing with the latest year's gold): only a kept scope answers it, the "
    "turns of the headline Scope Acc@1",
    "snapshot_year": "the dump snapshot the chain was generated from",
    "paraphrased_question": "the accepted paraphrase of `question` where the chain is kept in "
    "the paraphrased subset (null otherwise)",
}
"""Every column of ``RELEASE_SCHEMA``, as the card documents it."""
REFERENCE_SYSTEMS = (*REFERENCE_BACKENDS, "blind")
CODE_LINEAGE = {
    "claims, labels, lifespans": ("claims", "labels", "lifespans"),
    "fact_intervals": ("fact_intervals",),
    "truth": ("truth",),
    "present_day": ("present_day",),
    "family_* (the 11 chain families)": tuple(f"family_{family}" for family in FAMILIES),
    "turns, chains": ("turns", "chains"),
    "benchmark_stats": ("benchmark_stats",),
    "eval_sample": ("eval_sample",),
    "paraphrased_subset": ("paraphrased_subset",),
    "metrics (the reference systems' scores)": ("metrics",),
    "benchmark_release (this release)": ("benchmark_release",),
}
"""The assets a release's content comes from, as the card lists their code versions."""
PACKAGE = "chronoscope-dagster"
DUMP_DATE = re.compile(r"(?<!\d)(\d{4})(\d{2})(\d{2})(?!\d)")
SIZE_CATEGORIES = ((1_000, "n<1K"), (10_000, "1K<n<10K"), (100_000, "10K<n<100K"),
                   (1_000_000, "100K<n<1M"), (10_000_000, "1M<n<10M"),
                   (100_000_000, "10M<n<100M"))  # fmt: skip


def split_file(split: str) -> str:
    return f"{DATA_FOLDER}/{split}-00000-of-00001.parquet"


def split_sql(turns: str, sample: str | None, paraphrases: str | None) -> dict[str, str]:
    """Per split (``SPLITS``; the sample's two only with ``sample``, ``paraphrased`` only with
    ``paraphrases``), the SQL of its rows in ``RELEASE_SCHEMA``'s columns, from the SQL
    sources of ``turns``, ``eval_sample`` and ``paraphrased_subset``."""
    kept = (
        f"SELECT chain_id, turn_index, paraphrase FROM {paraphrases} WHERE chain_kept"
        if paraphrases
        else "SELECT NULL::VARCHAR AS chain_id, NULL::SMALLINT AS turn_index, "
        "NULL::VARCHAR AS paraphrase WHERE false"
    )
    columns = ", ".join(
        "p.paraphrase AS paraphrased_question" if name == "paraphrased_question" else f"t.{name}"
        for name in RELEASE_SCHEMA.names
    )
    chosen = {"full": "true"}
    if sample:
        chosen["eval_sample"] = f"t.chain_id IN (SELECT chain_id FROM {sample})"
        chosen["self_conditioned"] = (
            f"t.chain_id IN (SELECT chain_id FROM {sample} WHERE in_self_conditioned)"
        )
    if paraphrases:
        chosen["paraphrased"] = "t.chain_id IN (SELECT chain_id FROM kept)"
    return {
        split: f"""
        WITH kept AS ({kept})
        SELECT {columns}
        FROM {turns} t LEFT JOIN kept p USING (chain_id, turn_index)
        WHERE {where}
        ORDER BY t.family, t.chain_id, t.turn_index"""
        for split, where in chosen.items()
    }


@dataclass(frozen=True)
class Split:
    name: str
    chains: int
    turns: int
    scored_turns: int
    scope_dependent_turns: int
    drift_eligible_turns: int


def split_summary_sql(source: str, first_scored_turn: int = 1) -> str:
    """One row of a split's ``Split`` figures (after its name), from the SQL ``source``."""
    first = int(first_scored_turn)
    return f"""
    SELECT count(DISTINCT chain_id), count(*), count_if(turn_index >= {first}),
           count_if(scope_dependent AND turn_index >= {first}),
           count_if(drift_eligible AND turn_index >= {first})
    FROM {source}"""


@dataclass(frozen=True)
class Dump:
    """A snapshot's dump as ``wikidata_dump`` recorded it."""

    snapshot_year: str
    source: str
    """Its file name, or its URL."""
    embedded_sample: bool
    bytes: int
    checksum_algorithm: str
    checksum: str

    @property
    def date(self) -> date | None:
        """The date its name states (``wikidata-20250106-all.json.gz``), if any."""
        found = DUMP_DATE.search(self.source.rsplit("/", 1)[-1])
        if found is None:
            return None
        try:
            return date(*(int(part) for part in found.groups()))
        except ValueError:
            return None


@dataclass(frozen=True)
class ReleaseFacts:
    """What a card states, as the home holds it; None where the home holds nothing of it."""

    splits: Sequence[Split]
    dumps: Sequence[Dump]
    present: Mapping[str, object] | None
    """``present_day``'s report: the snapshot and anchor of the dump's present."""
    chains: Mapping[str, object] | None
    """The chain families' settings (``seed``, ``language``); None for imported chains."""
    sample: Mapping[str, object] | None
    """``eval_sample``'s report."""
    paraphrase: Mapping[str, object] | None
    """``paraphrased_subset``'s report."""
    blind_seed: int | None
    stats: Sequence[Mapping[str, object]] | None
    """``benchmark_stats``' rows, per family then overall."""
    refusals: Mapping[str, int] | None
    """Scopes the facts did not decide, by reason, summed over families and snapshots."""
    reference_metrics: pa.Table | None
    """The ``metrics`` of the reference systems evaluated in the home."""
    reference_backends: Mapping[str, str]
    """Each evaluated reference system's backend, by model."""
    code_versions: Mapping[str, str | None]
    """The code version each asset of ``CODE_LINEAGE`` was last materialized with, by key."""


def dataset_card(facts: ReleaseFacts) -> str:
    """The card: the YAML header ``datasets`` and the Hub read, then what the data are, where
    they come from, how they were built and what they can and cannot measure."""
    lines = ["---", _header(facts).rstrip(), "---", ""]
    lines += ["# ChronoScope: time-scoped multi-turn factual question chains", ""]
    lines += [
        "Multi-turn chains of factual questions about Wikidata entities whose answers depend "
        'on a time scope. The first turn states its year ("Who was the head of government of '
        'the United Kingdom in 2010?"); later turns keep, shift or leave the scope to the '
        'conversation ("And who held it at the time?"). A model answers every turn; a turn '
        "is scored from the second on, and the headline, Scope Acc@1, counts the scored turns "
        "that only a kept time scope answers (`scope_dependent`). Built deterministically "
        "from Wikidata dumps by chronoscope-dagster, after the ChronoScope paper.",
        "",
        "## Splits",
        "",
        "One row per turn; a chain is the rows of one `chain_id`, ordered by `turn_index`.",
        "",
        markdown_table(
            [
                "split",
                "chains",
                "turns",
                "scored turns",
                "scope-dependent scored turns",
                "drift-eligible scored turns",
                "what it is",
            ],
            [
                (
                    s.name,
                    s.chains,
                    s.turns,
                    s.scored_turns,
                    s.scope_dependent_turns,
                    s.drift_eligible_turns,
                    SPLITS[s.name],
                )
                for s in facts.splits
            ],
        ),
    ]
    absent = [name for name in SPLITS if name not in {s.name for s in facts.splits}]
    lines += [f"\n{_absent_split(name, facts)}" for name in absent]
    lines += ["", "## Loading", "", "```python", "from datasets import load_dataset", ""]
    lines += [
        'release = load_dataset("parquet", data_dir="path/to/this/folder")  # or load_dataset("path/to/this/folder")',
        'turns = release["eval_sample"].to_pandas()',
        'chains = {chain_id: rows.sort_values("turn_index") for chain_id, rows in turns.groupby("chain_id")}',
        "```",
        "",
        "## Columns",
        "",
        markdown_table(
            ["column", "type", "meaning"],
            [(f"`{f.name}`", _type(f.type), COLUMNS[f.name]) for f in RELEASE_SCHEMA],
        ),
    ]
    lines += ["", "## Source and license", "", *_sources(facts)]
    lines += ["", "## How it was built", "", *_built(facts)]
    lines += ["", "## Table 2 recomputed beside the paper's", "", *_table2(facts)]
    lines += ["", "## What it can and cannot measure", "", *_validity(facts)]
    return "\n".join(lines) + "\n"


def _header(facts: ReleaseFacts) -> str:
    full = next((s.turns for s in facts.splits if s.name == "full"), 0)
    size = next((label for bound, label in SIZE_CATEGORIES if full < bound), "n>100M")
    header = {
        "pretty_name": "ChronoScope",
        "license": "cc0-1.0",
        "language": ["en"],
        "multilinguality": ["monolingual"],
        "annotations_creators": ["machine-generated"],
        "language_creators": ["machine-generated"],
        "source_datasets": ["original"],
        "task_categories": ["question-answering"],
        "task_ids": ["open-domain-qa"],
        "size_categories": [size],
        "tags": ["temporal-reasoning", "multi-turn", "wikidata", "time-scoped-qa"],
        "configs": [
            {
                "config_name": "default",
                "data_files": [
                    {"split": s.name, "path": f"{DATA_FOLDER}/{s.name}-*.parquet"}
                    for s in facts.splits
                ],
            }
        ],
    }
    return yaml.safe_dump(header, sort_keys=False, allow_unicode=True, width=1000)


def _absent_split(name: str, facts: ReleaseFacts) -> str:
    if name == "paraphrased":
        if facts.paraphrase is None:
            return "No `paraphrased` split: the paraphrased subset is not built in this home."
        return (
            f"No `paraphrased` split: {_paraphraser(facts.paraphrase)} kept none of the "
            f"{facts.paraphrase.get('chains')} chains of the paraphrased subset (every chain "
            "has a question whose paraphrase the answer-equivalence filter rejected)."
        )
    if facts.sample is None:
        return f"No `{name}` split: the evaluation sample is not built in this home."
    return f"No `{name}` split: it holds no chain at this home's sample size."


def _type(kind: pa.DataType) -> str:
    if pa.types.is_list(kind):
        return f"list of {_type(kind.value_type)}"
    return {"bool": "bool", "double": "float64", "large_string": "string"}.get(str(kind), str(kind))


def _paraphraser(report: Mapping[str, object]) -> str:
    name = str(report.get("paraphraser"))
    return "template variants" if name == "templates" else f"the model {name}"


def _sources(facts: ReleaseFacts) -> list[str]:
    lines = [
        "The facts, labels and aliases come from Wikidata, whose structured data are released "
        "under CC0 1.0 (public domain dedication); this dataset, derived from them, is released "
        "under CC0 1.0 as well. The questions are rendered from templates; the code that "
        f"built it ({PACKAGE}) is under Apache-2.0.",
        "",
    ]
    if not facts.dumps:
        lines.append(
            "Source dumps: not available: this home read no dump (its chains were imported)."
        )
    else:
        lines += [
            "Source dumps, one snapshot a year (a snapshot holds what Wikidata knew when its "
            "dump was taken):",
            "",
            markdown_table(
                ["snapshot", "dump", "date", "bytes", "checksum"],
                [
                    (
                        d.snapshot_year,
                        "embedded sample of chronoscope-dagster (curated real facts)"
                        if d.embedded_sample
                        else d.source,
                        _dump_date(d),
                        d.bytes,
                        f"{d.checksum_algorithm} {d.checksum}",
                    )
                    for d in facts.dumps
                ],
            ),
        ]
    if facts.present:
        lines += [
            "",
            f"Today's values (`present_qids`, drift) are those of the dump's present: the "
            f"{facts.present.get('snapshot_year')} snapshot at {facts.present.get('anchor')}.",
        ]
    return lines


def _dump_date(dump: Dump) -> str:
    if dump.embedded_sample and dump.date is not None:
        return f"{dump.date.isoformat()} (what Wikidata knew on 31 December {dump.snapshot_year})"
    if dump.date is not None:
        return f"{dump.date.isoformat()} (from its name)"
    return "not available: its name states none"


def _built(facts: ReleaseFacts) -> list[str]:
    lines = []
    if facts.chains is None:
        lines.append("- Chains: imported from a chains file, not generated in this home.")
    else:
        lines.append(
            f"- Chain generation: seed {facts.chains.get('seed')}, language "
            f"{facts.chains.get('language')}; every chain's randomness comes from a generator "
            "seeded by (seed, family, item), so the chains do not depend on order or sharding."
        )
    if facts.sample is None:
        lines.append("- Evaluation sample: not available: not built in this home.")
    else:
        s = facts.sample
        lines.append(
            f"- Evaluation sample: seed {s.get('seed')}, up to {s.get('per_stratum')} chains a "
            f"family ({s.get('self_conditioned_per_stratum')} of them self-conditioned), then "
            f"chains drawn for their scope-dependent scored turns up to {s.get('scope_target')} "
            "(no family above 20% of the scored turns)."
        )
    if facts.paraphrase is None:
        lines.append("- Paraphrased subset: not available: not built in this home.")
    else:
        p = facts.paraphrase
        config = p.get("config") or {}
        lines.append(
            f"- Paraphrased subset: seed {config.get('seed')}, paraphraser "
            f"{_paraphraser(p)}, {p.get('chains')} chains drawn from the evaluation sample, "
            f"{p.get('kept_chains')} kept."
            + (
                " Template variants ask each question in another phrasing of its own template "
                "slot: a weaker test of wording than an LLM's paraphrases."
                if p.get("paraphraser") == "templates"
                else ""
            )
        )
    blind = "not recorded" if facts.blind_seed is None else str(facts.blind_seed)
    lines.append(f"- Blind reference system (below): seed {blind}.")
    lines += ["", f"Code: {PACKAGE} {_package_version()}; each asset's code version is the "
              "hash of the source that decides its content, as Dagster recorded it when the "
              "asset was last built:", ""]  # fmt: skip
    rows = []
    for label, keys in CODE_LINEAGE.items():
        versions = sorted({v for key in keys if (v := facts.code_versions.get(key))})
        rows.append((label, ", ".join(versions) if versions else "not recorded"))
    lines.append(markdown_table(["asset", "code version"], rows))
    return lines


def _package_version() -> str:
    try:
        return metadata.version(PACKAGE)
    except metadata.PackageNotFoundError:
        return "(not installed)"


def _table2(facts: ReleaseFacts) -> list[str]:
    if facts.stats is None:
        return ["Not available: `benchmark_stats` is not built in this home."]
    return [
        "Per family and overall, over the full split: ours / the paper's (measured on its "
        "own, far larger, release). `median_span`: the median over chains of the largest "
        "distance in years between a turn's scope and the snapshot year.",
        "",
        table2_markdown(facts.stats),
    ]


def _validity(facts: ReleaseFacts) -> list[str]:
    lines = [
        "A scored turn is meant to need both the fact and the time scope. The figures below "
        "say how far this release holds to that; the full split's are over every chain "
        "(`benchmark_stats`), the reference systems' over the evaluation sample.",
        "",
    ]
    overall = _overall(facts.stats)
    lines += _drift(facts, overall)
    lines += _copy(facts, overall)
    lines += _blind(facts)
    lines += _scope_blind(facts)
    lines += _refusals(facts)
    if facts.stats is not None:
        misses = balance_misses(list(facts.stats))
        lines += [
            "",
            "Validity targets (`benchmark_stats_balanced`: "
            + ", ".join(f"{k} {_range(low, high)}" for k, (low, high) in BALANCE_TARGETS.items())
            + "): "
            + ("all met." if not misses else "not met: " + "; ".join(misses) + "."),
            "",
            "Per family:",
            "",
            validity_markdown(facts.stats, (*VALIDITY_COLUMNS, *BLIND_COLUMNS)),
        ]
    if facts.reference_metrics is not None and facts.reference_metrics.num_rows:
        lines += [
            "",
            "The reference systems evaluated in this home (Scope Acc@1 and the paper's Acc@1 "
            "of the evaluation sample, with 95% bootstrap intervals):",
            "",
            headline_markdown(facts.reference_metrics),
        ]
    lines += [
        "",
        "What it cannot measure: facts of properties outside its property list; scopes the "
        "facts leave undecided (refused above: the benchmark is silent there, not wrong); "
        "drift to values newer than the dump's present; knowledge of a model whose training "
        "ended before it (measure that against the model's own present, its knowledge cutoff). "
        "The first turn of a chain is not scored.",
    ]
    if any(d.embedded_sample for d in facts.dumps):
        lines += [
            "",
            "Built from the embedded sample: curated real facts of a few domains (heads of "
            "state and government, company executives and owners, football clubs, memberships "
            "of international organizations), enough to exercise every family, not a "
            "representative draw of Wikidata; its figures are not at the paper's scale.",
        ]
    return lines


def _overall(stats: Sequence[Mapping[str, object]] | None) -> Mapping[str, object] | None:
    if stats is None:
        return None
    return next((row for row in stats if row["family"] == OVERALL), None)


def _drift(facts: ReleaseFacts, overall: Mapping[str, object] | None) -> list[str]:
    full = next((s for s in facts.splits if s.name == "full"), None)
    share = None if overall is None else overall.get("drift_eligible_implicit_pct")
    lines = [
        "- **Drift-eligible share**: "
        + (
            "not available: `benchmark_stats` is not built in this home"
            if share is None
            else f"{_number(share)}% of the scored implicit turns have a value today that is "
            f"not a correct answer in their scope (of {int(overall['scored_implicit']):,} turns; "
            f"target at least {BALANCE_TARGETS['drift_eligible_implicit_pct'][0]:g}%)"
        )
        + ". Drift to the present is measured on those turns only."
    ]
    if full is not None:
        lines.append(
            f"- **Scope-dependent turns** (the headline's): {full.scope_dependent_turns:,} of "
            f"{full.scored_turns:,} scored turns of the full split; "
            f"{full.drift_eligible_turns:,} scored turns are drift-eligible."
        )
    return lines


def _copy(facts: ReleaseFacts, overall: Mapping[str, object] | None) -> list[str]:
    ceiling = None if overall is None else overall.get("copy_previous_ceiling_pct")
    text = (
        "not available: `benchmark_stats` is not built in this home"
        if ceiling is None
        else f"{_number(ceiling)}% of the scored turns have a gold that holds the previous "
        "turn's answer: what repeating the previous answer can score at most (target at most "
        f"{BALANCE_TARGETS['copy_previous_ceiling_pct'][1]:g}%)"
    )
    return [
        f"- **Copy ceiling**: {text}. Measured: "
        + _measured(
            facts, "copy_previous", "the previous turn's answer as the conversation shows it"
        )
        + "."
    ]


def _blind(facts: ReleaseFacts) -> list[str]:
    overall = _overall(facts.stats)
    if overall is None or overall.get("blind_turns") is None:
        return [
            "- **Blind ceiling**: not available: `benchmark_stats` with the blind reference "
            "system's figures is not built in this home."
        ]
    parts = []
    for kind, label, bound in (
        ("entity", "entity", f"bound {ENTITY_BOUND:g}"),
        ("yes_no", "yes/no", f"chance 0.5, bound {YES_NO_BOUND:g}"),
        ("count", "count", f"bound the modal count's share + {COUNT_MARGIN:g}"),
    ):
        value, n = overall.get(f"blind_{kind}_acc"), overall.get(f"blind_{kind}_turns")
        shown = "no such turn" if value is None else f"{float(value):.3f} (n={int(n):,})"  # type: ignore[arg-type]
        parts.append(f"{label} {shown}, {bound}")
    figures = {
        str(row["family"]): {column: row.get(column) for column in BLIND_COLUMNS}
        for row in facts.stats or ()
    }
    misses = bound_misses(figures)  # type: ignore[arg-type]
    above = (
        "no family above its bound"
        if not misses
        else "above its bound: " + "; ".join(f"{f}: {m}" for f, m in misses.items())
    )
    return [
        "- **Blind ceiling**: a system that knows no fact and reads only the chains' structure "
        "and earlier answers (trained on the chains of half the subjects, answering the "
        f"other half's) scores: {'; '.join(parts)}; {above} (families of at least "
        f"{MIN_MEASURED} turns of a kind are held to it). Measured: "
        + _measured(facts, "blind", "from the same reading of the evaluation sample's chains")
        + "."
    ]


def _scope_blind(facts: ReleaseFacts) -> list[str]:
    models = _models_of(facts, "scope_blind")
    if not models:
        return [
            "- **Scope-blind score**: not available: no `scope_blind` reference system was "
            "evaluated in this home (a registry entry with backend `scope_blind`)."
        ]
    parts = []
    for model in models:
        acc = _metric(facts.reference_metrics, model, Setting.GOLD_CONTEXT, "acc_at1")
        scope = _metric(facts.reference_metrics, model, Setting.GOLD_CONTEXT, SCOPE_METRIC)
        parts.append(f"`{model}` Acc@1 {_shown(acc)}, Scope Acc@1 {_shown(scope)}")
    return [
        "- **Scope-blind score**: a system that knows every fact but never carries a scope "
        "(right where the question states it, today's value otherwise), in gold context: "
        + "; ".join(parts)
        + ". Its Acc@1 is what the paper's metric gives without any scope kept; Scope Acc@1 "
        "is 0 by construction."
    ]


def _refusals(facts: ReleaseFacts) -> list[str]:
    if facts.refusals is None:
        return [
            "- **Refusals by reason**: not available: the chains were imported, not generated "
            "in this home."
        ]
    total = sum(facts.refusals.values())
    return [
        f"- **Refusals by reason**: {total:,} (subject, property, scope) candidates were not "
        "asked because the facts do not decide their gold, or the question would not test "
        "the scope (summed over families and snapshots):",
        "",
        markdown_table(
            ["reason", "refused", "meaning"],
            [(r, facts.refusals.get(r, 0), REFUSAL_MEANINGS[r]) for r in REFUSAL_REASONS],
        ),
    ]


def _models_of(facts: ReleaseFacts, backend: str) -> list[str]:
    return sorted(m for m, b in facts.reference_backends.items() if b == backend)


def _measured(facts: ReleaseFacts, backend: str, answers: str) -> str:
    models = _models_of(facts, backend)
    if not models:
        return (
            f"not available: no `{backend}` reference system was evaluated in this home (a "
            f"registry entry with backend `{backend}`)"
        )
    shown = []
    for model in models:
        acc = _metric(facts.reference_metrics, model, Setting.GOLD_CONTEXT, "acc_at1")
        scope = _metric(facts.reference_metrics, model, Setting.GOLD_CONTEXT, SCOPE_METRIC)
        shown.append(f"`{model}` Acc@1 {_shown(acc)}, Scope Acc@1 {_shown(scope)}")
    return f"answering {answers}, in gold context: " + "; ".join(shown)


def _metric(
    metrics: pa.Table | None, model: str, setting: Setting, metric: str
) -> tuple[float, int | None] | None:
    """The overall value of one metric of one (model, setting), with its denominator."""
    if metrics is None:
        return None
    chosen = metrics.filter(
        pc.and_(
            pc.and_(pc.equal(metrics["model"], model), pc.equal(metrics["setting"], setting)),
            pc.and_(pc.equal(metrics["stratum"], "overall"), pc.equal(metrics["metric"], metric)),
        )
    ).to_pylist()
    if not chosen or chosen[0]["value"] is None:
        return None
    n = chosen[0].get("denominator")
    return float(chosen[0]["value"]), None if n is None else int(n)


def _shown(found: tuple[float, int | None] | None) -> str:
    if found is None:
        return "not available (no such turn)"
    value, n = found
    return f"{value:.3f}" + ("" if n is None else f" (n={n})")


def _number(value: object) -> str:
    if isinstance(value, Decimal | float):
        return f"{float(value):g}"
    return str(value)


def _range(low: float | None, high: float | None) -> str:
    if low is None:
        return f"at most {high:g}%"
    if high is None:
        return f"at least {low:g}%"
    return f"{low:g}-{high:g}%"


def split_files(folder_files: Sequence[str]) -> dict[str, str]:
    """The split files among a release folder's ``data/`` file names, by split."""
    found = {}
    for name in folder_files:
        matched = SHARD_PATTERN.fullmatch(name)
        if matched and matched["split"] in SPLITS:
            found[matched["split"]] = name
    return found


def card_data_files(card: str) -> dict[str, str]:
    """The split -> path pattern pairs of a card's YAML header (its default config)."""
    _, header, _ = card.split("---\n", 2)
    [config] = yaml.safe_load(header)["configs"]
    return {entry["split"]: entry["path"] for entry in config["data_files"]}
