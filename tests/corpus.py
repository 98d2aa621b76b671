"""Small real inputs for the fast layer: the bundled demo corpus and a four-page paper written as a real PDF.

The paper is ours (written for these tests, so its facts are known and its pages can be asked about); it is a
real PDF that pypdf parses like any other. Nothing here needs MiniLM or ../shared/data.
"""

from __future__ import annotations

import gzip
import json
from pathlib import Path

from .pdfmaker import make_pdf

DEMO_RECORDS = Path(__file__).resolve().parents[1] / "ingest" / "demo" / "abstracts.jsonl.gz"

PAPER_ID = "2401.09999"
PAPER_TITLE = "Hard Negatives for Dense Passage Retrieval over Scientific Papers"
PAPER_DATE = "2026-06-15"  # inside the demo corpus's weeks
PAPER_ABSTRACT = (
    "We study dense passage retrieval for questions about scientific papers and show that negative passages "
    "mined with BM25 matter more than the size of the encoder. Better retrievers make retrieval-augmented "
    "generation over papers more accurate."
)

# page number -> text; each page states facts that one question below asks about
PAPER_PAGES = [
    f"{PAPER_TITLE}\narXiv:{PAPER_ID}v1 [cs.CL] 12 Jan 2024\nAda Lovelace, Charles Babbage\n"
    "Abstract. We study dense passage retrieval for questions about scientific papers. A dual encoder maps "
    "questions and passages to vectors, and retrieval is a nearest neighbour search over those vectors. We show "
    "that the choice of negative passages during training matters more than the size of the encoder.",
    "2 Method. The question encoder and the passage encoder are two independent BERT base networks. "
    "Negative passages are chosen in two ways: the top passages returned by BM25 that do not contain the "
    "answer, and the gold passages of the other questions in the same training batch. These in-batch "
    "negatives make each batch of 128 questions give 127 negatives for free. The encoders are trained with "
    "a contrastive loss for 40 epochs with a learning rate of 2e-5.",
    "3 Experiments. We evaluate on three question answering datasets: Natural Questions, TriviaQA and "
    "SciQA, a new set of 2,000 questions about machine learning papers. Top-20 retrieval accuracy on SciQA "
    "rises from 61.2 with random negatives to 74.8 with BM25 hard negatives. The index holds 21 million "
    "passages of 100 words each and answers one query in about 30 milliseconds on a single GPU.",
    "4 Conclusion. Hard negatives from a lexical retriever are a cheap way to train a better dense "
    "retriever. Future work will study how the negatives interact with the length of the passages.\n"
    "References. [1] Karpukhin et al. Dense passage retrieval for open-domain question answering. 2020. "
    "[2] Robertson and Zaragoza. The probabilistic relevance framework: BM25 and beyond. 2009.",
]

# (question, the page that answers it, words the answer should quote)
PAPER_QUESTIONS = [
    ("How are negative passages chosen when training the encoders?", 2, "BM25"),
    ("Which datasets are used to evaluate retrieval?", 3, "TriviaQA"),
    ("How fast does the index answer one query?", 3, "30 milliseconds"),
]


def write_paper(path: Path) -> Path:
    """The four-page paper as a real PDF at `path` (its first page carries the arXiv stamp)."""
    return make_pdf(path, PAPER_PAGES, title=PAPER_TITLE)


def write_paper_folder(folder: Path) -> Path:
    """A folder with the paper's PDF and a metadata.json sidecar (title, authors, abstract, date), as the
    shared PDFs come; with its abstract the paper is a member of the "rag" topic."""
    folder.mkdir(parents=True, exist_ok=True)
    write_paper(folder / "paper.pdf")
    meta = [{"file": "paper.pdf", "arxiv_id": PAPER_ID, "title": PAPER_TITLE, "authors": ["Ada Lovelace", "Charles Babbage"],
             "abstract": PAPER_ABSTRACT, "version_date": PAPER_DATE}]
    (folder / "metadata.json").write_text(json.dumps(meta), encoding="utf-8")
    return folder


def demo_lines(n: int, start: int = 0) -> list[str]:
    """The raw JSONL lines of n records of the bundled demo corpus, from record `start` on."""
    with gzip.open(DEMO_RECORDS, "rt", encoding="utf-8") as fh:
        lines = [line for i, line in enumerate(fh) if start <= i < start + n]
    return lines
