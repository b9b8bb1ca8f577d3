"""What every family owes: the same seed gives the same chains, another seed others."""

import pytest

from chronoscope_dagster.chains.facts import SnapshotFacts
from chronoscope_dagster.chains.families import FAMILIES, family_module
from chronoscope_dagster.chains.templates import default_templates


@pytest.mark.parametrize("family", FAMILIES)
def test_generation_is_deterministic_and_follows_the_seed(sample_facts, family):
    generate = family_module(family).generate
    templates = default_templates()
    first = list(generate(sample_facts, templates, 7))
    assert first, f"{family} is empty on the sample"
    assert list(generate(sample_facts, templates, 7)) == first
    other = [chain.chain_id for chain in generate(sample_facts, templates, 8)]
    assert other != [chain.chain_id for chain in first]


SPAN_FAMILIES = ("distinct_count", "interval_change", "interval_reasoning")
DEFINING_KIND = {
    "distinct_count": "count",
    "interval_change": "yes_no",
    "interval_reasoning": "yes_no",
}


@pytest.fixture(scope="module")
def all_chains(sample_facts):
    templates = default_templates()
    return {
        family: list(family_module(family).generate(sample_facts, templates, 0))
        for family in FAMILIES
    }


@pytest.mark.parametrize("family", SPAN_FAMILIES)
def test_span_questions_state_their_years_and_name_the_subject_first(
    sample_facts, all_chains, family
):
    for chain in all_chains[family]:
        spans = [turn for turn in chain.turns if turn.answer_kind != "entity"]
        assert spans and all(turn.is_explicit for turn in spans)
        for turn in spans:
            assert 1950 <= turn.scope_year < turn.scope_end_year <= 2025
            assert 2 <= turn.scope_end_year - turn.scope_year + 1 <= 10
            assert str(turn.scope_year) in turn.question
            assert str(turn.scope_end_year) in turn.question
        name = sample_facts.subject_name(chain.turns[0].subject_qid)
        assert name is not None and name in chain.turns[0].question
        assert all(turn.question.endswith("?") for turn in chain.turns)


@pytest.mark.parametrize("family", FAMILIES)
def test_every_chain_scores_its_defining_kind_repeats_no_question_and_tests_its_scope(
    sample_facts, all_chains, family
):
    chains = all_chains[family]
    assert chains, f"{family} is empty on the sample"
    for chain in chains:
        scored = chain.turns[1:]
        assert DEFINING_KIND.get(family, "entity") in {turn.answer_kind for turn in scored}
        assert len({turn.question.casefold() for turn in chain.turns}) == chain.length
        assert any(
            turn.is_explicit
            or sample_facts.scope_sensitive(turn.subject_qid, turn.pid, turn.scope_anchor)
            for turn in scored
        )


@pytest.mark.parametrize("family", FAMILIES)
def test_a_pronoun_fits_what_the_subject_is(sample_facts, all_chains, family):
    templates = default_templates()
    for chain in all_chains[family]:
        for turn in chain.turns:
            person = sample_facts.is_person(turn.subject_qid)
            if person is not None:
                assert person == (templates.properties[turn.pid].subject_kind == "person")


def test_families_of_one_index_equal_families_each_on_its_own(sample_truth_home):
    """The families asset indexes a snapshot once for all families: each family's chains and
    refusal counts are those of an index built for it alone."""
    from chronoscope_dagster.chains.records import generate_family
    from chronoscope_dagster.storage.chains import warehouse_facts
    from chronoscope_dagster.warehouse import Warehouse

    store = Warehouse(sample_truth_home)
    shared = warehouse_facts(store, "2024")
    templates = default_templates()
    outputs = {family: generate_family(shared, family, templates, 3) for family in FAMILIES}
    assert not shared.drops, "the shared index counts nothing itself"
    for family in ("carryover", "cross_entity_then", "bridged_multi_pid"):
        alone = generate_family(warehouse_facts(store, "2024"), family, templates, 3)
        assert outputs[family].table.equals(alone.table)
        assert outputs[family].scopes_refused == alone.scopes_refused
        assert outputs[family].scopes_refused, f"{family} refuses some scope on the sample"


def test_subject_shards_split_every_family_by_its_first_subject(sample_truth_home, sample_facts):
    """Chains generated from the index of what one subject-hash shard reaches are the chains
    whose turn 1 asks about one of its subjects, with the same refusals, and together they
    are the whole family: shards change nothing. Each shard indexes fewer subjects. Two
    shards: the sample gives some families only a few chains (change point 7), which three
    shards would not all hold."""
    from chronoscope_dagster.chains.facts import Shard
    from chronoscope_dagster.chains.records import generate_family, rooted_in
    from chronoscope_dagster.storage.chains import warehouse_facts
    from chronoscope_dagster.warehouse import Warehouse

    templates = default_templates()
    shards = [
        warehouse_facts(Warehouse(sample_truth_home), "2025", Shard(index, 2)) for index in range(2)
    ]
    assert all(len(facts.golds) < len(sample_facts.golds) for facts in shards)
    for family in FAMILIES:
        whole = generate_family(sample_facts, family, templates, 5)
        parts = [generate_family(facts, family, templates, 5) for facts in shards]
        for facts, part in zip(shards, parts, strict=True):
            assert part.table.equals(rooted_in(whole.table, facts.wide.roots)), family
        assert frozenset().union(*(part.refused for part in parts)) == whole.refused, family
        rows = [part.table.num_rows for part in parts]
        assert sum(rows) == whole.table.num_rows and min(rows) > 0, (family, rows)


def test_a_shard_holds_the_holders_of_one_value_together():
    """Shards cut a locality order in which subjects with the same values of the
    ``cross_entity_then`` relations sit together, so a shard's roots share what they reach:
    of two employers' four employees each, interleaved in QID order, each of two shards holds
    one employer's."""
    from chronoscope_dagster.chains.facts import Shard
    from tests.chain_helpers import facts_from_rows

    employers = {f"Q{n}": "Q100" if n % 2 else "Q200" for n in range(1, 9)}
    rows = [("2010", subject, "P108", [employer]) for subject, employer in employers.items()]
    names = dict(zip(employers, ["Ann", "Bob", "Cy", "Di", "Ed", "Flo", "Gus", "Hal"], strict=True))
    roots = [
        facts_from_rows(
            rows, names | {"Q100": "Acme", "Q200": "Bolt"}, shard=Shard(i, 2)
        ).wide.roots
        for i in range(2)
    ]
    assert sorted(map(sorted, roots)) == [["Q1", "Q3", "Q5", "Q7"], ["Q2", "Q4", "Q6", "Q8"]]


def test_a_shard_holds_the_subjects_of_one_region_together():
    """Before the values themselves, the locality order groups subjects by region: the hub of
    their most-held value of the ``cross_entity_then`` relations. Four employers, two in each
    of two countries, with two employees each, all interleaved in QID order: each of two
    shards holds one country's employers and their employees, so what the employers of a
    country share (the country and its holders) is reached by one shard, not by both."""
    from chronoscope_dagster.chains.facts import Shard
    from tests.chain_helpers import facts_from_rows

    countries = {"Q101": "Q900", "Q102": "Q900", "Q103": "Q901", "Q104": "Q901"}
    employers = {f"Q{n}": ("Q101", "Q103", "Q102", "Q104")[n % 4] for n in range(1, 9)}
    rows = [("2010", subject, "P108", [employer]) for subject, employer in employers.items()]
    rows += [("2010", employer, "P17", [country]) for employer, country in countries.items()]
    names = dict(zip(employers, ["Ann", "Bob", "Cy", "Di", "Ed", "Flo", "Gus", "Hal"], strict=True))
    names |= {"Q101": "Acme", "Q102": "Bolt", "Q103": "Core", "Q104": "Dyne"}
    names |= {"Q900": "Avalon", "Q901": "Borduria"}
    roots = [facts_from_rows(rows, names, shard=Shard(i, 2)).wide.roots for i in range(2)]
    by_country = [
        sorted({*(e for e, c in countries.items() if c == country),
                *(s for s, e in employers.items() if countries[e] == country)})
        for country in ("Q900", "Q901")
    ]  # fmt: skip
    assert sorted(map(sorted, roots)) == sorted(by_country)


def test_a_shard_from_the_written_snapshot_index_is_the_shard_computed_in_place(
    sample_truth_home, tmp_path
):
    """A shard step reads the snapshot-wide tables its plan wrote once (``write_chain_index``);
    its chains and refusals are those of the index that computes them itself."""
    from dataclasses import replace

    from chronoscope_dagster.chains.facts import Shard
    from chronoscope_dagster.chains.reach import source_facts, write_snapshot_index
    from chronoscope_dagster.chains.records import generate_family
    from chronoscope_dagster.storage.chains import snapshot_sources
    from chronoscope_dagster.warehouse import Warehouse

    sources = snapshot_sources(Warehouse(sample_truth_home), "2025")
    write_snapshot_index(sources, tmp_path)
    templates = default_templates()
    for shard in (Shard(0, 2), Shard(1, 3)):
        in_place = source_facts("2025", sources, shard)
        indexed = source_facts("2025", sources, shard, snapshot_index=tmp_path)
        assert replace(indexed.wide, related=None) == replace(in_place.wide, related=None)
        chunks = set(in_place.wide.related.chunks.values())
        assert chunks and indexed.wide.related.chunks == in_place.wide.related.chunks
        for chunk in chunks:
            found, expected = indexed.wide.related.load(chunk), in_place.wide.related.load(chunk)
            assert (found.holders, found.subjects) == (expected.holders, expected.subjects)
        for family in FAMILIES:
            expected = generate_family(in_place, family, templates, 5)
            found = generate_family(indexed, family, templates, 5)
            assert found.table.equals(expected.table), family
            assert found.refused == expected.refused, family


def test_a_part_of_a_shard_from_its_scope_is_the_part_computed_from_the_snapshot(
    sample_truth_home, tmp_path, monkeypatch
):
    """A step of several processes reads its shard's scope (``write_snapshot_index`` with
    ``shards``, in one pass, or a pass per shard), not the snapshot: each part of the shard
    indexes what it would from the whole snapshot, so its chains and refusals are the same,
    and a scope holds a fraction of the snapshot's rows."""
    import duckdb

    from chronoscope_dagster.chains import reach
    from chronoscope_dagster.chains.facts import Shard
    from chronoscope_dagster.chains.records import generate_family
    from chronoscope_dagster.storage.chains import snapshot_sources
    from chronoscope_dagster.warehouse import Warehouse

    sources = snapshot_sources(Warehouse(sample_truth_home), "2025")
    templates = default_templates()
    one_pass, all_scopes = tmp_path / "one", tmp_path / "all"
    assert reach.write_snapshot_index(sources, one_pass, shards=3) == [range(3)]
    with monkeypatch.context() as patched:
        patched.setattr(reach, "SCOPE_PASS_GOLDS_PER_MB", 0)
        passes = reach.write_snapshot_index(sources, all_scopes, shards=3)
    assert passes == [range(0, 1), range(1, 2), range(2, 3)]
    for index, scope in ((all_scopes, 0), (all_scopes, 2), (one_pass, 1)):
        for part in Shard(scope, 3).split(2):
            expected = reach.source_facts("2025", sources, part)
            found = reach.source_facts("2025", sources, part, snapshot_index=index, scope=scope)
            assert found.wide.roots == expected.wide.roots and found.wide.roots
            assert found.wide.unnameable_subjects == expected.wide.unnameable_subjects
            for family in FAMILIES:
                generated = generate_family(expected, family, templates, 5)
                assert generate_family(found, family, templates, 5).table.equals(generated.table), (
                    family
                )
    [(snapshot,)] = duckdb.sql(
        f"SELECT count(*) FROM read_parquet('{all_scopes / 'gold_rows.parquet'}')"
    ).fetchall()
    for shard in range(3):
        [(rows,)] = duckdb.sql(
            f"SELECT count(*) FROM {reach.scope_relations(all_scopes, shard)['gold_rows']}"
        ).fetchall()
        assert 0 < rows < snapshot, (shard, rows, snapshot)


def test_the_chains_do_not_depend_on_how_the_roots_are_chunked(sample_truth_home, monkeypatch):
    """A shard holds its roots' related subjects a chunk of roots at a time: with every root
    its own chunk (no related subject shared, as between the roots of a full dump), the
    chains and refusals are those of the default chunks."""
    from chronoscope_dagster.chains import reach
    from chronoscope_dagster.chains.facts import Shard
    from chronoscope_dagster.chains.records import generate_family
    from chronoscope_dagster.storage.chains import warehouse_facts
    from chronoscope_dagster.warehouse import Warehouse

    store, templates, shard = Warehouse(sample_truth_home), default_templates(), Shard(0, 2)
    default = warehouse_facts(store, "2025", shard)
    monkeypatch.setattr(reach, "ROOTS_PER_PART", 1)
    monkeypatch.setattr(reach, "GOLDS_PER_CHUNK", 1)
    per_root = warehouse_facts(store, "2025", shard)
    chunks = set(per_root.wide.related.chunks.values())
    assert len(chunks) > 2 * len(set(default.wide.related.chunks.values())), chunks
    for family in FAMILIES:
        expected = generate_family(default, family, templates, 5)
        found = generate_family(per_root, family, templates, 5)
        assert found.table.equals(expected.table), family
        assert found.refused == expected.refused, family


def test_root_rows_per_shard_plans_enough_shards_for_every_root(sample_truth_home, sample_facts):
    """The shard count for at most N truth rows of roots a shard: every row of a chain property
    a chain may start from is counted (every gold the index holds, and more), and the count is
    rounded up, never below the shards asked for."""
    from chronoscope_dagster.chains.reach import shard_count
    from chronoscope_dagster.storage.chains import root_row_count
    from chronoscope_dagster.warehouse import Warehouse

    rows = root_row_count(Warehouse(sample_truth_home), "2025")
    assert rows >= sum(map(len, sample_facts.golds.values())) > 0
    assert [shard_count(10, n) for n in (1, 3, 4, 10, 11)] == [10, 4, 3, 1, 1]
    assert shard_count(0, 5) == 1 and shard_count(10, 4, at_least=7) == 7


def test_a_shard_step_starts_a_process_per_core_only_where_each_has_work():
    """``worker_count``: one process per core while each gets ``ROOT_ROWS_PER_WORKER`` truth
    rows of roots, never none: a step of the sample's size runs in one."""
    from chronoscope_dagster.chains.reach import ROOT_ROWS_PER_WORKER, worker_count

    assert worker_count(29_323, 2) == worker_count(0, 8) == 1
    assert worker_count(143_093, 2) == 2 == worker_count(2 * ROOT_ROWS_PER_WORKER, 32)
    assert worker_count(2 * ROOT_ROWS_PER_WORKER - 1, 32) == 1
    assert worker_count(10**8, 32) == 32


def test_the_snapshot_wide_kinds_name_subjects_as_the_index_does(sample_facts):
    """DuckDB counts the subjects no question can name (no label among them) by the rule the
    index names them by, and marks the holders nameable without digits."""
    subjects = sample_facts.pids_by_subject
    names = {subject: sample_facts.subject_name(subject) for subject in subjects}
    assert None in names.values()
    assert sample_facts.wide.unnameable_subjects == sum(name is None for name in names.values())
    plain = {
        member
        for root in subjects
        for group in sample_facts.related(root).holders.values()
        for member in group.members
    }
    assert plain and all(
        names[member] and not any(c.isdigit() for c in names[member]) for member in plain
    )


def test_families_from_several_workers_equal_one_process(sample_truth_home):
    """Each worker indexes the snapshot and generates one subject-hash shard of every family;
    merged, the chains, their Parquet bytes and the refusal counts are those of one process."""
    import io
    from functools import partial

    import pyarrow.parquet as pq

    from chronoscope_dagster.chains.records import generate_families
    from chronoscope_dagster.storage.chains import warehouse_facts
    from chronoscope_dagster.warehouse import Warehouse

    def parquet(table) -> bytes:
        buffer = io.BytesIO()
        pq.write_table(table, buffer, compression="zstd")
        return buffer.getvalue()

    loader = partial(warehouse_facts, Warehouse(sample_truth_home), "2023")
    alone = dict(generate_families(loader, FAMILIES, "en", 11))
    shared = dict(generate_families(loader, FAMILIES, "en", 11, workers=2))
    for family in FAMILIES:
        one, two = alone[family], shared[family]
        assert parquet(one.table) == parquet(two.table), family
        assert one.chains == two.chains, family
        assert one.scopes_refused == two.scopes_refused, family
        assert one.no_explicit_question == two.no_explicit_question, family
        assert one.unnameable_subjects == two.unnameable_subjects
    assert any(alone[family].scopes_refused for family in FAMILIES)


def _two_years_of_one_head(shard) -> SnapshotFacts:
    from tests.chain_helpers import facts_from_rows

    rows = [("2010", "Q1", "P6", ["Q2"]), ("2011", "Q1", "P6", ["Q3"])]
    return facts_from_rows(rows, {"Q1": "Ruritania", "Q2": "Ann", "Q3": "Bo"}, shard=shard)


def test_workers_merge_a_family_that_yields_nothing():
    """A family with no chain anywhere (most families on this one-subject snapshot) merges
    from several workers into the same empty table as from one process."""
    from chronoscope_dagster.chains.records import generate_families

    alone = dict(generate_families(_two_years_of_one_head, FAMILIES, "en", 1))
    shared = dict(generate_families(_two_years_of_one_head, FAMILIES, "en", 1, workers=2))
    assert any(not output.chains for output in alone.values())
    for family in FAMILIES:
        assert shared[family].table.equals(alone[family].table), family
        assert shared[family].scopes_refused == alone[family].scopes_refused, family
