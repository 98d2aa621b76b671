"""The sentence reader's training data: questions with the location of the sentence that answers them, read back
into (question, candidate sentences, which one answers) groups from the shared data.

The repository stores questions and locations (`eval/reader/answers.jsonl`: a PDF page or an abstract, the
answer's span in that text and its sha1), never the PDFs' text. A group's candidates are the quotable sentences
the AskPDF answerer itself sees (`answering.text.candidates` over the page's text as the project's PDF parser
reads it), so the model learns exactly the choice it makes at run time; the answer is the candidate that
overlaps the located span most.
"""

from __future__ import annotations

import hashlib
import json
import random
import re
from collections.abc import Collection, Iterator, Sequence
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from paperchat.answering.select import neighbours_of
from paperchat.answering.text import candidates
from paperchat.errors import ConfigError
from paperchat.text import Tokenizer
from paperchat.types import Source

ABSTRACTS = "abstracts/arxiv_daily_csCL_csAI_2025-03_2026-07.jsonl"
VALIDATION_DOCS = Path(__file__).resolve().parents[3] / "eval" / "reader" / "validation_docs.txt"
_WORD = re.compile(r"\w+")


def _norm(text: str) -> str:
    return " ".join(text.split())


@lru_cache(maxsize=8)
def _pypdf_pages(path: str) -> tuple[str, ...]:
    import pypdf

    return tuple(p.extract_text() or "" for p in pypdf.PdfReader(path).pages)


def pypdf_page_text(path: Path, page: int) -> str:
    """Page `page` (1-based) of the PDF as pypdf extracts it, unaltered: the text the locations index into."""
    pages = _pypdf_pages(str(path))
    if not 1 <= page <= len(pages):
        raise ConfigError(f"{path} has no page {page}", "check the location file against ../shared/data")
    return pages[page - 1]


@lru_cache(maxsize=2)
def _abstracts(data: str) -> dict[str, tuple[str, str]]:
    out = {}
    with open(Path(data) / ABSTRACTS, encoding="utf-8") as fh:
        for line in fh:
            r = json.loads(line)
            out[r["id"]] = (_norm(r["title"]), _norm(r["abstract"]))
    return out


def abstract_text(data: Path, paper_id: str) -> str:
    """The abstract of a shared-corpus paper, whitespace-normalised."""
    return _abstracts(str(data))[paper_id][1]


@lru_cache(maxsize=8)
def _parsed_pages(path: str) -> tuple[str, ...]:
    from paperchat.ingestion.pdf import read_pdf

    return tuple(p.text for p in read_pdf(Path(path), max_mb=200, max_pages=500).pages)


@dataclass(frozen=True)
class Group:
    """One question with the candidate sentences of its text; `answer` is the index of the one that answers it
    (None for a near miss: no candidate does). `doc` keys the split (a PDF or an abstract)."""

    qid: str
    doc: str
    question: str
    cands: tuple[str, ...]
    contexts: tuple[str, ...]
    answer: int | None
    hard_from: int | None = None  # candidates from here on are other pages' sentences the answerer ranks high (with_hard)


def _overlap(a: str, b: str) -> float:
    wa, wb = set(_WORD.findall(a.lower())), set(_WORD.findall(b.lower()))
    return len(wa & wb) / max(1, min(len(wa), len(wb))) if wa and wb else 0.0


def _source(row: dict[str, object], data: Path) -> tuple[Source, str, str]:
    """The Source the answerer would see for a location, its document key, and the located gold text."""
    if row["source"] == "pdf":
        pdf = data / "pdfs" / str(row["pdf"])
        page = int(str(row["page"]))
        raw = _norm(pypdf_page_text(pdf, page))
        text = _parsed_pages(str(pdf))[page - 1]
        src = Source(n=1, paper_id=str(row["pdf"]), title="", text=text, page=page, score=1.0)
        doc = f"pdf:{row['pdf']}"
    else:
        title, raw = _abstracts(str(data))[str(row["paper_id"])]
        src = Source(n=1, paper_id=str(row["paper_id"]), title=title, text=f"{title}\n\n{raw}", page=None, score=1.0)
        doc = f"abs:{row['paper_id']}"
    gold = ""
    if "start" in row:
        gold = raw[int(str(row["start"])) : int(str(row["end"]))]
        if hashlib.sha1(gold.encode("utf-8")).hexdigest()[:16] != row["sha1"]:
            raise ConfigError(f"location {row['id']} does not match its text (sha1)", "the shared data changed: write the locations again")
    return src, doc, gold


def load_groups(files: Sequence[Path], data: Path, tok: Tokenizer) -> Iterator[Group]:
    """Groups from location files; an answer whose span matches no candidate well (a table cell the splitter
    joined differently) is skipped."""
    for f in files:
        with open(f, encoding="utf-8") as fh:
            rows = [json.loads(line) for line in fh if line.strip()]
        for row in rows:
            src, doc, gold = _source(row, data)
            cands = candidates([src], tok)
            if not cands:
                continue
            answer = None
            if gold:
                scores = [_overlap(gold, c.text) for c in cands]
                best = max(range(len(cands)), key=scores.__getitem__)
                if scores[best] < 0.6:
                    continue
                answer = best
            yield Group(
                str(row["id"]), doc, str(row["question"]), tuple(c.text for c in cands), tuple(neighbours_of(cands, i) for i in range(len(cands))), answer
            )


def load_hard(path: Path) -> dict[str, list[dict[str, str]]]:
    """Mined hard negatives (scripts/reader_hard_negatives.py): question id -> [{text, context}, ...]."""
    out = {}
    with open(path, encoding="utf-8") as fh:
        for line in fh:
            if line.strip():
                row = json.loads(line)
                out[str(row["id"])] = list(row["negatives"])
    return out


def with_hard(groups: Sequence[Group], hard: dict[str, list[dict[str, str]]]) -> list[Group]:
    """Each answer group with its mined negatives appended after its page's sentences (`hard_from` marks them);
    near misses stay as they are (another page may answer them: only the page was checked)."""
    out = []
    for g in groups:
        negs = hard.get(g.qid) if g.answer is not None else None
        if negs:
            g = Group(g.qid, g.doc, g.question, g.cands + tuple(n["text"] for n in negs), g.contexts + tuple(n["context"] for n in negs),
                      g.answer, len(g.cands))
        out.append(g)
    return out


def split_by_document(
    groups: Sequence[Group], val_share: float, seed: int = 35, listed: Collection[str] | None = None
) -> tuple[list[Group], list[Group]]:
    """(train, validation): whole documents go to one side, never a question's page to both. `listed`: the
    validation documents, fixed (`VALIDATION_DOCS`), so that a reader trained on more data is measured on the
    same documents as the one before it; otherwise a seeded `val_share` of the documents."""
    if listed is not None:
        val_docs = set(listed)
    else:
        docs = sorted({g.doc for g in groups})
        random.Random(seed).shuffle(docs)
        val_docs = set(docs[: max(1, round(val_share * len(docs)))])
    return [g for g in groups if g.doc not in val_docs], [g for g in groups if g.doc in val_docs]


def validation_docs(path: Path = VALIDATION_DOCS) -> list[str]:
    """The fixed validation documents (one document key per line: `pdf:<path>` or `abs:<paper id>`)."""
    return [line.strip() for line in path.read_text(encoding="utf-8").splitlines() if line.strip() and not line.startswith("#")]
