import pytest

from chronoscope_dagster.cli import main


def test_sql_prints_csv(sample_home, capsys):
    home, _ = sample_home
    assert main(["sql", "--home", str(home), "SELECT pid, count(*) AS n FROM claims "
                 "WHERE snapshot_year = 2025 AND pid IN ('P6', 'P35') GROUP BY pid ORDER BY pid"]) == 0  # fmt: skip
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == "pid,n"
    assert [line.split(",")[0] for line in lines[1:]] == ["P35", "P6"]
    assert all(int(line.split(",")[1]) > 40 for line in lines[1:])


@pytest.mark.parametrize(
    ("query", "message"),
    [
        ("DROP VIEW claims", "only read-only statements"),
        ("COPY claims TO 'x.csv'", "only read-only statements"),
        ("SELECT 1; SELECT 2", "expected one statement"),
        ("SELECT * FROM no_such_view", "no_such_view"),
    ],
)
def test_sql_refuses_writes_and_reports_errors(sample_home, capsys, query, message):
    home, _ = sample_home
    assert main(["sql", "--home", str(home), query]) == 2
    assert message in capsys.readouterr().err


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["run", "--dump", "2022"], "YEAR=PATH_OR_URL"),
        (["run", "--dump", "1999=/tmp/x.json.gz"], "unknown snapshot year"),
        (["run", "--dump", "2022=/nonexistent/dump.json.gz"], "no such file"),
        (["run", "--select", "key:no_such_asset"], "matches no asset"),
        (["run", "--chain-workers", "0"], "--chain-workers must be at least 1"),
        (["run", "--years", "1999"], "unknown snapshot year '1999'"),
        (["run", "--years", "2024", "--dump", "2025=/tmp/x.json.gz"], "2025 is not one of --years"),
    ],
)
def test_run_usage_errors(tmp_path, capsys, argv, message):
    assert main([*argv, "--home", str(tmp_path)]) == 2
    assert message in capsys.readouterr().err


def test_sql_without_a_warehouse(tmp_path, capsys):
    assert main(["sql", "--home", str(tmp_path / "missing"), "SELECT 1"]) == 2
    assert "chronoscope run" in capsys.readouterr().err


def test_design_view_names_are_aliases_of_the_asset_views(tmp_path, capsys):
    import pyarrow as pa

    from chronoscope_dagster.warehouse import Warehouse

    store = Warehouse(tmp_path)
    store.write_table("probe_corpus", pa.table({"question_id": ["q1", "q2"]}))
    assert main(["sql", "--home", str(tmp_path), "SELECT count(*) AS n FROM probe_items"]) == 0
    assert capsys.readouterr().out == "n\n2\n"
    assert main(["sql", "--home", str(tmp_path), "SELECT * FROM paraphrases"]) == 2
    assert "paraphrases" in capsys.readouterr().err, "no alias while its asset has no data"


def _sql_fails(home, query, capsys) -> str:
    assert main(["sql", "--home", str(home), query]) == 2
    return capsys.readouterr().err


def test_sql_explain_analyze_copy_cannot_write_outside_the_home(sample_home, tmp_path, capsys):
    home, _ = sample_home
    outside = tmp_path / "outside.csv"
    err = _sql_fails(home, f"EXPLAIN ANALYZE COPY (SELECT 42 AS a) TO '{outside}'", capsys)
    assert "disabled" in err
    assert not outside.exists()


def test_sql_explain_analyze_copy_cannot_replace_a_warehouse_partition(sample_home, capsys):
    home, _ = sample_home
    partition = home / "claims" / "snapshot_year=2025" / "data.parquet"
    before = partition.read_bytes()
    query = f"EXPLAIN ANALYZE COPY (SELECT 42 AS a) TO '{partition}' (FORMAT parquet)"
    assert "disabled" in _sql_fails(home, query, capsys)
    assert partition.read_bytes() == before


@pytest.mark.parametrize(
    "query",
    [
        "SELECT * FROM read_csv('/etc/passwd')",
        "SELECT * FROM read_text('/etc/passwd')",
        "SELECT * FROM glob('/etc/*')",
        "SELECT * FROM read_parquet('{home}/claims/*/data.parquet')",
        "SELECT * FROM 'http://127.0.0.1:9/x.csv'",
    ],
    ids=["read_csv_etc_passwd", "read_text", "glob", "read_parquet_by_path", "url"],
)
def test_sql_cannot_read_files_by_path(sample_home, capsys, query):
    home, _ = sample_home
    assert "disabled" in _sql_fails(home, query.format(home=home), capsys)


@pytest.mark.parametrize(
    "query",
    [
        "EXPLAIN ANALYZE INSTALL httpfs",
        "EXPLAIN ANALYZE LOAD httpfs",
        "PRAGMA enable_external_access=true",
        "EXPLAIN ANALYZE SET enable_external_access = true",
    ],
    ids=["install_extension", "load_extension", "pragma_reenable_access", "set_reenable_access"],
)
def test_sql_cannot_install_extensions_or_reenable_access(sample_home, capsys, query):
    home, _ = sample_home
    err = _sql_fails(home, query, capsys)
    assert "disabled" in err or "locked" in err or "only read-only" in err


def test_sql_home_with_glob_characters_is_refused(sample_home, tmp_path, capsys):
    """``h*`` would otherwise match, and read, a sibling home ``h1``."""
    import shutil

    shutil.copytree(sample_home[0] / "claims", tmp_path / "h1" / "claims")
    (tmp_path / "h*").mkdir()
    err = _sql_fails(tmp_path / "h*", "SELECT count(*) FROM claims", capsys)
    assert "glob character" in err


def test_run_options_reach_the_ops_of_the_selected_assets(tmp_path):
    """An option's op config applies to every run that materializes one of the op's assets,
    also where the op is named otherwise (the families' multi-asset, turns and chains)."""
    import dagster as dg

    from chronoscope_dagster.definitions import build_definitions
    from chronoscope_dagster.orchestration import run_config_of

    config = {
        "chain_families": {"workers": 2},
        "paraphrased_subset": {"retries": 1},
        "eval_sample": {"seed": 3},
    }

    graph = build_definitions(str(tmp_path)).resolve_asset_graph()

    def ops(*assets: str) -> dict:
        keys = {dg.AssetKey(asset) for asset in assets}
        return run_config_of(keys, config, graph).get("ops", {})

    assert ops("family_scope_switch") == {"chain_families": {"config": {"workers": 2}}}
    assert ops("chains") == {}
    assert ops("eval_sample", "benchmark_stats") == {"eval_sample": {"config": {"seed": 3}}}
    assert ops("claims") == {}
