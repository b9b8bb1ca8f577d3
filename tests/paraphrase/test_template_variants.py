"""Template variants (``paraphrase.template_variants``): recovering a question's phrasing and
values from the templates, rewriting it in another phrasing of its slot, the filter on the
result, determinism, and the questions that get no variant. No pipeline, no model."""

from __future__ import annotations

from dataclasses import replace

import pytest

from chronoscope_dagster.chains.templates import (
    GENERIC_SLOTS,
    PROPERTY_SLOTS,
    Templates,
    default_templates,
)
from chronoscope_dagster.paraphrase.filter import REASONS, ParaphraseTurn, turn_problems
from chronoscope_dagster.paraphrase.rewrite import kept_chains
from chronoscope_dagster.paraphrase.template_variants import (
    GENERIC,
    TEMPLATE_REASONS,
    fits,
    recover,
    template_paraphrase_turns,
    template_variant,
    uses_templates,
    variants,
)

SUBJECT = "United Kingdom"
"""A subject that takes "the" in running text (``Articles``)."""
SAMPLE = {"subject": SUBJECT, "value": "Labour Party", "year": 2010, "year2": 2015}
SAMPLE_DATE = "3 May 2012"
CLASS_VALUE = "public company"
"""A value of an ``indefinite_values`` property: it takes "a"."""
FILTER_REFUSES = {
    ("P488", "followup", 1),
    ("P488", "followup_then", 1),
    ("P488", "scope_switch", 1),
    ("P286", "followup", 1),
    ("P286", "followup_then", 1),
    ("P286", "scope_switch", 1),
    ("P31", "interval_yes_no", 1),
}
"""The phrasings every other phrasing of whose slot the filter rejects: "Who was the
chairperson?" drops the "it" of "Who chaired it?" (``subject_lost``). The templates file calls
them interchangeable; the filter is stricter, and those turns are counted as rejected."""


def _values(templates: Templates, pid: str, slot: str) -> dict[str, object]:
    values: dict[str, object] = {
        name: SAMPLE.get(name, SAMPLE_DATE) for name in PROPERTY_SLOTS[slot]
    }
    if "value" in values and pid in templates.articles.indefinite_values:
        values["value"] = CLASS_VALUE
    return values


def _turn(question: str, pid: str, values: dict[str, object], chain: str = "c") -> ParaphraseTurn:
    return ParaphraseTurn(
        chain, 0, question, ((SUBJECT,), (str(values.get("value", SAMPLE["value"])),)),
        is_explicit=bool({"year", "date"} & set(values)), pid=pid, subject=(SUBJECT,),
    )  # fmt: skip


def _property_phrasings():
    templates = default_templates()
    for pid, entry in templates.properties.items():
        for slot, phrasings in entry.slots.items():
            for index in range(len(phrasings)):
                yield pid, slot, index


def test_every_phrasing_of_every_property_round_trips():
    """Each phrasing, rendered with names that take articles, is read back as itself with the
    rendered names, and every other phrasing of its slot rendered from what was read is the
    phrasing rendered from the original values."""
    templates = default_templates()
    for pid, slot, index in _property_phrasings():
        values = _values(templates, pid, slot)
        question = templates.render(pid, slot, index, **values)
        turn = _turn(question, pid, values)
        [reading] = [r for r in recover(templates, pid, question) if fits(r, turn)]
        assert (reading.owner, reading.slot, reading.index) == (pid, slot, index), question
        others = [
            templates.render(pid, slot, other, **values)
            for other in range(len(templates.phrasings(pid, slot)))
            if other != index
        ]
        assert variants(templates, reading) == others


def test_every_phrasing_gets_a_variant_the_filter_passes_but_the_known_few():
    templates = default_templates()
    refused = set()
    for pid, slot, index in _property_phrasings():
        values = _values(templates, pid, slot)
        turn = _turn(templates.render(pid, slot, index, **values), pid, values)
        result = template_variant(templates, turn, seed=0)
        if result.accepted:
            assert result.paraphrase != turn.question
            assert turn_problems(turn, result.paraphrase) == []
        else:
            assert result.reasons and set(result.reasons) <= set(REASONS)
            refused.add((pid, slot, index))
    assert refused == FILTER_REFUSES


@pytest.mark.parametrize("slot", sorted(GENERIC_SLOTS))
def test_generic_phrasings_round_trip(slot):
    templates = default_templates()
    values = {name: SAMPLE[name] for name in GENERIC_SLOTS[slot]}
    for index in range(len(templates.generic_phrasings(slot))):
        question = templates.render_generic(slot, index, **values)
        turn = _turn(question, "P6", values)
        [reading] = recover(templates, "P6", question)
        assert (reading.owner, reading.slot, reading.index) == (GENERIC, slot, index)
        result = template_variant(templates, turn, seed=0)
        assert result.accepted and turn_problems(turn, result.paraphrase) == []
        assert result.paraphrase in {
            templates.render_generic(slot, other, **values)
            for other in range(len(templates.generic_phrasings(slot)))
            if other != index
        }


def test_the_names_decide_where_two_placeholders_split():
    """ "Was {subject} {value} throughout ...?" reads "Andrzej Duda President of Poland" in
    several ways; only the one whose subject is the turn's stands."""
    templates = default_templates()
    values = {"subject": "Andrzej Duda", "value": "President of Poland", "year": 2016,
              "year2": 2022}  # fmt: skip
    question = templates.render("P39", "interval_yes_no", 0, **values)
    assert question == "Was Andrzej Duda President of Poland throughout the years 2016 to 2022?"
    readings = recover(templates, "P39", question)
    assert len(readings) > 1
    turn = ParaphraseTurn(
        "c", 0, question, (("Andrzej Duda",), ("President of Poland",)), True, (), "P39",
        ("Andrzej Duda",),
    )  # fmt: skip
    [reading] = [r for r in readings if fits(r, turn)]
    assert reading.value("subject") == "Andrzej Duda"
    assert variants(templates, reading) == [
        templates.render("P39", "interval_yes_no", i, **values) for i in (1, 2)
    ]


def test_an_article_capitalized_at_the_start_is_lowered_in_the_middle():
    """No phrasing of the file starts with a name; one that does capitalizes the article
    ``Articles`` adds ("The United Kingdom ..."), which another phrasing puts back in lower
    case, while a label's own "The" stays."""
    templates = default_templates()
    entry = templates.properties["P6"]
    leading = ("{subject} had whom as head of government in {year}?",
               *entry.slots["explicit_year"][:2])  # fmt: skip
    changed = replace(entry, slots={**entry.slots, "explicit_year": leading})
    custom = replace(templates, properties={**templates.properties, "P6": changed})
    for label, mid_sentence in ((SUBJECT, "the United Kingdom"), ("The Hague", "The Hague")):
        question = custom.render("P6", "explicit_year", 0, subject=label, year=2010)
        assert question.startswith(mid_sentence[0].upper() + mid_sentence[1:] + " had")
        [reading] = recover(custom, "P6", question)
        assert (
            variants(custom, reading)[0]
            == f"In 2010, who was the head of government of {mid_sentence}?"
        )


def test_same_seed_same_variants_and_another_seed_chooses_others():
    templates = default_templates()
    turns = []
    for number, (pid, slot, index) in enumerate(_property_phrasings()):
        values = _values(templates, pid, slot)
        turn = _turn(templates.render(pid, slot, index, **values), pid, values, chain=f"c{number}")
        turns.append(turn)
    first, counts = template_paraphrase_turns(turns, seed=3)
    again, counts_again = template_paraphrase_turns(list(reversed(turns)), seed=3)
    other, _ = template_paraphrase_turns(turns, seed=4)
    assert first == again and counts == counts_again
    assert [r.paraphrase for r in first] != [r.paraphrase for r in other]
    assert counts.accepted == len(turns) - len(FILTER_REFUSES)


def test_a_chain_does_not_get_the_same_wording_twice():
    """Two follow-ups of one chain asked in different phrasings of a slot with three: the
    second gets a variant other than the first's (the seed would otherwise be free to pick
    the same one)."""
    templates = default_templates()
    questions = [templates.render("P6", "followup", i) for i in (0, 1)]
    turns = [
        ParaphraseTurn("c", i, q, ((SUBJECT,),), False, (), "P6", (SUBJECT,))
        for i, q in enumerate(questions)
    ]
    for seed in range(20):
        results, _ = template_paraphrase_turns(turns, seed)
        assert all(r.accepted for r in results)
        assert results[0].paraphrase != results[1].paraphrase


def test_a_question_no_phrasing_reads_is_counted_not_lost():
    templates = default_templates()
    values = _values(templates, "P6", "explicit_year")
    readable = templates.render("P6", "explicit_year", 0, **values)
    turns = [
        _turn(readable, "P6", values, chain="a"),
        ParaphraseTurn("b", 0, readable, ((SUBJECT,),), True, (), "P6", (SUBJECT,)),
        ParaphraseTurn("b", 1, "Who is the tallest person alive?", (), False, (), "P6", ()),
        ParaphraseTurn("c", 0, "What about in 2011?", (), True, (), "P999", ()),
    ]
    results, counts = template_paraphrase_turns(turns, seed=0)
    assert [(r.chain_id, r.turn_index) for r in results] == [("a", 0), ("b", 0), ("b", 1), ("c", 0)]
    lost = results[2]
    assert lost.status == "rejected" and lost.reasons == ("no_matching_phrasing",)
    assert lost.attempts == 0 and lost.paraphrase is None
    assert results[3].accepted, "a property without templates still has the generic slots"
    assert counts.turns == 4 and counts.accepted == 3 and counts.rejected == 1
    assert counts.rejected_by_reason == {"no_matching_phrasing": 1}
    assert counts.as_metadata()["rejected_no_matching_phrasing"] == 1
    assert kept_chains(results) == ["a", "c"]


def test_the_template_reasons_are_not_the_filters():
    assert not set(TEMPLATE_REASONS) & set(REASONS)


@pytest.mark.parametrize(
    ("paraphraser", "templates"),
    [("", True), ("templates", True), ("local", False), ("embedded", False)],
)
def test_the_default_paraphraser_is_the_templates(paraphraser, templates):
    assert uses_templates(paraphraser) is templates
