"""The leaderboard and the report: the paper's table layouts, plots, Markdown and HTML.

Input is the long metrics table of every (model, setting): ``model``, ``setting``,
``stratum``, ``metric``, ``value``, ``ci_low``, ``ci_high``, ``n_turns``, ``n_chains``,
``denominator``. The headline, ``scope_acc_at1``, comes first everywhere; the paper's metrics
stay beside it. Every printed figure carries its n (its denominator).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from pathlib import Path

import pandas as pd
import pyarrow as pa
from markdown_it import MarkdownIt

from chronoscope_dagster.evaluation.knowledge import KNOWLEDGE_LABELS
from chronoscope_dagster.evaluation.metrics import (
    CHANGED_SINCE_CUTOFF,
    OWN_COUNT_METRIC,
    SCOPE_METRIC,
)
from chronoscope_dagster.evaluation.prompts import PAPER_SETTINGS, SETTINGS
from chronoscope_dagster.markdown import markdown_table
from chronoscope_dagster.paraphrase.template_variants import TEMPLATES_PARAPHRASER

HEADLINE = {
    SCOPE_METRIC: "Scope Acc@1",
    "acc_at1": "Acc@1",
    "final_turn_acc_at1": "Final@1",
    "strict_chain_acc_at1": "Chain@1",
    "drift_rate_given_present_at1": "Drift@1",
}
HEADLINE_TEXT = (
    "Scope Acc@1 is Acc@1 over the scored turns that only a kept time scope answers: implicit "
    "turns whose gold at their scope is not today's value (or, where there is no value today, "
    "shares nothing with the latest year's gold); its n is the number of those turns. A system that "
    "knows every fact but never carries a scope (`scope_blind`) and one that answers today's "
    "value (`present_day`) score 0 on it by construction, the oracle 1. The paper's Acc@1, "
    "over every scored turn, is dominated by turns that state their own scope; it is kept "
    "beside the headline, with the paper's Final@1, Chain@1 and Drift@1, for comparison with "
    "the paper. Every figure is followed by its n, what it divides by: scope-dependent turns "
    "(Scope Acc@1), scored turns (Acc@1, and every figure by family or follow-up position), "
    "chains whose final turn is scored (Final@1), chains (Chain@1), drift-eligible turns "
    "(Drift@1)."
)
"""What the headline measures, as the report states it."""
SETTING_LABELS = {
    "gold_context": "Gold context",
    "self_conditioned": "Self-conditioned",
    "questions_only": "Questions only",
    "explicit_scope": "Explicit scope",
}


def _frame(metrics: pa.Table) -> pd.DataFrame:
    frame = metrics.to_pandas()
    parts = frame["stratum"].str.split("=", n=1, expand=True)
    frame["dimension"] = parts[0]
    frame["level"] = parts[1] if parts.shape[1] > 1 else None
    return frame


def _models(frame: pd.DataFrame) -> list[str]:
    return sorted(frame["model"].unique())


def _settings(frame: pd.DataFrame, among: Sequence[str] = SETTINGS) -> list[str]:
    present = set(frame["setting"])
    return [s for s in among if s in present]


def _paper_settings(frame: pd.DataFrame) -> list[str]:
    """The paper's three settings present: its tables and the plots show no others."""
    return _settings(frame, [s.value for s in PAPER_SETTINGS])


def _levels(frame: pd.DataFrame, dimension: str) -> list[str]:
    levels = frame.loc[frame["dimension"] == dimension, "level"].dropna().unique()
    return sorted(levels, key=lambda v: (not str(v).isdigit(), int(v) if str(v).isdigit() else v))


def _value(frame: pd.DataFrame, *, model: str, setting: str, stratum: str, metric: str):
    rows = frame[
        (frame["model"] == model)
        & (frame["setting"] == setting)
        & (frame["stratum"] == stratum)
        & (frame["metric"] == metric)
    ]
    return None if rows.empty else rows.iloc[0]


def _missing(value) -> bool:
    return value is None or (isinstance(value, float) and math.isnan(value))


def _cell(row, *, with_ci: bool = False, with_n: bool = True) -> str:
    """A metric row as ``value [ci_low, ci_high] (n=denominator)``; ``-`` where it is left out."""
    if row is None or _missing(row["value"]):
        return "-"
    text = f"{row['value']:.3f}"
    if with_ci and not _missing(row["ci_low"]):
        text += f" [{row['ci_low']:.3f}, {row['ci_high']:.3f}]"
    if with_n and "denominator" in row and not _missing(row["denominator"]):
        text += f" (n={int(row['denominator'])})"
    return text


VARIANT_LABELS = {"original": "Orig", "paraphrased": "Para"}
"""Table 5's conditions: the templated chains and their paraphrases."""
TEMPLATE_VARIANTS_TEXT = (
    "Paraphraser: template variants. Each question of a kept chain is asked in another phrasing "
    "of its own template slot, with the same names and years, and passes the same "
    "answer-equivalence filter as a model's paraphrase. This is a weaker test of wording than "
    "an LLM's paraphrases: it varies only the wording the templates already vary. Name a "
    "registry model with `--paraphraser MODEL` for the paper's LLM paraphrases."
)
"""Under Table 5 when the paraphrased subset holds template variants."""


LEADERBOARD_SCHEMA = pa.schema(
    [(name, pa.string()) for name in ("subset", "model", "setting", "variant")]
    + [(f"{metric}{suffix}", pa.int64() if suffix == "_n" else pa.float64())
       for metric in HEADLINE for suffix in ("", "_ci_low", "_ci_high", "_n")]
    + [("n_chains", pa.int64()), ("n_turns", pa.int64())]
)  # fmt: skip
"""``<metric>_n`` is the metric's denominator: scope-dependent turns for ``scope_acc_at1``."""


def leaderboard_table(metrics: pa.Table, *, subset: str = "eval_sample") -> pa.Table:
    """One row per (model, setting, variant): the headline metrics of the overall stratum with
    CIs and denominators (``scope_acc_at1`` first). Metrics without a ``variant`` column are of
    the templated questions (``original``)."""
    if "variant" not in metrics.column_names:
        metrics = metrics.append_column(
            "variant", pa.array(["original"] * metrics.num_rows, pa.string())
        )
    frame = _frame(metrics)
    rows = []
    for variant in VARIANT_LABELS:
        part = frame[frame["variant"] == variant]
        for model in _models(part):
            for setting in _settings(part):
                row: dict[str, object] = {
                    "subset": subset,
                    "model": model,
                    "setting": setting,
                    "variant": variant,
                }
                for metric in HEADLINE:
                    found = _value(
                        part, model=model, setting=setting, stratum="overall", metric=metric
                    )
                    row[metric] = None if found is None else found["value"]
                    row[f"{metric}_ci_low"] = None if found is None else found["ci_low"]
                    row[f"{metric}_ci_high"] = None if found is None else found["ci_high"]
                    row[f"{metric}_n"] = None if found is None else _count(found["denominator"])
                acc = _value(
                    part, model=model, setting=setting, stratum="overall", metric="acc_at1"
                )
                row["n_chains"] = None if acc is None else int(acc["n_chains"])
                row["n_turns"] = None if acc is None else int(acc["n_turns"])
                if acc is not None:
                    rows.append(row)
    return pa.Table.from_pylist(rows, schema=LEADERBOARD_SCHEMA)


def _count(value) -> int | None:
    return None if _missing(value) else int(value)


def headline_markdown(metrics: pa.Table) -> str:
    """Per model and setting (every setting, explicit scope included), the headline Scope Acc@1
    and the paper's Acc@1 of the overall stratum, each with its 95% interval and n."""
    frame = _frame(metrics)
    return markdown_table(
        [
            "model",
            "setting",
            "Scope Acc@1 [95% CI]",
            "n scope-dependent",
            "Acc@1 (paper) [95% CI]",
            "n scored",
        ],
        [
            [
                model,
                SETTING_LABELS.get(setting, setting),
                *(
                    part
                    for metric in (SCOPE_METRIC, "acc_at1")
                    for part in _value_and_n(
                        _value(
                            frame, model=model, setting=setting, stratum="overall", metric=metric
                        )
                    )
                ),
            ]
            for model in _models(frame)
            for setting in _settings(frame)
            if _value(frame, model=model, setting=setting, stratum="overall", metric="n_turns")
            is not None
        ],
    )


def _value_and_n(row) -> tuple[str, str]:
    if row is None:
        return "-", "-"
    count = _count(row["denominator"])
    return _cell(row, with_ci=True, with_n=False), "-" if count is None else str(count)


def _headline_table(rows: Sequence[tuple[Sequence[str], pd.DataFrame]], keys: Sequence[str]) -> str:
    """Settings x (Scope Acc@1, Acc@1, Final@1, Chain@1, Drift@1) of the overall stratum, each
    with its n: one Markdown row per (key cells, frame of one model)."""
    settings = [
        s.value for s in PAPER_SETTINGS if any(s in set(frame["setting"]) for _, frame in rows)
    ]
    return markdown_table(
        [*keys, *(f"{SETTING_LABELS[s]} {label}" for s in settings for label in HEADLINE.values())],
        [
            [
                *cells,
                *(
                    _cell(
                        _value(
                            frame,
                            model=frame["model"].iloc[0],
                            setting=s,
                            stratum="overall",
                            metric=m,
                        )
                    )
                    for s in settings
                    for m in HEADLINE
                ),
            ]
            for cells, frame in rows
        ],
    )


def table5(paraphrase_metrics: pa.Table) -> str:
    """The paper's Table 5: per model, the headline metrics of the kept chains as templated
    (Orig) and as paraphrased (Para)."""
    frame = _frame(paraphrase_metrics)
    rows = []
    for model in _models(frame):
        for variant, label in VARIANT_LABELS.items():
            part = frame[(frame["model"] == model) & (frame["variant"] == variant)]
            if not part.empty:
                rows.append(((model, label), part))
    return _headline_table(rows, ["model", "cond."])


def markdown_tables(metrics: pa.Table) -> dict[str, str]:
    """The headline (``headline_markdown``) and its value by family, then the paper's Table 3
    (settings x Scope/Acc/Final/Chain/Drift), Table 4 (Final@1 by length), Table 8 (Acc@1 by
    family) and Table 9 (Acc@1 by follow-up position); every figure with its n."""
    frame = _frame(metrics)
    models, settings = _models(frame), _paper_settings(frame)
    table3 = _headline_table(
        [((model,), frame[frame["model"] == model]) for model in models], ["model"]
    )

    def by(dimension: str, metric: str) -> str:
        levels = _levels(frame, dimension)
        return markdown_table(
            ["model", "setting", *(f"{dimension}={level}" for level in levels)],
            [
                [
                    model,
                    setting,
                    *(
                        _cell(
                            _value(
                                frame,
                                model=model,
                                setting=setting,
                                stratum=f"{dimension}={level}",
                                metric=metric,
                            )
                        )
                        for level in levels
                    ),
                ]
                for model in models
                for setting in settings
            ],
        )

    return {
        "headline": headline_markdown(metrics),
        "headline_by_family": by("family", SCOPE_METRIC),
        "table3": table3,
        "table4": by("length", "final_turn_acc_at1"),
        "table8": by("family", "acc_at1"),
        "table9": by("followup_pos", "acc_at1"),
    }


def comparisons_markdown(comparisons: pa.Table) -> str:
    """'A vs B' (``COMPARISONS_SCHEMA`` rows): per setting and model, each headline metric with
    its n (the denominator both share), A's and the baseline B's values, A - B with its paired
    95% bootstrap interval, the p-value and the chains compared (and those of A and of B left
    out)."""
    return markdown_table(
        [
            "setting",
            "A vs B",
            "metric",
            "n",
            "A",
            "B",
            "A - B [95% CI]",
            "p",
            "chains",
            "left out A/B",
        ],
        [
            [
                SETTING_LABELS.get(row["setting"], row["setting"]),
                f"{row['model']} vs {row['baseline']}",
                HEADLINE[row["metric"]],
                row["denominator"],
                f"{row['value_a']:.3f}",
                f"{row['value_b']:.3f}",
                f"{row['difference']:+.3f}"
                + (
                    ""
                    if row["ci_low"] is None
                    else f" [{row['ci_low']:+.3f}, {row['ci_high']:+.3f}]"
                ),
                _p_value(row["p_value"]),
                row["n_chains"],
                f"{row['chains_left_out_a']}/{row['chains_left_out_b']}",
            ]
            for row in comparisons.to_pylist()
        ],
    )


def knowledge_markdown(knowledge: pa.Table) -> str:
    """Known alone / lost in conversation / drifted to today (overall rows of the
    leaderboard's knowledge table), per model and setting, with 95% intervals and
    denominators."""
    cells: dict[tuple[str, str], dict[str, str]] = {}
    for row in knowledge.to_pylist():
        if row["stratum"] != "overall" or row["metric"] not in KNOWLEDGE_LABELS:
            continue
        text = f"{row['value']:.3f}"
        if row["ci_low"] is not None:
            text += f" [{row['ci_low']:.3f}, {row['ci_high']:.3f}]"
        cells.setdefault((row["model"], row["setting"]), {})[row["metric"]] = (
            f"{text} (n={row['denominator']})"
        )
    return markdown_table(
        ["model", "setting", *KNOWLEDGE_LABELS.values()],
        [
            [model, SETTING_LABELS.get(setting, setting)]
            + [values.get(metric, "-") for metric in KNOWLEDGE_LABELS]
            for (model, setting), values in cells.items()
        ],
    )


def write_knowledge_plot(knowledge: pa.Table, out_dir: Path) -> Path | None:
    """Bars of known alone / lost in conversation / drifted to today per model, one panel
    per setting; None without rows."""
    rows = [r for r in knowledge.to_pylist() if r["stratum"] == "overall"]
    if not rows:
        return None
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    settings = [s.value for s in PAPER_SETTINGS if any(r["setting"] == s for r in rows)]
    models = sorted({r["model"] for r in rows})
    value = {(r["model"], r["setting"], r["metric"]): r for r in rows}
    figure, axes = plt.subplots(1, len(settings), figsize=(4.5 * len(settings), 3.6), squeeze=False)
    width = 0.8 / len(KNOWLEDGE_LABELS)
    for ax, setting in zip(axes[0], settings, strict=True):
        for index, (metric, label) in enumerate(KNOWLEDGE_LABELS.items()):
            found = [value.get((m, setting, metric)) for m in models]
            ax.bar(
                [i + index * width for i in range(len(models))],
                [0.0 if f is None else f["value"] for f in found],
                width=width,
                label=label,
            )
        ax.set_xticks([i + 0.4 - width / 2 for i in range(len(models))], models, rotation=30,
                      ha="right", fontsize=8)  # fmt: skip
        ax.set_ylim(0, 1.02)
        ax.set_title(SETTING_LABELS[setting])
    axes[0][-1].legend(fontsize=8)
    figure.tight_layout()
    out_dir.mkdir(parents=True, exist_ok=True)
    return _save(figure, out_dir / "knowledge.png")


def _p_value(p: float | None) -> str:
    if p is None:
        return "-"
    return "<0.001" if p < 0.001 else f"{p:.3f}"


def write_plots(metrics: pa.Table, out_dir: Path) -> list[Path]:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    frame = _frame(metrics)
    models, settings = _models(frame), _paper_settings(frame)
    out_dir.mkdir(parents=True, exist_ok=True)
    paths = []

    def series(dimension: str, metric: str, ax, setting: str) -> None:
        for model in models:
            rows = frame[
                (frame["model"] == model)
                & (frame["setting"] == setting)
                & (frame["dimension"] == dimension)
                & (frame["metric"] == metric)
            ].copy()
            if rows.empty:
                continue
            rows["x"] = rows["level"].astype(int)
            rows = rows.sort_values("x")
            low = (rows["value"] - rows["ci_low"]).clip(lower=0).fillna(0)
            high = (rows["ci_high"] - rows["value"]).clip(lower=0).fillna(0)
            ax.errorbar(
                rows["x"], rows["value"], yerr=[low, high], marker="o", capsize=3, label=model
            )
        ax.set_title(SETTING_LABELS[setting])
        ax.set_ylim(-0.02, 1.02)
        ax.grid(alpha=0.3)

    for name, dimension, metric, xlabel, ylabel in (
        ("final_by_length.png", "length", "final_turn_acc_at1", "chain length", "Final@1"),
        ("drift_by_followup.png", "followup_pos", "drift_rate_given_present_at1",
         "follow-up position", "Drift@1 | present"),
    ):  # fmt: skip
        figure, axes = plt.subplots(
            1, len(settings), figsize=(4.5 * len(settings), 3.6), squeeze=False
        )
        for ax, setting in zip(axes[0], settings, strict=True):
            series(dimension, metric, ax, setting)
            ax.set_xlabel(xlabel)
        axes[0][0].set_ylabel(ylabel)
        axes[0][-1].legend(fontsize=8)
        figure.tight_layout()
        paths.append(_save(figure, out_dir / name))

    families = _levels(frame, "family")
    figure, axes = plt.subplots(
        1, len(settings), figsize=(4.5 * len(settings), 0.35 * len(families) + 1.5), squeeze=False
    )
    width = 0.8 / max(1, len(models))
    for ax, setting in zip(axes[0], settings, strict=True):
        for index, model in enumerate(models):
            values = [
                _value(frame, model=model, setting=setting, stratum=f"family={f}", metric="acc_at1")
                for f in families
            ]
            ax.barh(
                [i + index * width for i in range(len(families))],
                [0 if v is None else v["value"] for v in values],
                height=width,
                label=model,
            )
        ax.set_yticks([i + 0.4 - width / 2 for i in range(len(families))], families, fontsize=8)
        ax.set_xlim(0, 1)
        ax.set_title(SETTING_LABELS[setting])
        ax.set_xlabel("Acc@1")
    axes[0][-1].legend(fontsize=8)
    figure.tight_layout()
    paths.append(_save(figure, out_dir / "accuracy_by_family.png"))

    figure, axes = plt.subplots(1, len(HEADLINE), figsize=(4 * len(HEADLINE), 3.6), squeeze=False)
    for ax, (metric, label) in zip(axes[0], HEADLINE.items(), strict=True):
        for index, setting in enumerate(settings):
            xs, ys, lows, highs = [], [], [], []
            for position, model in enumerate(models):
                row = _value(frame, model=model, setting=setting, stratum="overall", metric=metric)
                if row is None or row["value"] is None or math.isnan(row["value"]):
                    continue
                xs.append(position + (index - 1) * 0.2)
                ys.append(row["value"])
                lows.append(_error_bar(row["value"], row["ci_low"]))
                highs.append(_error_bar(row["ci_high"], row["value"]))
            ax.errorbar(
                xs, ys, yerr=[lows, highs], fmt="o", capsize=3, label=SETTING_LABELS[setting]
            )
        ax.set_xticks(range(len(models)), models, rotation=30, ha="right", fontsize=8)
        ax.set_ylim(-0.02, 1.02)
        ax.set_title(f"{label} (95% CI)")
        ax.grid(alpha=0.3)
    axes[0][-1].legend(fontsize=8)
    figure.tight_layout()
    paths.append(_save(figure, out_dir / "models_with_ci.png"))
    return paths


def _error_bar(upper: float, lower: float | None) -> float:
    if lower is None or math.isnan(lower):
        return 0.0
    return max(0.0, upper - lower)


def _save(figure, path: Path) -> Path:
    import matplotlib.pyplot as plt

    figure.savefig(path, dpi=110, metadata={"Software": None})
    plt.close(figure)
    return path


MATCHING_TEXT = (
    "An answer is right in the `relaxed` match mode (the default) when it names a value of the "
    "turn's gold set on whole tokens and no other candidate of the turn: a hedge (`yes or no`, "
    "`1, 2 or 3`, two office holders) is wrong. The `reference` mode, the authors' matcher kept "
    "to reproduce published numbers, credits hedges."
)


TWO_PRESENTS_TEXT = (
    "Drift to the present day is measured against the dump's present: the values at "
    "{anchor} in the {year} snapshot, the latest the dump knows. A model whose knowledge ends "
    "earlier (its registry entry's `knowledge_cutoff`) cannot drift to a value it never saw: "
    "its own present is the latest day anchor on or before its cutoff, in the snapshot of that "
    "year (what Wikidata knew on 31 December of it); a cutoff after the latest snapshot "
    "is the dump's present. For such a model drift and Scope Acc@1 are computed against both "
    "presents: against its own, a turn is drift-eligible where a value at its present exists "
    "and is not a correct answer, answering that value is drift, and a scope-dependent turn is "
    "one whose gold is not that value; against the dump's, as for every model. The turns "
    "changed since the cutoff are those whose values today differ from those at the model's "
    "present: what it could not know (the explicit-scope control does not count them as known "
    "when their scope begins after the cutoff). A `present_day` entry with a cutoff answers "
    "its own present: it drifts on every turn eligible against its own present, and against "
    "the dump's it is merely wrong where the two presents differ. Each figure is followed by "
    "its n; the changed and no-value counts are of scored turns."
)
"""The report's paragraph on the two presents."""


def two_presents_markdown(
    metrics: pa.Table, presents: dict[str, dict], dump_present: dict[str, object]
) -> str:
    """The paragraph and table of the two presents: per model with a knowledge cutoff
    (``presents``: its present, ``ModelPresent.describe``) and setting, Drift@1 and Scope Acc@1
    against its own present and against the dump's (``dump_present``: the ``present_day``
    report), the scored turns changed since the cutoff and those without a value at its
    present."""
    frame = _frame(metrics)
    rows = []
    for model in sorted(presents):
        present = presents[model]
        part = frame[frame["model"] == model]
        for setting in _settings(part):
            found = {
                (row["stratum"], row["metric"]): row
                for _, row in part[part["setting"] == setting].iterrows()
            }
            rows.append(
                [
                    model,
                    present["knowledge_cutoff"],
                    f"{present['anchor']} ({present['snapshot_year']} snapshot)",
                    SETTING_LABELS.get(setting, setting),
                    *(
                        _cell(found.get(("overall", metric)))
                        for metric in (
                            "own_drift_rate_given_present_at1",
                            "drift_rate_given_present_at1",
                            "own_scope_acc_at1",
                            SCOPE_METRIC,
                        )
                    ),
                    *(
                        str(int(row["value"])) if (row := found.get(key)) is not None else "0"
                        for key in (
                            (CHANGED_SINCE_CUTOFF, "n_turns"),
                            ("overall", OWN_COUNT_METRIC),
                        )
                    ),
                ]
            )
    text = TWO_PRESENTS_TEXT.format(
        anchor=dump_present.get("anchor", "the latest day anchor"),
        year=dump_present.get("snapshot_year", "latest"),
    )
    table = markdown_table(
        [
            "model",
            "knowledge cutoff",
            "its present",
            "setting",
            "Drift@1, own present",
            "Drift@1, dump's present",
            "Scope Acc@1, own present",
            "Scope Acc@1, dump's present",
            "changed since cutoff",
            "no value at its present",
        ],
        rows,
    )
    return f"{text}\n\n{table}"


def render_markdown(
    metrics: pa.Table,
    plots: Sequence[Path],
    provenance: dict[str, str],
    paraphrase_metrics: pa.Table | None = None,
    comparisons: pa.Table | None = None,
    knowledge: pa.Table | None = None,
    *,
    presents: dict[str, dict] | None = None,
    dump_present: dict[str, object] | None = None,
    paraphraser: str | None = None,
) -> str:
    """The report; with ``presents`` (models with a knowledge cutoff), the two presents
    (``two_presents_markdown``); ``paraphraser`` (the paraphrased subset's) ``templates``
    says under Table 5 that its variants are template variants."""
    tables = markdown_tables(metrics)
    lines = ["# ChronoScope evaluation report", ""]
    lines += [f"- {key}: {value}" for key, value in provenance.items()]
    lines += ["", "## Headline: Acc@1 over the turns that need their scope (Scope Acc@1)", ""]
    lines += [HEADLINE_TEXT, "", tables["headline"], "", "Scope Acc@1 by family:", ""]
    lines += [tables["headline_by_family"]]
    lines += ["", "## Main results (Table 3 layout; 95% bootstrap CIs in `leaderboard`)", ""]
    lines += [MATCHING_TEXT, "", tables["table3"]]
    if comparisons is not None and comparisons.num_rows:
        lines += ["", "## Paired comparisons (A vs B; chains resampled for both)", ""]
        lines += [comparisons_markdown(comparisons)]
    if knowledge is not None and knowledge.num_rows:
        lines += ["", "## Known alone, lost in conversation, drifted to today", ""]
        lines += [
            "Against each model's explicit-scope run (every scored turn asked alone with its "
            "scope stated): the share of scored turns it knows alone; of the implicit turns it "
            "knows, the share answered wrong in the setting; of those that are drift-eligible, "
            "the share answered with today's value.",
            "",
            knowledge_markdown(knowledge),
        ]
    if presents:
        lines += ["", "## Two presents: the dump's and the model's own", ""]
        lines += [two_presents_markdown(metrics, presents, dump_present or {})]
    lines += ["", "## Final@1 by chain length (Table 4)", "", tables["table4"]]
    if paraphrase_metrics is not None and paraphrase_metrics.num_rows:
        lines += ["", "## Templated vs paraphrased questions (Table 5)", ""]
        if paraphraser == TEMPLATES_PARAPHRASER:
            lines += [TEMPLATE_VARIANTS_TEXT, ""]
        lines += [table5(paraphrase_metrics)]
    lines += ["", "## Acc@1 by family (Table 8)", "", tables["table8"]]
    lines += ["", "## Acc@1 by follow-up position (Table 9)", "", tables["table9"], ""]
    lines += ["## Plots", ""]
    lines += [f"![{path.stem}]({path.name})" for path in plots]
    return "\n".join(lines) + "\n"


def render_html(markdown_text: str) -> str:
    """A self-contained page: the Markdown rendered (tables included), images beside the file.
    Raw HTML is escaped, not passed through: model names and answers in the tables are data."""
    renderer = MarkdownIt("commonmark", {"html": False}).enable("table")
    body = renderer.render(markdown_text)
    style = (
        "body{font-family:sans-serif;max-width:1200px;margin:2em auto}"
        "table{border-collapse:collapse;margin:1em 0;font-size:13px}"
        "td,th{border:1px solid #ccc;padding:3px 7px;text-align:right}"
        "img{max-width:100%}"
    )
    return (
        "<!doctype html><html><head><meta charset='utf-8'><title>ChronoScope report</title>"
        f"<style>{style}</style></head><body>{body}</body></html>\n"
    )
