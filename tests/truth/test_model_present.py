"""The model's present: which anchor of which snapshot a knowledge cutoff stands for."""

from __future__ import annotations

from datetime import date

import pytest

from chronoscope_dagster.assets.sources import entry_identity
from chronoscope_dagster.llm.registry import RegistryError, parse_entry
from chronoscope_dagster.truth.anchors import default_calendar, model_present

CALENDARS = {year: default_calendar(year) for year in (2022, 2023, 2024, 2025)}


@pytest.mark.parametrize(
    ("cutoff", "snapshot", "anchor"),
    [
        (date(2023, 12, 31), 2023, "2023-10-01"),
        (date(2023, 5, 15), 2023, "2023-04-01"),
        (date(2023, 4, 1), 2023, "2023-04-01"),
        (date(2024, 1, 1), 2024, "2024-01-01"),
        (date(2022, 1, 1), 2022, "2022-01-01"),
    ],
)
def test_a_cutoff_within_a_snapshot_year_takes_its_latest_day_anchor_on_or_before_it(
    cutoff, snapshot, anchor
):
    present = model_present(cutoff, CALENDARS)
    assert (present.snapshot_year, present.anchor.key, present.anchor.scope) == (
        snapshot,
        anchor,
        "day",
    )
    assert not present.is_dump_present
    assert present.describe() == {
        "knowledge_cutoff": cutoff.isoformat(),
        "snapshot_year": snapshot,
        "anchor": anchor,
        "is_dump_present": False,
    }


@pytest.mark.parametrize("cutoff", [date(2025, 10, 1), date(2025, 12, 31), date(2031, 6, 30)])
def test_a_cutoff_at_or_after_the_dumps_present_is_the_dumps_present(cutoff):
    present = model_present(cutoff, CALENDARS)
    assert (present.snapshot_year, present.anchor.key) == (2025, "2025-10-01")
    assert present.is_dump_present


def test_a_cutoff_before_the_earliest_snapshot_is_an_error_naming_the_snapshots():
    with pytest.raises(ValueError, match="the snapshots are 2022, 2023, 2024, 2025"):
        model_present(date(2021, 12, 31), CALENDARS)


def test_the_registry_refuses_a_cutoff_before_the_snapshots_and_a_number():
    entry = {"name": "old", "backend": "present_day", "knowledge_cutoff": date(2019, 6, 1)}
    with pytest.raises(RegistryError) as raised:
        parse_entry(entry, "models.yaml: model #1 ('old')")
    message = str(raised.value)
    assert message.startswith("models.yaml: model #1 ('old'): field `knowledge_cutoff`: ")
    assert "2019-06-01" in message and "2022, 2023, 2024, 2025" in message
    with pytest.raises(RegistryError, match="must be a date"):
        parse_entry({**entry, "knowledge_cutoff": 2023})


def test_a_cutoff_is_part_of_an_entrys_identity_and_absent_without_one():
    plain = parse_entry({"name": "p", "backend": "present_day"})
    cut = parse_entry({"name": "p", "backend": "present_day", "knowledge_cutoff": "2023-12-31"})
    later = parse_entry({"name": "p", "backend": "present_day", "knowledge_cutoff": "2024-12-31"})
    assert cut.knowledge_cutoff == date(2023, 12, 31)
    assert "knowledge_cutoff" not in entry_identity(plain), "entries without one keep versions"
    assert entry_identity(cut)["knowledge_cutoff"] == "2023-12-31"
    assert len({str(entry_identity(s)) for s in (plain, cut, later)}) == 3


def test_models_add_takes_a_knowledge_cutoff(tmp_path, capsys):
    from chronoscope_dagster.cli import main
    from chronoscope_dagster.llm.registry import load_registry

    registry = tmp_path / "models.yaml"
    add = ["models", "add", "--models", str(registry), "--backend", "present_day"]
    assert main([*add, "p23", "--knowledge-cutoff", "2023-12-31"]) == 0
    assert load_registry(registry)[-1].knowledge_cutoff == date(2023, 12, 31)
    assert main([*add, "p19", "--knowledge-cutoff", "2019-12-31"]) == 2
    assert "the snapshots are 2022, 2023, 2024, 2025" in capsys.readouterr().err
    assert main(["models", "list", "--models", str(registry)]) == 0
    assert capsys.readouterr().out.splitlines()[-1].endswith(",2023-12-31")
