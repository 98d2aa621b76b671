"""The cell picker: which candidate sentence answers a table column, learned from cells written by reading.

The sentence reader (models/reader-sentence) was trained on specific questions ("which learning rate ..."); a
column's question is generic ("Which datasets are used?") and the reader alone picks the right sentence for
about one cell in nine. The cell picker adds what a column is: for each preset column, a prototype (the mean
MiniLM vector of the training cells' evidence sentences), and a logistic regression over
- the reader's logit for (column question, sentence) with its neighbours,
- the cosine of the sentence to the column's question and to the column's prototype, and that cosine less the
  sentence's best cosine to the other columns' prototypes (a Task sentence states a problem, an Approach one
  proposes; the margin tells them apart where both are near the paper's subject),
- a per-column probe: a logistic regression on the sentence's MiniLM vector, fitted per column on the training
  cells' candidates (for the training rows themselves, scores from probes fitted without their paper),
- where the sentence is (abstract, page 1, relative page) and what it holds (a number, a URL),
- the column's words: hashed (column, word) and (column, word pair) indicators, so it learns that a Datasets
  answer says "benchmark" or "evaluate on", a Compute answer "GPU", a Code answer "github",
trained on eval/table_train.jsonl, table_train_b.jsonl and table_train_c.jsonl (190 papers: 28 PDFs and 162
abstracts, none of the evaluation's 24). A candidate is positive when it is one of the cell's evidence sentences (half of its content
words on a gold page) or holds the gold value. The cell's best candidate below `not_stated_below` makes the cell
"not stated"; that threshold is chosen on scores of papers the scoring model was not fitted on.

`python -m paperchat.tables.train --data ../shared/data` (those three files by default) chooses C and the word
features by cross-validation grouped by paper, trains and writes models/table-cells/.
"""

from __future__ import annotations

import json
import re
import unicodedata
import zlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from paperchat.settings import PROJECT_ROOT
from paperchat.tables.columns import Column

MODEL_DIR = PROJECT_ROOT / "models" / "table-cells"
FEATURES = ["reader", "cos_question", "cos_prototype", "abstract", "first_page", "page_frac", "number", "url", "length", "position", "lead",
            "proto_margin", "probe"]
_WORD = re.compile(r"[a-z0-9]+")
_STOP = frozenset("a an and are as at be by for from in is it its of on or the this that to was were with we our".split())
_URL = re.compile(r"https?://|github|\.com\b|\.org\b|available at|publicly available|release", re.I)
_NUM = re.compile(r"\d")


WORD_BUCKETS = 1 << 15


def word_keys(column: str, text: str) -> list[int]:
    """The hashed (column, word) and (column, word pair) features of a sentence, each once: what a column's
    answers tend to say ("benchmark", "GPU", "github", "we propose") learned per column."""
    toks = [w for w in _WORD.findall(unicodedata.normalize("NFKC", text).lower()) if w not in _STOP]
    grams = set(toks) | {f"{a} {b}" for a, b in zip(toks, toks[1:], strict=False)}
    return sorted({zlib.crc32(f"{column}|{g}".encode()) % WORD_BUCKETS for g in grams})


def letters_and_digits(text: str) -> str:
    """Lower-case letters and digits only (NFKC first: ligatures and wide forms become letters), to compare quotes."""
    return "".join(_WORD.findall(unicodedata.normalize("NFKC", text).lower()))


def content_words(text: str) -> set[str]:
    """The lower-case words of a text (NFKC), without the stop words."""
    return set(_WORD.findall(unicodedata.normalize("NFKC", text).lower())) - _STOP


def restates(evidence: set[str], text: str) -> bool:
    """Whether a text holds half or more of an evidence sentence's content words (`content_words(evidence)`)."""
    return bool(evidence) and len(evidence & content_words(text)) / len(evidence) >= 0.5


def answers(text: str, page: int | None, gold: dict[str, Any]) -> bool:
    """Whether a candidate sentence is a gold cell's answer: it holds the gold value (or an alias), or it is one
    of the evidence sentences (half of its content words or more, on a gold page or in the abstract)."""
    if gold.get("not_stated"):
        return False
    q = letters_and_digits(text)
    if any(letters_and_digits(v) and letters_and_digits(v) in q for v in [gold.get("gold_answer", ""), *gold.get("answer_aliases", [])]):
        return True
    pages = gold.get("gold_pages") or []
    for ev in gold.get("evidence", []):
        if restates(content_words(ev), text) and (not pages or page is None or page in pages):
            return True
    return False


def vector_features(column: str, vectors: np.ndarray, prototypes: dict[str, np.ndarray],
                    probes: dict[str, tuple[np.ndarray, float]]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The features read from the sentences' unit vectors: the cosine to the column's prototype, its margin over
    the other columns' prototypes, and the column's probe (zeros for a column without a prototype)."""
    n = len(vectors)
    proto = prototypes.get(column)
    if proto is None or not n:
        zero = np.zeros(n, dtype=np.float32)
        return zero, zero, zero
    cos_p = vectors @ proto
    others = [vectors @ v for k, v in prototypes.items() if k != column]
    margin = cos_p - np.max(others, axis=0) if others else np.zeros(n, dtype=np.float32)
    probe = probes.get(column)
    return cos_p, margin, (vectors @ probe[0] + probe[1]) if probe is not None else np.zeros(n, dtype=np.float32)


@dataclass
class CellModel:
    """Prototypes per column name, the logistic regression's weights, and the not-stated threshold."""

    prototypes: dict[str, np.ndarray]
    mean: np.ndarray
    scale: np.ndarray
    coef: np.ndarray
    bias: float
    not_stated_below: float
    words: dict[int, float] = field(default_factory=dict)  # hashed (column, word or word pair) -> weight
    probes: dict[str, tuple[np.ndarray, float]] = field(default_factory=dict)  # column -> (weights on the vector, bias)

    def vector_features(self, column: str, vectors: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """`vector_features` with this model's prototypes and probes."""
        return vector_features(column, vectors, self.prototypes, self.probes)

    def features(self, column: Column, texts: list[str], pages: list[int | None], reader: np.ndarray, vectors: np.ndarray, qvec: np.ndarray, n_pages: int,
                 positions: list[int] | None = None) -> np.ndarray:
        """One row of FEATURES per candidate (vectors and qvec unit-length; positions: each sentence's index in its
        chunk, the abstract's title being 0)."""
        pos = positions if positions is not None else [5] * len(texts)
        cos_p, margin, probe = self.vector_features(column.name, vectors)
        rows = [
            [float(reader[i]), float(vectors[i] @ qvec), float(cos_p[i]), float(p is None), float(p == 1),
             (p or 0) / max(n_pages, 1), float(bool(_NUM.search(t))), float(bool(_URL.search(t))), min(len(t), 400) / 400,
             min(pos[i], 20) / 20, float(pos[i] <= 1), float(margin[i]), float(probe[i])]
            for i, (t, p) in enumerate(zip(texts, pages, strict=True))
        ]
        return np.asarray(rows, dtype=np.float32)

    def score(self, x: np.ndarray, column: Column | None = None, texts: list[str] | None = None) -> np.ndarray:
        """The logistic regression's logit per row; with the column and the rows' texts, its word weights too."""
        out = ((x - self.mean) / self.scale) @ self.coef + self.bias
        if self.words and column is not None and texts is not None:
            out = out + np.asarray([sum(self.words.get(k, 0.0) for k in word_keys(column.name, t)) for t in texts], dtype=np.float32)
        return out

    def read_first(self, x: np.ndarray, column: Column, texts: list[str], k: int) -> np.ndarray:
        """The indexes, in order, of the `k` candidates this model ranks best without the reader (its logit set to
        the training mean): the ones the reader reads, as reading is most of a cell's time."""
        guess = x.copy()
        guess[:, FEATURES.index("reader")] = self.mean[FEATURES.index("reader")]
        return np.sort(np.argsort(-self.score(guess, column, texts))[:k])

    def save(self, folder: Path, meta: dict[str, Any]) -> None:
        """model.json (weights) and training.json (what it was trained on, with its numbers)."""
        folder.mkdir(parents=True, exist_ok=True)
        data = {
            "features": FEATURES, "prototypes": {k: v.round(6).tolist() for k, v in self.prototypes.items()},
            "mean": self.mean.tolist(), "scale": self.scale.tolist(), "coef": self.coef.tolist(), "bias": self.bias,
            "not_stated_below": self.not_stated_below,
            "words": {str(k): round(v, 5) for k, v in sorted(self.words.items()) if abs(v) >= 1e-4},
            "probes": {k: {"w": w.round(6).tolist(), "b": round(b, 6)} for k, (w, b) in self.probes.items()},
        }
        (folder / "model.json").write_text(json.dumps(data))
        (folder / "training.json").write_text(json.dumps(meta, indent=1))

    @classmethod
    def load(cls, folder: Path = MODEL_DIR) -> CellModel | None:
        """The trained model, or None when it is not there (the reader alone picks then)."""
        path = folder / "model.json"
        if not path.exists():
            return None
        d = json.loads(path.read_text())
        if d.get("features") != FEATURES:
            return None
        return cls({k: np.asarray(v, dtype=np.float32) for k, v in d["prototypes"].items()}, np.asarray(d["mean"], dtype=np.float32),
                   np.asarray(d["scale"], dtype=np.float32), np.asarray(d["coef"], dtype=np.float32), float(d["bias"]), float(d["not_stated_below"]),
                   {int(k): float(v) for k, v in d.get("words", {}).items()},
                   {k: (np.asarray(v["w"], dtype=np.float32), float(v["b"])) for k, v in d.get("probes", {}).items()})
