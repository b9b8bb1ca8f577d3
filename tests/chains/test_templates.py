"""Question templates: the shipped English file, rendering, and the validator on broken files."""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path

import pytest
import yaml

from chronoscope_dagster.chains.templates import (
    GENERIC_SLOTS,
    MIN_PHRASINGS,
    PROPERTY_SLOTS,
    TemplateError,
    check_phrasing,
    load_templates,
    template_path,
)
from chronoscope_dagster.wikidata.properties import default_catalog

CHAIN_PIDS = default_catalog().chain_pids
SAMPLE = {
    "subject": "Ruritania",
    "value": "Rudolf Rassendyll",
    "year": 1894,
    "year2": 1898,
    "date": "1 April 1894",
}
THEN = re.compile(r"\b(then|at the time)\b")


@pytest.fixture(scope="module")
def templates():
    return load_templates()


def test_shipped_file_loads_and_covers_every_chain_property(templates):
    assert len(CHAIN_PIDS) == 19
    assert templates.language == "en"
    assert set(CHAIN_PIDS) <= set(templates.properties)
    assert set(templates.generic) == set(GENERIC_SLOTS)


@pytest.mark.parametrize("pid", CHAIN_PIDS)
def test_every_slot_has_enough_phrasings(templates, pid):
    for slot in PROPERTY_SLOTS:
        assert len(templates.phrasings(pid, slot)) >= MIN_PHRASINGS, slot


@pytest.mark.parametrize("pid", CHAIN_PIDS)
def test_every_phrasing_renders_to_a_question(templates, pid):
    for slot, names in PROPERTY_SLOTS.items():
        for index, _ in enumerate(templates.phrasings(pid, slot)):
            values = {name: SAMPLE[name] for name in names}
            question = templates.render(pid, slot, index, **values)
            assert question.endswith("?") and question[0].isupper()
            assert "{" not in question and "}" not in question
            for name, value in values.items():
                assert str(value) in question, (name, question)


def test_generic_phrasings_render(templates):
    for slot, names in GENERIC_SLOTS.items():
        years = dict(zip(sorted(names), ("1901", "1905"), strict=False))
        for index, _ in enumerate(templates.generic_phrasings(slot)):
            assert templates.render_generic(slot, index, **years).endswith(f"{years[max(years)]}?")


@pytest.mark.parametrize("pid", CHAIN_PIDS)
def test_time_markers_follow_the_slot_semantics(templates, pid):
    for text in templates.phrasings(pid, "followup"):
        assert not THEN.search(text), text
    for slot in ("followup_then", "cross_entity", "reintroduce", "about_previous"):
        for text in templates.phrasings(pid, slot):
            assert THEN.search(text), text


def test_keywords_are_groups_of_alternatives(templates):
    keywords = templates.properties["P6"].keywords
    assert ("government",) in keywords and ("prime minister", "prime ministers") in keywords
    assert all(group and all(isinstance(k, str) and k for k in group) for group in keywords)


def test_render_requires_exactly_the_slot_placeholders(templates):
    assert templates.render("P6", "followup", 0) == "Who was the head of government?"
    with pytest.raises(TemplateError, match="render needs"):
        templates.render("P6", "followup", 0, year=2001)
    with pytest.raises(TemplateError, match="render needs"):
        templates.render("P6", "explicit_year", 0, subject="Ruritania")


@pytest.mark.parametrize(
    ("text", "ok"),
    [
        ("Who was the CEO of {subject} in {year}?", True),
        ("How many different CEOs did {subject} have between {year} and {year2}?", True),
        ("And for {subject}, Who held that office at the time?", False),
        ("{subject}: Who held that office at the time?", False),
        ("What about {subject}'s head of state in {year}?", True),
    ],
)
def test_capital_rule(text, ok):
    names = {"subject", "year", "year2"} & set(re.findall(r"\{(\w+)\}", text))
    capital_problems = [p for p in check_phrasing(text, frozenset(names)) if "capital" in p]
    assert (not capital_problems) is ok


def _shipped() -> dict:
    return yaml.safe_load(template_path("en").read_text(encoding="utf-8"))


def _drop_slot(raw: dict) -> None:
    del raw["properties"]["P6"]["followup"]


def _wrong_placeholder(raw: dict) -> None:
    raw["properties"]["P35"]["explicit_year"][0] = (
        "In {yr}, who was the head of state of {subject}?"
    )


def _no_question_mark(raw: dict) -> None:
    raw["properties"]["P39"]["timeless"][1] = "Which office or position does {subject} hold."


def _capital_mid_sentence(raw: dict) -> None:
    raw["properties"]["P6"]["cross_entity"][0] = (
        "And for {subject}, Who held that office at the time?"
    )


def _too_few(raw: dict) -> None:
    raw["properties"]["P54"]["count"] = raw["properties"]["P54"]["count"][:2]


def _missing_property(raw: dict) -> None:
    del raw["properties"]["P286"]


def _duplicate(raw: dict) -> None:
    raw["generic"]["scope_switch"][1] = "What about  in {year}?"


def _bad_kind(raw: dict) -> None:
    raw["properties"]["P17"]["subject_kind"] = "planet"


def _missing_generic(raw: dict) -> None:
    del raw["generic"]["narrative_last"]


def _broken_braces(raw: dict) -> None:
    raw["properties"]["P31"]["followup"][0] = "What type of {entity was it?"


def _no_keywords(raw: dict) -> None:
    del raw["properties"]["P6"]["keywords"]


def _blank_keyword(raw: dict) -> None:
    raw["properties"]["P54"]["keywords"] = ["team", ["club", " "]]


def _refers_back(raw: dict) -> None:
    raw["properties"]["P35"]["cross_entity"][0] = "And for {subject}, who held that office then?"


@pytest.mark.parametrize(
    ("mutate", "expected"),
    [
        (_drop_slot, "P6.followup: missing slot"),
        (_wrong_placeholder, "P35.explicit_year[0]: placeholders ['subject', 'yr']"),
        (_no_question_mark, 'P39.timeless[1]: does not end with "?"'),
        (_capital_mid_sentence, "P6.cross_entity[0]: capital letter mid-sentence: Who"),
        (_too_few, "P54.count: 2 phrasing(s), at least 3 needed"),
        (_missing_property, "P286: no entry for this chain property"),
        (_duplicate, "generic.scope_switch[1]: duplicate phrasing"),
        (_bad_kind, "P17.subject_kind: 'planet' is not one of"),
        (_missing_generic, "generic.narrative_last: missing slot"),
        (_broken_braces, "P31.followup[0]: malformed braces"),
        (_no_keywords, "P6.keywords: missing or not a non-empty list"),
        (_blank_keyword, "P54.keywords: missing or not a non-empty list"),
        (_refers_back, "P35.cross_entity: 'And for {subject}, who held that office then?' names"),
    ],
)
def test_broken_file_is_rejected(tmp_path: Path, mutate: Callable[[dict], None], expected: str):
    raw = _shipped()
    mutate(raw)
    path = tmp_path / "en.yaml"
    path.write_text(yaml.safe_dump(raw, allow_unicode=True), encoding="utf-8")
    with pytest.raises(TemplateError) as caught:
        load_templates(path=path)
    assert any(problem.startswith(expected) for problem in caught.value.problems), caught.value
    assert expected in str(caught.value)


def test_every_problem_is_listed(tmp_path: Path):
    raw = _shipped()
    for mutate in (_drop_slot, _no_question_mark, _missing_property, _too_few):
        mutate(raw)
    path = tmp_path / "en.yaml"
    path.write_text(yaml.safe_dump(raw), encoding="utf-8")
    with pytest.raises(TemplateError) as caught:
        load_templates(path=path)
    assert len(caught.value.problems) == 4


@pytest.mark.parametrize(
    ("label", "expected"),
    [
        ("Netherlands national association football team",
         "the Netherlands national association football team"),
        ("United Kingdom", "the United Kingdom"),
        ("Labour Party", "the Labour Party"),
        ("University of Oxford", "the University of Oxford"),
        ("Future of Humanity Institute", "the Future of Humanity Institute"),
        ("Netherlands", "the Netherlands"),
        ("Tony Blair", "Tony Blair"),
        ("Amazon", "Amazon"),
        ("Apple Inc.", "Apple Inc."),
        ("FC Bayern Munich", "FC Bayern Munich"),
        ("Harvard University", "Harvard University"),
        ("Bank of England", "the Bank of England"),
        ("Bank of America", "Bank of America"),
        ("The Hague", "The Hague"),
        ("Georgia (state of the United States of America)",
         "Georgia (state of the United States of America)"),
    ],
)  # fmt: skip
def test_a_name_takes_the_by_the_rule_and_its_exceptions(templates, label, expected):
    assert templates.articles.in_text(label) == expected


def test_the_exceptions_are_data():
    raw = _shipped()["articles"]
    assert "Bank of America" in raw["bare"] and "Netherlands" in raw["the"]


@pytest.mark.parametrize(
    ("label", "expected"),
    [
        ("public company", "a public company"),
        ("oil company", "an oil company"),
        ("university", "a university"),
        ("member of the European Parliament", "a member of the European Parliament"),
        ("Member of the Hellenic Parliament", "a Member of the Hellenic Parliament"),
        ("United States senator", "a United States senator"),
        ("Prime Minister of Japan", "Prime Minister of Japan"),
        ("Taoiseach", "Taoiseach"),
    ],
)
def test_a_predicative_value_takes_a_or_an_when_it_is_a_common_noun(templates, label, expected):
    assert templates.articles.in_text(label, indefinite=True) == expected


def _all(templates, pid: str, slot: str, **values: object) -> list[str]:
    return [
        templates.render(pid, slot, index, **values)
        for index in range(len(templates.phrasings(pid, slot)))
    ]


def test_the_article_goes_wherever_a_name_is_put_in_a_question(templates):
    span = {"year": 2010, "year2": 2014}
    for text in _all(templates, "P54", "interval_yes_no", subject="Arjen Robben",
                     value="Netherlands national association football team", **span):  # fmt: skip
        assert "the Netherlands national association football team" in text
        assert "the Arjen Robben" not in text
    question = templates.render("P35", "explicit_year", 0, subject="United Kingdom", year=2012)
    assert "of the United Kingdom" in question
    for text in _all(templates, "P35", "timeless", subject="Netherlands"):
        assert "the Netherlands" in text or text.startswith("The Netherlands")
    for text in _all(templates, "P169", "interval_yes_no", subject="Amazon", value="Jeff Bezos",
                     **span):  # fmt: skip
        assert "the Amazon" not in text and "the Jeff Bezos" not in text
    for text in _all(templates, "P463", "interval_yes_no", subject="France",
                     value="European Union", **span):  # fmt: skip
        assert "the European Union" in text and "the France" not in text


def test_a_position_after_serve_as_takes_its_article(templates):
    span = {"year": 2004, "year2": 2009, "subject": "Sanna Marin"}
    member = _all(templates, "P39", "interval_yes_no", value="member of the Parliament of Finland",
                  **span)  # fmt: skip
    assert any("serve as a member of the Parliament of Finland" in text for text in member)
    assert all("a member of the Parliament of Finland" in text for text in member)
    assert not any(re.search(r"\b(as|Marin) member of", text) for text in member)
    office = _all(templates, "P39", "interval_yes_no", value="Prime Minister of Finland", **span)
    assert all(" Prime Minister of Finland" in text and "a Prime Minister" not in text
               for text in office)  # fmt: skip


def test_instance_of_asks_what_the_subject_was(templates):
    span = {"subject": "Amazon", "year": 1997, "year2": 2003}
    company = _all(templates, "P31", "interval_yes_no", value="public company", **span)
    assert "Was Amazon a public company throughout the years 1997 to 2003?" in company
    assert all("a public company" in text for text in company)
    assert all("an oil company" in text
               for text in _all(templates, "P31", "interval_yes_no", value="oil company", **span))  # fmt: skip
    for slot in PROPERTY_SLOTS:
        for text in templates.phrasings("P31", slot):
            assert "among the types" not in text and "kind of thing" not in text, text


@pytest.mark.parametrize("pid", CHAIN_PIDS)
def test_span_yes_no_questions_ask_about_the_whole_span(templates, pid):
    """The interval family asks whether a value held throughout a span, not at some point."""
    for text in templates.phrasings(pid, "interval_yes_no"):
        assert not re.search(r"\bat any (point|time)\b|\bever\b", text), text
        assert re.search(r"\b(throughout|the whole period|the entire time)\b", text), text
    for text in templates.generic_phrasings("span_switch"):
        assert not re.search(r"\bat any (point|time)\b", text), text


def _unknown_article_list(raw: dict) -> None:
    raw["articles"]["heads_after"] = ["team"]


def _both_article_lists(raw: dict) -> None:
    raw["articles"]["bare"].append("Netherlands")


def _indefinite_unknown_pid(raw: dict) -> None:
    raw["articles"]["indefinite_values"].append("P9999")


@pytest.mark.parametrize(
    ("mutate", "expected"),
    [
        (_unknown_article_list, "articles.heads_after: unknown list"),
        (_both_article_lists, "articles: 'Netherlands' is in both `the` and `bare`"),
        (_indefinite_unknown_pid, "articles.indefinite_values: P9999 has no templates"),
    ],
)
def test_broken_articles_are_rejected(tmp_path: Path, mutate, expected):
    raw = _shipped()
    mutate(raw)
    path = tmp_path / "en.yaml"
    path.write_text(yaml.safe_dump(raw, allow_unicode=True), encoding="utf-8")
    with pytest.raises(TemplateError) as caught:
        load_templates(path=path)
    assert expected in caught.value.problems, caught.value
