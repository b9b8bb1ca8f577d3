"""Command-line breaks found by an adversarial run: bad ``--home`` and ``--workers`` values,
and control characters of the data reaching the terminal through ``chronoscope sql``."""

from __future__ import annotations

import os
from pathlib import Path

import pyarrow as pa
import pytest

from chronoscope_dagster.cli import main
from chronoscope_dagster.warehouse import Warehouse


def _usage_error(argv: list[str], capsys: pytest.CaptureFixture[str]) -> str:
    with pytest.raises(SystemExit) as exited:
        main(argv)
    assert exited.value.code == 2
    err = capsys.readouterr().err
    assert "Traceback" not in err
    return err.strip().splitlines()[-1]


@pytest.mark.parametrize(
    "argv",
    [
        ["run", "--select", "key:no_such_asset"],
        ["sql", "SELECT 1"],
        ["report"],
    ],
    ids=["run", "sql", "report"],
)
def test_empty_home_is_a_usage_error_and_writes_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys, argv: list[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("CHRONOSCOPE_HOME", raising=False)
    line = _usage_error([argv[0], "--home", "", *argv[1:]], capsys)
    assert "--home" in line and "empty" in line
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize(
    "argv",
    [["run", "--select", "key:no_such_asset"], ["sql", "SELECT 1"], ["report"]],
    ids=["run", "sql", "report"],
)
def test_home_that_is_a_file_is_a_usage_error(tmp_path: Path, capsys, argv: list[str]) -> None:
    home = tmp_path / "home.txt"
    home.write_text("not a directory\n")
    line = _usage_error([argv[0], "--home", str(home), *argv[1:]], capsys)
    assert "--home" in line and "not a directory" in line and str(home) in line
    assert home.read_text() == "not a directory\n"


def test_empty_chronoscope_home_variable_is_a_usage_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys
) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("CHRONOSCOPE_HOME", "")
    assert main(["sql", "SELECT 1"]) == 2
    err = capsys.readouterr().err
    assert "CHRONOSCOPE_HOME" in err and "empty" in err
    assert list(tmp_path.iterdir()) == []


def test_chronoscope_home_variable_naming_a_file_is_a_usage_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys
) -> None:
    home = tmp_path / "home.txt"
    home.write_text("x")
    monkeypatch.setenv("CHRONOSCOPE_HOME", str(home))
    assert main(["sql", "SELECT 1"]) == 2
    err = capsys.readouterr().err
    assert "not a directory" in err and "Traceback" not in err


@pytest.mark.parametrize("workers", ["-5", "-1", str(4 * (os.cpu_count() or 1) + 1), "100000"])
def test_workers_out_of_range_is_a_usage_error(tmp_path: Path, capsys, workers: str) -> None:
    line = _usage_error(
        ["run", "--home", str(tmp_path), "--workers", workers, "--select", "key:no_such_asset"],
        capsys,
    )
    assert "--workers" in line and workers in line
    assert f"{4 * (os.cpu_count() or 1)}" in line
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("workers", ["0", "1", str(4 * (os.cpu_count() or 1))])
def test_workers_in_range_are_accepted(tmp_path: Path, capsys, workers: str) -> None:
    missing = tmp_path / "missing.json.gz"
    argv = ["run", "--home", str(tmp_path), "--workers", workers, "--dump", f"2022={missing}"]
    assert main(argv) == 2
    assert "no such file" in capsys.readouterr().err


def test_sql_escapes_control_and_bidi_characters_of_the_data(tmp_path: Path, capsys) -> None:
    """Tab and newline are printed as they are (harmless; CSV quotes a cell holding a newline);
    every other control (Cc), format (Cf: bidi overrides, zero-width characters) and
    line/paragraph separator (Zl, Zp) character is shown as a Python-style escape."""
    values = [
        "nul\x00here",
        "esc\x1b[2J\x1b]0;title\x07",
        "rtl \u202egnp.exe",
        "cr\rover",
        "del\x7f c1\x85",
        "zero\u200bwidth \ufeffbom \u2066isolate\u2069",
        "line\u2028para\u2029",
        "tag\U000e0041",
        "tab\tand\nnewline",
        "café, naïve, Zürich\u00a0nbsp, 東京, emoji 🙂",
        "back\\slash",
    ]
    Warehouse(tmp_path).write_table(
        "probe_corpus", pa.table({"question_id": values, "n": list(range(len(values)))})
    )
    assert main(["sql", "--home", str(tmp_path), 'SELECT question_id AS "q\x1bid", n FROM probe_items ORDER BY n']) == 0  # fmt: skip
    out = capsys.readouterr().out
    assert out == (
        "q\\x1bid,n\n"
        "nul\\x00here,0\n"
        "esc\\x1b[2J\\x1b]0;title\\x07,1\n"
        "rtl \\u202egnp.exe,2\n"
        "cr\\x0dover,3\n"
        "del\\x7f c1\\x85,4\n"
        "zero\\u200bwidth \\ufeffbom \\u2066isolate\\u2069,5\n"
        "line\\u2028para\\u2029,6\n"
        "tag\\U000e0041,7\n"
        '"tab\tand\nnewline",8\n'
        '"café, naïve, Zürich\u00a0nbsp, 東京, emoji 🙂",9\n'
        "back\\slash,10\n"
    )
    for raw in "\x00\x1b\x07\r\x7f\x85\u202e\u200b\ufeff\u2066\u2028\U000e0041":
        assert raw not in out


def test_sql_error_messages_escape_control_characters(tmp_path: Path, capsys) -> None:
    Warehouse(tmp_path).write_table("probe_corpus", pa.table({"question_id": ["q"]}))
    assert main(["sql", "--home", str(tmp_path), 'SELECT * FROM "no\x1b[2Jsuch\u202e"']) == 2
    err = capsys.readouterr().err
    assert "\x1b" not in err and "\u202e" not in err
    assert "no\\x1b[2Jsuch\\u202e" in err
