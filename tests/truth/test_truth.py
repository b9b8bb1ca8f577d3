"""Intervals and truth on hand-made claims: every precision and interval edge."""

from datetime import date

import duckdb
import pyarrow.parquet as pq
import pytest

from chronoscope_dagster.truth.intervals import build_intervals
from chronoscope_dagster.truth.table import subject_ranges, write_truth
from tests.truth_helpers import Claim, claims_table, compute, day, year

UK, PM = "Q145", "P6"
JOHNSON, TRUSS, SUNAK = "Q180589", "Q272201", "Q20055561"


def interval(claim: Claim):
    counts, rows, _ = compute([claim], [])
    assert counts.kept == 1
    row = rows.to_pylist()[0]
    return row["valid_from"], row["valid_until"]


@pytest.mark.parametrize(
    ("claim", "expected"),
    [
        # a day-precision end is the first day the statement no longer holds
        (Claim("Q1", "P39", "Q2", start=("2019-07-24", 11), end=("2022-09-06", 11)),
         (date(2019, 7, 24), date(2022, 9, 5))),
        # ... except a one-day term, whose end equals its start
        (Claim("Q1", "P39", "Q2", start=("2022-09-06", 11), end=("2022-09-06", 11)),
         (date(2022, 9, 6), date(2022, 9, 6))),
        (Claim("Q1", "P39", "Q2", end=("2011-01-01", 11)), (None, date(2010, 12, 31))),
        # a year-precision end runs to 31 December; a year-precision start from 1 January
        (Claim("Q1", "P39", "Q2", start=("2019-01-01", 9), end=("2022-01-01", 9)),
         (date(2019, 1, 1), date(2022, 12, 31))),
        # a month-precision end runs to the month's last day (leap February)
        (Claim("Q1", "P39", "Q2", start=("2019-05-01", 10), end=("2024-02-01", 10)),
         (date(2019, 5, 1), date(2024, 2, 29))),
        # decade precision spans the decade
        (Claim("Q1", "P39", "Q2", start=("1990-01-01", 8), end=("1990-01-01", 8)),
         (date(1990, 1, 1), date(1999, 12, 31))),
        # open ends
        (Claim("Q1", "P39", "Q2", start=("2019-07-24", 11)), (date(2019, 7, 24), None)),
        (Claim("Q1", "P39", "Q2", end=("2001-03-01", 10)), (None, date(2001, 3, 31))),
        # a point in time covers its span, and is ignored beside a start or end
        (Claim("Q1", "P39", "Q2", point=("2010-01-01", 9)), (date(2010, 1, 1), date(2010, 12, 31))),
        (Claim("Q1", "P39", "Q2", point=("2010-06-12", 11)), (date(2010, 6, 12), date(2010, 6, 12))),
        (Claim("Q1", "P39", "Q2", start=("2005-01-01", 11), point=("2010-01-01", 9)),
         (date(2005, 1, 1), None)),
        (Claim("Q1", "P39", "Q2"), (None, None)),
    ],
)  # fmt: skip
def test_interval_rules(claim, expected):
    assert interval(claim) == expected


def test_drops_are_counted():
    counts, rows, _ = compute(
        [
            Claim("Q1", "P361", "Q1"),
            Claim("Q1", "P39", "Q2", start=("2010-01-01", 11), end=("2009-01-01", 11)),
            Claim("Q1", "P39", "Q3", start=("2010-01-01", 9), end=("2010-01-01", 9)),
        ],
        [],
    )
    assert counts.statements == 3 and counts.kept == 1
    assert counts.dropped == {"self_loop": 1, "deprecated": 0, "end_before_start": 1}
    assert rows["value_qid"].to_pylist() == ["Q3"]


def uk_prime_ministers() -> list[Claim]:
    return [
        Claim(UK, PM, JOHNSON, start=("2019-07-24", 11), end=("2022-09-06", 11)),
        Claim(UK, PM, TRUSS, start=("2022-09-06", 11), end=("2022-10-25", 11)),
        Claim(UK, PM, SUNAK, start=("2022-10-25", 11), end=("2024-07-05", 11)),
    ]


def test_year_scope_holds_every_value_of_the_year():
    _, _, truth = compute(uk_prime_ministers(), [year(2022), year(2021), year(2024), year(2025)])
    row = truth[("2022", UK, PM)]
    assert row["value_qids"] == [JOHNSON, TRUSS, SUNAK]  # sorted by QID number
    assert row["canonical_value_qid"] == SUNAK  # the most recent start
    assert truth[("2021", UK, PM)]["value_qids"] == [JOHNSON]
    assert truth[("2024", UK, PM)]["value_qids"] == [SUNAK]
    assert ("2025", UK, PM) not in truth


def test_on_a_handover_day_the_successor_alone_holds():
    anchors = [day("2022-09-05"), day("2022-09-06"), day("2022-09-07"), day("2022-10-25")]
    _, _, truth = compute(uk_prime_ministers(), anchors)
    assert truth[("2022-09-05", UK, PM)]["value_qids"] == [JOHNSON]
    assert truth[("2022-09-06", UK, PM)]["value_qids"] == [TRUSS]
    assert truth[("2022-09-07", UK, PM)]["value_qids"] == [TRUSS]
    assert truth[("2022-10-25", UK, PM)]["value_qids"] == [SUNAK]


def test_a_term_ending_on_1_january_is_not_in_that_year():
    brazil, lula, dilma = "Q155", "Q37181", "Q47848"
    claims = [
        Claim(brazil, PM, lula, start=("2003-01-01", 11), end=("2011-01-01", 11)),
        Claim(brazil, PM, dilma, start=("2011-01-01", 11), end=("2016-08-31", 11)),
    ]
    _, _, truth = compute(claims, [year(2010), year(2011), day("2011-01-01")])
    assert truth[("2011", brazil, PM)]["value_qids"] == [dilma]
    assert truth[("2011-01-01", brazil, PM)]["value_qids"] == [dilma]
    assert truth[("2010", brazil, PM)]["value_qids"] == [lula]


def test_one_day_overlap_of_a_one_day_term():
    acting = "Q99"
    claims = [
        *uk_prime_ministers(),
        Claim(UK, PM, acting, start=("2022-09-06", 11), end=("2022-09-06", 11)),
    ]
    _, _, truth = compute(claims, [day("2022-09-06"), day("2022-09-07")])
    assert truth[("2022-09-06", UK, PM)]["value_qids"] == [acting, TRUSS]
    assert truth[("2022-09-07", UK, PM)]["value_qids"] == [TRUSS]


def test_end_precision_is_counted():
    counts, _, _ = compute(
        [
            Claim("Q1", "P39", "Q2", start=("2019-07-24", 11), end=("2022-09-06", 11)),
            Claim("Q1", "P39", "Q3", end=("2001-03-01", 10)),
            Claim("Q1", "P39", "Q4", end=("2001-01-01", 9)),
            Claim("Q1", "P39", "Q5", end=("1990-01-01", 8)),
            Claim("Q1", "P39", "Q6"),
        ],
        [],
    )
    assert counts.by_end_precision == {"day": 1, "month": 1, "year": 1, "coarser": 1, "none": 1}


def test_year_precision_end_holds_all_year():
    # the reference read "ended 2022" as 2022-01-01 and lost the fact at 2022-04-01
    claims = [Claim("Q1", "P108", "Q2", start=("2015-01-01", 9), end=("2022-01-01", 9))]
    _, _, truth = compute(claims, [day("2022-10-01"), day("2023-01-01")])
    assert truth[("2022-10-01", "Q1", "P108")]["value_qids"] == ["Q2"]
    assert ("2023-01-01", "Q1", "P108") not in truth


def test_point_in_time_is_not_active_before_it_happens():
    claims = [Claim("Q1", "P39", "Q2", point=("2022-11-20", 11))]
    _, _, truth = compute(claims, [day("2022-04-01"), day("2022-11-20"), year(2022)])
    assert ("2022-04-01", "Q1", "P39") not in truth
    assert truth[("2022-11-20", "Q1", "P39")]["value_qids"] == ["Q2"]
    assert truth[("2022", "Q1", "P39")]["value_qids"] == ["Q2"]


def test_canonical_order_rank_then_start_then_qid():
    claims = [
        Claim("Q1", "P463", "Q30", start=("2001-01-01", 11)),
        Claim("Q1", "P463", "Q7", start=("2010-01-01", 11)),
        Claim("Q1", "P463", "Q9", start=("2010-01-01", 11)),
        Claim("Q1", "P463", "Q500", start=("1990-01-01", 11), rank="preferred"),
    ]
    _, _, truth = compute(claims, [day("2015-01-01")])
    row = truth[("2015-01-01", "Q1", "P463")]
    assert row["value_qids"] == ["Q7", "Q9", "Q30", "Q500"]
    assert row["canonical_value_qid"] == "Q500"  # preferred beats a later start
    _, _, truth = compute(claims[:3], [day("2015-01-01")])
    assert (
        truth[("2015-01-01", "Q1", "P463")]["canonical_value_qid"] == "Q7"
    )  # equal start: lower QID


def test_open_start_counts_as_oldest():
    claims = [Claim("Q1", "P54", "Q8"), Claim("Q1", "P54", "Q9", start=("1995-01-01", 9))]
    claims[0].end = ("2000-01-01", 9)
    _, _, truth = compute(claims, [day("1999-01-01")])
    assert truth[("1999-01-01", "Q1", "P54")]["canonical_value_qid"] == "Q9"


def test_timeless_stored_once_and_joined_into_mixed_pairs():
    claims = [
        Claim("Q1", "P31", "Q5"),  # only timeless: one row, no anchor
        Claim("Q1", "P106", "Q82955"),  # timeless beside a dated value of the same property
        Claim("Q1", "P106", "Q40348", start=("2005-01-01", 9), end=("2010-01-01", 9)),
    ]
    _, _, truth = compute(claims, [year(2000), year(2007)])
    assert truth[(None, "Q1", "P31")]["value_qids"] == ["Q5"]
    assert truth[(None, "Q1", "P31")]["anchor_scope"] == "timeless"
    assert not any(key[1:] == ("Q1", "P31") and key[0] for key in truth)
    assert truth[("2000", "Q1", "P106")]["value_qids"] == ["Q82955"]
    assert truth[("2007", "Q1", "P106")]["value_qids"] == ["Q40348", "Q82955"]
    assert (None, "Q1", "P106") not in truth


def test_unknown_end_is_uncertain_after_its_start():
    claims = [
        Claim("Q1", "P108", "Q2", start=("2010-03-01", 10), end_unknown=True),
        Claim("Q1", "P108", "Q3", start=("2015-01-01", 11)),
    ]
    _, rows, truth = compute(claims, [day("2010-03-15"), day("2016-01-01"), day("2005-01-01")])
    unknown = next(r for r in rows.to_pylist() if r["value_qid"] == "Q2")
    assert unknown["end_unknown"] and unknown["certain_until"] == date(2010, 3, 31)
    assert truth[("2010-03-15", "Q1", "P108")]["value_qids"] == ["Q2"]
    later = truth[("2016-01-01", "Q1", "P108")]
    assert later["value_qids"] == ["Q3"] and later["uncertain_value_qids"] == ["Q2"]
    assert ("2005-01-01", "Q1", "P108") not in truth


def test_a_single_holder_statement_without_start_holds_from_its_predecessors_end():
    claims = [
        Claim(UK, PM, JOHNSON, start=("2019-07-24", 11), end=("2022-09-06", 11)),
        Claim(UK, PM, TRUSS, end=("2022-10-25", 11)),
    ]
    counts, rows, truth = compute(claims, [day("2022-10-01"), year(2019), year(2021)])
    truss = next(r for r in rows.to_pylist() if r["value_qid"] == TRUSS)
    assert truss["valid_from"] == date(2022, 9, 6) and truss["start_source"] == "predecessor"
    assert not truss["start_unknown"] and counts.by_start_source["predecessor"] == 1
    assert truth[("2022-10-01", UK, PM)]["value_qids"] == [TRUSS]
    assert truth[("2019", UK, PM)]["value_qids"] == [JOHNSON]


def test_without_a_known_start_a_value_decides_no_scope_before_its_end():
    """Liz Truss's party with only an end date: nothing is known of it in 1952."""
    claims = [
        Claim(TRUSS, "P463", "Q9624", end=("1996-01-01", 9)),
        Claim(TRUSS, "P463", "Q9630", start=("1996-01-01", 9)),
    ]
    counts, rows, truth = compute(claims, [year(1952), year(1990), year(2000)])
    unknown = next(r for r in rows.to_pylist() if r["value_qid"] == "Q9624")
    assert unknown["start_unknown"] and unknown["valid_from"] is None
    assert unknown["start_source"] == "unknown" and counts.by_start_source["unknown"] == 1
    for anchor in ("1952", "1990"):
        row = truth[(anchor, TRUSS, "P463")]
        assert row["value_qids"] == [] and row["uncertain_value_qids"] == ["Q9624"]
    assert truth[("2000", TRUSS, "P463")]["value_qids"] == ["Q9630"]


def test_a_recorded_beginning_bounds_an_unknown_start_without_starting_it():
    from tests.chain_helpers import lifespans_table

    claims = [Claim(TRUSS, "P463", "Q9624", end=("1996-01-01", 9))]
    lifespans = lifespans_table({TRUSS: ("1975-07-26", None), "Q9624": ("1988-03-03", None)})
    _, rows, truth = compute(claims, [year(1980), year(1990)], lifespans=lifespans)
    assert rows.to_pylist()[0]["possible_from"] == date(1988, 3, 3)
    assert (("1980", TRUSS, "P463")) not in truth, "before both beginnings it cannot hold"
    assert truth[("1990", TRUSS, "P463")]["uncertain_value_qids"] == ["Q9624"]


def test_a_replaces_qualifier_starts_a_statement_at_the_replaced_ones_end():
    claims = [
        Claim("Q1", "P463", "Q2", start=("1990-01-01", 9), end=("1999-06-01", 11)),
        Claim("Q1", "P463", "Q3", end=("2005-01-01", 9), replaces=("Q2",)),
        Claim("Q1", "P463", "Q4", end=("2005-01-01", 9), replaces=("Q9",)),
    ]
    _, rows, truth = compute(claims, [year(2001)])
    by_value = {r["value_qid"]: r for r in rows.to_pylist()}
    assert by_value["Q3"]["valid_from"] == date(1999, 6, 1)
    assert by_value["Q3"]["start_source"] == "replaces"
    assert by_value["Q4"]["start_unknown"], "a multi-valued property has no predecessor by date"
    row = truth[("2001", "Q1", "P463")]
    assert row["value_qids"] == ["Q3"] and row["uncertain_value_qids"] == ["Q4"]


def test_overlapping_values_of_a_multi_valued_property():
    claims = [
        Claim("Q1", "P54", "Q10", start=("2003-07-01", 11), end=("2009-07-01", 11)),
        Claim("Q1", "P54", "Q11", start=("2003-08-20", 11)),  # national team, concurrent
        Claim("Q1", "P54", "Q10", start=("2021-08-31", 11), end=("2022-11-22", 11)),
    ]
    _, _, truth = compute(claims, [day("2005-01-01"), day("2015-01-01"), year(2022)])
    assert truth[("2005-01-01", "Q1", "P54")]["value_qids"] == ["Q10", "Q11"]
    assert truth[("2015-01-01", "Q1", "P54")]["value_qids"] == ["Q11"]
    assert truth[("2022", "Q1", "P54")]["value_qids"] == ["Q10", "Q11"]
    assert truth[("2022", "Q1", "P54")]["n_values"] == 2


def test_output_does_not_depend_on_input_order():
    import random

    claims = uk_prime_ministers() + [
        Claim("Q1", "P463", f"Q{n}", start=(f"{1990 + n % 30}-01-01", 9)) for n in range(2, 60)
    ]
    anchors = [year(y) for y in range(1990, 2025)]
    _, _, first = compute(claims, anchors)
    shuffled = claims[:]
    random.Random(3).shuffle(shuffled)
    _, _, second = compute(shuffled, anchors)
    assert list(first.items()) == list(second.items())


def test_anchor_batching_does_not_change_the_output():
    claims = (
        uk_prime_ministers()
        + [Claim("Q1", "P463", f"Q{n}", start=(f"{1990 + n % 30}-01-01", 9)) for n in range(2, 40)]
        + [Claim("Q1", "P31", "Q5"), Claim("Q1", "P106", "Q82955")]
    )
    anchors = [year(y) for y in range(1990, 2025)] + [day("2022-09-06"), day("2024-01-01")]
    _, _, one_query = compute(claims, anchors, anchors_per_query=100)
    _, _, one_anchor_each = compute(claims, anchors, anchors_per_query=1)
    assert list(one_query.items()) == list(one_anchor_each.items())
    assert next(iter(one_query))[0] is None  # timeless rows come first


def test_a_memory_bound_splits_the_work_but_not_the_file(tmp_path):
    """Ranges of subjects of a few rows each (as a small memory limit gives) write the same
    bytes as one query per anchor batch, in groups of rows whatever the split."""
    claims = (
        uk_prime_ministers()
        + [
            Claim(f"Q{s}", "P463", f"Q{n}", start=(f"{1990 + (n * s) % 30}-01-01", 9))
            for s in range(2, 30)
            for n in range(40, 44)
        ]
        + [Claim(f"Q{s}", "P31", "Q5") for s in range(2, 30, 3)]
    )
    anchors = [year(y) for y in range(1990, 2025)] + [day("2022-09-06")]
    connection = duckdb.connect()
    connection.register("claims_in", claims_table(claims))
    build_intervals(connection, "claims_in", "fact_intervals")
    paths = {rows: tmp_path / f"truth-{rows}.parquet" for rows in (None, 5, 1)}
    for rows, path in paths.items():
        written = write_truth(
            connection, "fact_intervals", anchors, path, row_anchors_per_query=rows
        )
        assert written == pq.read_metadata(path).num_rows
    assert len(subject_ranges(connection, "fact_intervals", 5)) > 8
    assert subject_ranges(connection, "fact_intervals", 10**9) == ["TRUE"]
    assert paths[None].read_bytes() == paths[5].read_bytes() == paths[1].read_bytes()


def test_the_present_of_many_pairs_stays_within_a_small_memory_limit():
    """``present_day_sql`` gathers each pair's values by a plain aggregate, then sorts them by
    QID number with their labels, within a memory limit that the window over each pair it
    used before exceeded (300,000 pairs under 192MB)."""
    import pyarrow as pa

    from chronoscope_dagster.truth.table import present_day_sql

    pairs = 300_000
    values = [[f"Q{(i * 7 + j * 13) % 500_000 + 1}" for j in (2, 0, 1)] for i in range(pairs)]
    truth = pa.table(
        {
            "anchor": ["2025-10-01"] * pairs, "anchor_scope": ["day"] * pairs,
            "subject_qid": [f"Q{1_000_000 + i}" for i in range(pairs)], "pid": ["P463"] * pairs,
            "value_qids": values, "canonical_value_qid": [found[1] for found in values],
            "n_values": [3] * pairs,
        }
    )  # fmt: skip
    labels = pa.table(
        {"qid": [f"Q{n}" for n in range(2, 500_001)], "label": [f"v{n}" for n in range(2, 500_001)]}
    )
    with duckdb.connect(config={"memory_limit": "192MB", "threads": 2}) as connection:
        connection.register("truth_rows", truth)
        connection.register("label_rows", labels)
        reader = connection.sql(
            present_day_sql("truth_rows", "label_rows", "2025-10-01")
        ).to_arrow_reader(1 << 16)
        rows = [row for batch in reader for row in zip(*batch.to_pydict().values(), strict=True)]
    assert len(rows) == pairs
    by_subject = {row[0]: row[1:] for row in rows}
    for i in (0, 1, 76_922, pairs - 1):
        pid, qids, found_labels, canonical, canonical_label, timeless = by_subject[
            f"Q{1_000_000 + i}"
        ]
        expected = sorted(values[i], key=lambda qid: int(qid[1:]))
        assert (pid, qids, canonical, timeless) == ("P463", expected, values[i][1], False)
        assert found_labels == [None if q == "Q1" else f"v{q[1:]}" for q in expected]
        assert canonical_label == (None if canonical == "Q1" else f"v{canonical[1:]}")


def test_the_present_split_by_subjects_is_the_same_file(tmp_path):
    """``present_day_queries`` under a small row budget runs one query per range of subjects;
    their rows, written one after another, are the bytes of the single query's file, timeless
    pairs and pairs of several values included."""
    import pyarrow as pa

    from chronoscope_dagster.truth.table import present_day_queries, present_day_sql
    from chronoscope_dagster.warehouse import write_query

    subjects = 2_000
    rows = [
        (anchor, scope, f"Q{100 + i}", pid, [f"Q{(i * 7 + j) % 900 + 1}" for j in range(i % 3 + 1)])
        for i in range(subjects)
        for anchor, scope, pid in (
            ("2025-10-01", "day", "P463"), ("2024-10-01", "day", "P463"), (None, "timeless", "P17")
        )
    ]  # fmt: skip
    truth = pa.table(
        {
            "anchor": [row[0] for row in rows], "anchor_scope": [row[1] for row in rows],
            "subject_qid": [row[2] for row in rows], "pid": [row[3] for row in rows],
            "value_qids": [row[4] for row in rows],
            "canonical_value_qid": [row[4][-1] for row in rows],
            "n_values": [len(row[4]) for row in rows],
        }
    )  # fmt: skip
    labels = pa.table({"qid": [f"Q{n}" for n in range(2, 800)], "label": ["x"] * 798})
    with duckdb.connect() as connection:
        connection.register("truth_rows", truth)
        connection.register("label_rows", labels)
        queries = present_day_queries(
            connection, "truth_rows", "label_rows", "2025-10-01", rows_per_query=500
        )
        split = write_query(connection, queries, tmp_path / "split.parquet")
        whole = write_query(
            connection,
            present_day_sql("truth_rows", "label_rows", "2025-10-01"),
            tmp_path / "whole.parquet",
        )
        assert present_day_queries(connection, "truth_rows", "label_rows", "2025-10-01") == [
            present_day_sql("truth_rows", "label_rows", "2025-10-01")
        ]
    assert len(queries) >= 8
    assert split == whole == 2 * subjects
    assert (tmp_path / "split.parquet").read_bytes() == (tmp_path / "whole.parquet").read_bytes()
