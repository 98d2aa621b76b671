"""Topic answers as a map of the literature: the retrieved papers grouped by what they do, each group
named by its distinctive words, each paper quoted where it answers this question.

Grouping is average-linkage agglomerative clustering of the papers' vectors (their abstract chunks embedded
as stored: the same text through the same model), deterministic, into 2-5 groups; a paper left alone goes to
"Other". Labels are class-based TF-IDF: the words and word pairs frequent in one group's texts and rare
in the other groups'.
"""

from __future__ import annotations

import datetime as dt
import math
import re
from collections import Counter, defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from paperchat.answering.question import ASKED_WEIGHT, Focus, written_out
from paperchat.answering.select import Scored
from paperchat.answering.text import contribution, problem_statement, says_what_it_does
from paperchat.text import STOPWORDS as _STOPWORDS
from paperchat.types import Source

# Words every paper abstract uses: they name no group.
_BLAND = frozenset(
    """model models method methods approach approaches framework frameworks task tasks result results performance
    propose proposes proposed present presents introduce introduces novel new existing show shows demonstrate
    demonstrates achieve achieves achieving improve improves improved improvement improvements significantly
    significant large language llm llms work study paper papers based various across different however while
    specifically furthermore moreover experiments experimental extensive state art sota outperform outperforms
    benchmark benchmarks code available data set sets first also well key effective effectively efficient
    enables enable including include includes often remains remain critical challenge challenges leading
    address addresses problem problems issue issues approach via used using use uses can may one two three
    like even still thus i e g et al""".split()
)
_WORD = re.compile(r"[A-Za-z][A-Za-z0-9-]*[A-Za-z0-9]|[A-Za-z]")


@dataclass(frozen=True)
class TopicContext:
    """What the map's header says about the topic: its name, its size and the dates it spans."""

    name: str
    total: int
    first: dt.date | None = None
    last: dt.date | None = None
    new_since: dt.date | None = None  # papers from this date on are marked new
    new_what: str = ""  # how the map says it: "in the last 4 weeks", "since 2026-05-01 (the window asked)"


@dataclass
class PaperLine:
    """One paper of the map: its best sentence for this question and its relevance."""

    paper_id: str
    best: Scored
    relevance: float
    source: Source


@dataclass
class Group:
    """One group of the topic map: a label and its papers, best first."""
    label: str
    papers: list[PaperLine] = field(default_factory=list)


def cluster(vectors: np.ndarray, max_groups: int = 5) -> list[list[int]]:
    """Average-linkage agglomerative clustering on cosine similarity, deterministic; rows in input order.

    The number of groups grows with the papers: 1 for up to 3, 2 up to 5, 3 up to 10, 4 up to 15, else 5."""
    n = len(vectors)
    target = 1 if n <= 3 else 2 if n <= 5 else 3 if n <= 10 else 4 if n <= 15 else 5
    target = min(target, max_groups)
    norms = np.linalg.norm(vectors, axis=1, keepdims=True)
    v = vectors / np.where(norms == 0, 1.0, norms)
    sim = v @ v.T
    groups: list[list[int]] = [[i] for i in range(n)]
    while len(groups) > target:
        best, pair = -2.0, (0, 1)
        for a in range(len(groups)):
            for b in range(a + 1, len(groups)):
                s = float(sim[np.ix_(groups[a], groups[b])].mean())
                if s > best + 1e-9:
                    best, pair = s, (a, b)
        a, b = pair
        groups[a] = sorted(groups[a] + groups[b])
        del groups[b]
    return groups


def _terms(text: str) -> tuple[list[str], dict[str, str]]:
    """Lower-case words and word pairs of a text (no stop or bland words), with a surface form for each."""
    words = [w for w in _WORD.findall(text) if len(w) > 2 or w.isupper()]
    out: list[str] = []
    surface: dict[str, str] = {}
    keep = [w.lower() not in _STOPWORDS and w.lower() not in _BLAND and not w.isdigit() for w in words]
    for i, w in enumerate(words):
        if keep[i]:
            key = _norm(w)
            out.append(key)
            surface.setdefault(key, w if w.isupper() or any(c.isupper() for c in w[1:]) else w.lower())
            if i + 1 < len(words) and keep[i + 1]:
                pair = f"{key} {_norm(words[i + 1])}"
                out.append(pair)
                surface.setdefault(pair, f"{surface[key]} {words[i + 1] if any(c.isupper() for c in words[i + 1][1:]) else words[i + 1].lower()}")
    return out, surface


def _norm(word: str) -> str:
    w = word.lower()
    return w[:-1] if len(w) > 4 and w.endswith("s") and not w.endswith("ss") else w


def label_groups(texts: Sequence[Sequence[str]], exclude: frozenset[str] = frozenset(), words: int = 2) -> list[str]:
    """A label per group: its `words` most distinctive terms by class-based TF-IDF (tf in the group times
    log(1 + average class size / frequency over all groups)), preferring word pairs over their words."""
    counts: list[Counter[str]] = []
    papers_with: list[Counter[str]] = []
    surface: dict[str, str] = {}
    for group in texts:
        c: Counter[str] = Counter()
        p: Counter[str] = Counter()
        for t in group:
            terms, surf = _terms(t)
            c.update(terms)
            p.update(set(terms))
            for k, v in surf.items():
                surface.setdefault(k, v)
        counts.append(c)
        papers_with.append(p)
    overall: Counter[str] = Counter()
    for c in counts:
        overall.update(c)
    papers_all: Counter[str] = Counter()
    for p in papers_with:
        papers_all.update(p)
    n_papers = sum(len(g) for g in texts)
    avg = sum(sum(c.values()) for c in counts) / max(1, len(counts))
    labels: list[str] = []
    for g, c in enumerate(counts):
        need = 2 if len(texts[g]) >= 2 else 1  # a group's label is what at least two of its papers say
        size = sum(c.values()) or 1
        scored = []
        for t, f in c.items():
            if papers_with[g][t] < need or any(part in exclude for part in t.split()):
                continue
            if n_papers >= 4 and papers_all[t] > n_papers / 2:
                continue  # most papers say it: the topic's own words, not this group's
            weight = (f / size) * math.log(1 + avg / overall[t]) * (1.6 if " " in t else 1.0)
            scored.append((weight, t))
        scored.sort(key=lambda r: (-r[0], r[1]))
        chosen: list[str] = []
        for _, t in scored:
            if any(t in c2 or c2 in t for c2 in chosen):
                continue  # "credit" after "credit assignment" says nothing new
            chosen.append(t)
            if len(chosen) >= words:
                break
        text = ", ".join(surface.get(t, t) for t in chosen)
        labels.append(text[:1].upper() + text[1:] if text else "")
    return labels


def focus_phrase(question: str) -> str:
    """The question as a heading: "What reward designs are used to X?" -> "Reward designs used to X"."""
    q = question.strip().rstrip("?").strip()
    m = re.match(r"(?i)^(?:what|which)\s+(.+?)\s+(?:are|is|were|was|have|has|had|can|could|do|does|did)\s+(.+)$", q)
    if m and len(m.group(1).split()) <= 6:
        rest = re.sub(r"^been\s+", "", m.group(2))  # "... have been proposed to X" -> "... proposed to X"
        text = f"{m.group(1)} {rest}"
        return text[:1].upper() + text[1:]
    # "What approaches synthesize environments ..." -> "Approaches that synthesize environments ..."
    m = re.match(
        r"(?i)^(?:what|which)\s+((?:[\w-]+\s+){0,2}?"
        r"(?:approaches|methods|techniques|works|papers|models|systems|strategies|frameworks|benchmarks|datasets|algorithms))"
        r"\s+(?!(?:for|to|with|of|in|on|that|which|from|by|at|as|and|or|exist|are|is)\b)(.+)$",
        q,
    )
    if m:
        return f"{m.group(1)[:1].upper()}{m.group(1)[1:]} that {m.group(2)}"
    return f'"{q}?"'


def short_title(title: str) -> str:
    """A paper's short name: the part before the colon when the title has a short one ("PROGRESS: ...")."""
    head = title.split(":", 1)[0].strip()
    return head if ":" in title and 2 <= len(head) <= 40 else title.strip()


def paper_lines(focus: Focus, ranked: Sequence[Scored], sources: Sequence[Source], min_lexical: float = 0.0) -> list[PaperLine]:
    """The best sentence of each paper for this question (its contribution sentence, "we propose ...", when
    the question asks what papers propose or which methods do something); papers with no sentence on the thing
    asked about ("reward" in "What reward designs ...") or whose best sentence shares no content word with
    the question are left out; best paper first."""
    by_paper: dict[str, list[Scored]] = defaultdict(list)
    for s in ranked:
        by_paper[s.cand.paper_id].append(s)
    src_of = {s.n: s for s in sources}
    first_n: dict[str, int] = {}
    for src in sources:
        first_n.setdefault(src.paper_id, src.n)
    asked = {t for t, w in focus.terms.items() if w >= ASKED_WEIGHT}
    lines = _lines(focus, by_paper, asked, min_lexical, src_of, spelled_out(focus.question, asked))
    if not lines and asked:  # no paper says the word asked about: show what they do say rather than nothing
        lines = _lines(focus, by_paper, set(), min_lexical, src_of)
    for p in lines:
        # retrieval ranked the papers well (known-item MRR 0.95): its order is the relevance, the sentence breaks ties
        p.relevance = 1.0 / first_n.get(p.paper_id, len(sources) + 1) + 0.01 * p.relevance
    lines.sort(key=lambda p: (-p.relevance, p.best.cand.n))
    return lines


_KINDS = "technique techniques strategy strategies framework frameworks mechanism mechanisms algorithm algorithms scheme schemes paradigm"
_kind_stems: frozenset[str] | None = None


def _kinds() -> frozenset[str]:
    """Stems of the words that name a kind of contribution ("Which credit-assignment *technique* ..."): what a
    paper calls its method is not the thing asked about, so a paper is never left out for not saying "technique"."""
    global _kind_stems
    if _kind_stems is None:
        from paperchat.text import Tokenizer

        _kind_stems = frozenset(Tokenizer()(_KINDS))
    return _kind_stems


def spelled_out(question: str, asked: set[str]) -> re.Pattern[str] | None:
    """The asked acronyms of the question written out by their initials ("RL" -> "reinforcement learning",
    "LLM" -> "large language model"): a paper that writes the words out mentions the thing asked too."""
    forms = []
    for word in dict.fromkeys(re.findall(r"\b([A-Z]{2,5})s?\b", question)):
        if {word.lower(), word.lower() + "s"} & asked:
            forms.append(written_out(word))  # lower case; the pattern is compiled (?i)
    return re.compile(rf"(?i)\b(?:{'|'.join(forms)})\b") if forms else None


def _lines(
    focus: Focus, by_paper: dict[str, list[Scored]], asked: set[str], min_lexical: float, src_of: dict[int, Source], spelled: re.Pattern[str] | None = None
) -> list[PaperLine]:
    thing = asked - _kinds()  # "What reward designs ...": a paper that says nothing about rewards answers nothing

    def spells(s: Scored) -> bool:
        return spelled is not None and bool(spelled.search(s.cand.text))

    lines = []
    for pid, scored in by_paper.items():
        if asked:
            if thing and not any(s.cand.tokens & thing or spells(s) for s in scored):
                continue
            # quote it where it names what is asked ("..., a framework that ..."), in the question's words if it can
            said = [s for s in scored if s.cand.tokens & asked] or [s for s in scored if spells(s)]
            scored = said or scored
        best = scored[0]
        if best.lexical <= min_lexical:
            continue  # its best sentence does not address the question's words
        if problem_statement(best.text):  # "rewards are often sparse" states the problem; quote what the paper does
            doing = [s for s in scored if s.lexical > min_lexical and says_what_it_does(s.text)]  # such a sentence is never a problem statement
            best = doing[0] if doing else best
        if focus.proposes:  # "what methods ...": the paper's own statement of what it does, not its opening
            said = sorted((s for s in scored if contribution(s.text)), key=lambda s: s.lexical <= 0)
            best = said[0] if said else best
        lines.append(PaperLine(pid, best, scored[0].score, src_of[best.cand.n]))
    return lines


def build_groups(lines: Sequence[PaperLine], vectors: np.ndarray, focus: Focus) -> list[Group]:
    """The papers in groups with labels; groups in order of their best paper, "Other" last."""
    if len(lines) <= 3:
        return [Group("", list(lines))]
    parts = cluster(vectors)
    # named by what its papers answer: their titles and quoted sentences, not their whole abstracts
    texts = [[f"{lines[i].source.title}. {lines[i].best.text}" for i in part] for part in parts]
    labels = label_groups(texts, exclude=_question_words(focus.question))
    groups = [Group(label, [lines[i] for i in part]) for part, label in zip(parts, labels, strict=True)]
    best = max(lines, key=lambda p: p.relevance)
    for g in groups:  # the best match leads the answer even when no other paper is like it
        if any(p is best for p in g.papers) and not g.label:
            g.label = "Closest match"
    other = [g for g in groups if (len(g.papers) == 1 and g.papers[0] is not best) or not g.label]
    groups = [g for g in groups if g not in other]
    if other:
        groups.append(Group("Other", sorted((p for g in other for p in g.papers), key=lambda p: -p.relevance)))
    for g in groups:
        g.papers.sort(key=lambda p: -p.relevance)
    main = sorted((g for g in groups if g.label != "Other"), key=lambda g: -g.papers[0].relevance)
    return main + [g for g in groups if g.label == "Other"]


def _question_words(question: str) -> frozenset[str]:
    return frozenset(_norm(w) for w in _WORD.findall(question))


def header(focus: Focus, shown: int, ctx: TopicContext | None) -> str:
    """'<focus>, from N of M papers in <topic> (<first> .. <last>):'."""
    what = focus_phrase(focus.question)
    if ctx is None:
        return f"{what}, from {shown} paper{'s' if shown != 1 else ''}:"
    span = ""
    if ctx.first and ctx.last:
        span = f" ({ctx.first.strftime('%Y-%m')} \u2013 {ctx.last.strftime('%Y-%m')})"
    return f"{what}, from {shown} of {ctx.total} papers in {ctx.name}{span}:"


def render(groups: Sequence[Group], head: str, ctx: TopicContext | None = None) -> list[str]:
    """The map as lines (each ends with a newline); with a context that says since when papers are new, those
    papers are marked "new" and a line under the header counts them."""
    since = ctx.new_since if ctx is not None else None

    def is_new(p: PaperLine) -> bool:
        return since is not None and p.source.date is not None and p.source.date >= since

    out = [head + "\n"]
    if since is not None and ctx is not None:
        fresh = sum(is_new(p) for g in groups for p in g.papers)
        shown = sum(len(g.papers) for g in groups)
        out.append(f"New {ctx.new_what}: {fresh} of these {shown} paper{'s' if shown != 1 else ''}.\n")
    for g in groups:
        if g.label:
            out.append(f"\n{g.label} ({len(g.papers)} paper{'s' if len(g.papers) != 1 else ''})\n")
        for p in g.papers:
            src = p.source
            when = ("new, " if is_new(p) else "") + (src.date.isoformat() if src.date else "n.d.")
            # a paper quoted on the problem it starts from (it says nothing in the question's words about what it
            # does) is marked so, not passed off as an answer
            says = " states the problem" if problem_statement(p.best.text) else ""
            out.append(f'- {short_title(src.title)} ({when}){says}: "{p.best.text}" [{src.n}]\n')
    return out
