"""SQL literals for the queries the project builds as text."""

from __future__ import annotations

from collections.abc import Iterable


def sql_string(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"


def sql_list(values: Iterable[str], *, numeric: bool = False) -> str:
    """The items of an ``IN (...)`` list (``NULL`` for none, which matches nothing)."""
    items = [str(int(v)) if numeric else sql_string(str(v)) for v in values]
    return ", ".join(items) if items else "NULL"
