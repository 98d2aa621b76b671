"""paperchat as a Model Context Protocol server (issue 37): the library from any assistant (Claude Desktop, VS Code,
Cursor), over stdio or streamable HTTP, built on the official `mcp` SDK.

Every tool calls the `Assistant` facade and returns plain JSON: papers with dates and tags, answers with their
citations checked against the store (paper, page, quote, highlight boxes on the stored PDF). A bad argument, an
unknown id or a refused path is a tool error with a one-line reason (`ToolError`), never a traceback. `add_pdf`
reads only files under the folders the user allowed (`PAPERCHAT_MCP_ALLOWED_FOLDERS`).
"""

from __future__ import annotations

import datetime as dt
import os
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Annotated, Any, TypeVar

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ResourceNotFoundError, ToolError
from pydantic import Field

from paperchat.assistant import Assistant
from paperchat.dates import user_day
from paperchat.errors import PaperchatError
from paperchat.types import Answer, Paper, Scope

T = TypeVar("T")
MAX_K = 50
INSTRUCTIONS = (
    "paperchat: a local library of research papers (arXiv abstracts and PDFs) grouped into topics. Use search_papers "
    "to find papers, ask_topic / ask_paper for answers that quote the papers with page citations, topic_page for a "
    "topic's momentum and newest papers. Answers never invent: when the sources do not answer, they say so."
)


def _day(value: str | None, name: str) -> dt.date | None:
    if value is None or not value.strip():
        return None
    try:
        return user_day(value)
    except PaperchatError as exc:
        raise ToolError(f"{name}: {exc.message}") from None


def _paper_json(p: Paper, tags: list[tuple[str, str]] | None = None, score: float | None = None) -> dict[str, Any]:
    out: dict[str, Any] = {
        "paper_id": p.id,
        "title": p.title,
        "authors": p.authors[:20],
        "date": p.date.isoformat() if p.date else None,
        "topics": p.topics,
        "tags": [label for _, label in (tags or [])],
        "url": p.abs_url,
    }
    if score is not None:
        out["score"] = round(score, 5)
    return out


def _answer_json(ans: Answer) -> dict[str, Any]:
    """The answer text and its citations as data (only citations of offered sources survive `QA`'s checks)."""
    return {
        "answer": ans.answer,
        "abstained": ans.abstained,
        "scope": ans.scope.describe() if ans.scope else "",
        "citations": [
            {
                "n": c.n,
                "paper_id": c.paper_id,
                "title": c.title,
                "page": c.page,
                "quote": c.quote,
                "highlight": None if c.highlight is None or not c.highlight.placed else {"page": c.highlight.page, "boxes": c.highlight.boxes},
            }
            for c in ans.citations
        ],
        "note": ans.fallback or "",
    }


class PaperchatTools:
    """The tools over one open Assistant (calls are serialised: the SDK runs sync tools in worker threads)."""

    def __init__(self, core: Assistant, allowed_folders: list[Path]) -> None:
        self.core = core
        self.allowed = [f.expanduser().resolve() for f in allowed_folders]
        self._lock = threading.Lock()

    def call(self, fn: Callable[[], T]) -> T:
        """Run one tool body: paperchat's errors become a one-line tool error."""
        with self._lock:
            try:
                return fn()
            except ToolError:
                raise
            except PaperchatError as exc:
                raise ToolError(str(exc)) from None

    def scope(self, topic: str | None, collection: str | None, since: str | None, until: str | None) -> Scope:
        """The scope named by a topic (any kind) or a collection, in a date window."""
        if topic and collection:
            raise ToolError("give topic or collection, not both")
        a, b = _day(since, "since"), _day(until, "until")
        if a and b and a > b:
            raise ToolError(f"since {a} is after until {b}")
        if collection:
            if collection not in {c.slug for c in self.core.collections()}:
                raise ToolError(f"no collection {collection!r}: list_topics shows the topics; collections come from `paperchat import`")
            return Scope.for_collection(collection, a, b)
        if topic:
            if self.core.topic_kind(topic) is None:
                raise ToolError(f"no topic {topic!r}: list_topics gives the slugs")
            return self.core.chat_scope(topic, since=a).model_copy(update={"until": b})
        return Scope(kind="all", since=a, until=b)

    def allowed_path(self, path: str) -> Path:
        """The file, when it lies under an allowed folder (after resolving links); else a tool error saying why."""
        if not self.allowed:
            raise ToolError("adding PDFs is off: set PAPERCHAT_MCP_ALLOWED_FOLDERS to the folders paperchat may read")
        refused = ToolError(f"{path} is not a file under the folders paperchat may read ({', '.join(map(str, self.allowed))})")
        lexical = Path(os.path.abspath(Path(path).expanduser()))
        if not any(lexical.is_relative_to(folder) for folder in self.allowed):
            raise refused  # decided before the file system is asked: no probing of paths outside the folders
        try:
            real = lexical.resolve(strict=True)
        except (OSError, RuntimeError):
            raise refused from None
        if not real.is_file() or not any(real.is_relative_to(folder) for folder in self.allowed):  # a link out
            raise refused
        return real


def build_server(core: Assistant, allowed_folders: list[Path] | None = None) -> MCPServer:
    """The MCP server over an open Assistant: tools and the paper:// and topic:// resources."""
    tools = PaperchatTools(core, list(allowed_folders or []))
    mcp = MCPServer("paperchat", instructions=INSTRUCTIONS)

    @mcp.tool()
    def search_papers(
        query: Annotated[str, Field(description="what to look for, in words")],
        topic: Annotated[str | None, Field(description="only this topic's papers (a slug from list_topics)")] = None,
        since: Annotated[str | None, Field(description="only papers from this date, YYYY-MM-DD")] = None,
        until: Annotated[str | None, Field(description="only papers up to this date, YYYY-MM-DD")] = None,
        k: Annotated[int, Field(description="how many papers, 1-50")] = 10,
    ) -> dict[str, Any]:
        """Search the library (dense + BM25): the best-matching papers with scores, dates, topics and tags."""

        def run() -> dict[str, Any]:
            if not query.strip():
                raise ToolError("query is empty")
            if not 1 <= k <= MAX_K:
                raise ToolError(f"k must be between 1 and {MAX_K}, not {k}")
            scope = tools.scope(topic, None, since, until)
            hits = core.search(query, scope, 4 * k)
            best: dict[str, float] = {}
            for h in hits:
                best.setdefault(h.chunk.paper_id, h.score)
            ids = list(best)[:k]
            papers = core.papers(ids)
            tags = core.paper_tags(ids)
            return {"papers": [_paper_json(papers[i], tags.get(i), best[i]) for i in ids if i in papers], "scope": scope.describe()}

        return tools.call(run)

    @mcp.tool()
    def ask_topic(
        question: Annotated[str, Field(description="the question")],
        topic: Annotated[str | None, Field(description="a topic slug from list_topics (hand-written or discovered)")] = None,
        collection: Annotated[str | None, Field(description="a personal collection's slug, instead of a topic")] = None,
        since: Annotated[str | None, Field(description="only papers from this date, YYYY-MM-DD")] = None,
        until: Annotated[str | None, Field(description="only papers up to this date, YYYY-MM-DD")] = None,
    ) -> dict[str, Any]:
        """Answer from all papers of a topic (or a collection, or the whole library when neither is given), each
        claim quoting a paper: the answer text and its citations (paper, page, quote, highlight boxes)."""

        def run() -> dict[str, Any]:
            if not question.strip():
                raise ToolError("question is empty")
            ans = core.place_citations(core.ask(question, tools.scope(topic, collection, since, until)))
            return _answer_json(ans)

        return tools.call(run)

    @mcp.tool()
    def ask_paper(
        question: Annotated[str, Field(description="the question")],
        paper_id: Annotated[str, Field(description="the paper's id (an arXiv id, or the id get_paper/search_papers gave)")],
    ) -> dict[str, Any]:
        """Answer from one paper (its PDF pages when stored, else its abstract), citing pages, or say it does not
        state the answer."""

        def run() -> dict[str, Any]:
            if not question.strip():
                raise ToolError("question is empty")
            if not paper_id.strip() or core.paper(paper_id) is None:
                raise ToolError(f"no paper {paper_id!r} in the library: search_papers finds ids")
            return _answer_json(core.place_citations(core.ask(question, Scope.for_paper(paper_id))))

        return tools.call(run)

    @mcp.tool()
    def get_paper(paper_id: Annotated[str, Field(description="the paper's id")]) -> dict[str, Any]:
        """A paper's metadata, abstract, topics and tags, and whether its PDF is stored (with its page count)."""

        def run() -> dict[str, Any]:
            p = core.paper(paper_id) if paper_id.strip() else None
            if p is None:
                raise ToolError(f"no paper {paper_id!r} in the library: search_papers finds ids")
            pdf = core.stored_pdf(p.id)
            pages = None
            if pdf is not None:
                try:
                    view = core.page_view(p.id, 1)
                    pages = view.pages if view is not None and view.pages else None
                except PaperchatError:
                    pages = None
            return {
                **_paper_json(p, core.paper_tags([p.id]).get(p.id)),
                "abstract": p.abstract, "categories": p.categories, "has_pdf": pdf is not None, "pages": pages,
            }

        return tools.call(run)

    @mcp.tool()
    def list_topics() -> dict[str, Any]:
        """Every hand-written topic with its size and momentum (papers in the last four weeks against the four
        before, and its share of all new papers), and the discovered topics' slugs and labels."""

        def run() -> dict[str, Any]:
            rows = [
                {"slug": t.slug, "name": t.name, "papers": t.papers, "following": t.following, "momentum": t.momentum.sentence(),
                 "recent": t.momentum.recent, "previous": t.momentum.previous, "change_pct": t.momentum.change_pct}
                for t in core.topic_summaries()
            ]
            discovered = [{"slug": t.slug, "name": t.label, "papers": t.size} for t in core.discovered_topics()]
            return {"topics": rows, "discovered": discovered}

        return tools.call(run)

    @mcp.tool()
    def topic_page(
        slug: Annotated[str, Field(description="a topic slug from list_topics")],
        k: Annotated[int, Field(description="how many of the newest papers, 1-50")] = 10,
    ) -> dict[str, Any]:
        """A topic's page: momentum with its weekly counts, related topics and the newest papers."""

        def run() -> dict[str, Any]:
            if not 1 <= k <= MAX_K:
                raise ToolError(f"k must be between 1 and {MAX_K}, not {k}")
            if core.topic_kind(slug) is None:
                raise ToolError(f"no topic {slug!r}: list_topics gives the slugs")
            page = core.topic_page(slug)
            latest = core.topic_papers(slug, page_size=k).papers
            tags = core.paper_tags([p.id for p in latest])
            m = page.momentum
            return {
                "slug": page.slug, "name": page.name, "kind": page.kind, "papers": page.total, "following": page.following,
                "momentum": m.sentence(), "weekly": [{"week": w.isoformat(), "papers": n, "all_papers": a} for w, n, a in m.weekly],
                "related": [{"slug": r.slug, "name": r.name, "shared": r.shared} for r in page.related],
                "latest": [_paper_json(p, tags.get(p.id)) for p in latest],
            }

        return tools.call(run)

    @mcp.tool()
    def digest(peek: Annotated[bool, Field(description="true: only look (the last visit stays); false: mark as seen")] = True) -> dict[str, Any]:
        """What is new in the followed topics since the last visit."""

        def run() -> dict[str, Any]:
            d = core.digest(peek=peek)
            return {"headline": d.headline(), "topics": [{"slug": t.slug, "name": t.name, "papers": [_paper_json(p) for p in t.papers[:50]]} for t in d.topics]}

        return tools.call(run)

    @mcp.tool()
    def follow(
        topic: Annotated[str, Field(description="a topic slug (any kind)")],
        on: Annotated[bool, Field(description="true to follow, false to unfollow")] = True,
    ) -> dict[str, Any]:
        """Follow (or unfollow) a topic: its new papers then appear in the digest."""

        def run() -> dict[str, Any]:
            if core.topic_kind(topic) is None:
                raise ToolError(f"no topic {topic!r}: list_topics gives the slugs")
            core.follow(topic, on)
            return {"topic": topic, "following": topic in core.followed()}

        return tools.call(run)

    @mcp.tool()
    def add_pdf(path: Annotated[str, Field(description="a PDF file under one of the folders the user allowed")]) -> dict[str, Any]:
        """Add a PDF to the library (parsed, chunked, embedded); only files under PAPERCHAT_MCP_ALLOWED_FOLDERS."""

        def run() -> dict[str, Any]:
            res = core.add_pdf(tools.allowed_path(path))
            if res.paper is None:
                raise ToolError(f"the PDF could not be added: {res.error}")
            return {"outcome": res.outcome, "paper": _paper_json(res.paper), "chunks_added": res.chunks_added}

        return tools.call(run)

    @mcp.resource("paper://{paper_id}", mime_type="application/json")
    def paper_resource(paper_id: str) -> dict[str, Any]:
        """A paper's metadata and abstract."""
        p = core.paper(paper_id)
        if p is None:
            raise ResourceNotFoundError(f"no paper {paper_id}")
        return {**_paper_json(p), "abstract": p.abstract}

    @mcp.resource("topic://{slug}", mime_type="application/json")
    def topic_resource(slug: str) -> dict[str, Any]:
        """A topic's momentum and size."""
        if core.topic_kind(slug) is None:
            raise ResourceNotFoundError(f"no topic {slug}")
        page = core.topic_page(slug)
        return {"slug": page.slug, "name": page.name, "papers": page.total, "momentum": page.momentum.sentence()}

    return mcp
