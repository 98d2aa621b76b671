"""Answers that answer the question (issue 15): query-focused sentences, topic maps, refusal by reading.

One module-scoped library over the session's built store (300 real abstracts, five real PDFs including
Attention Is All You Need, DPR, RAG and CiteSee) and one over the bundled demo corpus: MiniLM loads once.
"""

from __future__ import annotations

import json
import re
import shutil
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from paperchat.answering import topic_map
from paperchat.answering.evidence import mentioned
from paperchat.answering.question import analyse, measure_asked
from paperchat.answering.text import quotable, satisfies, states, strip_heading, strip_plot, widen
from paperchat.evaluation import metrics as M
from paperchat.library import Library
from paperchat.prompts import CANNOT_ANSWER
from paperchat.providers.minilm import MiniLMEmbedder
from paperchat.qa import QA
from paperchat.text import Tokenizer
from paperchat.types import Scope, Source

from .conftest import SHARED, make_settings

TOK = Tokenizer()


@pytest.fixture(scope="module")
def qa(built_store: Path, tmp_path_factory: pytest.TempPathFactory, minilm: MiniLMEmbedder) -> Iterator[QA]:
    copy = tmp_path_factory.mktemp("answers") / "store"
    shutil.copytree(built_store, copy)
    lib = Library(make_settings(copy), embedder=minilm)
    yield QA(lib)
    lib.close()


@pytest.fixture(scope="module")
def demo_qa(tmp_path_factory: pytest.TempPathFactory, minilm: MiniLMEmbedder) -> Iterator[QA]:
    from paperchat.demo import ensure_demo

    lib = Library(make_settings(tmp_path_factory.mktemp("demo") / "store"), embedder=minilm)
    ensure_demo(lib, show_progress=False)
    yield QA(lib)
    lib.close()


def _first_quote(answer: str) -> str:
    return M.answer_sentences(answer)[0]


# -- without MiniLM --------------------------------------------------------------------------------


def test_question_focus_and_answer_kinds() -> None:
    f = analyse("How many attention heads are used?", TOK)
    assert f.kind == "number" and "mani" not in f.terms and f.terms["head"] > 1.0  # what is asked about weighs most
    assert analyse("Which pretrained seq2seq model serves as the generator?", TOK).kind == "name"
    assert analyse("What colors are used to render visited citations?", TOK).kind == "colour"
    assert analyse("When matching an entry, what minimum similarity score is required?", TOK).kind == "number"
    assert analyse("When was the corpus released?", TOK).kind == "year"
    assert analyse("What retrieval accuracy does it reach on the MS MARCO benchmark?", TOK).names == ("MS", "MARCO")
    assert analyse("How well does a BERT-sized model do?", TOK).names == ("BERT",)
    # a name given inside a hyphenated word is found as the head of one in the passages (pypdf's "GPT- 4"
    # too: a GPT-4-judged win-rate question was refused as "never mentions GPT"), never inside a word
    assert analyse("What GPT-4-judged win rate does it reach?", TOK).names == ("GPT",)
    assert mentioned("GPT", "to validate the usage of gpt- 4 for computing win rates") and mentioned("GPT", "gpt-4")
    assert mentioned("GPU", "on 8 gpus") and mentioned("T5", "t5-xxl")
    assert not mentioned("BERT", "roberta and sentence-bert") and not mentioned("GPT", "chatgpt")
    # a name that is the tail of the question's compound is the compound ("Primer-EZ", not "EZ"), found as written, with
    # a space, by the name in it, or with its acronym written out (eval/askpdf_fresh: two answerable questions were
    # refused as "the sources never mention EZ" / "... LM")
    assert "Primer-EZ" in analyse("What did the Primer-EZ changes do?", TOK).names
    # the tail of a compound that starts with a number is no name of its own (eval/askpdf_abstain_check chk-2504.02587-1
    # was refused as "the sources never mention VL" for "Qwen2/2.5-VL")
    assert "VL" not in analyse("When Qwen2/2.5-VL is fine-tuned on the golden solutions, what learning rate is used?", TOK).names
    assert mentioned("Primer-EZ", "primer-ez modifications also improve") and mentioned("Primer-EZ", "primer ez")
    assert mentioned("masked-LM", "the target accuracy of 72.0% on masked language modeling")
    assert mentioned("reward-versus-KL", "the kl divergence from the reference policy")
    assert not mentioned("masked-LM", "a masked image model") and not mentioned("Primer-EZ", "primer alone")
    assert not mentioned("LM", "large models") and not mentioned("RL", "reward learning")  # no loose initials for two letters
    # a bare acronym of 3+ letters counts written out by initials, each word 3+ letters (eval/askpdf_abstain_check
    # chk-1901.11373-1 was refused as "the sources never mention SRL NLI"); that can match by chance ("GPU": "give plenty
    # updates"), which costs at worst a refusal not made, never an answer
    assert mentioned("SRL", "pretrained on semantic role labeling, relation extraction") and mentioned("NLI", "natural language inference")
    assert not mentioned("NLI", "no labels in") and not mentioned("MMLU", "massive multitask language")
    assert not mentioned("M-14B", "the 14b model") and not mentioned("C-MTEB", "results on mteb")  # a name throughout: as written
    assert satisfies("number", "In this work we employ h = 8 parallel attention layers, or heads.")
    assert not satisfies("number", "As shown in Table 3 and Section 4.2 [12], it helps.")
    # Numbers that only mark structure are not values (askpdf_dev pdf-2004.14283-2 quoted this first).
    assert not satisfies(
        "number",
        "(1) For each extraction, we find its neighbors based on the cosine similarity of their embeddings.4 "
        "3.3 Topic and Review Selection We next identify a subset of extractions.",
    )
    assert not satisfies("number", "5 Experiments 5.1 Unsupervised Pretraining How much in-domain data is needed?")
    assert satisfies("number", "We prune neighbors of an extraction which have low cosine similarity (< 0.8).")
    assert satisfies("number", "8 GPUs were used, (a) with a batch of 32.")
    # a number in brackets after a word is a value, not a list marker (eval/askpdf_fresh: "articles (25)")
    assert satisfies("number", "We manually included few Wikipedia articles (25) missing from our corpus.")
    assert not satisfies("number", "The steps are: (1) parse the files; and (2) index them.")
    # A name with digits in it is not a number (askpdf_dev pdf-2104.08663-1 quoted "BM25 remains a strong baseline"
    # first for "What BM25 parameter values ..."); a value stuck to a symbol still is one.
    assert not satisfies("number", "Overall, BM25 remains a strong baseline, and docT5query and T5 follow it.")
    assert satisfies("number", "We use Anserini with the default Lucene parameters (k=0.9 and b=0.4).")
    assert satisfies("number", "It was trained with a learning rate of 5e-5 on 8xA100 GPUs.")
    assert satisfies("name", "We use BigBird-PEGASUS-large as the summarizer.", frozenset({"LongEval"}))
    assert not satisfies("name", "CiteSee shows the cards.", frozenset({"CiteSee"}))


def test_money_and_duration_questions_and_sentences() -> None:
    """What asks for an amount of money or a duration, and what states one (abstention's measure check)."""
    for q in ("What was the training cost of the big model in US dollars?", "How much was each crowdworker paid for a single labeling job?",
              "At what hourly rate were the annotators paid?", "How much money did the API calls cost?"):
        assert measure_asked(q) == "money", q
    for q in ("How many GPU hours were needed to train the 13B reward model?", "For how many days was the 7.5B model trained?",
              "How long did it take to train the question and passage encoders?", "How many wall-clock days do the implementations need?",
              "Roughly how much GPU time did training all of the models consume?"):
        assert measure_asked(q) == "duration", q
    for q in ("How long were the documents returned by TAS-B?", "What share of respondents agreed that their pay for the task was fair?",
              "How much training compute did the 175B models need?", "How many attention heads are used?",
              "How much extra computation does checkpointing activations cost?", "How much does the hurdle setup cut search cost?"):
        assert measure_asked(q) == "", q
    assert states("money", "Workers were paid 5 cents per annotation.") and states("money", "The run cost about $4.6M.")
    assert states("money", "Annotators earned 15-20$ per hour.") and not states("money", "We reduce the search cost by a factor of 6.2X.")
    assert states("duration", "Building the index takes about 8.5 hours on one server.") and states("duration", "trained for one week on a TPU v3-8")
    assert states("duration", "It used roughly 300 GPU hours in total.") and not states("duration", "We train on 8 V100 GPUs with a batch size of 128.")
    assert measure_asked("How much wall-clock time did the bandit experiments take?") == "duration"
    assert measure_asked("How much time did the annotators spend per summary?") == "duration"  # time spent, not money
    assert measure_asked("How many parameters does the generator have?") == "size" == measure_asked("On how many tokens was the base model pretrained?")
    assert measure_asked("What is the total parameter count of the model?") == "size"
    assert states("size", "BART-large has 400M parameters.") and states("size", "trained on 1.8T tokens") and states("size", "a 7B model")
    assert not states("size", "We compare a small and a large model in the scaling ablation.")


def test_answer_line_takes_the_sentence_it_leans_on() -> None:
    """A sentence that points back ("In contrast, ...", "This result ...") is quoted with the sentence before it; one
    completed by a contrast on the question's subject ("Instead, ...") with the sentence after it; the quote stays a
    verbatim substring of the passage."""
    dpr = (
        "Table 4 shows the results. With the help of FAISS in-memory index for real-valued vectors, DPR can be made incredibly "
        "efficient, processing 995.0 questions per second. In contrast, BM25/Lucene processes 23.7 questions per second per "
        "CPU thread. On the other hand, the time required for building an index for dense vectors is much longer."
    )
    f = analyse("How many questions per second can the dense retriever handle, compared with the Lucene baseline?", TOK)
    quote = widen("In contrast, BM25/Lucene processes 23.7 questions per second per CPU thread.", dpr, f, TOK)
    assert quote.startswith("With the help of FAISS") and quote.endswith("per CPU thread.") and quote in dpr
    flash = (
        "We do not need to store the dropout mask from the forward pass. "
        "Instead, we save the generator states and re-generate the dropout mask in the backward pass."
    )
    f = analyse("How does the backward computation avoid storing the dropout mask?", TOK)
    assert widen("We do not need to store the dropout mask from the forward pass.", flash, f, TOK) == flash
    f = analyse("Which activations are kept in memory?", TOK)  # "Instead" completes it, but says nothing asked here
    assert (
        widen("We do not need to store the dropout mask from the forward pass.", flash, f, TOK)
        == "We do not need to store the dropout mask from the forward pass."
    )
    own = "Transformers dominate NLP. This paper studies how many heads an attention layer needs."
    assert widen("This paper studies how many heads an attention layer needs.", own, analyse("How many heads?", TOK), TOK).startswith("This paper")
    said = "We train for 3 epochs. It is important to note that we use 8 heads in every layer."
    assert widen("It is important to note that we use 8 heads in every layer.", said, analyse("How many heads?", TOK), TOK).startswith("It is")  # no antecedent
    said = "The encoder has 6 layers. It uses 8 heads in every layer."
    assert widen("It uses 8 heads in every layer.", said, analyse("How many heads?", TOK), TOK) == said  # "it" is the encoder
    # an abstract's title (here split in two by its "?") is never quoted, even when the first sentence leans back on it
    abstract = "Is Attention All You Need? Revisiting the role of attention in transformer models\n\nIt can have its heads pruned."
    first = "It can have its heads pruned."
    assert widen(first, abstract, analyse("Can heads be pruned?", TOK), TOK, titled=True) == first
    assert widen(first, "Heads matter a lot in practice. " + first, analyse("Can heads be pruned?", TOK), TOK) != first  # untitled: it leans back
    # a heading glued to the sentence before, and a bullet item, are not widened into
    glued = "3.2 Results Table 4 shows the throughput of all systems. In contrast, BM25 processes 23.7 questions per second per thread."
    assert widen("In contrast, BM25 processes 23.7 questions per second per thread.", glued, f, TOK).startswith("In contrast")
    bullets = "We do not store the dropout mask \u2022 We keep the seeds. Instead, we re-generate the dropout mask in the backward pass."
    assert widen("We keep the seeds.", bullets, analyse("How is the dropout mask handled?", TOK), TOK) == "We keep the seeds."


def test_chart_text_before_a_caption_is_dropped() -> None:
    # pypdf runs a chart's axis ticks and legend into its caption (BEIR, p. 9 of the shared PDF)
    s = (
        "0 100 200 300 400 500 TREC-COVID [58] TAS-B ANCE 0 100 200 300 400 500 Touch\u00e9-2020 [5] TAS-B ANCE "
        "Figure 4: Distribution plots [22] for top-10 retrieved document lengths (in words)."
    )
    assert strip_plot(s) == "Figure 4: Distribution plots [22] for top-10 retrieved document lengths (in words)." and s.endswith(strip_plot(s))
    # prose before a figure mention stays, and so does a caption with nothing before it
    prose = "As the chart for the 3 models in Figure 2: Results shows, the gap grows with size."
    assert strip_plot(prose) == prose
    assert strip_plot("Figure 1: F1 scores on SQuAD as a function of the number of training examples.").startswith("Figure 1:")


def test_debris_is_not_quotable() -> None:
    assert not quotable("Filter Number of papers No title 20k No authors 0.3M < 100 chars 80.0M Not English 15.2M")
    assert not quotable("MultiHead(Q,K,V ) = Concat(head1,..., headh)W O where headi = Attention(QW Q i ,KW K i ,VW V i )")
    assert not quotable("Jacob Devlin, Ming-Wei Chang, Kenton Lee, and Kristina Toutanova. In Proceedings of NAACL, 2019.")
    assert not quotable("Allen Institute for AI, University of Washington, Seattle")
    assert quotable("In this work we employ h = 8 parallel attention layers, or heads.")
    # pypdf's "10, 853" is one number: a sentence with two counts in it is no table row
    assert quotable("At first we collect 12, 406 recipes (48, 275 steps) from the website.")
    assert not quotable("Model 12, 406 48, 275 3.1 2.7 9.9 1.2 0.4")
    s = "3.2.3 Applications of Attention in our Model The Transformer uses multi-head attention in three different ways:"
    assert strip_heading(s) == "The Transformer uses multi-head attention in three different ways:" and s.endswith(strip_heading(s))
    # numbered headings in sentence case end at an opener that is rarely capitalised inside a sentence
    assert strip_heading(
        "2.3 Maximum number of pondering steps Since in practice we can only unroll the step function a few times."
    ).startswith("Since in practice")
    assert strip_heading("B.1 Training and evaluation details For this experiment we used the Parity task.").startswith("For this experiment")
    assert strip_heading("4.5 Dialogue Safety Evaluations Finally, we compare OPT-175B on two safety evaluations.").startswith("Finally, we compare")
    s = "A Transformer model uses BERT to encode the query and the documents in one pass."  # a lettered "heading" that is a sentence
    assert strip_heading(s) == s
    assert not quotable("Shoeybi, Mohammad et al. Megatron-LM: Training Multi-Billion Parameter Language Models Using Model Parallelism.")
    assert not quotable("Vaswani, A. and Shazeer, N. Attention is all you need, a paper of the year.")
    assert quotable("However, Smith et al. (2020) showed that the model fails on long inputs.")
    assert quotable("Similarly, Yao et al. ReAct interleaves reasoning and acting in one loop.")
    # a numbered heading in title case before a sentence that opens with no opener stays whole, never a fragment
    for s in ("5.3 Qualitative Analysis Although DPR performs better than BM25 in general, passages differ.",
              "6.1 How well can DPO optimize the RLHF objective?", "38 TFlops per GPU, and aggregate performance over 15 Petaflops."):
        assert strip_heading(s) == s


def test_clustering_is_deterministic_and_labels_are_distinctive() -> None:
    rng = np.random.default_rng(0)
    centres = rng.normal(size=(3, 16))
    vecs = np.concatenate([c + 0.05 * rng.normal(size=(3, 16)) for c in centres])
    groups = topic_map.cluster(vecs)
    assert groups == topic_map.cluster(vecs.copy()) and sorted(map(sorted, groups)) == [[0, 1, 2], [3, 4, 5], [6, 7, 8]]
    texts = [
        ["Process rewards score each search step.", "Step-level process rewards for search agents."],
        ["Outcome rewards with credit assignment.", "Credit assignment spreads outcome rewards over turns."],
    ]
    labels = topic_map.label_groups(texts)
    assert "process" in labels[0].lower() and ("credit" in labels[1].lower() or "outcome" in labels[1].lower()), labels
    assert topic_map.focus_phrase("What reward designs are used to train search agents?") == "Reward designs used to train search agents"
    assert topic_map.focus_phrase("What reward designs have been proposed for search agents?") == "Reward designs proposed for search agents"
    assert topic_map.focus_phrase("What approaches synthesize environments for agents?") == "Approaches that synthesize environments for agents"
    assert topic_map.focus_phrase("How have RL methods taught agents to stop?") == '"How have RL methods taught agents to stop?"'
    assert topic_map.focus_phrase("What methods for credit assignment exist?") == '"What methods for credit assignment exist?"'


def test_answer_metrics() -> None:
    a = 'The paper says (p. 5): "We employ h = 8 parallel attention layers." [3]\nIt also notes (p. 8): "Single-head is 0.9 BLEU worse." [4]\n'
    assert M.first_gold_rank(a, ["0.9 BLEU"])[0] == 2.0 and M.first_gold_rank(a, ["h = 8"])[0] == 1.0
    assert M.first_gold_rank(a, ["twelve"])[0] == 0.0
    assert M.on_question(a, "How many attention layers?")[0] == 0.5
    assert M.citation_recall(["a", "b"], ["a", "c", "d", "e"])[0] == 0.25


# -- paper answers ---------------------------------------------------------------------------------


def test_attention_heads_answer_comes_first(qa: QA) -> None:
    ans = qa.ask("How many attention heads are used?", Scope.for_paper("1706.03762"))
    assert not ans.abstained
    first = ans.answer.splitlines()[0]
    assert "h = 8 parallel attention layers, or heads" in first and "(p. 5)" in first
    assert len(M.answer_sentences(ans.answer)) <= 3  # the answer, then at most two sentences of context
    assert all(c.support == 1.0 for c in ans.citations)


def test_numeric_question_leads_with_the_number(qa: QA) -> None:
    ans = qa.ask("What batch size was used to train the main dense retriever?", Scope.for_paper("2004.04906"))
    assert "128" in _first_quote(ans.answer)


def test_comparison_answer_quotes_both_sides(qa: QA) -> None:
    """askpdf_dev pdf-2004.04906-3: the best sentence is "In contrast, BM25/Lucene ... 23.7 questions per second";
    the answer line quotes it with the sentence it contrasts, DPR's 995.0."""
    ans = qa.ask(
        "How many questions per second can the dense retriever handle with an in-memory FAISS index, compared with the Lucene baseline?",
        Scope.for_paper("2004.04906"),
    )
    first = _first_quote(ans.answer)
    assert "995.0 questions per second" in first and "23.7 questions per second" in first
    assert ans.citations[0].support == 1.0


def test_unanswerable_question_is_refused_with_what_was_found_nearby(qa: QA) -> None:
    ans = qa.ask("What retrieval accuracy does the dense retriever reach on the MS MARCO passage ranking benchmark?", Scope.for_paper("2004.04906"))
    assert ans.abstained and ans.answer.startswith(CANNOT_ANSWER) and "MS MARCO" in ans.answer
    quote, n = re.findall(r'"(.+?)" \[(\d+)\]', ans.answer)[0]
    assert quote in {s.n: s for s in ans.sources}[int(n)].text and ans.citations[0].support == 1.0


def test_refused_when_no_sentence_holds_what_is_asked() -> None:
    """A paper that describes its training but never states the learning rate: the question's other words are
    all there, the asked ones ("learning rate") are in no sentence read, so it is refused; given the sentence
    that states it, it is not."""
    from paperchat.answering.evidence import Refusal, read
    from paperchat.providers.answerers import ExtractiveAnswerer

    training = "We fine-tune the retriever and the generator jointly for 10 epochs on 8 GPUs with a batch size of 128."
    question = "What learning rate was used when fine-tuning the retriever and the generator jointly?"
    rule = Refusal(min_strength=-9.0, names=True, min_asked=0.5)
    for text, refused in ((training, True), (training + " The learning rate is 3e-5 with linear decay.", False)):
        sources = [Source(n=1, paper_id="p", title="P", page=4, text=text, score=1.0)]
        reading = ExtractiveAnswerer().read(question, sources)
        ev = read(reading.focus, reading.ranked, reading.candidates, sources)
        assert ev.asked == (0.0 if refused else 1.0) and rule.refuse(ev) is refused


def test_refused_when_no_sentence_states_the_money_or_time_asked() -> None:
    """A paper that describes its hardware but never says how long training took: a GPU-hours question is refused
    with that reason; given the sentence that states the hours, it is answered."""
    from paperchat.answering.evidence import Refusal, read
    from paperchat.providers.answerers import ExtractiveAnswerer

    hardware = "We train the reward model on 32 A100 GPUs with a batch size of 512 and a learning rate of 1e-5."
    question = "How many GPU hours were needed to train the reward model?"
    rule = Refusal(min_strength=-9.0)
    for text, refused in ((hardware, True), (hardware + " Training the reward model took about 40 hours.", False)):
        sources = [Source(n=1, paper_id="p", title="P", page=6, text=text, score=1.0)]
        reading = ExtractiveAnswerer().read(question, sources)
        ev = read(reading.focus, reading.ranked, reading.candidates, sources)
        assert ev.measure == "duration" and ev.measured is not refused and rule.refuse(ev) is refused
        assert Refusal(min_strength=-9.0, measures=False).refuse(ev) is False
        if refused:
            assert rule.why(ev) == "no passage states how long it took"


def test_setting_values_asked_and_stated() -> None:
    from paperchat.answering.question import settings_asked
    from paperchat.answering.text import states_setting

    assert settings_asked("What optimizer, learning rate and batch size are used by default?") == ("learning rate", "batch size", "optimizer")
    assert settings_asked("At what sampling temperature were rationales generated?") == ("temperature",)
    assert settings_asked("What numerical value of the PPO clipping parameter \u03b5 was used?") == ("clipping", "epsilon")
    assert settings_asked("What is the learning rate used for fine-tuning?") == ("learning rate",)
    assert settings_asked("What outer-loop step size was used on Omniglot?") == ("learning rate",)  # a step size is one
    assert settings_asked("By what step size did accuracy grow?") == ()
    # a setting named but not its value asked (found in review: each was refused)
    for q in ("In which part of the network is dropout applied, and why?", "What learning rate schedule is used?",
              "By what margin does DPR outperform BM25?", "What is the top-k retrieval accuracy?", "Which layers does dropout apply to?",
              "What happens when the temperature is increased?", "What temperature scaling method is used?", "What kind of thresholding is used?"):
        assert settings_asked(q) == (), q
    assert settings_asked("What " + "-" * 5000) == () and settings_asked("what " + "a-" * 800) == ()  # no runaway backtracking
    for key, stated in (("batch size", "a batch of 512 questions"), ("batch size", "4096 tokens per batch"), ("dimensionality", "768-dimensional vectors"),
                        ("warm-up", "2k warmup steps"), ("learning rate", "\u03b7 = 1e-4"), ("learning rate", "a step size of 1e-3"),
                        ("learning rate", "The learning rate follows a warm-up cosine decay schedule with an initial value of 1 \u00d7 10\u22125")):
        assert states_setting(key, stated), stated
    assert states_setting("learning rate", "We linearly warm up the learning rate from 0 to 1e-6 over 150 steps.")
    assert states_setting("learning rate", "Learning_rate 1e-5 1e-5 1e-5 Epochs 6 6 6")  # a table row
    assert states_setting("temperature", "All model sampling is performed at temperature T = 0 and truncated at the first newline.")
    assert states_setting("dropout", "We train with 0.1 dropout on the attention weights.")
    assert states_setting("optimizer", "We use the RMSprop optimizer.") and not states_setting("optimizer", "The optimizer state is sharded.")
    assert not states_setting("learning rate", "The learning rate follows a cosine schedule.")
    assert not states_setting("learning rate", "The learning rate follows a cosine schedule over the network.")  # "one" in "none"
    assert not states_setting("dropout", "We use dropout in the decoder only.")
    assert not states_setting("scaling factor", "a 7B model with scaling")  # a number two words away that is not its value


def test_refusal_for_a_missing_setting_shows_where_the_paper_speaks_of_it() -> None:
    from paperchat.answering.evidence import Refusal, read
    from paperchat.providers.answerers import ExtractiveAnswerer

    text = ("We fine-tune the generator jointly with the retriever on the training split for 10 epochs. "
            "The learning rate follows a cosine schedule with a short warm-up. We evaluate on the dev split.")
    question = "What learning rate was used when fine-tuning the generator jointly with the retriever?"
    sources = [Source(n=1, paper_id="p", title="P", page=4, text=text, score=1.0)]
    reading = ExtractiveAnswerer().read(question, sources)
    ev = read(reading.focus, reading.ranked, reading.candidates, sources)
    rule = Refusal(min_strength=-9.0, settings=True)
    assert ev.settings == ("learning rate",) and not ev.set_value and rule.refuse(ev)
    assert rule.why(ev) == "no passage gives the learning rate used"
    near = rule.nearest(ev)
    assert near is not None and near.text.startswith("The learning rate follows a cosine schedule")
    stated = [Source(n=1, paper_id="p", title="P", page=4, text=text + " We use a learning rate of 3e-5.", score=1.0)]
    reading = ExtractiveAnswerer().read(question, stated)
    assert not rule.refuse(read(reading.focus, reading.ranked, reading.candidates, stated))


def test_setting_question_quotes_the_sentence_that_gives_it(qa: QA) -> None:
    """A question asking a setting's value favours sentences that give one: eval/askpdf_val.jsonl val-1706.03762-1 (beam
    width and length penalty for constituency parsing) quoted the sentence on tuning "beam size" on the development set,
    and not the one with the values, until the sentences that give a value of the asked setting gained."""
    ans = qa.ask(
        "For English constituency parsing, what beam width and length-penalty \u03b1 were used at inference time?", Scope.for_paper("1706.03762"), k=10
    )
    assert not ans.abstained and "beam size of 21 and \u03b1 = 0.3" in ans.answer
    ans = qa.ask("What learning rate and optimizer were used to train the dense retriever?", Scope.for_paper("2004.04906"), k=10)
    assert "learning rate of 10" in _first_quote(ans.answer)


def test_real_pdf_setting_the_paper_never_gives_is_refused(qa: QA) -> None:
    """eval/askpdf_abstain_tune.jsonl abst-2005.11401-2: RAG describes its end-to-end fine-tuning but gives no learning
    rate or batch size for it; refused, naming what is missing. DPR states its batch size (askpdf_dev pdf-2004.04906-1):
    answered."""
    ans = qa.ask("What learning rate and batch size were used when fine-tuning the retrieval-augmented models end to end?", Scope.for_paper("2005.11401"), k=10)
    assert ans.abstained and "no passage gives the learning rate or batch size used" in ans.answer
    ans = qa.ask(
        "What batch size and how many lexical hard negatives per question were used to train the main dense retriever?", Scope.for_paper("2004.04906"), k=10
    )
    assert not ans.abstained and "128" in ans.answer


def test_a_named_scale_the_paper_never_uses_is_refused(qa: QA) -> None:
    """eval/askpdf_abstain_tune.jsonl abst-2302.07302-2: CiteSee's field study reports no System Usability Scale score;
    the question's name of several capitalised words is looked for in the passages like its acronyms."""
    from paperchat.answering.question import title_phrases

    assert title_phrases("What System Usability Scale score did the participants give?") == ["System Usability Scale"]
    assert title_phrases("How does it perform on the DeepMind Control Suite?") == ["DeepMind Control Suite"]
    assert title_phrases("Which Semantic Scholar PDFs were parsed by the pipeline?") == ["Semantic Scholar"]  # an acronym ends it
    assert title_phrases("The Transformer uses what?") == []  # one word, and the first
    # found in review: generic capitalised words, a question in title case, and a name written another way
    assert title_phrases("What does the Proposed Method achieve on Exact Match?") == []
    assert title_phrases("What Is The Learning Rate Used In The Paper?") == []
    assert mentioned("Chain of Thought", "chain-of-thought prompting helps") and mentioned("Transformer Big", "the transformer (big) model")
    ans = qa.ask("What System Usability Scale score did the field-deployment participants give the reader?", Scope.for_paper("2302.07302"), k=10)
    assert ans.abstained and "never mention System Usability Scale" in ans.answer


def test_real_pdf_time_question_the_paper_does_not_answer_is_refused(qa: QA) -> None:
    """DPR states how long building its FAISS index takes (8.5 hours) but not how long training its encoders took
    (eval/askpdf_abstain_tune.jsonl): the first is answered with the hours, the second refused, naming the reason."""
    dpr = Scope.for_paper("2004.04906")
    ans = qa.ask("How many hours does constructing the FAISS index over all 21 million passage vectors take on one machine?", dpr, k=10)
    assert not ans.abstained and "8.5 hours" in ans.answer
    ans = qa.ask("How long did it take to train the question and passage encoders on Natural Questions?", dpr, k=10)
    assert ans.abstained and ans.answer.startswith(CANNOT_ANSWER) and "no passage states how long it took" in ans.answer


def test_dev_questions_regression(qa: QA) -> None:
    """askpdf_dev on the three dev PDFs in the built store (9 answerable, 2 unanswerable)."""
    rows = [json.loads(line) for line in open(SHARED / "eval" / "askpdf_dev.jsonl", encoding="utf-8")]
    rows = [r for r in rows if r["paper_id"] in {"2005.11401", "2004.04906", "2302.07302"}]
    contains = first = refused_right = refused_wrong = 0
    for r in rows:
        ans = qa.ask(r["question"], Scope.for_paper(r["paper_id"]), k=10)
        golds = [r["gold_answer"], *r["answer_aliases"]]
        if r["unanswerable"]:
            refused_right += ans.abstained
            continue
        refused_wrong += ans.abstained
        contains += M.contains(ans.answer, golds)[0] == 1.0
        first += M.first_gold_rank(ans.answer, golds)[0] == 1.0
    assert refused_wrong == 0 and refused_right >= 1
    assert contains >= 4 and first >= 3  # eval run on these nine: contains 4, gold in the first sentence 4 (was 4 and 2)


# -- topic answers ---------------------------------------------------------------------------------


def test_topic_map_quotes_what_answers_the_question(demo_qa: QA) -> None:
    ans = demo_qa.ask("What reward designs are used to train multi-turn search agents with RL?", Scope.for_topic("rl-for-llm-agents"), k=10)
    assert not ans.abstained
    head = ans.answer.splitlines()[0]
    assert re.match(
        r"Reward designs used to train multi-turn search agents with RL, from \d+ of \d+ papers in RL for LLM Agents \(\d{4}-\d\d \u2013 \d{4}-\d\d\):", head
    )
    groups = re.findall(r"^(\S.*) \((\d+) papers?\)$", ans.answer, re.M)
    assert len(groups) >= 2
    quotes = re.findall(r'^- .+?: "(.+)" \[(\d+)\]$', ans.answer, re.M)
    assert len(quotes) == sum(int(n) for _, n in groups) <= demo_qa.lib.settings.answers.max_papers
    assert all(re.search(r"reward", q, re.I) for q, _ in quotes), quotes
    by_n = {s.n: s for s in ans.sources}
    assert all(q in by_n[int(n)].text for q, n in quotes) and all(c.support == 1.0 for c in ans.citations)


def test_topic_map_says_which_papers_are_new(demo_qa: QA) -> None:
    """Without a window the map marks the papers of the topic's last four weeks as new and counts them under the
    header; with a window asked, it says so and the papers in it are the new ones."""
    import datetime as dt

    q = "What reward designs are used to train multi-turn search agents with RL?"
    ctx = demo_qa.topic_context(Scope.for_topic("rl-for-llm-agents"))
    assert ctx is not None and ctx.last is not None and ctx.new_since == ctx.last - dt.timedelta(days=27)
    ans = demo_qa.ask(q, Scope.for_topic("rl-for-llm-agents"), k=10)
    # "- Title (date): quote" or "- Title (date) states the problem: quote"
    lines = re.findall(r"^- .+? \((new, )?(\d{4}-\d\d-\d\d)\)[^:\"]*: ", ans.answer, re.M)
    fresh = [d for new, d in lines if new]
    assert lines and all(dt.date.fromisoformat(d) >= ctx.new_since for d in fresh)
    assert all(dt.date.fromisoformat(d) < ctx.new_since for new, d in lines if not new)
    assert f"New in the last 4 weeks: {len(fresh)} of these {len(lines)} papers." in ans.answer.splitlines()[1]
    since = ctx.last - dt.timedelta(weeks=12)
    windowed = demo_qa.ask(q, Scope.for_topic("rl-for-llm-agents", since=since), k=10)
    n = len(re.findall(r"^- .+? \(new, \d{4}-\d\d-\d\d\): ", windowed.answer, re.M))
    assert n and f"New since {since.isoformat()} (the window asked): {n} of these {n} papers." in windowed.answer


def test_topic_map_without_embedder_is_one_flat_list() -> None:
    from paperchat.providers.answerers import ExtractiveAnswerer

    sources = [
        Source(n=1, paper_id="a", title="A: one", text="A: one\n\nWe reward each search step by its evidence gain. It works.", score=1.0),
        Source(n=2, paper_id="b", title="B: two", text="B: two\n\nOutcome rewards are spread over turns. Fine.", score=0.5),
        Source(n=3, paper_id="c", title="C: three", text="C: three\n\nWe study tokenizers for Thai. Nothing else.", score=0.4),
    ]
    lines = ExtractiveAnswerer().compose("What reward designs are used for search agents?", sources, topic_level=True)
    text = "".join(lines)
    assert lines[0].startswith("Reward designs used for search agents, from 2 papers:")
    assert "Thai" not in text and "[1]" in text and "[2]" in text  # the paper that says nothing of rewards is left out


def test_topic_map_keeps_papers_that_write_the_asked_acronym_out() -> None:
    """"Which RL framework ...": a paper that writes "reinforcement learning" mentions the thing asked (RL) and stays
    in the map; a kind of contribution ("technique", "framework") is not a thing asked about, so a paper is not
    dropped for never saying "technique" (both were seen leaving a known-item question's paper out of its map)."""
    from paperchat.answering.topic_map import spelled_out
    from paperchat.providers.answerers import ExtractiveAnswerer

    assert spelled_out("Which RL framework uses LLMs as judges?", {"rl", "llms"}) is not None
    pattern = spelled_out("Which RL framework uses LLMs as judges?", {"rl", "llms"})
    assert pattern is not None and pattern.search("a Reinforcement-Learning recipe") and pattern.search("large language models")
    assert spelled_out("Which RL framework is used?", {"framework"}) is None  # RL is not what is asked here
    assert "techniqu" in topic_map._kinds() and "reward" not in topic_map._kinds()
    sources = [
        Source(n=1, paper_id="a", title="LcRL", text="LcRL\n\nWe propose LcRL, a multilingual reinforcement learning framework for search.", score=1.0),
        Source(n=2, paper_id="b", title="B", text="B\n\nWe train search agents with RL and group rollouts.", score=0.5),
        Source(n=3, paper_id="c", title="C", text="C\n\nWe study tokenizers for Thai. Nothing else.", score=0.4),
    ]
    text = "".join(ExtractiveAnswerer().compose("Which RL framework trains multilingual search agents?", sources, topic_level=True))
    assert "[1]" in text and "[2]" in text and "Thai" not in text
    sources = [
        Source(n=1, paper_id="a", title="AEM", text="AEM\n\nWe show that entropy drift at the response level is governed by the advantage.", score=1.0),
        Source(n=2, paper_id="b", title="B", text="B\n\nThis technique densifies training signals for agents.", score=0.5),
    ]
    text = "".join(ExtractiveAnswerer().compose("Which technique controls entropy drift at the response level?", sources, topic_level=True))
    assert "[1]" in text


def test_the_best_paper_leads_the_map_even_alone() -> None:
    """A paper unlike the others (a singleton cluster) that retrieval ranked first is the answer's first
    line, not the last line of "Other": known-item questions cite their paper first."""
    from paperchat.answering.select import Scored
    from paperchat.answering.text import Candidate

    texts = ["We train a searcher with a gain reward.", "Process rewards for search turns.", "Process rewards per search step.",
             "Process rewards for search calls.", "Outcome rewards for web agents.", "Outcome rewards for GUI agents.", "Outcome rewards for tool agents."]
    lines = []
    for i, t in enumerate(texts):
        src = Source(n=i + 1, paper_id=f"p{i}", title=f"Paper {i}", text=t, score=1.0 / (i + 1))
        cand = Candidate(i + 1, f"p{i}", None, t, 0, tokens=frozenset(t.lower().split()))
        lines.append(topic_map.PaperLine(f"p{i}", Scored(cand, 1.0, 0.5, 0.0, 0.0, True), 1.0 / (i + 1), src))
    vectors = np.array([[1, 0, 0], [0, 1, 0], [0, 0.98, 0.2], [0.1, 0.99, 0], [0, 0, 1], [0, 0.2, 0.98], [0.1, 0, 0.99]], dtype=np.float32)
    groups = topic_map.build_groups(lines, vectors, analyse("What reward designs are used for search agents?", Tokenizer()))
    assert groups[0].papers[0].paper_id == "p0" and groups[0].label
    assert sorted(p.paper_id for g in groups for p in g.papers) == [f"p{i}" for i in range(7)]


def test_topic_map_quotes_what_a_paper_does_not_the_problem_it_starts_from() -> None:
    """A paper whose best-matching sentence only states the problem ("rewards are often sparse") is quoted where
    it says what it does about it, when it says so in words of the question; with no such sentence the problem
    sentence stays."""
    from paperchat.answering.text import problem_statement, says_what_it_does
    from paperchat.providers.answerers import ExtractiveAnswerer

    problem = "However, multi-turn RL remains challenging as rewards are often sparse or delayed for search agents."
    doing = "We propose CM2, which replaces outcome rewards with checklist rewards for each search turn."
    assert problem_statement(problem) and not problem_statement(doing) and says_what_it_does(doing)
    assert says_what_it_does("IGPO defines turn-level rewards as the marginal gain in answer probability.")
    assert not says_what_it_does("Experiments on seven benchmarks show clear gains.")
    assert not says_what_it_does("LLM agents have emerged as powerful systems for tackling multi-turn tasks.")
    assert not problem_statement("We address this challenge with SideQuest, a novel approach to agent memory.")
    assert not problem_statement("RELIANCE significantly enhances accuracy on challenging benchmarks.")
    assert not problem_statement("We propose a method that overcomes the limitations of sparse rewards.")
    assert problem_statement("Existing approaches depend on costly real-world APIs or hallucination-prone LLM simulators.")
    other = "Search agents trained with RL suffer from sparse outcome rewards over long multi-turn trajectories."
    sources = [
        Source(n=1, paper_id="a", title="CM2: checklists", text=f"CM2: checklists\n\n{problem} {doing}", score=1.0),
        Source(n=2, paper_id="b", title="B: only a problem", text=f"B: only a problem\n\n{other} Results follow.", score=0.5),
    ]
    text = "".join(ExtractiveAnswerer().compose("What reward designs are used to train multi-turn search agents with RL?", sources, topic_level=True))
    assert f'"{doing}" [1]' in text and f'"{other}" [2]' in text
    assert f'states the problem: "{other}"' in text and f'states the problem: "{doing}"' not in text  # marked, not passed off as an answer


def test_topic_map_groups_papers_by_their_stored_vectors() -> None:
    """The map clusters the papers by the vectors the store already holds for their chunks; it embeds their
    texts again only when a vector is missing (same groups either way: the chunk text is what was embedded)."""
    from paperchat.providers.answerers import ExtractiveAnswerer
    from paperchat.providers.hashing import HashingEmbedder

    class Counting(HashingEmbedder):
        def __init__(self) -> None:
            super().__init__()
            self.texts: list[str] = []

        def embed(self, texts, batch_size=None):  # type: ignore[no-untyped-def]
            self.texts += list(texts)
            return super().embed(texts)

    topics = ["process rewards for each search step", "outcome rewards over whole trajectories", "tree search rollouts for agents"]
    sources = [
        Source(
            n=i + 1, paper_id=f"p{i}", title=f"P{i}: paper", text=f"P{i}: paper\n\nWe study {topics[i % 3]} and rewards for search agents in setting {i}.",
            score=1.0 / (i + 1), chunk_id=f"c{i}",
        )
        for i in range(6)
    ]
    base = HashingEmbedder()
    stored = {s.chunk_id: base.embed([s.text])[0] for s in sources}
    asked: list[list[str]] = []

    def lookup(ids):  # type: ignore[no-untyped-def]
        asked.append(list(ids))
        return {i: stored[i] for i in ids if i in stored}

    q = "What reward designs are used for search agents?"
    emb = Counting()
    with_store = "".join(ExtractiveAnswerer(embedder=emb, stored_vectors=lookup).compose(q, sources, topic_level=True))
    assert asked and not any(s.text in emb.texts for s in sources)  # no source text embedded again
    del stored["c3"]
    emb2 = Counting()
    fallback = "".join(ExtractiveAnswerer(embedder=emb2, stored_vectors=lookup).compose(q, sources, topic_level=True))
    assert all(s.text in emb2.texts for s in sources) and fallback == with_store


def test_store_gives_the_vectors_of_many_chunks_at_once(qa: QA) -> None:
    batch = next(qa.lib.store.iter_all(texts=False, vectors=True))
    ids = [c.id for c in batch.chunks[:5]]
    got = qa.lib.store.vectors([*ids, "no-such-chunk"])
    assert list(got) == ids or sorted(got) == sorted(ids)
    assert batch.vectors is not None
    for i, cid in enumerate(ids):
        assert np.allclose(got[cid], batch.vectors[i]) and np.allclose(got[cid], qa.lib.store.vector(cid))
