"""Which sentences of the retrieved passages may be quoted as an answer, and what a sentence holds.

`candidates` cuts the passages into sentences and leaves out what a reader would not accept as an answer:
section headings, equation and table debris, reference-list entries and author or affiliation lines. Every
candidate is a verbatim substring of its passage, so a quote of it is supported by construction. `satisfies`,
`states` and `states_setting` say whether a sentence holds the kind of thing a question (`paperchat.answering.question`)
asks for: a number, a name, an amount of money or time, a setting's value.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from paperchat.answering.question import SENTENCE_STARTERS, SETTINGS, AnswerKind, Focus, Measure, is_name
from paperchat.text import Tokenizer, split_sentences
from paperchat.types import Source

_NUMBER_WORDS = (
    r"one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve|fifteen|twenty|thirty|forty|fifty|hundred|"
    r"hundreds|thousand|thousands|million|millions|billion|billions|half|dozen|twice|double|triple"
)
# A number that is the answer, not a pointer: "Table 3", "Section 4.2", "[12]", "Eq. (2)" do not count.
_POINTER = re.compile(
    r"\b(?:Table|Tab\.|Figure|Fig\.|Section|Sec\.|Eq\.|Equation|Appendix|Algorithm|Step|Line)\s*\(?\d+(?:\.\d+)*\)?"
    r"|\[\d+(?:[,\s\u2013-]+\d+)*\]"
)
# Numbers that only mark structure: a list marker "(1)", "(ii)"; a section number before its heading
# ("3.3 Topic and Review Selection"); a footnote mark stuck to a word's final stop ("embeddings.4").
_MARKER = re.compile(
    r"(?:^\s*|(?<=[:;,.]\s)|(?<=\band\s)|(?<=\bor\s))\((?:\d{1,2}|[ivx]{1,4}|[a-h])\)|^\s*\d{1,2}\.?\s+(?=[A-Z][a-z])"
    r"|\b\d+(?:\.\d+)+\s+(?=[A-Z][a-z])|(?<=[a-z][.,;:])\d{1,2}\b"
)
_CITE_YEAR = re.compile(r"\(\s*[A-Z][^()]{0,80}?(?:19|20)\d\d[a-z]?\s*\)|et al\.,?\s*\(?(?:19|20)\d\d")
_HAS_NUMBER = re.compile(rf"(?<![A-Za-z\d])\d|\b(?:{_NUMBER_WORDS})\b", re.I)
_YEAR = re.compile(r"\b(?:19[5-9]\d|20[0-4]\d)\b")
_SIZE = re.compile(r"\b\d[\d,.]*\s?(?:[KMBT]\b|million|billion|trillion)|\b\d[\d,.]*\s+(?:\w+\s+)?(?:parameters|params|tokens)\b", re.I)
_MONEY = re.compile(r"(?:US\$|\$|USD|€|£)\s?\d|\d[\d,.]*\s?(?:[kKM]\s?)?(?:\$|USD|dollars?|cents?|€|£|euros?)", re.I)
_DURATION = re.compile(
    r"\b(?:\d[\d,.]*|one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve|a few|several|half an?)"
    r"(?:\s*[-–]\s*\d[\d,.]*)?[\s-]*(?:GPU[\s-]|TPU[\s-]|CPU[\s-]|wall[\s-]clock\s)?"
    r"(?:hours?|hrs?|days?|weeks?|months?|minutes?|mins?|seconds?|secs?|ms|years?)\b(?!-)",
    re.I,
)



SETTING_REACH = 80  # characters after a setting's name in which its value may stand
_SETTING_VALUE = r"(?:\d[\d.,]*(?:e-?\d+)?|\b(?:zero|one|two|three|four|five|ten)\b)"
_VALUE_BEFORE = re.compile(r"\d[\d.,]*[kKM]?(?:-|\s+)(?:[A-Za-z]+\s+){0,2}$")  # "0.1 dropout", "768-dimensional", "4096 tokens per batch"
_OPTIMIZERS = re.compile(r"\b(?:adam\w*|sgd|adafactor|rmsprop|adagrad|lion|lamb|momentum|gradient descent)\b", re.I)



def names_setting(key: str, sentence: str) -> bool:
    """Whether the sentence names the setting at all (with or without its value)."""
    if key == "optimizer":
        return bool(_OPTIMIZERS.search(sentence) or re.search(r"\boptimi[sz]\w+", sentence, re.I))
    return re.search(SETTINGS[key][1], sentence, re.I) is not None


def states_setting(key: str, sentence: str) -> bool:
    """Whether the sentence gives a value of the setting (`settings_asked`): its name with a number within
    SETTING_REACH characters after it, or a number at most two words before it ("0.1 dropout", "768-dimensional",
    "4096 tokens per batch"); an optimizer by its name."""
    if key == "optimizer":
        return bool(_OPTIMIZERS.search(sentence))
    for m in re.finditer(SETTINGS[key][1], sentence, re.I):
        if re.search(_SETTING_VALUE, sentence[m.end() : m.end() + SETTING_REACH]) or _VALUE_BEFORE.search(sentence[max(0, m.start() - 30) : m.start()]):
            return True
    return False



def states(measure: Measure, sentence: str) -> bool:
    """Whether the sentence states that kind of measure: an amount with a currency, a number with a time unit, or a
    count of parameters or tokens ("400M", "1.8T tokens")."""
    if measure == "money":
        return bool(_MONEY.search(sentence))
    if measure == "duration":
        return bool(_DURATION.search(sentence))
    if measure == "size":
        return bool(_SIZE.search(sentence))
    return True
_COLOURS = re.compile(r"\b(?:red|green|blue|yellow|orange|purple|pink|grey|gray|black|white|brown|violet|cyan|magenta)\b", re.I)


_CONTRIBUTION = re.compile(
    r"\b(?:we|this (?:paper|work|study)|our (?:method|approach|framework))\s+(?:\w+\s+)?"
    r"(?:propose|introduce|present|develop|design|build|formulate)s?\b",
    re.I,
)


def contribution(sentence: str) -> bool:
    """A sentence that states what a paper does ("we propose ...")."""
    return bool(_CONTRIBUTION.search(sentence))


# A sentence that states the problem a paper starts from, not what it does about it: "However, multi-turn RL
# remains challenging as rewards are often sparse", "This reward sparsity becomes particularly problematic ...",
# "Existing approaches depend on costly real-world APIs ..." (what others did).
_PROBLEM = re.compile(
    r"^(?:However|But|Yet|Unfortunately|Despite|Although|While)\b|"
    r"^(?:Most\s+)?(?:Existing|Prior|Previous|Current|Conventional|Traditional|Standard|Earlier)\s+(?:\w+\s+){0,3}?"
    r"(?:approaches|methods|works?|studies|systems|models|techniques|frameworks|benchmarks|pipelines|solutions)\b|"
    r"\b(?:challeng(?:e|es|ing)|remains?\s+(?:an?\s+)?(?:open|unclear|difficult|limited|underexplored|challenging)|problematic|"
    r"suffers?|suffering|struggles?|struggling|bottlenecks?|hinders?|hindered|plagued|lacks?|lacking|fail(?:s|ed)?\s+to|"
    r"limitations?|limited\s+by|is\s+(?:still\s+)?(?:difficult|hard|costly|expensive)|exacerbat\w*|prone\s+to|inefficien\w*)\b",
    re.I,
)


# Names of fields and of established techniques: a sentence that opens with one is background ("LLM agents have
# emerged as ...", "RLHF is widely used ..."), not a paper saying what it does.
_FIELD_NAMES = frozenset(
    "AI ML DL NLP IR QA CV RL RAG LLM LLMs LM LMs VLM VLMs LVLM LVLMs MLLM MLLMs LRM LRMs SLM SLMs GPU GPUs CoT ICL SFT "
    "RLHF RLVR PPO GRPO DPO MoE KV".split()
)


def says_what_it_does(sentence: str) -> bool:
    """A sentence about the paper's own method: "we propose ...", "Our framework ...", or one whose subject is a
    name ("IGPO models each turn as ...", "GoAT excels at ...")."""
    if contribution(sentence) or re.match(r"(?:Our|We|In this (?:paper|work))\b", sentence):
        return True
    first = re.match(r"[A-Za-z0-9][\w.-]*", sentence)
    if first is None:
        return False
    word = first.group(0).rstrip(".")
    return is_name(word) and word not in _HEADER_NAMES and word not in _FIELD_NAMES


def problem_statement(sentence: str) -> bool:
    """A sentence that states a problem or a gap ("remains challenging", "suffers from", "However, ...") and says
    nothing of what the paper does about it (not "We address this challenge with ...", "RELIANCE enhances ... on
    challenging benchmarks")."""
    return bool(_PROBLEM.search(sentence)) and not says_what_it_does(sentence)


# Venue and header acronyms that running page headers glue into sentences: not answers.
_HEADER_NAMES = frozenset(
    "ACL EMNLP NAACL EACL COLING CHI UIST CSCW NeurIPS NIPS ICML ICLR AAAI IJCAI KDD SIGIR WWW CVPR ICCV ECCV TACL JMLR ACM IEEE arXiv".split()
)


def names_in(text: str) -> set[str]:
    """The name-like tokens of a text: acronyms, CamelCase, words with digits, versions (GPT-4, v3.0.0)."""
    return {w.rstrip(".") for w in re.findall(r"[A-Za-z0-9][\w.-]*", text) if is_name(w.rstrip("."))} - _HEADER_NAMES


def satisfies(kind: AnswerKind, sentence: str, known: frozenset[str] = frozenset()) -> bool:
    """Whether the sentence holds the kind of thing the question asks for; for a name, one that is not
    in `known` (the question's own names and the paper's title)."""
    if kind == "any":
        return True
    bare = _CITE_YEAR.sub(" ", _POINTER.sub(" ", sentence))
    if kind == "number":
        bare = _MARKER.sub(" ", bare)
        return bool(_HAS_NUMBER.search(bare))
    if kind == "year":
        return bool(_YEAR.search(bare))
    if kind == "colour":
        return bool(_COLOURS.search(bare))
    lowered = {k.lower() for k in known}
    return any(n.lower() not in lowered for n in names_in(bare))


# -- candidate sentences -----------------------------------------------------------------------------

_MATHY = re.compile(r"[=∈×≤≥∑√∏→←⊕⊗·∗^_{}|\\]|^[A-Za-z]$|^\W+$")
_NUMBERISH = re.compile(r"^[\d.,%±()/+\-x×<>]+[kKMB]?$")
# pypdf writes a thousands separator with a space ("10, 853 tools"): one number, not two
_SPLIT_THOUSANDS = re.compile(r"(?<![\d.])(\d{1,3}), (?=\d{3}(?![\d.]))")
_REFERENCE = re.compile(
    r"\b(?:In Proceedings|Proceedings of|arXiv preprint|arXiv:\d|CoRR|abs/\d|pages? \d+\s*[-\u2013]\s*\d+|pp\. ?\d|"
    r"Vol\. \d|doi:|doi\.org|Association for Computational Linguistics|Conference on|Journal of|Transactions on|"
    r"Workshop on|URL https?://|https?://)",
    re.I,
)
_CITED_AUTHORS = re.compile(r"""^[A-Z][\w'-]+,\s+(?:[A-Z][a-z]+|[A-Z]\.)(?:\s+[A-Z]\.)*\s+(?:et al\.\s+[\u201c"A-Z]|and\s+[A-Z][\w'-]+,\s+[A-Z]\.)""")
_CONNECTIVES = frozenset(
    "Similarly Recently However Moreover Notably Specifically Additionally Furthermore Finally Also Later Earlier Previously "
    "Concurrently Likewise Indeed Here Thus Then Instead Next First Second Third Interestingly Importantly Alternatively".split()
)
_AFFILIATION = re.compile(r"@|\b(?:University|Universit[àä]t|Institute|Department|Laboratory|Labs?|Inc\.|Ltd|School of|College|Corporation|Research Center)\b")
_SECTION_HEAD = re.compile(r"^(?:\d+(?:\.\d+)*\.?|[A-H](?:\.\d+)*\.?|[IVX]+\.)\s+(?=[A-Z])")
_BULLET = re.compile(r"\s*[•●▪◦]\s*")


@dataclass
class Candidate:
    """One quotable sentence of a source."""

    n: int
    paper_id: str
    page: int | None
    text: str
    position: int
    fragment: bool = False
    tokens: frozenset[str] = frozenset()
    context_tokens: frozenset[str] = frozenset()
    counted: frozenset[str] = frozenset()  # words a number counts or measures ("8 ... heads", "128 passages")


_COUNT = re.compile(rf"^(?:\d[\d,.]*%?|{_NUMBER_WORDS})$", re.I)


def counted_words(sentence: str, tok: Tokenizer, window: int = 5) -> frozenset[str]:
    """The stemmed words that follow a number within `window` words (what the number counts)."""
    words = re.findall(r"[\w%.,-]+", _POINTER.sub(" ", sentence))
    out: set[str] = set()
    for i, w in enumerate(words):
        if _COUNT.match(w.rstrip(".,")):
            for nxt in words[i + 1 : i + 1 + window]:
                out.update(tok(nxt))
    return frozenset(out)


def _tabular(sentence: str) -> bool:
    """Mostly numbers (a table row run together by the text extractor) or mostly math symbols."""
    words = _SPLIT_THOUSANDS.sub(r"\1,", sentence).split()
    if len(words) >= 6 and sum(bool(_NUMBERISH.match(w)) for w in words) / len(words) > 0.3:
        return True
    return len(words) >= 5 and sum(bool(_MATHY.search(w)) for w in words) / len(words) > 0.25


def _reference(sentence: str) -> bool:
    """A bibliography entry or a run of author names."""
    if _REFERENCE.search(sentence) and (_YEAR.search(sentence) or "arXiv" in sentence):
        return True
    if _CITED_AUTHORS.match(sentence) and sentence.split(",", 1)[0] not in _CONNECTIVES:  # "Shoeybi, Mohammad et al. Megatron-LM: ..."
        return True
    names = re.findall(r"\b[A-Z][a-z]+(?: [A-Z]\.)* [A-Z][a-z]+(?:-[A-Z][a-z]+)?,", sentence)
    return len(names) >= 3 and len(re.findall(r"\b[a-z]{4,}\b", sentence)) < len(names) * 2


def _header_like(sentence: str) -> bool:
    """A title, heading, author or affiliation line: mostly capitalised words, no sentence inside."""
    words = re.findall(r"[A-Za-z][\w'-]*", sentence)
    if not words:
        return True
    caps = sum(w[0].isupper() for w in words) / len(words)
    if _AFFILIATION.search(sentence) and caps > 0.5:
        return True
    return len(words) >= 3 and caps > 0.75 and not sentence.rstrip().endswith((".", "?", "!", ":"))


_FUNCTION_WORDS = frozenset("of and or for in on with to the a an from by via our vs. into at as its their over under between".split())
_STRICT_OPENERS = frozenset("The We Our This These It In For Since While Here However Such Given Unlike Following".split())
_COMMA_OPENERS = frozenset("Finally However Moreover Furthermore Additionally Specifically Overall Instead Similarly Here First Second Third".split())


def strip_heading(sentence: str) -> str:
    """A sentence without the section heading the PDF text glued to its front ("3.2 Attention The model ...").

    The heading ends at the first word that opens a sentence ("The", "We", "Since", ...). After a lettered heading
    ("A Transformer model ...", which may be a sentence) a lower-case content word means the heading's end cannot be
    told. A numbered one ("5.1", "B.1", "4") may be in sentence case ("2.3 Maximum number of pondering steps Since
    ..."): past its lower-case words only openers that are rarely capitalised inside a sentence count ("Since",
    "We", "The", not "Table" or "A"), and an opener with its comma ("Finally, we ..."). The result is a suffix of
    the sentence, so it stays a verbatim quote."""
    m = _SECTION_HEAD.match(sentence)
    if not m:
        return sentence
    numbered = any(ch.isdigit() for ch in m.group(0))
    words = sentence[m.end() :].split(" ")
    past_lower = False
    for i, w in enumerate(words[1:13], start=1):
        opens = w in SENTENCE_STARTERS and (not past_lower or w in _STRICT_OPENERS)
        if opens or (numbered and w.endswith(",") and w[:-1] in _COMMA_OPENERS):
            rest = " ".join(words[i:])
            return rest if len(rest) >= 25 else sentence
        if w[:1].islower() and w not in _FUNCTION_WORDS:
            if not numbered:
                return sentence  # a lower-case content word: the heading's end cannot be told
            past_lower = True
    return sentence


_CAPTION = re.compile(r"\b(?:Figure|Fig\.)\s*\d+[a-z]?\s*[:.]\s+(?=[A-Z(\[])")


def strip_plot(sentence: str) -> str:
    """A figure's caption without the chart text the PDF text runs into it ("0 100 200 300 TREC-COVID TAS-B
    ANCE Figure 4: Distribution plots ..." -> "Figure 4: Distribution plots ..."): axis ticks and legend words
    before "Figure N:" are dropped when at least three of them, and a fifth, are numbers. The result is a suffix
    of the sentence, so it stays a verbatim quote."""
    captions = list(_CAPTION.finditer(sentence))
    if not captions or captions[-1].start() == 0:
        return sentence
    m = captions[-1]
    words = sentence[: m.start()].split()
    numbers = sum(bool(_NUMBERISH.match(w.strip("[]"))) for w in words)
    return sentence[m.start() :] if numbers >= 3 and numbers >= 0.2 * len(words) else sentence


def quotable(sentence: str) -> bool:
    """Whether a sentence may be quoted as an answer at all."""
    return 25 <= len(sentence) <= 600 and not _tabular(sentence) and not _reference(sentence) and not _header_like(sentence)


def candidates(sources: Sequence[Source], tok: Tokenizer) -> list[Candidate]:
    """The quotable sentences of the sources, in source order (duplicates from overlapping chunks once)."""
    out: list[Candidate] = []
    seen: set[str] = set()
    for src in sources:
        sents = [p for s in split_sentences(src.text) for p in _BULLET.split(s) if p.strip()]
        if src.page is None and len(sents) > 1:
            sents = sents[1:]  # an abstract chunk starts with the title: not an answer sentence
        tokens = [frozenset(tok(s)) for s in sents]
        for i, raw in enumerate(sents):
            s = strip_plot(strip_heading(raw.strip()))
            if not quotable(s):
                continue
            key = re.sub(r"\W+", " ", s.lower()).strip()
            if key in seen:
                continue
            seen.add(key)
            # the first sentence of a PDF chunk may begin inside a sentence cut by the chunk overlap
            fragment = src.page is not None and i == 0 and not s[:1].isupper() and not s[:1].isdigit()
            ctx = frozenset().union(*tokens[max(0, i - 1) : i], *tokens[i + 1 : i + 2])
            out.append(Candidate(src.n, src.paper_id, src.page, s, i, fragment, frozenset(tok(s)), ctx, counted_words(s, tok)))
    return out


# -- the answer line: a sentence with the sentence it leans on ----------------------------------------

# A sentence that points back ("This result won ...", "In contrast, BM25 processes 23.7 ...") means little
# without the sentence before it; "This paper ..." and "This work ..." stand alone, and so does an "it" that
# names nothing ("It is important to note that ...", "It was found that ...").
_LEANS_BACK = re.compile(
    r"^(?:(?:This|These|That|Those|Such)\b(?!\s+(?:paper|work|study|article|section|chapter|report|survey)\b)|"
    r"(?:It(?!\s+(?:is|was|has been|should be|can be|may be|must be|would be|will be|seems|appears|remains)\s+(?:\w+\s+)?"
    r"(?:important|worth|necessary|possible|impossible|clear|notable|noteworthy|interesting|crucial|essential|evident|known|"
    r"noted|observed|found|shown|unclear|likely|unlikely|difficult|hard|easy|common|natural|reasonable|straightforward)\b)|"
    r"Its|They|Their)\b|The (?:latter|former)\b|(?:In|By) contrast\b|In comparison\b|Instead\b|Otherwise\b|"
    r"Conversely\b|On the other hand\b|Similarly\b|Likewise\b)"
)
# A sentence that completes the one before it by contrast ("We do not store the mask. Instead, we ...").
_COMPLETES = re.compile(r"^(?:Instead\b|But\b|However\b|(?:In|By) contrast\b|In comparison\b|Otherwise\b|Conversely\b|On the other hand\b)")
WIDE_MAX = 600  # characters: a wider quote than this stays one sentence


def sentence_spans(passage: str) -> list[tuple[int, int]]:
    """Where each sentence of `split_sentences(passage)` lies in the passage, in order."""
    spans: list[tuple[int, int]] = []
    pos = 0
    for s in split_sentences(passage):
        i = passage.find(s, pos)
        if i < 0:
            continue
        spans.append((i, i + len(s)))
        pos = i + len(s)
    return spans


def widen(sentence: str, passage: str, focus: Focus, tok: Tokenizer, titled: bool = False) -> str:
    """The quote for an answer's first line: the sentence, with the sentence before it when it leans back on it
    ("This result ...", "In contrast, ..."), and the sentence after it when that one completes it by contrast
    ("Instead, ...", "But ...") and speaks of the question (one of its content words); one of the two at most. The result is a verbatim
    substring of the passage, so it stays a supported quote; `titled`: the passage starts with its paper's
    title (an abstract), which is never quoted."""
    start = passage.find(sentence)
    if start < 0:
        return sentence
    end = start + len(sentence)
    spans = sentence_spans(passage)
    if (start, end) not in spans:
        return sentence  # a bullet item or a sentence cut from its heading: its neighbours are not its sentences
    at = spans.index((start, end))
    body = passage.find("\n\n") + 2 if titled and "\n\n" in passage else 0  # an abstract's title is never quoted
    lo, hi = start, end
    if _LEANS_BACK.match(sentence) and at > 0 and spans[at - 1][0] >= body and (not titled or body > 0):
        a, b = spans[at - 1]
        before = passage[a:b]
        if quotable(before) and (before[:1].isupper() or before[:1].isdigit()) and strip_heading(before) == before and not _BULLET.search(before):
            lo = a
    if lo == start and at + 1 < len(spans):  # one neighbour at most: a pair, not a paragraph
        a, b = spans[at + 1]
        after = passage[a:b]
        asked = {t for t, w in focus.terms.items() if w >= 1.0}
        if _COMPLETES.match(after) and quotable(after) and asked & set(tok(after)) and not _BULLET.search(after):
            hi = b
    if (lo, hi) == (start, end) or hi - lo > WIDE_MAX or "\n" in passage[lo:hi]:
        return sentence
    return passage[lo:hi]
