"""The core facade: what the app, the CLI, the evaluation and the benchmarks do with a library.

`Assistant` opens the library (store, catalogue, search index, topics) once, resolves answerers by name and
offers the operations the edges need: ask and stream, topic pages, papers, adding PDFs, follows and saves,
ingest and removal. It returns our own types (`paperchat.types`) and the small records of `records`.
Nothing above this package reaches into the library, the store or the catalogue; the pure helpers the edges
share (dates typed by a person, terminal-safe text, citation marks ...) they import from their own modules, the
vocabulary layer of `tests/test_layers.py`.

Importing it is light: the library (Chroma, the embedder) is imported when an `Assistant` is made.
"""

from typing import TYPE_CHECKING, Any

from paperchat.assistant.core import Assistant
from paperchat.assistant.discovery import TopicDetail
from paperchat.assistant.records import PaperList, PdfResult, RelatedTopic, TopicPage, TopicPreview, TopicSummary
from paperchat.assistant.standalone import (
    REPAIR,
    check_data_dir,
    check_question,
    llm_model,
    pdf_folder,
    preview_topics,
    repair_data_dir,
    resolve_answerer,
)
from paperchat.ingestion.records import Failure
from paperchat.reading import ZOOMS, PageView
from paperchat.topics import Momentum

__all__ = [
    "REPAIR",
    "Assistant",
    "Failure",
    "IngestReport",
    "PageView",
    "ZOOMS",
    "Momentum",
    "PaperList",
    "PdfResult",
    "RelatedTopic",
    "TopicDetail",
    "TopicPage",
    "TopicPreview",
    "TopicSummary",
    "check_data_dir",
    "check_question",
    "llm_model",
    "pdf_folder",
    "preview_topics",
    "repair_data_dir",
    "resolve_answerer",
]

if TYPE_CHECKING:
    from paperchat.ingestion.plans import IngestReport


def __getattr__(name: str) -> Any:
    """`IngestReport` on first use: its module imports the library (Chroma), which importing the facade must not."""
    if name == "IngestReport":
        from paperchat.ingestion.plans import IngestReport

        return IngestReport
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
