"""A gold only from facts that decide it: coverage of single-holder properties, lifespans,
counts and "no" answers, in the generator (``SnapshotFacts``) and in the checks' SQL."""

import duckdb
import pyarrow as pa
import pytest

from chronoscope_dagster.chains import audit
from chronoscope_dagster.chains.audit import (
    gold_mismatch_queries,
    gold_mismatch_sql,
    timeless_outside_lifespan_sql,
    uncovered_sql,
)
from chronoscope_dagster.chains.families import family_module
from chronoscope_dagster.chains.templates import load_templates
from chronoscope_dagster.wikidata.properties import default_catalog
from tests.chain_helpers import facts_from_rows, intervals_table, lifespans_table

COUNTRY, PM = "Q38", "P6"
A, B, C, D, E = "Q101", "Q102", "Q103", "Q104", "Q105"
NAMES = {COUNTRY: "Italy", A: "Alpha", B: "Beta", C: "Gamma", D: "Delta", E: "Epsilon",
         "Q7": "Acme", "Q8": "business"}  # fmt: skip


def pm_facts(spans, years=range(2008, 2018), **kwargs):
    """Facts of Italy's head of government from (value, first day, last day) spans; the truth
    rows are what a year anchor holds (any value overlapping the year)."""
    rows = []
    for year in years:
        held = [
            v
            for v, first, last in spans
            if (first or "0000") <= f"{year}-12-31" and (last or "9999") >= f"{year}-01-01"
        ]
        if held:
            rows.append((str(year), COUNTRY, PM, sorted(held, key=lambda q: int(q[1:]))))
    intervals = intervals_table([(COUNTRY, PM, v, first, last) for v, first, last in spans])
    return facts_from_rows(rows, NAMES, intervals=intervals, **kwargs)


def test_a_missing_successor_does_not_make_the_remaining_holder_the_whole_gold():
    facts = pm_facts([(A, "2008-05-08", "2011-11-15"), (B, "2016-12-12", None)])
    assert facts.gold(COUNTRY, PM, "2010").qids == (A,)
    assert facts.gold(COUNTRY, PM, "2011") is None  # A ends in November; nobody after
    assert facts.gold(COUNTRY, PM, "2016") is None  # B only from 12 December
    assert facts.gold(COUNTRY, PM, "2017").qids == (B,)
    assert facts.drops["incomplete_scope"] == 2
    assert set(facts.year_golds(COUNTRY, PM)) == {2009, 2010, 2017}  # A began in May 2008


@pytest.mark.parametrize(
    ("successor_from", "decided"), [("2012-03-31", True), ("2012-04-20", False)]
)
def test_a_gap_of_20_days_is_tolerated_one_of_40_is_not(successor_from, decided):
    facts = pm_facts([(A, "2008-01-01", "2012-03-10"), (B, successor_from, None)])
    gold = facts.gold(COUNTRY, PM, "2012")
    assert (gold.qids == (A, B)) if decided else gold is None


def test_year_precision_end_covers_its_year():
    facts = pm_facts([(A, "2008-01-01", "2012-12-31"), (B, "2013-01-01", None)])
    assert facts.gold(COUNTRY, PM, "2012").qids == (A,)
    assert facts.gold(COUNTRY, PM, "2013").qids == (B,)


def test_coverage_is_clipped_to_a_recorded_lifespan():
    spans = [(A, "2012-06-01", None)]
    assert pm_facts(spans).gold(COUNTRY, PM, "2012") is None
    founded = pm_facts(spans, lifespans={COUNTRY: ("2012-06-01", None)})
    assert founded.gold(COUNTRY, PM, "2012").qids == (A,)


def test_a_multi_valued_property_needs_no_coverage():
    rows = [("2012", "Q7", "P108", [A])]
    intervals = intervals_table([("Q7", "P108", A, "2012-11-01", None)])
    assert facts_from_rows(rows, NAMES, intervals=intervals).gold("Q7", "P108", "2012").qids == (A,)


def timeless_facts(lifespans=None, dated=None):
    """Acme is a business (timeless), and from 2011 also a public company (dated) when asked."""
    rows = [(None, "Q7", "P31", ["Q8"])] if dated is None else [
        ("1990", "Q7", "P31", ["Q8"]), ("2012", "Q7", "P31", ["Q8", dated])]  # fmt: skip
    spans = [("Q7", "P31", "Q8", None, None)]
    if dated is not None:
        spans.append(("Q7", "P31", dated, "2011-05-19", None))
    names = {**NAMES, **({dated: "public company"} if dated else {})}
    return facts_from_rows(rows, names, intervals=intervals_table(spans), lifespans=lifespans)


def test_a_timeless_fact_is_not_projected_before_the_subject_was_founded():
    facts = timeless_facts(lifespans={"Q7": ("2002-12-28", None)}, dated="Q9")
    assert facts.gold("Q7", "P31", "1990") is None
    assert facts.gold("Q7", "P31", "2012").qids == ("Q8", "Q9")
    assert facts.drops["before_lifespan"] == 1


def test_without_a_recorded_start_the_first_dated_statement_bounds_timeless_facts():
    facts = timeless_facts(dated="Q9")
    assert facts.gold("Q7", "P31", "1990") is None
    assert facts.gold("Q7", "P31", "2012").qids == ("Q8", "Q9")


def test_a_timeless_fact_is_not_asked_after_the_subject_was_dissolved():
    dissolved = timeless_facts(lifespans={"Q7": (None, "1991-12-26")})
    assert dissolved.gold("Q7", "P31", None) is None  # the present lies after the dissolution
    assert dissolved.gold("Q7", "P31", "1995") is None
    assert dissolved.gold("Q7", "P31", "1985").qids == ("Q8",)
    assert dissolved.drops == {"after_lifespan": 2}
    assert timeless_facts().gold("Q7", "P31", None).qids == ("Q8",)


def test_counts_and_changes_only_of_single_holder_properties_over_covered_spans():
    templates = load_templates()
    rows = [(str(y), "Q7", "P54", [A] if y < 2013 else [B]) for y in range(2008, 2018)]
    team = facts_from_rows(rows, NAMES)
    assert list(family_module("distinct_count").generate(team, templates, 42)) == []
    assert list(family_module("interval_change").generate(team, templates, 42)) == []
    assert team.drops == {"open_ended_count": 1, "open_ended_change": 1}
    # 2014 has a gap of 82 days: undecided. Each side of the new year 2012 has a gap within
    # the tolerance, so both years are decided, but a window holding both has one of 50 days.
    holes = pm_facts(
        [(A, "2004-01-01", "2006-06-30"), (B, "2006-07-01", "2008-06-30"),
         (C, "2008-07-01", "2011-12-05"), (D, "2012-01-25", "2014-03-10"),
         (E, "2014-06-01", None)],
        years=range(2004, 2021),
    )  # fmt: skip
    assert set(holes.year_golds(COUNTRY, PM)) == set(range(2004, 2021)) - {2014}
    (chain,) = family_module("distinct_count").generate(holes, templates, 42)
    for turn in chain.turns:
        window = range(turn.scope_year, turn.scope_end_year + 1)
        assert 2014 not in window and not {2011, 2012} <= set(window)
    assert holes.drops["incomplete_count"] > 0


def test_a_statement_without_a_known_start_leaves_its_possible_years_undecided():
    """Acme employed Alpha from 2000 to 2005; Beta's statement ends in mid-2012 with no start,
    and Beta was founded in 2008: from 2008 to 2012 Beta may or may not have employed them
    (``truth`` lists it as uncertain there), so those years have no gold, refused as
    ``unknown_start``; a statement that ended at an unknown date is refused as ``unknown_end``."""
    spans = [("Q7", "P108", A, "2000-01-01", "2005-12-31"), ("Q7", "P108", B, None, "2012-06-30"),
             ("Q9", "P108", C, "2009-01-01", None)]  # fmt: skip
    rows = [(str(year), "Q7", "P108", [A]) for year in range(2000, 2006)]
    rows.append(("2009", "Q9", "P108", [C]))
    uncertain = {(str(year), "Q7", "P108"): [B] for year in range(2008, 2013)}
    uncertain |= {(str(year), "Q9", "P108"): [C] for year in range(2010, 2026)}
    intervals = intervals_table(spans, ended_unknown={("Q9", "P108", C)})
    facts = facts_from_rows(
        rows, {**NAMES, "Q9": "Initech"}, intervals=intervals, lifespans={B: ("2008-01-01", None)},
        uncertain=uncertain,
    )  # fmt: skip
    assert facts.gold("Q7", "P108", "2003").qids == (A,)
    assert facts.gold("Q7", "P108", "2010") is None
    assert facts.gold("Q7", "P108", "2010") is None  # counted once
    assert facts.gold("Q7", "P108", "2011") is None
    assert facts.drops == {"unknown_start": 2}
    assert facts.gold("Q9", "P108", "2009").qids == (C,)
    assert facts.gold("Q9", "P108", "2015") is None
    assert facts.drops == {"unknown_start": 2, "unknown_end": 1}
    assert facts.refused >= {("Q7", "P108", "2010", "unknown_start")}
    assert B in facts.unstarted_values[("Q7", "P108")]


def test_no_needs_positive_evidence():
    rows = [(str(y), "Q7", "P108", [A] if y <= 2005 else [B]) for y in range(2000, 2013)]
    spans = [("Q7", "P108", A, "2000-01-01", "2005-12-31"), ("Q7", "P108", B, "2006-01-01", None),
             ("Q7", "P108", C, None, None)]  # fmt: skip
    facts = facts_from_rows(rows, NAMES, intervals=intervals_table(spans))
    assert facts.never_held("Q7", "P108", A, 2008, 2010)  # A's own statement ended in 2005
    assert not facts.never_held("Q7", "P108", C, 2008, 2010)  # timeless: no evidence
    assert not facts.never_held("Q7", "P108", "Q999", 2008, 2010)  # nothing known of it
    assert facts.drops["no_evidence"] == 2
    covered = pm_facts([(A, "2008-01-01", "2012-12-31"), (B, "2013-01-01", None)])
    assert covered.never_held(COUNTRY, PM, C, 2009, 2011)  # the holders are known throughout


# The checks' SQL, on the same edges ---------------------------------------------------------


def audit_tables(turns: list[dict], spans, lifespans=None) -> duckdb.DuckDBPyConnection:
    connection = duckdb.connect()
    turn_rows = [
        {"snapshot_year": 2025, "chain_id": f"c{i}", "turn_index": 0, "answer_kind": "entity",
         "pid": PM, "subject_qid": COUNTRY, "scope_anchor": None, "gold_qids": [], **turn}
        for i, turn in enumerate(turns)
    ]  # fmt: skip
    connection.register("turns_in", pa.Table.from_pylist(turn_rows))
    connection.execute("CREATE TABLE turns AS SELECT * FROM turns_in")
    intervals = intervals_table(spans)
    connection.register("intervals_in", intervals)
    connection.execute(
        "CREATE TABLE fact_intervals AS SELECT *, 2025 AS snapshot_year FROM intervals_in"
    )
    connection.register("lifespans_in", lifespans_table(lifespans or {}))
    connection.execute(
        "CREATE TABLE lifespans AS SELECT *, 2025 AS snapshot_year FROM lifespans_in"
    )
    return connection


FUNCTIONAL = sorted(default_catalog().functional_pids)


def test_the_check_finds_uncovered_single_holder_scopes():
    spans = [(COUNTRY, PM, A, "2008-01-01", "2012-03-10"), (COUNTRY, PM, B, "2012-04-20", None),
             (COUNTRY, PM, C, "2012-03-31", "2012-04-19")]  # fmt: skip
    turns = [
        {"scope_anchor": "2012", "gold_qids": [A, B, C]},  # 20-day gap: decided
        {"scope_anchor": "2011-2013", "answer_kind": "count"},  # the same
        {"scope_anchor": "2007"},  # before A: not covered
        {"scope_anchor": "2008-06-01"},
    ]
    connection = audit_tables(turns, spans)
    found = connection.execute(
        f"SELECT chain_id, longest_gap FROM ({uncovered_sql('turns', 'fact_intervals', 'lifespans', FUNCTIONAL)})"
    ).fetchall()
    assert found == [("c2", 365)]
    forty = audit_tables(turns[:1], spans[:2])
    assert forty.execute(
        f"SELECT longest_gap FROM ({uncovered_sql('turns', 'fact_intervals', 'lifespans', FUNCTIONAL)})"
    ).fetchall() == [(40,)]


def test_the_check_clips_coverage_to_the_recorded_lifespan_only():
    spans = [(COUNTRY, PM, A, "2012-06-01", None)]
    turn = [{"scope_anchor": "2012", "gold_qids": [A]}]
    sql = uncovered_sql("turns", "fact_intervals", "lifespans", FUNCTIONAL)
    assert audit_tables(turn, spans).execute(f"SELECT count(*) FROM ({sql})").fetchone() == (1,)
    founded = audit_tables(turn, spans, {COUNTRY: ("2012-06-01", None)})
    assert founded.execute(f"SELECT count(*) FROM ({sql})").fetchone() == (0,)


def test_the_check_finds_timeless_golds_outside_the_lifespan():
    spans = [("Q7", "P31", "Q8", None, None), ("Q7", "P31", "Q9", "2011-05-19", None)]
    turns = [
        {"subject_qid": "Q7", "pid": "P31", "scope_anchor": "1990", "gold_qids": ["Q8"]},
        {"subject_qid": "Q7", "pid": "P31", "scope_anchor": "2012", "gold_qids": ["Q8", "Q9"]},
    ]
    sql = timeless_outside_lifespan_sql("turns", "fact_intervals", "lifespans")
    assert audit_tables(turns, spans).execute(
        f"SELECT chain_id, value_qid FROM ({sql})"
    ).fetchall() == [("c0", "Q8")]
    founded_earlier = audit_tables(turns, spans, {"Q7": ("1980-01-01", None)})
    assert founded_earlier.execute(f"SELECT count(*) FROM ({sql})").fetchone() == (0,)


def test_the_gold_check_expects_timeless_values_removed_outside_the_lifespan():
    spans = [("Q7", "P31", "Q8", None, None), ("Q7", "P31", "Q9", "1980-01-01", None)]
    truth = pa.table({"snapshot_year": [2025], "anchor": ["1985"], "anchor_scope": ["year"],
                      "subject_qid": ["Q7"], "pid": ["P31"], "value_qids": [["Q8", "Q9"]]})  # fmt: skip
    for gold, lifespan, wrong in ((["Q9"], ("1990-01-01", None), 0), (["Q8", "Q9"], ("1990-01-01", None), 1),
                                  (["Q8", "Q9"], ("1970-01-01", None), 0)):  # fmt: skip
        turn = [{"subject_qid": "Q7", "pid": "P31", "scope_anchor": "1985", "gold_qids": gold}]
        connection = audit_tables(turn, spans, {"Q7": lifespan})
        connection.register("truth", truth)
        sql = gold_mismatch_sql("turns", "truth", "fact_intervals", "lifespans")
        assert connection.execute(sql).fetchone() == (1, wrong)


def test_the_gold_check_split_by_subjects_counts_as_the_whole(monkeypatch):
    """Under a memory limit the check runs over ranges of subjects (a turn is checked against
    its subject's truth rows), and the ranges' counts add up to the whole query's."""
    subjects = ("Q7", "Q17", "Q27")
    spans = [(subject, "P31", "Q9", "1980-01-01", None) for subject in subjects]
    truth = pa.table({"snapshot_year": [2025] * 3, "anchor": ["1985"] * 3,
                      "anchor_scope": ["year"] * 3, "subject_qid": list(subjects),
                      "pid": ["P31"] * 3, "value_qids": [["Q9"]] * 3})  # fmt: skip
    turns = [{"subject_qid": subject, "pid": "P31", "scope_anchor": "1985",
              "gold_qids": ["Q8"] if subject == "Q17" else ["Q9"]} for subject in subjects]  # fmt: skip
    connection = audit_tables(turns, spans)
    connection.register("truth", truth)
    whole = connection.execute(gold_mismatch_sql("turns", "truth", "fact_intervals", "lifespans"))
    assert whole.fetchone() == (3, 1)
    monkeypatch.setattr(audit, "BYTES_PER_CHECKED_TURN", 10**15)  # one subject a range
    queries = gold_mismatch_queries(connection, "turns", "truth", "fact_intervals", "lifespans")
    counts = [connection.execute(query).fetchone() for query in queries]
    assert len(queries) == 3 and sorted(counts) == [(1, 0), (1, 0), (1, 1)]


def test_the_gold_check_lets_a_dated_statement_support_a_value_only_where_it_holds():
    """Germany is a member of the WTO by an undated statement and by one dated from its
    founding in 1995: in 1985 only the undated one reaches, and the WTO did not exist yet, so
    the gold leaves it out (as the generator does); in 2000 the dated one supports it."""
    spans = [("Q7", "P463", "Q8", None, None), ("Q7", "P463", "Q8", "1995-01-01", None),
             ("Q7", "P463", "Q9", None, None)]  # fmt: skip
    truth = pa.table({"snapshot_year": [2025, 2025], "anchor": ["1985", "2000"],
                      "anchor_scope": ["year", "year"], "subject_qid": ["Q7", "Q7"],
                      "pid": ["P463", "P463"], "value_qids": [["Q8", "Q9"], ["Q8", "Q9"]]})  # fmt: skip
    for anchor, gold, wrong in (("1985", ["Q9"], 0), ("1985", ["Q8", "Q9"], 1),
                                ("2000", ["Q8", "Q9"], 0), ("2000", ["Q9"], 1)):  # fmt: skip
        turn = [{"subject_qid": "Q7", "pid": "P463", "scope_anchor": anchor, "gold_qids": gold}]
        connection = audit_tables(turn, spans, {"Q7": ("1949-05-23", None)})
        connection.register("truth", truth)
        sql = gold_mismatch_sql("turns", "truth", "fact_intervals", "lifespans")
        assert connection.execute(sql).fetchone() == (1, wrong), (anchor, gold)


def test_dates_outside_pythons_years_keep_their_order_against_every_scope():
    """Real dumps hold births BCE and dates past year 9999: they bound lifespans and
    intervals like any other date instead of stopping the index."""
    from chronoscope_dagster.chains.evidence import anchor_span, lifespans

    bce, far_future = -1_000_000, 3_000_000  # days from 1970: about 768 BCE and 10183
    bounds = pa.table(
        {
            "qid": ["Q1", "Q1", "Q2"],
            "bound": ["start", "end", "end"],
            "date": pa.array([bce, far_future, bce], pa.int32()).cast(pa.date32()),
            "precision": pa.array([9, 11, 9], pa.int8()),
        }
    )
    spans = lifespans(bounds)
    assert spans["Q1"].outside(anchor_span("2015", 2025)) is None
    assert spans["Q2"].outside(anchor_span("2015", 2025)) == "after_lifespan"

    intervals = intervals_table([(COUNTRY, PM, A, "2008-05-08", "2011-11-15")])
    valid_from = pa.array([bce], pa.int32()).cast(pa.date32())
    intervals = intervals.set_column(
        intervals.schema.get_field_index("valid_from"), "valid_from", valid_from
    )
    rows = [(str(y), COUNTRY, PM, [A]) for y in range(2008, 2012)]
    facts = facts_from_rows(rows, NAMES, intervals=intervals)
    assert facts.gold(COUNTRY, PM, "2010") is not None
