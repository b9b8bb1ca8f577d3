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
