import re

from chronoscope_dagster.chains.families import scope_switch
from chronoscope_dagster.chains.templates import load_templates

YEAR = re.compile(r"\b(1[89]|20)\d\d\b")


def test_scope_switch_changes_the_year_of_the_same_subject(sample_facts):
    chains = list(scope_switch.generate(sample_facts, load_templates(), seed=7))
    assert len(chains) > 50
    for chain in chains:
        first, second = chain.turns
        assert first.subject_qid == second.subject_qid and first.pid == second.pid
        assert first.scope_year != second.scope_year
        assert not set(first.gold_qids) & set(second.gold_qids)  # repeating turn 1 is wrong
        for turn in chain.turns:
            gold = sample_facts.year_golds(turn.subject_qid, turn.pid)[turn.scope_year]
            assert turn.gold_qids == gold.qids and turn.canonical_qid == gold.canonical
        assert str(first.scope_year) in first.question and first.subject_label in first.question
        assert str(second.scope_year) in second.question
        assert first.subject_label not in second.question
        assert YEAR.findall(second.question) == [str(second.scope_year)[:2]]
