"""Metrics as small typed functions returning (value, reason). SQuAD-style answer normalisation."""

from __future__ import annotations

import difflib
import math
import re
import string
import unicodedata
from collections import Counter
from collections.abc import Sequence

from paperchat.citations import parse_citations
from paperchat.text import Tokenizer, normalize_for_match, split_sentences

Metric = tuple[float, str]


def normalize_answer(text: str) -> str:
    """SQuAD normalisation: lower case, no punctuation, no articles, single spaces."""
    text = text.lower()
    text = "".join(ch for ch in text if ch not in set(string.punctuation))
    text = re.sub(r"\b(a|an|the)\b", " ", text)
    return " ".join(text.split())


def token_f1(prediction: str, gold: str) -> float:
    """SQuAD-style token F1 between a prediction and one gold answer."""
    p, g = normalize_answer(prediction).split(), normalize_answer(gold).split()
    if not p or not g:
        return float(p == g)
    common = Counter(p) & Counter(g)
    same = sum(common.values())
    if same == 0:
        return 0.0
    precision, recall = same / len(p), same / len(g)
    return 2 * precision * recall / (precision + recall)


def best_f1(prediction: str, golds: Sequence[str]) -> Metric:
    """Best token F1 against any of the gold answers, with the gold answer it came from."""
    golds = [g for g in golds if g]
    if not golds:
        return 0.0, "no gold answer"
    scores = [(token_f1(prediction, g), g) for g in golds]
    f, g = max(scores)
    return f, f"best against {g!r}"


def contains(prediction: str, golds: Sequence[str]) -> Metric:
    """1.0 when a gold answer or alias appears (normalised) in the prediction."""
    p = f" {normalize_answer(prediction)} "
    for g in golds:
        ng = normalize_answer(g)
        if ng and f" {ng} " in p:
            return 1.0, f"contains {g!r}"
    return 0.0, "no gold answer or alias in the answer"


def exact(prediction: str, golds: Sequence[str]) -> Metric:
    """1.0 when the normalised prediction equals a gold answer."""
    p = normalize_answer(prediction)
    return (1.0, "exact") if any(p == normalize_answer(g) for g in golds if g) else (0.0, "not exact")


def recall_at(ranked_papers: Sequence[str], gold: Sequence[str], k: int) -> Metric:
    """Share of gold papers among the first k distinct retrieved papers."""
    top = list(dict.fromkeys(ranked_papers))[:k]
    if not gold:
        return 0.0, "no gold papers"
    found = [g for g in gold if g in top]
    return len(found) / len(gold), f"{len(found)} of {len(gold)} gold papers in the top {k}"


def judged_precision(ranked_papers: Sequence[str], judged: dict[str, int], k: int = 10) -> Metric:
    """Share of the judged papers among the first k distinct retrieved papers that were judged relevant (2): a
    measure of the whole list, where the gold papers of a many-paper question are only some of the right ones.
    Papers nobody judged are left out (a condensed list); `judged_share` says how many that was. With no judged
    paper in the top k there is nothing to measure: callers skip the measure then (`judged_share` is 0)."""
    top = [p for p in list(dict.fromkeys(ranked_papers))[:k] if p in judged]
    if not top:
        return 0.0, f"none of the top {k} papers was judged"
    good = sum(judged[p] == 2 for p in top)
    return good / len(top), f"{good} of the {len(top)} judged papers in the top {k} relevant"


def judged_share(ranked_papers: Sequence[str], judged: dict[str, int], k: int = 10) -> Metric:
    """Share of the first k distinct retrieved papers that have a judgment (1.0: `judged_precision` saw them all)."""
    top = list(dict.fromkeys(ranked_papers))[:k]
    if not top:
        return 0.0, "nothing retrieved"
    n = sum(p in judged for p in top)
    return n / len(top), f"{n} of the top {len(top)} papers judged"


def judged(ranked_papers: Sequence[str], judgments: dict[str, int], k: int = 10) -> dict[str, Metric]:
    """`judged@k` always and `judged_precision@k` when at least one of the top k papers was judged (with none there
    is nothing to measure, which is not a precision of 0)."""
    share = judged_share(ranked_papers, judgments, k)
    out = {f"judged@{k}": share}
    if share[0] > 0:
        out[f"judged_precision@{k}"] = judged_precision(ranked_papers, judgments, k)
    return out


def mrr(ranked_papers: Sequence[str], gold: Sequence[str]) -> Metric:
    """Reciprocal rank of the first gold paper among the distinct retrieved papers."""
    for i, p in enumerate(dict.fromkeys(ranked_papers), start=1):
        if p in gold:
            return 1.0 / i, f"first gold paper at rank {i}"
    return 0.0, "no gold paper retrieved"


def ndcg_at(ranked_papers: Sequence[str], gold: Sequence[str], k: int = 10) -> Metric:
    """Binary nDCG@k of the distinct retrieved papers against the gold papers."""
    top = list(dict.fromkeys(ranked_papers))[:k]
    dcg = sum(1.0 / math.log2(i + 2) for i, p in enumerate(top) if p in gold)
    idcg = sum(1.0 / math.log2(i + 2) for i in range(min(len(gold), k)))
    return (dcg / idcg if idcg else 0.0), f"DCG {dcg:.3f} / ideal {idcg:.3f}"


def page_hit(pages: Sequence[int | None], gold_pages: Sequence[int], k: int = 5) -> Metric:
    """1.0 when one of the first k retrieved pages is a gold page."""
    top = list(pages)[:k]
    hit = [p for p in top if p in gold_pages]
    return (1.0, f"page {hit[0]} retrieved") if hit else (0.0, f"retrieved pages {top}, gold {list(gold_pages)}")


def evidence_hit(texts: Sequence[str], evidence: str, k: int = 5) -> Metric:
    """1.0 when one of the first k chunks contains the evidence quote (after normalisation)."""
    ev = normalize_for_match(evidence)
    if not ev:
        return 0.0, "no evidence quote"
    for i, t in enumerate(list(texts)[:k], start=1):
        if ev in normalize_for_match(t):
            return 1.0, f"evidence in chunk {i}"
    return 0.0, "evidence not in the top chunks (split across chunks, or not retrieved)"


_QUOTED_CITE = re.compile(r'"([^"\n]{10,})"\s*\[(\d+(?:\s*,\s*\d+)*)\]')


def answer_sentences(answer: str) -> list[str]:
    """The sentences an answer states, in order: its quotations when it quotes (extractive answers), else
    its sentences."""
    quoted = [m.group(1) for m in _QUOTED_CITE.finditer(answer)]
    return quoted or [s for line in answer.splitlines() for s in split_sentences(line)]


_FILLER = frozenset("of and or to in on for with by at is are was were be as from that this it its per each about only".split())


def holds(prediction: str, golds: Sequence[str]) -> Metric:
    """1.0 when the prediction holds every content word of a gold answer or alias, in any order (NFKC,
    SQuAD normalisation, filler words ignored): "14.9 F1 score on SQuAD and 66.3 accuracy on MNLI" holds
    the alias "14.9 F1 and 66.3 accuracy", which `contains` (a substring test) does not see."""
    have = set(normalize_answer(unicodedata.normalize("NFKC", prediction)).split())
    for g in golds:
        words = set(normalize_answer(unicodedata.normalize("NFKC", g)).split()) - _FILLER
        if words and words <= have:
            return 1.0, f"holds every word of {g!r}"
    return 0.0, "no gold answer or alias has all its words in the answer"


def quoting_ceiling(evidence: str, golds: Sequence[str]) -> tuple[float, float]:
    """`contains` and `holds` of the question's evidence sentence itself: what an answer quoting that sentence and
    nothing else scores. A gold answer written in other words than the paper's ("ChatGPT drops unimportant keys" for
    "we use ChatGPT to ... remove unimportant keys") is not in the evidence, so a set's mean ceiling says how much of
    its contains-gold reading the right sentence can give. Not a hard bound: an answer quoting several sentences
    scores above it where another one holds the gold words (askpdf_dev: contains 0.50, ceiling 0.43)."""
    return contains(evidence, golds)[0], holds(evidence, golds)[0]


def holds_first(answer: str, golds: Sequence[str]) -> Metric:
    """`holds` for the answer's first sentence alone: the fact is stated first."""
    first = next(iter(answer_sentences(answer)), "")
    got, _ = holds(first, golds)
    return got, ("the first sentence holds a gold answer" if got else "the first sentence holds no gold answer")


def _words(text: str) -> list[str]:
    return re.findall(r"\w+", normalize_for_match(text))


def quotes_evidence(sentence: str, evidence: str) -> bool:
    """Whether a quoted sentence is (part of) the question's evidence quote: they share a verbatim run of at
    least 8 words, or of half the evidence's words (at least 4), or the whole sentence when it has 4 words or more
    (after normalisation: case, spacing, "cor- pus" breaks). The gold answer's own words often differ from the paper's ("No; the hint is left out"
    for "we do not include the hint"), so an extractive answer that quotes the evidence is right where `holds`
    cannot see it."""
    ev, got = _words(evidence), _words(sentence)
    if not ev or not got:
        return False
    run = difflib.SequenceMatcher(None, got, ev, autojunk=False).find_longest_match(0, len(got), 0, len(ev)).size
    return run >= min(8, max(4, len(ev) // 2), max(4, len(got)))


def evidence_first(answer: str, evidence: str) -> Metric:
    """1.0 when the answer's first quoted sentence quotes the evidence (`quotes_evidence`)."""
    first = next(iter(answer_sentences(answer)), "")
    if quotes_evidence(first, evidence):
        return 1.0, "the first sentence quotes the evidence"
    return 0.0, "the first sentence does not quote the evidence"


def evidence_quoted(answer: str, evidence: str) -> Metric:
    """1.0 when any quoted sentence of the answer quotes the evidence (`quotes_evidence`)."""
    for i, s in enumerate(answer_sentences(answer), start=1):
        if quotes_evidence(s, evidence):
            return 1.0, f"sentence {i} quotes the evidence"
    return 0.0, "no sentence quotes the evidence"


def first_gold_rank(answer: str, golds: Sequence[str]) -> Metric:
    """The rank of the first answer sentence that contains a gold answer (0.0 when none does)."""
    for i, s in enumerate(answer_sentences(answer), start=1):
        if contains(s, golds)[0] >= 1.0:
            return float(i), f"sentence {i} contains the gold answer"
    return 0.0, "no sentence contains the gold answer"


def cited_sentences(answer: str) -> list[tuple[str, list[int]]]:
    """Each cited statement with the numbers it cites: the quotation before [n], else the sentence holding [n]."""
    found = [(m.group(1), [int(x) for x in re.findall(r"\d+", m.group(2))]) for m in _QUOTED_CITE.finditer(answer)]
    if found:
        return found
    return [(s, parse_citations(s)) for line in answer.splitlines() for s in split_sentences(line) if parse_citations(s)]


def on_question(answer: str, question: str) -> Metric:
    """Share of the answer's cited statements that mention a content word (stemmed) of the question."""
    tok = Tokenizer()
    words = set(tok(question))
    cited = cited_sentences(answer)
    if not cited or not words:
        return 0.0, "no cited statement"
    on = sum(bool(words & set(tok(s))) for s, _ in cited)
    return on / len(cited), f"{on} of {len(cited)} cited statements mention a word of the question"


def citation_recall(cited_papers: Sequence[str], gold: Sequence[str]) -> Metric:
    """Share of the gold papers that the answer cites."""
    if not gold:
        return 0.0, "no gold papers"
    hit = [g for g in gold if g in set(cited_papers)]
    return len(hit) / len(gold), f"cites {len(hit)} of {len(gold)} gold papers"
