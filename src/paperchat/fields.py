"""BM25 fields beyond a chunk's own text: the paper's title (`TitleField`, a field weight added to every chunk of
the paper) and the sentence pairs of one paper (`SentenceWindows`, a ranking of its chunks by their best pair)."""

from __future__ import annotations

import math
import os
from collections import Counter
from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np

from paperchat.search_index import SearchSnapshot
from paperchat.text import split_sentences


class TitleField:
    """BM25 over paper titles, as a second field of every chunk: a paper whose title holds the question's
    words gains on all its chunks (a field weight added to the text's BM25, not a ranking of its own).
    Built from the catalogue for one search snapshot (32k titles: about a second)."""

    def __init__(self, snapshot: SearchSnapshot, titles: dict[str, str], k1: float = 1.2, b: float = 0.75) -> None:
        from scipy import sparse

        self.name = snapshot.name
        papers = sorted(set(snapshot.paper_ids.tolist()))
        row = {pid: i for i, pid in enumerate(papers)}
        vocab: dict[str, int] = {}
        rows: list[int] = []
        cols: list[int] = []
        tfs: list[float] = []
        lengths = np.zeros(len(papers), dtype=np.float32)
        for i, pid in enumerate(papers):
            counts = Counter(snapshot.tokenizer(titles.get(pid, "")))
            lengths[i] = sum(counts.values())
            for term, c in counts.items():
                rows.append(i)
                cols.append(vocab.setdefault(term, len(vocab)))
                tfs.append(c)
        avg = float(lengths.mean()) if len(papers) and lengths.mean() > 0 else 1.0
        tf = np.asarray(tfs, dtype=np.float32)
        norm = k1 * (1 - b + b * lengths[np.asarray(rows, dtype=np.int64)] / avg) if rows else np.zeros(0, np.float32)
        weights = tf * (k1 + 1) / (tf + norm)
        matrix = sparse.csc_matrix((weights, (rows, cols)), shape=(len(papers), max(1, len(vocab))), dtype=np.float32)
        df = np.diff(matrix.indptr).astype(np.float32)
        self.idf = np.log(1 + (len(papers) - df + 0.5) / (df + 0.5))
        self.matrix = matrix
        self.vocab = vocab
        self.chunk_row = np.asarray([row[pid] for pid in snapshot.paper_ids.tolist()], dtype=np.int64)

    def save(self, path: Path) -> None:
        """Write the field beside the snapshot's other derived data (atomically; other snapshots' files go)."""
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(path.name + ".tmp.npz")
        terms = sorted(self.vocab, key=self.vocab.__getitem__)
        np.savez(tmp, data=self.matrix.data, indices=self.matrix.indices, indptr=self.matrix.indptr, shape=np.asarray(self.matrix.shape),
                 idf=self.idf, chunk_row=self.chunk_row, terms=np.asarray(terms, dtype=object).astype(str))
        os.replace(tmp, path)
        for old in path.parent.glob("titles-*.npz"):
            if old != path:
                old.unlink(missing_ok=True)

    @classmethod
    def load(cls, path: Path, snapshot: SearchSnapshot) -> TitleField | None:
        """The field saved for this snapshot, or None (absent, another snapshot's, or unreadable)."""
        from scipy import sparse

        try:
            with np.load(path, allow_pickle=False) as z:
                shape = tuple(int(x) for x in z["shape"])
                matrix = sparse.csc_matrix((z["data"], z["indices"], z["indptr"]), shape=shape)
                field = cls.__new__(cls)
                field.name, field.matrix, field.idf, field.chunk_row = snapshot.name, matrix, z["idf"], z["chunk_row"]
                field.vocab = {str(t): i for i, t in enumerate(z["terms"])}
        except Exception:  # absent, truncated (BadZipFile, EOFError), or not ours: built again
            return None
        if len(field.chunk_row) != len(snapshot.ids) or len(field.vocab) != shape[1] and field.vocab:
            return None
        return field

    def scores(self, query: str, tokenizer: Callable[[str], list[str]]) -> np.ndarray | None:
        """The title BM25 score of every chunk's paper, per chunk of the snapshot (None: no title word)."""
        cols = [self.vocab[t] for t in dict.fromkeys(tokenizer(query)) if t in self.vocab]
        if not cols:
            return None
        paper = np.asarray(self.matrix[:, cols] @ self.idf[cols]).ravel()
        return paper[self.chunk_row]


class SentenceWindows:
    """Sentence pairs of one paper's chunks, tokenised once, for BM25 with the paper's own statistics."""

    K1, B = 1.2, 0.75

    def __init__(self, owner: list[str], tokens: list[dict[str, int]], lengths: np.ndarray) -> None:
        self.owner = owner
        self.tokens = tokens
        self.lengths = lengths
        self.df: dict[str, int] = {}
        for toks in tokens:
            for t in toks:
                self.df[t] = self.df.get(t, 0) + 1

    @classmethod
    def build(cls, chunks: Sequence[tuple[str, str]], tokenizer: Callable[[str], list[str]]) -> SentenceWindows:
        """The sentence pairs of each (chunk id, text), tokenised."""

        owner: list[str] = []
        tokens: list[dict[str, int]] = []
        lengths: list[int] = []
        for cid, text in chunks:
            sents = [tokenizer(s) for s in split_sentences(text)] or [tokenizer(text)]
            for i in range(len(sents)):
                toks = sents[i] + (sents[i + 1] if i + 1 < len(sents) else [])
                owner.append(cid)
                tokens.append(dict(Counter(toks)))
                lengths.append(len(toks))
        return cls(owner, tokens, np.asarray(lengths, dtype=np.float32))

    def rank(self, query_terms: Sequence[str]) -> list[str]:
        """Chunk ids ranked by the BM25 score of their best sentence pair (chunks without a query word left out)."""
        n = len(self.tokens)
        if not n or not query_terms:
            return []
        avg = float(self.lengths.mean()) or 1.0
        scores = np.zeros(n, dtype=np.float32)
        for t in query_terms:
            df = self.df.get(t, 0)
            if not df:
                continue
            idf = math.log(1 + (n - df + 0.5) / (df + 0.5))
            for i, toks in enumerate(self.tokens):
                tf = toks.get(t)
                if tf:
                    scores[i] += idf * tf * (self.K1 + 1) / (tf + self.K1 * (1 - self.B + self.B * self.lengths[i] / avg))
        best: dict[str, float] = {}
        for i in np.flatnonzero(scores > 0).tolist():
            cid = self.owner[i]
            if scores[i] > best.get(cid, 0.0):
                best[cid] = float(scores[i])
        return sorted(best, key=lambda c: -best[c])
