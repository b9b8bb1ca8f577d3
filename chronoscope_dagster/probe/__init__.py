"""The time-grounded probe: does a memory system honour the timestamps it is given?

In LongMemEval-style evaluation the session dates reach the reader as text, so a system that
stores no time at all still answers temporal questions. The probe delivers the dates through a
typed channel, runs the same questions with the printed dates (control) and without them
(probe), and reads the difference. Its corpus is written so that no message holds a date:
every temporal phrase is relative and needs the session's own timestamp.

Data flow: ``assemble.build_corpus`` (authored + generated, validated) -> ``runs.run_probe``
(four arms, checker and optional LLM judge) -> ``report.build_report`` ->
``report.render_markdown``. Scores here are not comparable with LongMemEval's. This package
never imports Dagster.
"""
