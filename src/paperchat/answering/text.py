"""What a question asks for, and which sentences of the retrieved passages may be quoted as an answer.

A `Focus` is the question's content words (stemmed, with generic question words such as "many" or
"roughly" weighed down) and the kind of thing it asks for: a number ("how many", "what share"), a name
("which model", "which dataset"), a year ("when"), a colour, or anything. `candidates` cuts the passages
into sentences and leaves out what a reader would not accept as an answer: section headings, equation
and table debris, reference-list entries and author or affiliation lines. Every candidate is a verbatim
substring of its passage, so a quote of it is supported by construction.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Literal

from paperchat.text import Tokenizer, split_sentences
from paperchat.types import Source

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

_NUMBER_WORDS = (
    r"one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve|fifteen|twenty|thirty|forty|fifty|hundred|"
    r"hundreds|thousand|thousands|million|millions|billion|billions|half|dozen|twice|double|triple"
)
# A number that is the answer, not a pointer: "Table 3", "Section 4.2", "[12]", "Eq. (2)" do not count.
_POINTER = re.compile(r"\b(?:Table|Tab\.|Figure|Fig\.|Section|Sec\.|Eq\.|Equation|Appendix|Algorithm|Step|Line)\s*\(?\d+(?:\.\d+)*\)?|\[\d+(?:[,\s\u2013-]+\d+)*\]")
# Numbers that only mark structure: a list marker "(1)", "(ii)"; a section number before its heading
# ("3.3 Topic and Review Selection"); a footnote mark stuck to a word's final stop ("embeddings.4").
_MARKER = re.compile(r"(?:^\s*|(?<=[:;,.]\s)|(?<=\band\s)|(?<=\bor\s))\((?:\d{1,2}|[ivx]{1,4}|[a-h])\)|^\s*\d{1,2}\.?\s+(?=[A-Z][a-z])|\b\d+(?:\.\d+)+\s+(?=[A-Z][a-z])|(?<=[a-z][.,;:])\d{1,2}\b")
_CITE_YEAR = re.compile(r"\(\s*[A-Z][^()]{0,80}?(?:19|20)\d\d[a-z]?\s*\)|et al\.,?\s*\(?(?:19|20)\d\d")
_HAS_NUMBER = re.compile(rf"(?<![A-Za-z\d])\d|\b(?:{_NUMBER_WORDS})\b", re.I)
_YEAR = re.compile(r"\b(?:19[5-9]\d|20[0-4]\d)\b")
# Questions that ask for an amount of money or for how long something took, and sentences that state one
# ("5 cents per annotation", "$4.6M", "about 8.5 hours", "one week", "300 GPU hours"). A paper that discusses its
# training cost or hardware without ever stating the dollars or the hours does not answer such a question.
Measure = Literal["money", "duration", "size", ""]
_MONEY_Q = re.compile(
    r"\b(?:money|dollars?|USD|cents|wages?|salar(?:y|ies)|hourly\s+rate)\b|\$|"
    r"\bhow\s+much\b[^?]*\b(?:paid|pay|cost|costs|charged?|spend|spent)\b|\bwhat\b[^?]*\b(?:rate|price|amount)\b[^?]*\bpaid\b",
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
_SIZE = re.compile(r"\b\d[\d,.]*\s?(?:[KMBT]\b|million|billion|trillion)|\b\d[\d,.]*\s+(?:\w+\s+)?(?:parameters|params|tokens)\b", re.I)
_MONEY = re.compile(r"(?:US\$|\$|USD|€|£)\s?\d|\d[\d,.]*\s?(?:[kKM]\s?)?(?:\$|USD|dollars?|cents?|€|£|euros?)", re.I)
_DURATION = re.compile(
    r"\b(?:\d[\d,.]*|one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve|a few|several|half an?)"
    r"(?:\s*[-–]\s*\d[\d,.]*)?[\s-]*(?:GPU[\s-]|TPU[\s-]|CPU[\s-]|wall[\s-]clock\s)?"
    r"(?:hours?|hrs?|days?|weeks?|months?|minutes?|mins?|seconds?|secs?|ms|years?)\b(?!-)",
    re.I,
)


# Questions that ask for the value of a named setting ("what learning rate ...", "at what sampling temperature ...",
# "which optimizer ...", "what numerical value of the PPO clipping parameter ε ...") and how a sentence states one:
# the setting's name with a number close after it ("a learning rate of 1e-6", "temperature T = 0", "Learning_rate
# 1e-5"), or a number just before it ("0.1 dropout"); an optimizer by its name ("the RMSprop optimizer"). A paper that
# describes its training without the learning rate does not answer "what learning rate".
_SETTINGS: dict[str, tuple[str, str]] = {  # key: (how a question names it, how a passage names it)
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
    + "|".join(q for q, _ in _SETTINGS.values())
    + ")" + _NOT_VALUE,
    re.I,
)
SETTING_REACH = 80  # characters after a setting's name in which its value may stand
_SETTING_VALUE = r"(?:\d[\d.,]*(?:e-?\d+)?|\b(?:zero|one|two|three|four|five|ten)\b)"
_VALUE_BEFORE = re.compile(r"\d[\d.,]*[kKM]?(?:-|\s+)(?:[A-Za-z]+\s+){0,2}$")  # "0.1 dropout", "768-dimensional", "4096 tokens per batch"
_OPTIMIZERS = re.compile(r"\b(?:adam\w*|sgd|adafactor|rmsprop|adagrad|lion|lamb|momentum|gradient descent)\b", re.I)


def settings_asked(question: str) -> tuple[str, ...]:
    """The named settings whose value the question asks for ("What optimizer, learning rate and batch size ...":
    all three); () when it asks for no setting's value ("What learning rate schedule ...", "What happens when the
    temperature is raised?")."""
    if not _SETTING_Q.search(question):
        return ()
    return tuple(k for k, (q, _) in _SETTINGS.items() if re.search(rf"\b(?:{q}){_NOT_VALUE}", question, re.I))


def names_setting(key: str, sentence: str) -> bool:
    """Whether the sentence names the setting at all (with or without its value)."""
    if key == "optimizer":
        return bool(_OPTIMIZERS.search(sentence) or re.search(r"\boptimi[sz]\w+", sentence, re.I))
    return re.search(_SETTINGS[key][1], sentence, re.I) is not None


def states_setting(key: str, sentence: str) -> bool:
    """Whether the sentence gives a value of the setting (`settings_asked`): its name with a number within
    SETTING_REACH characters after it, or a number at most two words before it ("0.1 dropout", "768-dimensional",
    "4096 tokens per batch"); an optimizer by its name."""
    if key == "optimizer":
        return bool(_OPTIMIZERS.search(sentence))
    for m in re.finditer(_SETTINGS[key][1], sentence, re.I):
        if re.search(_SETTING_VALUE, sentence[m.end() : m.end() + SETTING_REACH]) or _VALUE_BEFORE.search(sentence[max(0, m.start() - 30) : m.start()]):
            return True
    return False


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
_SENTENCE_STARTERS = frozenset(
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
        if i == 0 and w in _SENTENCE_STARTERS:
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
        if not set(m.group(0).split()) <= _SENTENCE_STARTERS and not {w.lower() for w in m.group(0).split()} <= _GENERIC_CAPS
    ]


def name_like(word: str) -> bool:
    """A token shaped like a name: an acronym, CamelCase, a word with digits ("KL", "RoBERTa", "GPT-4")."""
    return _NAME_TOKEN.match(word) is not None


def _is_name(word: str) -> bool:
    """GPT-4, BigBird-PEGASUS-large, OpineDB, BM25, v3.0.0: a name-like token (or a hyphenated one with a name part)."""
    return name_like(word) or ("-" in word and any(name_like(p) for p in word.split("-") if p))


def written_out(acronym: str, min_letters: int = 1) -> str:
    """A regex (lower case) for an acronym written out by its initials, each word of at least `min_letters` letters:
    "LM" -> "language model(ing)", "RL" -> "reinforcement learning"."""
    return r"[\s-]+".join(rf"{c}[a-z]{{{min_letters - 1},}}" for c in acronym.lower())


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
    return _is_name(word) and word not in _HEADER_NAMES and word not in _FIELD_NAMES


def problem_statement(sentence: str) -> bool:
    """A sentence that states a problem or a gap ("remains challenging", "suffers from", "However, ...") and says
    nothing of what the paper does about it (not "We address this challenge with ...", "RELIANCE enhances ... on
    challenging benchmarks")."""
    return bool(_PROBLEM.search(sentence)) and not says_what_it_does(sentence)


# Venue and header acronyms that running page headers glue into sentences: not answers.
_HEADER_NAMES = frozenset("ACL EMNLP NAACL EACL COLING CHI UIST CSCW NeurIPS NIPS ICML ICLR AAAI IJCAI KDD SIGIR WWW CVPR ICCV ECCV TACL JMLR ACM IEEE arXiv".split())


def names_in(text: str) -> set[str]:
    """The name-like tokens of a text: acronyms, CamelCase, words with digits, versions (GPT-4, v3.0.0)."""
    return {w.rstrip(".") for w in re.findall(r"[A-Za-z0-9][\w.-]*", text) if _is_name(w.rstrip("."))} - _HEADER_NAMES


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
    words = sentence.split()
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
        opens = w in _SENTENCE_STARTERS and (not past_lower or w in _STRICT_OPENERS)
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
