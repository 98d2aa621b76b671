"""PDF chunks read with their page around them (`retrieval.context_chars`, paperchat.passages)."""

from __future__ import annotations

import shutil
from pathlib import Path

from paperchat.ingestion.chunking import PageChunker
from paperchat.library import Library
from paperchat.passages import clip, in_context, page_text
from paperchat.qa import QA
from paperchat.settings import RetrievalSettings
from paperchat.types import Chunk, Page, Scope

from .conftest import CountingEmbedder, make_settings

PAGE = (
    "We train the reward model on the comparison data described in Section 3. "
    "Each comparison holds two completions of the same prompt, ranked by a labeler. "
    "The reward model starts from the 6B supervised policy with its final unembedding layer removed. "
    "We train it for a single epoch, since it overfits after one pass over the data. "
    "The learning rate is 9e-6 with a cosine schedule, and the batch size is 64 prompts. "
    "Ties between completions are treated as soft labels of one half each. "
    "Finally, the reward is normalised so that the labeler demonstrations score zero on average. "
    "This keeps the scale of the reward comparable across runs, e.g. when the policy changes. "
)


def _chunks(size: int = 200, overlap: int = 30) -> list[Chunk]:
    return PageChunker(size, overlap).chunk_pages("p1", [Page(number=4, text=PAGE)])


def test_page_is_rebuilt_from_its_chunks_offsets() -> None:
    chunks = _chunks()
    assert len(chunks) >= 4
    assert " ".join(page_text(chunks).split()) == " ".join(PAGE.split())


def test_a_chunk_is_read_with_whole_sentences_of_its_page_around_it() -> None:
    chunks = _chunks()
    mid = chunks[len(chunks) // 2]
    wide = in_context(mid, page_text(chunks), 150)
    assert mid.text in wide and len(wide) > len(mid.text)
    assert len(wide) <= len(mid.text) + 2 * 150
    # it starts where a sentence starts and ends where one ends: no half sentence is added
    assert wide[0].isupper() or wide.startswith(mid.text)
    assert wide.endswith(".") or wide.endswith(mid.text)
    assert any(s.strip() and s.strip() not in mid.text for s in wide.split(". "))  # a sentence the chunk lacked
    # nothing asked, or the page unknown: the chunk alone
    assert in_context(mid, page_text(chunks), 0) == mid.text
    assert in_context(mid, "", 300) == mid.text
    # the page's first chunk gains only what follows it, the last only what precedes it
    assert in_context(chunks[0], page_text(chunks), 150).startswith(chunks[0].text)
    assert in_context(chunks[-1], page_text(chunks), 150).endswith(chunks[-1].text)


def test_a_long_page_passage_is_clipped_around_its_middle() -> None:
    text = " ".join(f"w{i}" for i in range(400))
    out = clip(text, 300)
    assert len(out) <= 300 + 8 and out.startswith("... ") and out.endswith(" ...")
    assert "w200" in out and "w0 " not in out and "w399" not in out
    assert clip("short text", 300) == "short text"


def test_paper_answers_read_the_retrieved_chunks_in_their_page(built_store: Path, tmp_path: Path, embedder: CountingEmbedder) -> None:
    """On a real stored PDF (Attention Is All You Need), the sources handed to the answerer hold their chunk and
    more of the same page; with context_chars 0 they are the chunks themselves."""
    copy = tmp_path / "store"
    shutil.copytree(built_store, copy)
    question, scope = "How many attention heads are used?", Scope.for_paper("1706.03762")
    texts = {}
    for chars in (0, 500):
        lib = Library(make_settings(copy, retrieval=RetrievalSettings(context_chars=chars)), embedder=embedder)  # type: ignore[arg-type]
        try:
            qa = QA(lib)
            hits = qa.retriever.search(question, scope)
            sources = qa.sources(hits)
            pages = lib.store.page_chunks({(h.chunk.paper_id, h.chunk.page or 0) for h in hits})
            assert all(c.page == page and c.paper_id == pid for (pid, page), cs in pages.items() for c in cs)
            two = lib.store.page_chunks({("1706.03762", 5), ("2005.11401", 3)})  # two papers: only the pairs asked for
            assert set(two) == {("1706.03762", 5), ("2005.11401", 3)}
            assert all(c.page == page and c.paper_id == pid and c.kind == "pdf" for (pid, page), cs in two.items() for c in cs)
            texts[chars] = [(h.chunk.text, s.text, s.page == h.chunk.page) for h, s in zip(hits, sources, strict=True)]
            if chars:
                ans = qa.ask(question, scope)
                assert "h = 8 parallel attention layers, or heads" in ans.answer.splitlines()[0]
                assert all(c.support == 1.0 for c in ans.citations)
        finally:
            lib.close()
    assert all(chunk == text for chunk, text, _ in texts[0])
    assert all(chunk in text and same_page for chunk, text, same_page in texts[500])
    assert sum(len(text) > len(chunk) for chunk, text, _ in texts[500]) >= len(texts[500]) // 2


def test_prompts_show_a_page_passage_whole_and_cut_a_long_one_around_its_middle() -> None:
    from paperchat.providers.answerers import format_sources
    from paperchat.types import Source

    words = " ".join(f"w{i}" for i in range(700))  # about 4,000 characters
    shown = format_sources(
        [
            Source(n=1, paper_id="a", title="An abstract", page=None, text="Title. " + words, score=1.0),
            Source(n=2, paper_id="p", title="A PDF", page=3, text=PAGE, score=0.9),
            Source(n=3, paper_id="p", title="A PDF", page=4, text=words, score=0.8),
        ]
    )
    abstract, page, long_page = shown.split("\n\n")
    assert all(part.endswith("\n</source>") and "\n<source>\n" in part for part in (abstract, page, long_page))  # fenced as data
    abstract, page, long_page = (part.removesuffix("\n</source>") for part in (abstract, page, long_page))
    assert "Title. w0 w1" in abstract and abstract.endswith(" ...") and "w600" not in abstract
    assert PAGE.strip() in page  # a chunk read in its page (under 2,200 characters) is shown whole
    assert "w350" in long_page and "w0 " not in long_page and long_page.rstrip().endswith("...")
