"""The time-grounded probe: corpus, runs per model, report."""

import contextlib
import json
import tempfile
import time
from pathlib import Path

import dagster as dg
import pyarrow as pa
from pydantic import Field

from chronoscope_dagster.markdown import markdown_table
from chronoscope_dagster.memory.plugin import build_memory, load_factory, reads_its_prompt
from chronoscope_dagster.memory.runs import RULE_READER, MemoryRun, rule_reader_runs, run_memory
from chronoscope_dagster.partitions import model_partitions
from chronoscope_dagster.probe.agents import chat_agent_for_model
from chronoscope_dagster.probe.assemble import build_corpus
from chronoscope_dagster.probe.corpus import export_corpus, first_per_type, read_corpus, specs_path
from chronoscope_dagster.probe.judge import judge_for_model
from chronoscope_dagster.probe.report import (
    build_report,
    memory_scores,
    render_markdown,
    render_memory_markdown,
)
from chronoscope_dagster.probe.runs import ROW_FIELDS, run_probe
from chronoscope_dagster.resources import BenchmarkSettings, ModelRegistry
from chronoscope_dagster.storage.probe import (
    CORPUS_FILE,
    MEMORY_RUNS_FILE,
    RUN_FILE,
    load_corpus,
    load_memory_runs,
    load_run,
)
from chronoscope_dagster.warehouse import Warehouse


class ProbeCorpusConfig(dg.Config):
    generated: int = Field(default=120, ge=0, description="Generated items beside the authored.")
    seed: int = Field(default=0, description="Seed of the generator.")


class ProbeRunConfig(dg.Config):
    judge_model: str = Field(
        default="",
        description="A registry model that also judges every answer with the temporal "
        "criteria; its verdict is recorded beside the deterministic checker's.",
    )


@dg.asset(
    deps=["probe_source"],
    group_name="probe",
    kinds={"json", "parquet"},
    description="The probe's corpus in LongMemEval's JSON shape: the authored items (three "
    "types: temporal-as-of, temporal-current, prospective-memory) and seeded generated ones, "
    "every date in a gold answer derived from the session timestamps, no date in any message.",
)
def probe_corpus(
    config: ProbeCorpusConfig,
    benchmark_settings: BenchmarkSettings,
    warehouse: dg.ResourceParam[Warehouse],
) -> dg.MaterializeResult:
    probe_file = benchmark_settings.probe_file
    corpus = read_corpus(probe_file) if probe_file else build_corpus(config.generated, config.seed)
    directory = warehouse.partition_dir("probe_corpus")
    directory.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=directory, prefix=".export.") as staging:
        exported = export_corpus(corpus, Path(staging) / CORPUS_FILE)
        if specs_path(exported).exists():
            specs_path(exported).replace(specs_path(directory / CORPUS_FILE))
        exported.replace(directory / CORPUS_FILE)
    items = pa.Table.from_pylist(
        [
            {
                "question_id": item.question_id,
                "question_type": item.question_type,
                "question": item.question,
                "question_date": item.question_date,
                "sessions": len(item.haystack_sessions),
                "answer": str(item.answer),
            }
            for item in corpus.items
        ]
    )
    warehouse.write_table("probe_corpus", items)
    by_type: dict[str, int] = {}
    for item in corpus.items:
        by_type[item.question_type] = by_type.get(item.question_type, 0) + 1
    return dg.MaterializeResult(
        data_version=dg.DataVersion(warehouse.data_version("probe_corpus")),
        metadata={
            "dagster/row_count": len(corpus.items),
            "corpus_id": corpus.id,
            "sha256": corpus.sha256(),
            "by_type": dg.MetadataValue.json(by_type),
            "path": dg.MetadataValue.path(
                str(warehouse.partition_dir("probe_corpus") / CORPUS_FILE)
            ),
        },
    )


@dg.asset(
    partitions_def=model_partitions,
    deps=["probe_corpus", "probe_run_settings", "model_entry"],
    group_name="probe",
    kinds={"python", "parquet"},
    pool="model_calls",
    description="The probe's four arms for one model: control (timestamps and text), probe "
    "(timestamps only, through the typed channel), oracle ceiling (gold sessions) and "
    "timestamp-blind floor; then each memory system of the settings answering through the "
    "model (control and probe arms); one row per (system, arm, item) with the checker's "
    "verdict.",
)
def probe_runs(
    context: dg.AssetExecutionContext,
    config: ProbeRunConfig,
    benchmark_settings: BenchmarkSettings,
    warehouse: dg.ResourceParam[Warehouse],
    models: ModelRegistry,
) -> dg.MaterializeResult:
    model = context.partition_key
    spec = models.spec(model)
    corpus = first_per_type(load_corpus(warehouse), benchmark_settings.probe_items_per_type)
    memories = benchmark_settings.probe_memories if reads_its_prompt(spec) else []
    for name in memories:
        load_factory(name)
    context.log.info(
        f"probing {model} on {len(corpus.items)} items, four arms, and memories "
        f"{', '.join(memories) or '(none)'}"
    )
    started = time.perf_counter()
    cache = warehouse.response_cache_path
    judging = (
        judge_for_model(models.spec(config.judge_model), cache)
        if config.judge_model
        else contextlib.nullcontext()
    )
    with chat_agent_for_model(spec, cache) as agent, judging as judge:
        run = run_probe(corpus, agent, model=model, judge=judge)
        memory_runs = [
            run_memory(
                corpus, build_memory(name, agent.chat, agent.decoding), name=name, reader=model
            )
            for name in memories
        ]
    all_rows = [*run.rows, *(row for m in memory_runs for row in m.run.rows)]
    rows = pa.Table.from_pylist([row.as_dict() for row in all_rows])
    warehouse.write_table("probe_runs", rows.select(list(ROW_FIELDS)), model=model)
    with warehouse.writing("probe_runs", RUN_FILE, model=model) as path:
        path.write_text(json.dumps(run.as_dict(), indent=2, sort_keys=True, default=str) + "\n")
    with warehouse.writing("probe_runs", MEMORY_RUNS_FILE, model=model) as path:
        records = [m.as_dict() for m in memory_runs]
        path.write_text(json.dumps(records, indent=2, sort_keys=True, default=str) + "\n")
    accuracy: dict[tuple[str, str], tuple[int, int]] = {}
    for row in all_rows:
        correct, total = accuracy.get((row.system, row.arm), (0, 0))
        accuracy[(row.system, row.arm)] = (correct + row.check_correct, total + 1)
    return dg.MaterializeResult(
        data_version=dg.DataVersion(warehouse.data_version("probe_runs", model=model)),
        metadata={
            "dagster/row_count": rows.num_rows,
            "seconds": round(time.perf_counter() - started, 1),
            "accuracy": dg.MetadataValue.md(
                markdown_table(
                    ["system", "arm", "correct", "n", "accuracy"],
                    [
                        (system, arm, c, n, f"{c / n:.3f}")
                        for (system, arm), (c, n) in accuracy.items()
                    ],
                )
            ),
        },
    )


@dg.asset(
    deps=["probe_runs"],
    group_name="probe",
    kinds={"markdown"},
    description="The memory systems side by side (each store with the rule reader, no model, "
    "over the whole corpus, and through each model): n, accuracy under control and probe, "
    "the exact sign test of their difference. Then per model: accuracy per arm with n, the "
    "control-probe difference, a paired per-item comparison with an exact sign test, what "
    "timestamps were delivered, and provenance (corpus id and SHA-256, fingerprints of the "
    "ids and judge templates).",
)
def probe_report(warehouse: dg.ResourceParam[Warehouse]) -> dg.MaterializeResult:
    corpus = load_corpus(warehouse)
    sections = []
    reports = {}
    memory_runs: list[MemoryRun] = rule_reader_runs(corpus) if corpus.specs else []
    for partition in warehouse.partitions("probe_runs"):
        model = partition["model"]
        report = build_report(load_run(warehouse, model), corpus)
        reports[model] = report.as_dict()
        sections.append(render_markdown(report))
        memory_runs += load_memory_runs(warehouse, model)
    if not sections:
        raise dg.Failure("no probe_runs partition is materialized yet")
    scores = memory_scores([m.run for m in memory_runs])
    if scores:
        sections.insert(0, render_memory_markdown(scores, RULE_READER))
    markdown = "\n\n".join(sections)
    with warehouse.writing("probe_report", "report.md") as path:
        path.write_text(markdown, encoding="utf-8")
    warehouse.write_report(
        "probe_report",
        {"memory_systems": [score.as_dict() for score in scores], "models": reports},
    )
    return dg.MaterializeResult(
        data_version=dg.DataVersion(warehouse.data_version("probe_report")),
        metadata={
            "report": dg.MetadataValue.md(markdown),
            "path": dg.MetadataValue.path(
                str(warehouse.partition_dir("probe_report") / "report.md")
            ),
        },
    )
