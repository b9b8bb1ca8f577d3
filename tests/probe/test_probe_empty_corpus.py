"""A probe corpus with no items is refused where it is read, fails the gate, and never reaches
a model run (it used to pass the check and end in a KeyError in probe_runs)."""

from __future__ import annotations

from pathlib import Path

import pytest

from chronoscope_dagster.checks.probe import probe_corpus_valid
from chronoscope_dagster.probe.agents import OracleReader
from chronoscope_dagster.probe.corpus import Corpus, CorpusError, read_corpus
from chronoscope_dagster.probe.runs import run_probe
from chronoscope_dagster.storage.probe import CORPUS_FILE, load_corpus
from chronoscope_dagster.warehouse import Warehouse


def _home_with_empty_corpus(tmp_path: Path) -> Warehouse:
    warehouse = Warehouse(tmp_path / "home")
    directory = warehouse.partition_dir("probe_corpus")
    directory.mkdir(parents=True)
    (directory / CORPUS_FILE).write_text("[]\n")
    return warehouse


@pytest.mark.parametrize("text", ["[]", "[]\n\n"])
def test_empty_probe_file_is_refused_when_the_corpus_is_built(tmp_path, text):
    """What the probe_corpus asset reads a configured probe file with."""
    path = tmp_path / "longmemeval_empty.json"
    path.write_text(text)
    with pytest.raises(CorpusError, match=r"longmemeval_empty\.json: holds no items"):
        read_corpus(path)


def test_probe_corpus_valid_fails_on_an_empty_corpus(tmp_path):
    result = probe_corpus_valid(warehouse=_home_with_empty_corpus(tmp_path))
    assert not result.passed
    assert result.metadata["problems"].value == 1
    assert "holds no items" in result.metadata["first_problems"].value[0]


def test_an_empty_corpus_breaks_the_empty_rule():
    problems = Corpus("nothing", ()).validate()
    assert [(p.item_id, p.rule) for p in problems] == [("nothing", "empty")]


def test_probe_runs_on_an_empty_corpus_fails_with_a_clear_error_not_a_keyerror(tmp_path):
    """probe_runs loads the home's corpus first, then runs it: both refuse an empty one."""
    with pytest.raises(CorpusError, match=r"corpus\.json: holds no items"):
        load_corpus(_home_with_empty_corpus(tmp_path))
    with pytest.raises(CorpusError, match="holds no items: nothing to probe"):
        run_probe(Corpus("nothing", ()), OracleReader((), {}))
