"""Train the paper reranker: a cross-encoder fine-tuned from all-MiniLM-L6-v2 that reads (question, title +
abstract) and scores how well the paper answers it; topic answers reorder their fused top papers by it.

    python -m paperchat.reader.papers --data ../shared/data --out models/reader-papers [--judgments eval/reader/topic_judgments.jsonl]

Training data: SciFact's train claims (each relevant abstract against the hybrid retriever's best non-relevant
ones: hard negatives) and, with `--judgments`, graded topic judgments (a paper rated 2 against the ones rated 0
or 1 for its question, and one rated 1 against the 0s). The loss is the sentence reader's: a softmax over each
group plus a "none of them" option at logit 0, so a logit above 0 reads "relevant". Validation is by question:
a seeded share of the train claims and of the judged questions is held out, and the command prints the
reranked nDCG@10 there against the hybrid's, for each fusion weight. SciFact test is scored only with `--test`
(report it once, at the end). Needs torch and transformers (main dependencies); nothing is downloaded.
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from paperchat.fusion import rerank_fusion
from paperchat.reader.data import Group
from paperchat.reader.model import PAPER_TOKENS

DEPTH = 30  # papers reranked per question
NEGATIVES = 15  # hard negatives kept per SciFact group (sampled down to the group size at each step)


def _bench(data_dir: Path, split: str, root: Path) -> Any:
    from paperchat.evaluation.beir import Bench, load_scifact
    from paperchat.providers.embedders import get_embedder
    from paperchat.settings import load_settings

    settings = load_settings(data_dir=data_dir)
    return Bench(load_scifact(root, split), get_embedder(settings), data_dir / "cache"), settings


def hybrid(bench: Any, settings: Any, q: str, depth: int = DEPTH) -> list[str]:
    """The app's fused BM25 + dense ranking of the SciFact corpus for one query (its top `depth`)."""
    from paperchat.evaluation.beir import hybrid_ranking

    p = settings.retrieval
    lex, den = bench.rankings(q, 100, True)
    return hybrid_ranking(lex, den, p.rrf_k, p.dense_weight, p.lexical_weight)[:depth]


def scifact_groups(bench: Any, settings: Any, seed: int) -> list[Group]:
    """One group per (train claim, relevant abstract): the abstract and the claim's best non-relevant ones."""
    text = dict(zip(bench.data.doc_ids, bench.data.texts, strict=True))
    rng = random.Random(seed)
    out = []
    for qid, q in bench.data.queries.items():
        rel = {d for d, r in bench.data.qrels[qid].items() if r > 0}
        negs = [d for d in hybrid(bench, settings, q, 40) if d not in rel][:NEGATIVES]
        for d in sorted(rel):
            cands = [d, *negs]
            rng.shuffle(cands)
            out.append(Group(f"sf-{qid}-{d}", f"sf:{qid}", q, tuple(text[c] for c in cands), ("",) * len(cands), cands.index(d)))
    return out


def judged_groups(questions: Path, judgments: Path, texts: dict[str, str]) -> list[Group]:
    """Groups from graded topic judgments: each paper rated 2 against its question's 0s and 1s, each rated 1
    against the 0s."""
    qs = {r["id"]: r["question"] for r in map(json.loads, open(questions, encoding="utf-8")) if r.get("question")}
    rels: dict[str, dict[str, int]] = {}
    for r in map(json.loads, open(judgments, encoding="utf-8")):
        if r["paper"] in texts and r["id"] in qs:
            rels.setdefault(r["id"], {})[r["paper"]] = int(r["rel"])
    out = []
    for qid, rel in sorted(rels.items()):
        for p, g in sorted(rel.items()):
            negs = sorted(d for d, r in rel.items() if r < g)
            if g == 0 or not negs:
                continue
            cands = [p, *negs]
            out.append(Group(f"tj-{qid}-{p}", f"tj:{qid}", qs[qid], tuple(texts[c] for c in cands), ("",) * len(cands), 0))
    return out


def split_questions(groups: Sequence[Group], share: float, seed: int) -> tuple[list[Group], list[Group]]:
    """(train, validation) by question (a claim's groups stay together)."""
    keys = sorted({g.doc for g in groups})
    random.Random(seed).shuffle(keys)
    val = set(keys[: round(share * len(keys))])
    return [g for g in groups if g.doc not in val], [g for g in groups if g.doc in val]


def ndcg_rerank(bench: Any, settings: Any, qids: Sequence[str], score: Callable[[str, list[str]], np.ndarray],
                weights: Sequence[float]) -> dict[str, float]:
    """nDCG@10 over the queries of the hybrid ranking and of its reranked top DEPTH at each weight."""
    from paperchat.evaluation.beir import ndcg_at_k

    text = dict(zip(bench.data.doc_ids, bench.data.texts, strict=True))
    res: dict[str, list[float]] = {"hybrid": [], **{f"w{w}": [] for w in weights}}
    for qid in qids:
        q, rel = bench.data.queries[qid], bench.data.qrels[qid]
        first = hybrid(bench, settings, q)
        logits = score(q, [text[d] for d in first])
        res["hybrid"].append(ndcg_at_k(first, rel))
        for w in weights:
            res[f"w{w}"].append(ndcg_at_k(rerank_fusion(first, logits, w), rel))
    return {k: round(float(np.mean(v)), 4) for k, v in res.items()}


def ndcg_judged(questions: Path, judgments: Path, keys: set[str], texts: dict[str, str], score: Callable[[str, list[str]], np.ndarray],
                weights: Sequence[float]) -> dict[str, float]:
    """On judged topic questions (those in `keys`): graded nDCG@10 of the app's retrieved top 20 (every paper
    judged) in its own order and reordered by the reranker at each weight (gain 2^grade - 1)."""
    from paperchat.evaluation.beir import ndcg_at_k

    rels: dict[str, dict[str, int]] = {}
    for r in map(json.loads, open(judgments, encoding="utf-8")):
        rels.setdefault(r["id"], {})[r["paper"]] = int(r["rel"])

    def ndcg(ranked: Sequence[str], rel: dict[str, int]) -> float:
        return ndcg_at_k(ranked, rel, 10, exponential=True)

    res: dict[str, list[float]] = {"retrieved": [], **{f"w{w}": [] for w in weights}}
    for q in map(json.loads, open(questions, encoding="utf-8")):
        if q["id"] not in keys or q["id"] not in rels:
            continue
        first = [d for d in q["retrieved"] if d in texts]
        logits = score(q["question"], [texts[d] for d in first])
        res["retrieved"].append(ndcg(first, rels[q["id"]]))
        for w in weights:
            res[f"w{w}"].append(ndcg(rerank_fusion(first, logits, w), rels[q["id"]]))
    return {k: round(float(np.mean(v)), 4) for k, v in res.items() if v} | {"questions": len(res["retrieved"])}


def main(argv: Sequence[str] | None = None) -> int:
    """The training command (module docstring)."""
    ap = argparse.ArgumentParser(prog="python -m paperchat.reader.papers", description=__doc__.split("\n\n")[0])
    ap.add_argument("--data", type=Path, default=Path("../shared/data"))
    ap.add_argument("--data-dir", type=Path, default=Path(".paperchat-train"), help="where the SciFact vectors are cached")
    ap.add_argument("--judgments", type=Path, default=None, help="graded topic judgments (id, paper, rel), e.g. eval/reader/topic_judgments.jsonl")
    ap.add_argument("--questions", type=Path, default=None, help="the judged topic questions (id, question, retrieved), e.g. eval/reader/topic_questions.jsonl")
    ap.add_argument("--out", type=Path, default=Path("models/reader-papers"))
    ap.add_argument("--epochs", type=float, default=2.0)
    ap.add_argument("--group-size", type=int, default=8)
    ap.add_argument("--batch-groups", type=int, default=4)
    ap.add_argument("--lr", type=float, default=4e-5)
    ap.add_argument("--val-share", type=float, default=0.15)
    ap.add_argument("--seed", type=int, default=35)
    ap.add_argument("--bf16", action="store_true")
    ap.add_argument("--no-scifact", action="store_true", help="train on the topic judgments alone (SciFact still validates)")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--test", action="store_true", help="also score SciFact test (report once)")
    ap.add_argument("--no-export", action="store_true")
    ap.add_argument("--init", type=Path, default=None, help="start from a sentence reader's torch weights (reader.train --save-torch)")
    args = ap.parse_args(argv)
    import torch

    from paperchat.reader.train import export, torch_scorer, train

    torch.set_num_threads(args.threads)
    bench, settings = _bench(args.data_dir, "train", args.data / "scifact")
    groups = scifact_groups(bench, settings, args.seed)
    if args.no_scifact:  # SciFact's held-out claims still measure it; none of its groups train it
        _, sf_val = split_questions(groups, args.val_share, args.seed)
        groups = sf_val
    if args.judgments:
        texts = _abstract_texts(args.data)
        groups += judged_groups(args.questions or args.judgments, args.judgments, texts)
    train_g, val_g = split_questions(groups, args.val_share, args.seed)
    if args.no_scifact:
        train_g, val_g = [g for g in train_g if not g.doc.startswith("sf:")], val_g + [g for g in train_g if g.doc.startswith("sf:")]
    val_topic = {g.doc[3:] for g in val_g if g.doc.startswith("tj:")}
    val_claims = sorted({g.doc[3:] for g in val_g if g.doc.startswith("sf:")})
    print(f"train {len(train_g)} groups; validation {len(val_g)} groups ({len(val_claims)} SciFact claims)")
    t0 = time.perf_counter()
    model, tok = train(train_g, args.epochs, args.group_size, args.batch_groups, args.lr, args.seed, max_tokens=PAPER_TOKENS, bf16=args.bf16,
                       init=args.init)
    took = time.perf_counter() - t0
    scorer = torch_scorer(model, tok, PAPER_TOKENS)

    def score(q: str, texts: list[str]) -> np.ndarray:
        return np.asarray(scorer(Group("", "", q, tuple(texts), ("",) * len(texts), None)))

    weights = (0.5, 1.0, 2.0, 4.0, 1000.0)
    record: dict[str, Any] = {"args": {k: str(v) for k, v in vars(args).items()}, "train_groups": len(train_g), "train_seconds": round(took)}
    record["validation_scifact_train_claims"] = ndcg_rerank(bench, settings, val_claims, score, weights)
    print(f"validation (held-out train claims, torch): {json.dumps(record['validation_scifact_train_claims'])}  trained in {took:.0f} s")
    if args.judgments:
        record["validation_topic_questions"] = ndcg_judged(args.questions or args.judgments, args.judgments, val_topic, texts, score, weights)
        print(f"validation (held-out topic questions, torch): {json.dumps(record['validation_topic_questions'])}")
    if args.test:
        test, _ = _bench(args.data_dir, "test", args.data / "scifact")
        record["scifact_test_torch"] = ndcg_rerank(test, settings, sorted(test.data.queries), score, weights)
        print(f"SciFact test (torch): {json.dumps(record['scifact_test_torch'])}")
    if not args.no_export:
        from paperchat.reader.model import SentenceReader

        fp32, int8 = export(model, tok, args.out)
        for name, path in (("fp32", fp32), ("int8", int8)):
            onnx_score: Callable[[str, list[str]], np.ndarray] = SentenceReader(path.parent, model_file=path.name, check=False, max_tokens=PAPER_TOKENS).score
            record[f"validation_onnx_{name}"] = ndcg_rerank(bench, settings, val_claims, onnx_score, weights)
            if args.judgments:
                record[f"validation_onnx_{name}_topic"] = ndcg_judged(args.questions or args.judgments, args.judgments, val_topic, texts, onnx_score, weights)
            print(f"validation (onnx {name}): {json.dumps(record[f'validation_onnx_{name}'])}")
        fp32.unlink()
        (args.out / "training.json").write_text(json.dumps(record, indent=2) + "\n")
    return 0


def _abstract_texts(data: Path) -> dict[str, str]:
    from paperchat.reader.data import _abstracts

    return {pid: f"{title}. {abstract}" for pid, (title, abstract) in _abstracts(str(data)).items()}


if __name__ == "__main__":
    sys.exit(main())
