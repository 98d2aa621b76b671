"""The tables half of the facade: comparison tables (`paperchat.table`) over this library."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from paperchat.table import Column, Table


class TableOps:
    """Comparison tables (a mixin of Assistant: it needs an open library and the answerers)."""

    _table_builder: Any = None

    def comparison(self, paper_ids: Sequence[str], columns: Sequence[Column | str], progress: Callable[[int, int], None] | None = None) -> Table:
        """Papers by columns, every cell a quote with its citation or "not stated" (cells cached in the data folder).

        Raises:
            InputError: no paper, no column, an unknown paper, or more than 50 x 12.
        """
        from paperchat.table import TableBuilder, column_of

        if self._table_builder is None:
            self._table_builder = TableBuilder(self)  # type: ignore[arg-type]  # the Assistant this mixin is part of
        cols = [c if not isinstance(c, str) else column_of(c) for c in columns]
        return self._table_builder.build(paper_ids, cols, progress)

    def comparison_papers(self, topic: str | None = None, collection: str | None = None, papers: str | None = None,
                          question: str | None = None, limit: int = 10) -> list[str]:
        """The papers of a table: a topic's (or collection's) newest, the given ids, or those a topic answer cites."""
        from paperchat.table import scope_papers

        return scope_papers(self, topic=topic, collection=collection, papers=papers, question=question, limit=limit)  # type: ignore[arg-type]
