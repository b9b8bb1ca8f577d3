"""The ``chronoscope`` command: the Dagster jobs for scripts and CI, run in process.

chronoscope run [--home DIR] [--dump YEAR=PATH_OR_URL ...] [--models FILE] [--select SELECTION]
chronoscope sql [--home DIR] "QUERY"
chronoscope models list [--models FILE] | add NAME --backend B [...] | convert OUT_DIR [...]
chronoscope report [--home DIR] [--models FILE]
chronoscope export --format hf [--home DIR] OUT_DIR
chronoscope probe --export FILE [--generated N] [--seed S]
"""

from __future__ import annotations

import argparse
import csv
import os
import sys
import time
import unicodedata
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from chronoscope_dagster.data import SNAPSHOT_YEARS
from chronoscope_dagster.warehouse import Warehouse
from chronoscope_dagster.wikidata.download import is_url, url_file_name

if TYPE_CHECKING:
    from chronoscope_dagster.resources import BenchmarkSettings

READ_ONLY_STATEMENTS = {"SELECT", "EXPLAIN", "PRAGMA", "RELATION"}
WORKERS_PER_CORE = 4
ESCAPED_CATEGORIES = frozenset({"Cc", "Cf", "Zl", "Zp"})
"""What ``chronoscope sql`` prints as escapes: controls (NUL, ESC, CR, DEL, C1), format
characters (bidi overrides and isolates, zero-width ones, tags) and the line and paragraph
separators. Tab and newline are printed as they are: harmless, and CSV quotes a cell holding a
newline."""


class UsageError(Exception):
    """A mistake in the command line; printed without a traceback."""


def main(argv: Sequence[str] | None = None) -> int:
    parser = _parser()
    args = parser.parse_args(argv)
    try:
        return args.handler(args)
    except UsageError as error:
        print(f"chronoscope: {error}", file=sys.stderr)
        return 2


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="chronoscope", description="Build and evaluate the ChronoScope benchmark with Dagster."
    )
    commands = parser.add_subparsers(dest="command", required=True)
    for add in (_add_run, _add_models, _add_probe, _add_report, _add_sql, _add_export):
        add(commands)
    return parser


def _add_run(commands: argparse._SubParsersAction) -> None:
    """``chronoscope run``: materialize a selection with its checks."""
    run = commands.add_parser(
        "run",
        help="materialize assets with their checks",
        description="Materialize what is missing or stale in the selection (default: "
        "everything) and upstream of it, with its checks, in process: the dumps, settings and "
        "registry entries are observed first, and an asset is stale, as the Dagster UI shows, "
        "when its code or an input's data version changed since it was built, or when it "
        "failed a blocking check. Prints why each run is due. Exits non-zero when a step or "
        "a blocking check fails.",
    )
    _home_argument(run)
    run.add_argument(
        "--dump",
        action="append",
        default=[],
        metavar="YEAR=PATH_OR_URL",
        help="use this dump for a snapshot year instead of the embedded sample (repeatable); "
        ".json.gz, .json.bz2, .jsonl.zst, .jsonl, a directory of shards, or an HTTP(S) URL",
    )
    run.add_argument(
        "--checksums",
        action="append",
        default=[],
        metavar="YEAR=PATH_OR_URL",
        help="md5sums/sha1sums list to verify that year's dump against (repeatable)",
    )
    run.add_argument(
        "--select",
        default="*",
        metavar="ASSET_SELECTION",
        help="Dagster asset selection syntax, e.g. 'claims' or 'key:claims+' (default: '*')",
    )
    run.add_argument(
        "--years",
        nargs="+",
        metavar="YEAR",
        help="snapshot years to build (default: every one, "
        f"{', '.join(SNAPSHOT_YEARS)}); the benchmark merges every year built in the home, so "
        "a new home built with --years 2025 and --dump 2025=... holds only that dump's chains",
    )
    run.add_argument(
        "--workers",
        type=_workers,
        default=0,
        metavar="N",
        help=f"processes parsing a dump, at most {WORKERS_PER_CORE} per core "
        "(default 0: one per core)",
    )
    run.add_argument(
        "--chain-workers",
        type=int,
        metavar="N",
        help="processes in each chain-generation step, each indexing what one part of the "
        "step's shard reaches; the chains are the same for any N (default: one per core "
        "where the step is large enough, see chain_families.workers; 1 on the sample)",
    )
    run.add_argument(
        "--threads",
        type=int,
        default=0,
        metavar="N",
        help="threads of the embedded CPU model (and any local-backend model) instead of the "
        "registry's 1: on a machine where this run is the only busy process, one per core is "
        "about 1.6x faster on 2 cores; with anything else busy, keep 1",
    )
    run.add_argument(
        "--import-chains",
        metavar="FILE",
        help="build turns/chains from this chains JSON-lines file (the authors' "
        "merged_scope_benchmark.jsonl or an export) instead of the generated families",
    )
    run.add_argument(
        "--per-stratum",
        type=int,
        metavar="N",
        help="chains per family in the evaluation sample, lengths taking turns, no family "
        "above 20%% of scored turns (default 8: minutes for the embedded CPU model; the "
        "paper's scale is thousands)",
    )
    run.add_argument(
        "--self-per-stratum",
        type=int,
        metavar="N",
        help="of those, chains per family in the self-conditioned subset (default 4)",
    )
    run.add_argument(
        "--probe-items-per-type",
        type=int,
        metavar="N",
        help="probe each model on the first N items of each question type (default: all)",
    )
    run.add_argument(
        "--probe-memories",
        nargs="*",
        metavar="MEMORY",
        help="memory systems the probe runs through each model: ingest_time_memory, "
        "valid_time_memory (the default: both) or module:Class, your own on the Python path; "
        "none after the option runs none",
    )
    run.add_argument(
        "--probe-file",
        metavar="FILE",
        help="probe a LongMemEval-shaped file (e.g. longmemeval_s.json) instead of the authored "
        "and generated items",
    )
    run.add_argument(
        "--force",
        action="store_true",
        help="materialize the selected assets even where they are up to date",
    )
    run.add_argument(
        "--paraphrase-chains",
        type=int,
        metavar="N",
        help="chains of the evaluation sample to paraphrase (default: 10,000, the paper's size; 24 "
        "when every snapshot is the embedded sample)",
    )
    run.add_argument(
        "--paraphraser",
        metavar="MODEL",
        help="registry model that paraphrases the questions with the paper's prompt (default: "
        "templates, template variants: each question in another phrasing of its template slot, "
        "no model)",
    )
    run.add_argument(
        "--models",
        metavar="FILE",
        help="model registry YAML (default: $CHRONOSCOPE_MODELS or the shipped registry: the "
        "embedded CPU model and the oracle and present-day reference systems); a partition is "
        "added for every new entry",
    )
    run.set_defaults(handler=_run)


def _add_models(commands: argparse._SubParsersAction) -> None:
    """``chronoscope models list|add|convert``: the model registry."""
    models = commands.add_parser(
        "models",
        help="the model registry: list entries, convert a GGUF for vLLM",
        description="Work with the model registry (see chronoscope_dagster/data/models.yaml).",
    )
    model_commands = models.add_subparsers(dest="models_command", required=True)
    listing = model_commands.add_parser(
        "list", help="validate the registry and print its entries as CSV"
    )
    listing.add_argument("--models", metavar="FILE", help="registry YAML (default: shipped)")
    listing.set_defaults(handler=_models_list)
    add = model_commands.add_parser(
        "add",
        help="validate a new entry and append it to a registry file",
        description="Append a model to the registry file (--models, else $CHRONOSCOPE_MODELS; "
        "created from the shipped registry if missing). The model_registry sensor then adds its "
        "partition and requests its runs; `chronoscope run --models FILE` does the same in "
        "process.",
    )
    add.add_argument("name", help="the entry's name, which becomes the model partition key")
    add.add_argument("--backend", required=True, help="local, vllm, openai_compatible, ...")
    add.add_argument("--model", default="", help="model id, path or GGUF name")
    add.add_argument("--max-new-tokens", type=int)
    add.add_argument("--temperature", type=float)
    add.add_argument("--top-p", type=float)
    add.add_argument("--k", type=int, help="candidates per answer")
    add.add_argument("--seed", type=int)
    add.add_argument("--description")
    add.add_argument(
        "--knowledge-cutoff",
        metavar="YYYY-MM-DD",
        help="where the model's knowledge ends: drift is also measured against its own present",
    )
    add.add_argument(
        "--option",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="backend option, value read as YAML (repeatable): --option base_url=http://...",
    )
    add.add_argument("--models", metavar="FILE", help="registry file to append to")
    add.set_defaults(handler=_models_add)
    convert = model_commands.add_parser(
        "convert",
        help="convert a GGUF (default: the embedded model) into a Hugging Face folder for vLLM",
    )
    convert.add_argument("out_dir", help="folder to write (a no-op when already converted)")
    convert.add_argument("--gguf", help="GGUF file (default: the embedded model)")
    convert.add_argument("--dtype", choices=("float32", "bfloat16", "float16"), default="float32")
    convert.set_defaults(handler=_models_convert)


def _add_probe(commands: argparse._SubParsersAction) -> None:
    """``chronoscope probe --export``: the probe's corpus as LongMemEval JSON."""
    probe = commands.add_parser(
        "probe",
        help="export the time-grounded probe's corpus as LongMemEval JSON",
        description="Write the probe corpus (authored and generated items) as a LongMemEval "
        "JSON file, with a .specs.json sidecar holding each answer's derivation rule.",
    )
    probe.add_argument("--export", metavar="FILE", required=True, help="file to write")
    probe.add_argument("--generated", type=int, default=120, help="generated items (default 120)")
    probe.add_argument("--seed", type=int, default=0, help="generator seed (default 0)")
    probe.set_defaults(handler=_probe)


def _add_report(commands: argparse._SubParsersAction) -> None:
    """``chronoscope report``: leaderboard and report from the metrics so far."""
    report = commands.add_parser(
        "report",
        help="refresh the leaderboard and the report from the metrics materialized so far",
        description="Materialize leaderboard and report (with their checks) from whatever "
        "metrics partitions exist, without running any model, and print the report's main "
        "tables and where it is.",
    )
    _home_argument(report)
    report.set_defaults(handler=_report)


def _add_sql(commands: argparse._SubParsersAction) -> None:
    """``chronoscope sql``: read-only SQL over the warehouse views."""
    sql = commands.add_parser(
        "sql",
        help="run read-only SQL over the warehouse and print CSV",
        description="Run one read-only statement over the warehouse views (named as the assets: "
        "claims, labels, ...) and print the result as CSV.",
    )
    _home_argument(sql)
    sql.add_argument("query", help='e.g. "SELECT pid, count(*) FROM claims GROUP BY pid"')
    sql.set_defaults(handler=_sql)


def _add_export(commands: argparse._SubParsersAction) -> None:
    """``chronoscope export --format hf``: the benchmark as a Hugging Face dataset folder."""
    export = commands.add_parser(
        "export",
        help="write the benchmark as a dataset folder the Hugging Face datasets library loads",
        description="Materialize benchmark_release (with its check) from what the home holds "
        "now, building nothing upstream of it, and copy it into OUT_DIR: "
        "README.md (the dataset card) and data/<split>-00000-of-00001.parquet. Other files in "
        "OUT_DIR are left alone, except split files of an earlier export.",
    )
    _home_argument(export)
    export.add_argument(
        "--format",
        required=True,
        choices=("hf",),
        help="hf: Parquet splits and a dataset card, for load_dataset('parquet', data_dir=OUT_DIR)",
    )
    export.add_argument("out_dir", metavar="OUT_DIR", help="folder to write (created if missing)")
    export.set_defaults(handler=_export)


def _home_argument(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--home",
        type=_home_directory,
        default=None,
        help="data directory (default: $CHRONOSCOPE_HOME or ./.chronoscope)",
    )


def _home_directory(text: str) -> str:
    if not text.strip():
        raise argparse.ArgumentTypeError("must not be empty (omit it for the default home)")
    if _not_a_directory(Path(text).expanduser()):
        raise argparse.ArgumentTypeError(f"{text} exists and is not a directory")
    return text


def _not_a_directory(path: Path) -> bool:
    return path.exists() and not path.is_dir()


def _workers(text: str) -> int:
    most = WORKERS_PER_CORE * (os.cpu_count() or 1)
    try:
        workers = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a whole number: {text!r}") from None
    if not 0 <= workers <= most:
        raise argparse.ArgumentTypeError(
            f"must be between 0 (one per core) and {most} ({WORKERS_PER_CORE} per core), "
            f"got {workers}"
        )
    return workers


def _warehouse(home: str | None) -> Warehouse:
    if home is None and not os.environ.get("CHRONOSCOPE_HOME", "default").strip():
        raise UsageError(
            "$CHRONOSCOPE_HOME is set but empty; set it to the data directory or unset it "
            "(default ./.chronoscope)"
        )
    try:
        warehouse = Warehouse(home)
    except ValueError as error:
        raise UsageError(str(error)) from error
    if _not_a_directory(warehouse.home):
        raise UsageError(f"home {warehouse.home} exists and is not a directory")
    return warehouse


def _year_mapping(pairs: list[str], option: str) -> dict[str, str]:
    mapping = {}
    for pair in pairs:
        year, sep, value = pair.partition("=")
        if not sep or not value:
            raise UsageError(f"{option} wants YEAR=PATH_OR_URL, got {pair!r}")
        mapping[_snapshot_year(year, option)] = value
    return mapping


def _snapshot_year(year: str, option: str) -> str:
    """``year``, or a usage error of ``option`` when it is no snapshot year."""
    if year not in SNAPSHOT_YEARS:
        raise UsageError(
            f"{option}: unknown snapshot year {year!r}; use one of {', '.join(SNAPSHOT_YEARS)}"
        )
    return year


def _years(years: list[str] | None, dumps: Mapping[str, str]) -> list[str] | None:
    """The snapshot years ``--years`` names (None: every one), checked against ``dumps``."""
    if years is None:
        return None
    for year in years:
        _snapshot_year(year, "--years")
    if unused := sorted(set(dumps) - set(years)):
        raise UsageError(f"--dump {unused[0]}=...: {unused[0]} is not one of --years")
    return sorted(set(years))


def _run(args: argparse.Namespace) -> int:
    from chronoscope_dagster.memory.plugin import MemoryPluginError, load_factory
    from chronoscope_dagster.paraphrase.template_variants import uses_templates

    if args.threads < 0:
        raise UsageError("--threads must be at least 0 (0: the registry's)")
    dumps = _year_mapping(args.dump, "--dump")
    checksums = _year_mapping(args.checksums, "--checksums")
    years = _years(args.years, dumps)
    for option, file in (
        ("--import-chains", args.import_chains),
        ("--probe-file", args.probe_file),
    ):
        if file and not Path(file).expanduser().is_file():
            raise UsageError(f"{option}: no such file: {file}")
    for memory in args.probe_memories or ():
        try:
            load_factory(memory)
        except MemoryPluginError as error:
            raise UsageError(f"--probe-memories: {error}") from None
    paraphraser = args.paraphraser if not uses_templates(args.paraphraser or "") else None
    models = _model_registry(args.models, paraphraser)
    for year, source in dumps.items():
        if is_url(source):
            try:
                url_file_name(source)
            except ValueError as error:
                raise UsageError(f"--dump {year}: {error}") from None
        elif not Path(source).expanduser().exists():
            raise UsageError(f"--dump {year}: no such file or directory: {source}")
    warehouse = _warehouse(args.home)
    warehouse.home.mkdir(parents=True, exist_ok=True)
    os.environ["CHRONOSCOPE_HOME"] = str(warehouse.home)
    _ensure_dagster_home(warehouse)

    from chronoscope_dagster.home_lock import HomeLocked
    from chronoscope_dagster.orchestration import RunFailed, run_selection

    try:
        run_selection(
            home=str(warehouse.home),
            selection=args.select,
            dumps=dumps,
            checksums=checksums,
            workers=args.workers,
            settings=_settings(args),
            op_config=_op_config(args),
            models=models,
            model_threads=args.threads,
            force=args.force,
            snapshot_years=years,
            echo=print,
        )
    except (RunFailed, HomeLocked) as failure:
        print(f"chronoscope: {failure}", file=sys.stderr)
        return 1
    except ValueError as error:
        raise UsageError(str(error)) from error
    return 0


def _settings(args: argparse.Namespace) -> BenchmarkSettings:
    """The benchmark's settings: the options given, the defaults for the others (as for
    ``--dump``, a setting not given goes back to its default)."""
    from pydantic import ValidationError

    from chronoscope_dagster.resources import BenchmarkSettings

    given = {
        "import_chains": str(Path(args.import_chains).expanduser().resolve())
        if args.import_chains
        else None,
        "probe_file": str(Path(args.probe_file).expanduser().resolve())
        if args.probe_file
        else None,
        "per_stratum": args.per_stratum,
        "self_per_stratum": args.self_per_stratum,
        "probe_items_per_type": args.probe_items_per_type,
        "probe_memories": args.probe_memories,
        "paraphrase_chains": args.paraphrase_chains,
        "paraphraser": args.paraphraser,
    }
    try:
        return BenchmarkSettings(**{k: v for k, v in given.items() if v is not None})
    except ValidationError as error:
        problems = "; ".join(
            f"--{str(e['loc'][0]).replace('_', '-')}: {e['msg']}" for e in error.errors()
        )
        raise UsageError(problems) from error


def _op_config(args: argparse.Namespace) -> dict[str, dict[str, object]]:
    config: dict[str, dict[str, object]] = {}
    if args.chain_workers is not None:
        if args.chain_workers < 1:
            raise UsageError("--chain-workers must be at least 1")
        config["chain_families"] = {"workers": args.chain_workers}
    return config


def _model_registry(path: str | None, *required: str | None) -> str | None:
    """The registry file, checked (and that it names every ``required`` model) before any
    work starts; exported for Dagster's processes."""
    from chronoscope_dagster.llm.registry import RegistryError, load_registry
    from chronoscope_dagster.resources.models import REGISTRY_ENV, registry_path

    if path:
        path = str(Path(path).expanduser().resolve())
    try:
        names = [spec.name for spec in load_registry(registry_path(path or ""))]
    except RegistryError as error:
        raise UsageError(str(error)) from error
    for name in required:
        if name is not None and name not in names:
            raise UsageError(f"model {name!r} is not in the registry (it has: {', '.join(names)})")
    if path:
        os.environ[REGISTRY_ENV] = path
    return path


def _models_list(args: argparse.Namespace) -> int:
    from chronoscope_dagster.llm.registry import load_registry
    from chronoscope_dagster.resources.models import registry_path

    path = _model_registry(args.models)
    writer = csv.writer(sys.stdout, lineterminator="\n")
    writer.writerow(["name", "backend", "model", "max_new_tokens", "k", "prompting", "options",
                     "knowledge_cutoff"])  # fmt: skip
    for spec in load_registry(registry_path(path or "")):
        options = spec.options.model_dump(exclude_defaults=True)
        writer.writerow(
            [spec.name, spec.backend, spec.model, spec.decoding.max_new_tokens, spec.decoding.k,
             spec.prompting, " ".join(f"{k}={v}" for k, v in sorted(options.items())),
             spec.knowledge_cutoff or ""]
        )  # fmt: skip
    return 0


def _models_add(args: argparse.Namespace) -> int:
    import yaml

    from chronoscope_dagster.llm.registry import RegistryError, add_entry
    from chronoscope_dagster.resources.models import REGISTRY_ENV

    path = args.models or os.environ.get(REGISTRY_ENV)
    if not path:
        raise UsageError(
            "name the registry file to add to with --models FILE (created from the shipped "
            f"registry if missing) or ${REGISTRY_ENV}; the shipped registry is read-only"
        )
    entry: dict[str, object] = {"name": args.name, "backend": args.backend}
    if args.model:
        entry["model"] = args.model
    for key in (
        "max_new_tokens", "temperature", "top_p", "k", "seed", "description", "knowledge_cutoff"
    ):  # fmt: skip
        if getattr(args, key) is not None:
            entry[key] = getattr(args, key)
    options = {}
    for item in args.option:
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise UsageError(f"--option {item!r}: expected KEY=VALUE")
        try:
            options[key] = yaml.safe_load(value)
        except yaml.YAMLError as error:
            problem = str(error).splitlines()[0]
            raise UsageError(f"--option {key}: not a plain YAML value ({problem})") from None
    if options:
        entry["options"] = options
    try:
        spec, created = add_entry(Path(path).expanduser(), entry)
    except RegistryError as error:
        raise UsageError(str(error)) from error
    print(
        f"{'created ' + path + ' from the shipped registry and ' if created else ''}"
        f"added {spec.name} ({spec.backend}{', ' + spec.model if spec.model else ''}) to {path}"
    )
    print(
        "next: the model_registry sensor adds its partition and runs it (dagster dev with "
        f"{REGISTRY_ENV}={path}), or: chronoscope run --models {path}"
    )
    return 0


def _materialize(warehouse: Warehouse, selection: str, *, force: bool = False) -> bool:
    """Materialize ``selection`` of the home from what it holds (nothing upstream), printing
    each run's line; False, with the reason printed, when a run fails or the home is busy."""
    os.environ["CHRONOSCOPE_HOME"] = str(warehouse.home)
    _ensure_dagster_home(warehouse)
    from chronoscope_dagster.home_lock import HomeLocked
    from chronoscope_dagster.orchestration import RunFailed, run_selection

    try:
        run_selection(
            home=str(warehouse.home),
            selection=selection,
            upstream=False,
            force=force,
            echo=lambda line: print(line, file=sys.stderr),
        )
    except (RunFailed, HomeLocked) as failure:
        print(f"chronoscope: {failure}", file=sys.stderr)
        return False
    return True


def _report(args: argparse.Namespace) -> int:
    warehouse = _warehouse(args.home)
    if not warehouse.partitions("metrics"):
        raise UsageError(f"no metrics in {warehouse.home}; run `chronoscope run` first")
    if not _materialize(warehouse, "key:leaderboard or key:report"):
        return 1
    markdown = (warehouse.home / "report" / "report.md").read_text(encoding="utf-8")
    print(markdown.split("\n## Plots", 1)[0].rstrip())
    print(f"\nreport: {warehouse.home / 'report' / 'report.html'}")
    return 0


def _export(args: argparse.Namespace) -> int:
    warehouse = _warehouse(args.home)
    if not warehouse.has("turns"):
        raise UsageError(f"no benchmark in {warehouse.home}; run `chronoscope run` first")
    out = Path(args.out_dir).expanduser()
    if _not_a_directory(out):
        raise UsageError(f"{out} exists and is not a directory")
    from chronoscope_dagster.storage.release import copy_release, release_split_rows

    if not _materialize(warehouse, "key:benchmark_release", force=True):
        return 1
    copy_release(warehouse.partition_dir("benchmark_release"), out)
    for split, rows in release_split_rows(out).items():
        print(f"{split}: {rows:,} turns")
    print(f"dataset card: {out / 'README.md'}")
    return 0


def _models_convert(args: argparse.Namespace) -> int:
    from chronoscope_dagster.llm.convert import main as convert

    argv = [args.out_dir, "--dtype", args.dtype, *(["--gguf", args.gguf] if args.gguf else [])]
    return convert(argv)


def _probe(args: argparse.Namespace) -> int:
    from chronoscope_dagster.probe.assemble import build_corpus
    from chronoscope_dagster.probe.corpus import CorpusError, export_corpus

    if args.generated < 0:
        raise UsageError("--generated must be at least 0")
    try:
        corpus = build_corpus(args.generated, args.seed)
    except CorpusError as error:
        raise UsageError(str(error)) from error
    path = export_corpus(corpus, Path(args.export).expanduser())
    print(f"{len(corpus.items)} items ({corpus.id}, sha256 {corpus.sha256()[:12]}) -> {path}")
    return 0


def _ensure_dagster_home(warehouse: Warehouse) -> None:
    """Runs are recorded in $DAGSTER_HOME (default: <home>/dagster), which `dagster dev` can open."""
    from chronoscope_dagster.files import atomic_write

    if not os.environ.get("DAGSTER_HOME"):
        os.environ["DAGSTER_HOME"] = str(warehouse.home / "dagster")
    dagster_home = Path(os.environ["DAGSTER_HOME"])
    dagster_home.mkdir(parents=True, exist_ok=True)
    config = dagster_home / "dagster.yaml"
    if not config.exists():
        with atomic_write(config) as temporary:
            temporary.write_text("telemetry:\n  enabled: false\n")


def _sql(args: argparse.Namespace) -> int:
    import duckdb

    try:
        statements = duckdb.extract_statements(args.query)
    except duckdb.Error as error:
        raise UsageError(_visible(f"cannot parse query: {error}")) from error
    if len(statements) != 1:
        raise UsageError(f"expected one statement, got {len(statements)}")
    kind = statements[0].type.name
    if kind not in READ_ONLY_STATEMENTS:
        raise UsageError(f"only read-only statements are allowed, not {kind}")
    warehouse = _warehouse(args.home)
    if not warehouse.home.exists():
        raise UsageError(f"no warehouse at {warehouse.home}; run `chronoscope run` first")
    started = time.perf_counter()
    with warehouse.reader() as connection:
        try:
            cursor = connection.execute(args.query)
        except duckdb.Error as error:
            raise UsageError(_visible(str(error).splitlines()[0])) from error
        writer = csv.writer(sys.stdout, lineterminator="\n")
        writer.writerow([_visible(column[0]) for column in cursor.description])
        rows = 0
        while batch := cursor.fetchmany(10_000):
            writer.writerows(
                [None if value is None else _visible(str(value)) for value in row] for row in batch
            )
            rows += len(batch)
    print(f"{rows} rows in {time.perf_counter() - started:.2f} s", file=sys.stderr)
    return 0


def _visible(text: str) -> str:
    """``text`` with the characters of ``ESCAPED_CATEGORIES`` as escapes (``\\x1b``,
    ``\\u202e``, ``\\U000e0041``), so what a query returns cannot drive the terminal."""
    if text.isprintable():
        return text
    return "".join(_escaped(character) for character in text)


def _escaped(character: str) -> str:
    if character in "\t\n" or unicodedata.category(character) not in ESCAPED_CATEGORIES:
        return character
    code = ord(character)
    if code <= 0xFF:
        return f"\\x{code:02x}"
    return f"\\u{code:04x}" if code <= 0xFFFF else f"\\U{code:08x}"


if __name__ == "__main__":
    sys.exit(main())
