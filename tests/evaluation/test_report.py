"""The leaderboard and the report lead with the headline and print n beside every figure."""

from __future__ import annotations

import re

import pyarrow as pa
import pytest

from chronoscope_dagster.evaluation.comparison import COMPARISONS_SCHEMA, compare_models
from chronoscope_dagster.evaluation.prompts import Setting
from chronoscope_dagster.evaluation.report import (
    HEADLINE,
    LEADERBOARD_SCHEMA,
    comparisons_markdown,
    leaderboard_table,
    markdown_tables,
    render_html,
    render_markdown,
)
from tests.evaluation.test_reference_scope import metrics, scored

MODELS = ("oracle", "present_day", "scope_blind")
SETTINGS = (Setting.GOLD_CONTEXT, Setting.QUESTIONS_ONLY, Setting.EXPLICIT_SCOPE)


def keyed(table: pa.Table, **keys: str) -> pa.Table:
    for position, (name, value) in enumerate(keys.items()):
        table = table.add_column(position, name, pa.array([value] * table.num_rows))
    return table


@pytest.fixture(scope="module")
def every() -> pa.Table:
    return pa.concat_tables(
        keyed(metrics(model, setting), model=model, setting=setting.value)
        for model in MODELS
        for setting in SETTINGS
    )


def test_the_leaderboard_leads_with_the_headline_and_its_n(every):
    assert next(iter(HEADLINE)) == "scope_acc_at1"
    metric_columns = [
        n for n in LEADERBOARD_SCHEMA.names if n not in ("subset", "model", "setting", "variant")
    ]
    assert metric_columns[:4] == ["scope_acc_at1", "scope_acc_at1_ci_low", "scope_acc_at1_ci_high",
                                  "scope_acc_at1_n"]  # fmt: skip
    board = {(r["model"], r["setting"]): r for r in leaderboard_table(every).to_pylist()}
    assert len(board) == len(MODELS) * len(SETTINGS)
    blind = board[("scope_blind", "gold_context")]
    assert (blind["scope_acc_at1"], blind["scope_acc_at1_n"]) == (0.0, 3)
    assert (blind["acc_at1"], blind["acc_at1_n"], blind["n_turns"]) == (0.4, 5, 5)
    assert board[("scope_blind", "explicit_scope")]["scope_acc_at1"] == 1.0
    assert board[("oracle", "questions_only")]["scope_acc_at1"] == 1.0
    assert board[("oracle", "gold_context")]["final_turn_acc_at1_n"] == 3


def test_every_figure_of_the_tables_has_its_n(every):
    tables = markdown_tables(every)
    assert list(tables)[:2] == ["headline", "headline_by_family"]
    headline = tables["headline"]
    assert "| scope_blind | Gold context | 0.000 [0.000, 0.000] | 3 | 0.400 [" in headline
    assert "| scope_blind | Explicit scope | 1.000 [1.000, 1.000] | 3 |" in headline
    figures = re.compile(r"(?<![\[\d.])\d\.\d{3}(?![\d\]])")
    for name in ("headline_by_family", "table3", "table4", "table8", "table9"):
        for line in tables[name].splitlines()[2:]:
            for cell in line.strip("|").split(" | ")[1:]:
                if figures.search(cell):
                    assert re.fullmatch(r"\d\.\d{3} \(n=\d+\)", cell.strip()), (name, cell)
    assert "| oracle | 1.000 (n=3) | 1.000 (n=5) |" in tables["table3"]


def test_comparisons_show_their_n():
    a, b = scored("oracle", Setting.GOLD_CONTEXT), scored("scope_blind", Setting.GOLD_CONTEXT)
    table = compare_models(a, b, bootstrap=0)
    keys = {"setting": "gold_context", "model": "oracle", "baseline": "scope_blind"}
    for position, (name, value) in enumerate(keys.items()):
        table = table.add_column(position, name, pa.array([value] * table.num_rows))
    text = comparisons_markdown(table.cast(COMPARISONS_SCHEMA))
    lines = text.splitlines()
    assert lines[0].startswith("| setting | A vs B | metric | n | A | B |")
    assert lines[2].startswith("| Gold context | oracle vs scope_blind | Scope Acc@1 | 3 | 1.000 |")


def test_the_report_opens_with_the_headline_and_says_what_it_measures(every):
    markdown = render_markdown(every, [], {"models": ", ".join(MODELS)})
    headline = markdown.index("## Headline")
    assert headline < markdown.index("## Main results")
    section = markdown[headline : markdown.index("## Main results")]
    assert "scope-dependent" in section and "comparison with the paper" in section
    assert "`scope_blind`" in section and "n" in section
    page = render_html(markdown)
    assert "<h2>Headline" in page and "comparison with the paper" in page
    assert page.index("<h2>Headline") < page.index("<h2>Main results")
    assert "<table>" in page and "<th>model</th>" in page


def test_the_html_page_renders_the_markdown_in_the_report_wrapper():
    markdown = "\n".join(
        [
            "# ChronoScope evaluation report",
            "",
            "- models: oracle, `local`",
            "",
            "## Plots",
            "",
            "See [the paper](https://example.org/paper).",
            "",
            "| model | Acc@1 |",
            "|---|---|",
            "| oracle | 1.000 (n=3) |",
            "",
            "![final_by_length](final_by_length.png)",
        ]
    )
    page = render_html(markdown)
    assert page.startswith("<!doctype html><html><head><meta charset='utf-8'>")
    assert "<title>ChronoScope report</title>" in page and "<style>body{" in page
    assert page.endswith("</body></html>\n")
    assert "<h1>ChronoScope evaluation report</h1>" in page and "<h2>Plots</h2>" in page
    assert "<li>models: oracle, <code>local</code></li>" in page
    assert '<a href="https://example.org/paper">the paper</a>' in page
    assert re.search(
        r"<table>.*<th>model</th>.*<td>oracle</td>\s*<td>1\.000 \(n=3\)</td>", page, re.S
    )
    assert '<img src="final_by_length.png" alt="final_by_length"' in page


def test_html_in_a_table_cell_is_escaped_not_rendered(every):
    hostile = "<script>alert('x')</script>"
    renamed = every.set_column(
        every.schema.get_field_index("model"),
        "model",
        pa.array([hostile if m == "oracle" else m for m in every.column("model").to_pylist()]),
    )
    markdown = render_markdown(renamed, [], {"models": hostile})
    assert f"| {hostile} |" in markdown
    page = render_html(markdown)
    assert "<script" not in page
    assert "<td>&lt;script&gt;alert('x')&lt;/script&gt;</td>" in page
    assert "<li>models: &lt;script&gt;alert('x')&lt;/script&gt;</li>" in page


def test_a_pipe_in_a_cell_stays_in_its_cell():
    page = render_html("| model | n |\n|---|---|\n| a\\|b | 1 |\n")
    assert re.search(r"<td>a\|b</td>\s*<td>1</td>", page)


@pytest.mark.parametrize("paraphraser", ["templates", "gpt-4o"])
def test_table5_names_template_variants_as_a_weaker_test(every, paraphraser):
    paraphrase = pa.concat_tables(
        every.append_column("variant", pa.array([variant] * every.num_rows))
        for variant in ("original", "paraphrased")
    )
    markdown = render_markdown(every, [], {}, paraphrase, paraphraser=paraphraser)
    section = markdown[markdown.index("## Templated vs paraphrased questions (Table 5)") :]
    section = section[: section.index("\n## ", 1)]
    for model in MODELS:
        assert f"| {model} | Orig |" in section and f"| {model} | Para |" in section
    named = "template variants" in section and "weaker test of wording" in section
    assert named is (paraphraser == "templates")
