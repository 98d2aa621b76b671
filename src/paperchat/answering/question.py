"""What a question asks for: its content words, the kind of answer it wants, the names it gives, and the measure or
setting whose value it asks for.

A `Focus` is the question's content words (stemmed, with generic question words such as "many" or "roughly" weighed
down) and the kind of thing it asks for: a number ("how many", "what share"), a name ("which model", "which
dataset"), a year ("when"), a colour, or anything. Whether a sentence holds that thing is `paperchat.answering.text`'s
business.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Literal

from paperchat.text import Tokenizer

AnswerKind = Literal["number", "name", "year", "colour", "any"]


# Words that say how a question asks rather than what it is about: they count, but little.
_GENERIC_WORDS = """many much number roughly approximately around typically average value kind type exactly amount
    total figure share percentage fraction proportion rate size long large well often paper work study authors
    describe mention report give reach different compared method approach system model design"""
_generic: frozenset[str] | None = None
_form: frozenset[str] | None = None
GENERIC_WEIGHT = 0.35
ASKED_WEIGHT = 1.5  # the words of the thing asked about: "What *reward designs* are used to ..."
# The question's form, not its content ("how many", "roughly"): not counted at all.
_FORM_WORDS = "many much roughly approximately exactly typically"

_NUMBER_Q = re.compile(
    r"\bhow (?:many|much|long|large|big|often|well|fast|small|high|low|far)\b|"
    r"\b(?:what|which)\s+(?:[\w-]+\s+){0,3}?(?:value|values|share|percentage|fraction|proportion|rate|size|threshold|cutoff|"
    r"number|figure|amount|score|accuracy|dimension|dimensionality|length|ratio|count|budget|speed|cost|"
    r"temperature|learning rate|batch size)s?\b|"
    r"\b(?:below|above|under|over|at) what\b|\broughly\b|\bon average\b|\bapproximately\b",
    re.I,
)
_NAME_Q = re.compile(
    r"\b(?:which|what)\s+(?:(?!of\b|the\b|in\b|and\b|are\b|is\b)[\w-]+\s+){0,3}?(?:model|models|dataset|datasets|benchmark|benchmarks|corpus|corpora|"
    r"system|systems|tool|tools|toolkit|library|libraries|framework|encoder|decoder|generator|retriever|"
    r"detector|parser|optimizer|architecture|baseline|baselines|language|metric|metrics|software|api|"
    r"version|versions|backbone|llm|llms|method|algorithm)\b",
    re.I,
)
_YEAR_Q = re.compile(r"^\s*when (?:did|was|were|is|does|do|had|has)\b|\b(?:what|which) year\b", re.I)
_COLOUR_Q = re.compile(r"\b(?:what|which) colou?rs?\b", re.I)
# Questions that ask what papers propose: then a paper's "we propose ..." sentence is the answer.
_PROPOSES_Q = re.compile(
    r"\b(?:what|which)\s+(?:\w+\s+){0,2}?(?:methods?|approaches|techniques|frameworks?|solutions|strategies|ideas)\b|"
    r"\bwhat (?:do|does|did) (?:\w+\s+){0,3}?(?:propose|introduce|present)\b|\bwhich (?:work|paper|method|study)\b",
    re.I,
)


# Questions that ask for an amount of money or for how long something took, and sentences that state one
# ("5 cents per annotation", "$4.6M", "about 8.5 hours", "one week", "300 GPU hours"). A paper that discusses its
# training cost or hardware without ever stating the dollars or the hours does not answer such a question. "How much
# ... cost" alone is not money: "how much extra computation does checkpointing cost", "how much does it cut search
# cost" ask for compute (Stop 39: the only two answerable questions of 570 the money check refused; every money
# question it rightly refused names dollars, money, a wage, a rate or pay).
Measure = Literal["money", "duration", "size", ""]
_MONEY_Q = re.compile(
    r"\b(?:money|dollars?|USD|cents|wages?|salar(?:y|ies)|hourly\s+rate)\b|\$|"
    r"\bhow\s+much\b[^?]*\b(?:paid|pay|charged?|spend|spent)\b|\bwhat\b[^?]*\b(?:rate|price|amount)\b[^?]*\bpaid\b",
    re.I,
)
_HOW_MUCH_TIME = r"\bhow\s+much\s+(?:[\w-]+\s+){0,2}?time\b"  # "how much wall-clock time", "how much time did they spend"
_DURATION_Q = re.compile(
    r"\bhow\s+many\s+(?:\w+[\s-]){0,2}(?:hours|days|weeks|months|minutes|seconds|years)\b|"
    r"\b(?:GPU|TPU|CPU|accelerator|chip)[\s-]?(?:hours|days|time)\b|"
    r"\bhow\s+long\s+(?:did|does|do|had|has|was|were|is)\b(?:\s+\w+){0,6}?\s+(?:take|took|train\w*|run|ran|need|require)\b|"
    r"\bfor\s+how\s+(?:long|many\s+(?:hours|days|weeks|months))\b|" + _HOW_MUCH_TIME,
    re.I,
)
_SIZE_Q = re.compile(r"\bhow\s+many\s+(?:\w+\s+){0,2}?(?:parameters|params|tokens)\b|\bparameter\s+counts?\b|\bon\s+how\s+many\s+tokens\b", re.I)

# Questions that ask for the value of a named setting ("what learning rate ...", "at what sampling temperature ...",
# "which optimizer ...", "what numerical value of the PPO clipping parameter ε ...") and how a sentence states one:
# the setting's name with a number close after it ("a learning rate of 1e-6", "temperature T = 0", "Learning_rate
# 1e-5"), or a number just before it ("0.1 dropout"); an optimizer by its name ("the RMSprop optimizer"). A paper that
# describes its training without the learning rate does not answer "what learning rate".
SETTINGS: dict[str, tuple[str, str]] = {  # key: (how a question names it, how a passage names it)
    "learning rate": (r"learning[\s-]rates?|\blr|step[\s-]sizes?", r"learning[\s_-]*rates?|\blr\b|\u03b7|step[\s_-]*size"),
    "dropout": (r"dropout(?:\s+rates?)?", r"dropout"),
    "temperature": (r"temperatures?", r"temperature|\u03c4"),
    "weight decay": (r"weight[\s-]decay", r"weight[\s_-]*decay"),
    "warm-up": (r"warm-?up(?:\s+steps)?", r"warm[\s_-]*up"),
    "batch size": (r"(?:mini-?)?batch[\s-]sizes?", r"batch(?:es)?\b|batch[\s_-]*sizes?|\bbs\b"),
    "dimensionality": (r"dimensionality", r"dimension(?:ality|s|al)?|\bd_?model\b|\bdim\b|\bd\s*="),
    "window": (r"window(?:\s+sizes?)?", r"window"),
    "threshold": (r"thresholds?", r"threshold"),
    "clipping": (r"clipping(?:\s+(?:parameter|range|ratio|bounds?))?|clip\s+(?:range|ratio|bounds?)", r"clip\w*|\u03b5|epsilon"),
    "epsilon": (r"\u03b5|epsilon", r"\u03b5|epsilon|clip\w*"),
    "top-p": (r"top-?p", r"top[\s_-]*p|nucleus"),
    "beam size": (r"beam\s+(?:sizes?|widths?)", r"beam"),
    "scaling factor": (r"scaling\s+factors?", r"scal\w+|alpha|\u03b1"),
    "optimizer": (r"optimi[sz]ers?", ""),
    "momentum": (r"momentum", r"momentum"),
    "maximum length": (r"max(?:imum)?\s+(?:response\s+|sequence\s+|output\s+)?lengths?", r"length|tokens|max_tokens|max_len"),
    "lambda": (r"\u03bb|lambda", r"lambda|\u03bb"),
    "alpha": (r"\u03b1|alpha", r"alpha|\u03b1"),
    "beta": (r"\u03b2|beta", r"beta|\u03b2"),
}
# what follows a setting's name when the question asks about something else ("what learning rate *schedule*", "what
# temperature *scaling method*"); words between "what" and the name that make it another question ("what *happens
# when the* temperature ...", "which layers *does* dropout apply to")
_NOT_VALUE = r"(?!\w|[\s-]+(?:schedul\w*|method|strategy|strategies|technique|accuracy|scaling|loss|reduction|decay|annealing|search|policy|type|kind))"
_NOT_GAP = r"(?!(?:happens?|does|do|did|when|if|would|could|can|should|how|why|and|or)\b)"
_SETTING_Q = re.compile(
    r"(?<!by )\b(?:what|which)\s+(?:(?:numerical|exact|specific|default)\s+)?(?:values?\s+(?:of|for)\s+(?:the\s+)?)?(?:" + _NOT_GAP + r"[\w-]+\s+){0,3}?(?:"
    + "|".join(q for q, _ in SETTINGS.values())
    + ")" + _NOT_VALUE,
    re.I,
)


def settings_asked(question: str) -> tuple[str, ...]:
    """The named settings whose value the question asks for ("What optimizer, learning rate and batch size ...":
    all three); () when it asks for no setting's value ("What learning rate schedule ...", "What happens when the
    temperature is raised?")."""
    if not _SETTING_Q.search(question):
        return ()
    return tuple(k for k, (q, _) in SETTINGS.items() if re.search(rf"\b(?:{q}){_NOT_VALUE}", question, re.I))



def measure_asked(question: str) -> Measure:
    """'money' when the question asks for an amount of money, 'duration' when it asks how long something took
    ("how many GPU hours", "for how many days"), 'size' when it asks how many parameters or tokens, else ''."""
    if _MONEY_Q.search(question) and not re.search(_HOW_MUCH_TIME, question, re.I):
        return "money"
    if _DURATION_Q.search(question):
        return "duration"
    if _SIZE_Q.search(question):
        return "size"
    return ""



SENTENCE_STARTERS = frozenset(
    "The We In This Our Each For To A An It These Such Given Unlike Following As Since While Here Table Figure "
    "However Finally First Second Third Note Then Thus Moreover".split()
)
_NAME_TOKEN = re.compile(r"^(?:[A-Z][a-z]*[A-Z]\w*|[A-Z]{2,}\w*|\w*\d\w*[A-Za-z]\w*|[A-Za-z]+-\d[\w.]*|v\d+(?:\.\d+)+)$")


@dataclass(frozen=True)
class Focus:
    """What the question asks: its weighted content terms and the kind of answer it wants."""

    question: str
    terms: dict[str, float]
    kind: AnswerKind
    proposes: bool
    names: tuple[str, ...] = field(default=())
    counted: frozenset[str] = field(default=frozenset())  # what "how many" counts: "how many *participants*"
    measure: Measure = ""  # an amount of money, a duration or a count of parameters or tokens asked for (measure_asked)
    settings: tuple[str, ...] = field(default=())  # named settings whose value is asked for (settings_asked)

    @property
    def weight(self) -> float:
        """Total weight of the question's terms."""
        return sum(self.terms.values())


def analyse(question: str, tok: Tokenizer) -> Focus:
    """The focus of a question (terms weighed 1, generic ones GENERIC_WEIGHT)."""
    global _generic, _form
    if _generic is None or _form is None:
        _generic, _form = frozenset(tok(_GENERIC_WORDS)), frozenset(tok(_FORM_WORDS))
    terms: dict[str, float] = {}
    for t in tok(question):
        if t not in _form:
            terms[t] = GENERIC_WEIGHT if t in _generic else 1.0
    for w in re.findall(r"[A-Za-z0-9]+(?:-[A-Za-z0-9]+)+", question):  # "multi-turn": one word, not three
        parts = tok(w)
        if len(parts) > 1:
            for t in parts[:-1]:
                terms[t] = min(terms.get(t, 1.0), 0.5)
            terms[parts[-1]] = 0.2  # the joined form
    for t in tok(" ".join(asked_words(question))):  # what is asked about weighs most
        if t in terms and terms[t] >= 1.0:
            terms[t] = ASKED_WEIGHT
    kind: AnswerKind = "any"
    if _COLOUR_Q.search(question):
        kind = "colour"
    elif _NUMBER_Q.search(question):
        kind = "number"
    elif _YEAR_Q.search(question) and not re.match(r"(?i)\s*when\s+\w+ing\b", question):
        kind = "year"
    elif _NAME_Q.search(question):
        kind = "name"
    # names the question itself gives ("MS MARCO", "SQuAD"): the sources must mention them to answer it
    names = tuple(dict.fromkeys([*question_names(question), *title_phrases(question)]))
    m = _HOW_MANY.search(question)
    counted = frozenset(t for t in tok(m.group(1)) if t in terms) if m else frozenset()
    return Focus(question, terms, kind, bool(_PROPOSES_Q.search(question)), names, counted, measure_asked(question), settings_asked(question))


_ASKED = re.compile(
    r"(?i)^\s*(?:(?:in|on|for|by|from|with|at|under|during|after|before) )?(?:what|which|how many|how much)\s+"
    r"((?:(?!(?:are|is|were|was|do|does|did|have|has|had|can|could|would|should|will|of|in|for|to|that|and|the)\b)[\w-]+\s+){1,4})"
)


_HOW_MANY = re.compile(
    r"(?i)\bhow many\s+((?:(?!(?:are|is|were|was|do|does|did|have|has|had|can|could|would|should|will|per|in|on|for|to|that|and|of|the)\b)[\w-]+\s*){1,4})"
)


def asked_words(question: str) -> list[str]:
    """The words naming what a question asks about: "What reward designs are ..." -> ["reward", "designs"]."""
    m = _ASKED.match(question)
    words: list[str] = []
    generic = _GENERIC_WORDS.split()
    for w in m.group(1).split() if m else []:
        words.append(w)
        if w.lower() in generic or w.lower().rstrip("s") in generic:
            break  # "Which pretrained seq2seq model | serves as ...": the head noun ends the phrase
    return words


def question_names(question: str) -> list[str]:
    """The names a question gives: "MS MARCO", "TAS-B", "GPT-4"; of "BERT-sized" only "BERT"; "Primer-EZ" whole."""
    out: list[str] = []
    for i, m in enumerate(re.finditer(r"[A-Za-z][\w-]*", question)):
        w = m.group(0)
        if i == 0 and w in SENTENCE_STARTERS:
            continue
        if m.start() > 0 and question[m.start() - 1] in "-.":
            continue  # the tail of a compound that starts with a number ("Qwen2/2.5-VL": "VL" is not a name of its own)
        parts = [p for p in w.split("-") if p]
        if len(parts) == 1:
            out += [w] if name_like(w) else []
        elif all(name_like(p) or p.isupper() or p.isdigit() for p in parts):
            out.append(w)
        elif name_like(parts[0]):
            out.append(parts[0])  # "BERT-sized", "GPT-4-judged": the name heads the word
        elif any(name_like(p) for p in parts[1:]):
            out.append(w)  # "Primer-EZ", "Sentence-BERT": the name is the whole word, not its tail
    return out


# A proper name of several capitalised words inside a question ("System Usability Scale", "Natural Questions",
# "DeepMind Control Suite"): a paper that never writes it does not answer a question about it.
_TITLE_PHRASE = re.compile(r"(?<=[a-z,;:(]\s)(?:[A-Z][a-z]+|[A-Z][a-z]+[A-Z][a-z]+)(?:\s(?:of\s|for\s)?[A-Z][a-z]+)+\b")


# Capitalised words that make no name together ("Proposed Method", "Base Model", "Exact Match", "Limitations Section").
_GENERIC_CAPS = frozenset(
    """proposed method methods model models base large small exact match section limitations results result table figure
    appendix paper approach dataset data training test baseline baselines experiment experiments analysis study main
    final overall new our their score scores task tasks setting settings""".split()
)


def title_phrases(question: str) -> list[str]:
    """The names of several capitalised words a question gives, after its first word ("What System Usability
    Scale score ..." gives "System Usability Scale"); none in a question written in title case, and a phrase of
    sentence openers or generic words only ("Proposed Method") is not one."""
    words = re.findall(r"[A-Za-z]+", question)
    if words and sum(w[0].isupper() for w in words) > len(words) / 2:
        return []
    return [
        m.group(0)
        for m in _TITLE_PHRASE.finditer(question)
        if not set(m.group(0).split()) <= SENTENCE_STARTERS and not {w.lower() for w in m.group(0).split()} <= _GENERIC_CAPS
    ]


def name_like(word: str) -> bool:
    """A token shaped like a name: an acronym, CamelCase, a word with digits ("KL", "RoBERTa", "GPT-4")."""
    return _NAME_TOKEN.match(word) is not None


def is_name(word: str) -> bool:
    """GPT-4, BigBird-PEGASUS-large, OpineDB, BM25, v3.0.0: a name-like token (or a hyphenated one with a name part)."""
    return name_like(word) or ("-" in word and any(name_like(p) for p in word.split("-") if p))


def written_out(acronym: str, min_letters: int = 1) -> str:
    """A regex (lower case) for an acronym written out by its initials, each word of at least `min_letters` letters:
    "LM" -> "language model(ing)", "RL" -> "reinforcement learning"."""
    return r"[\s-]+".join(rf"{c}[a-z]{{{min_letters - 1},}}" for c in acronym.lower())
