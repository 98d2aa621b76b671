"""`paperchat doctor`: check that the catalogue, the vector store and the lexical index agree, and repair them.

The three parts of a data dir can drift apart (a deleted `chroma/` folder, a garbled `catalog.sqlite`, a
half-written index file). `check` opens each part on its own and lists what is wrong, one line each;
`repair`, under the writer lock, moves an unreadable file aside (`<name>.damaged-<time>`), recreates it and
fills it again from what survives:

- a lost or damaged vector store: abstract chunks re-embedded from the catalogue rows, PDF chunks by
  re-ingesting the stored copy of the PDF (or the paper is listed as needing its PDF again);
- a lost or damaged catalogue: paper rows rebuilt from the abstract chunks in the store (title and abstract;
  authors and categories come back when the sources are ingested again), PDF rows from the stored PDF
  copies, and what the user made from `user_lists.json`: follows, saves, collections with their papers, the
  last visit and the ingest times of the papers that arrived since it, and the discovered topics, tags and
  learned topic members from `discovered_topics.json`;
- chunks of papers the (healthy) catalogue does not list: dropped;
- the lexical index: always rebuilt from the store;
- topic membership out of date with the topics file: synced (metadata only).
"""

from __future__ import annotations

import datetime as dt
import re
import shutil
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from paperchat.catalog import Catalog
from paperchat.errors import EmbedderMismatch, StoreError
from paperchat.hashing import sha256_file
from paperchat.ingestion.chunking import abstract_chunk
from paperchat.ingestion.pdfstore import stored_copy
from paperchat.ingestion.stamp import PdfStamp
from paperchat.library import Library, writer_lock
from paperchat.providers.embedders import get_embedder
from paperchat.search_index import SearchIndex
from paperchat.settings import Settings
from paperchat.store import StoredChunk, VectorStore, forget_client
from paperchat.topics import TopicSet
from paperchat.types import Embedder, Paper
from paperchat.writer import Writer

REPAIR = "paperchat doctor --repair"


@dataclass
class Inventory:
    """What the store holds, by paper: abstract chunk ids and PDF chunk counts."""

    ids: set[str] = field(default_factory=set)
    abstracts: dict[str, set[str]] = field(default_factory=dict)
    pdf_chunks: dict[str, int] = field(default_factory=dict)

    @classmethod
    def of(cls, store: VectorStore) -> Inventory:
        """Chunk ids, abstract chunks and PDF chunk counts per paper in the store."""
        inv = cls()
        for batch in store.iter_all(texts=False):
            for c in batch.chunks:
                inv.ids.add(c.id)
                if c.kind == "pdf":
                    inv.pdf_chunks[c.paper_id] = inv.pdf_chunks.get(c.paper_id, 0) + 1
                else:
                    inv.abstracts.setdefault(c.paper_id, set()).add(c.id)
        return inv

    @property
    def papers(self) -> set[str]:
        """Ids of the papers with any chunk in the store."""
        return set(self.abstracts) | set(self.pdf_chunks)


@dataclass
class Diff:
    """How the catalogue and the store disagree."""

    missing_abstracts: list[str] = field(default_factory=list)
    missing_pdfs: list[str] = field(default_factory=list)
    orphans: list[str] = field(default_factory=list)


def compare(catalog: Catalog, inv: Inventory) -> Diff:
    """Papers whose chunks the store lacks, and papers in the store that the catalogue does not list."""
    diff = Diff()
    rows = catalog.stored_hashes()
    for pid, (ah, ph, _path) in rows.items():
        if ah and ah not in inv.ids:
            diff.missing_abstracts.append(pid)
        if ph and not inv.pdf_chunks.get(pid):
            diff.missing_pdfs.append(pid)
    diff.orphans = sorted(inv.papers - set(rows))
    return diff


@dataclass
class Health:
    """What `check` found: one line per problem; `ok` when there is none."""

    problems: list[str] = field(default_factory=list)
    summary: str = ""

    @property
    def ok(self) -> bool:
        """True when no problem was found."""
        return not self.problems


def _light_embedder(settings: Settings, embedder: Embedder | None) -> Embedder:
    return embedder or get_embedder(settings)  # MiniLM loads its weights lazily: opening costs nothing


def check(settings: Settings, embedder: Embedder | None = None) -> Health:
    """Open each part on its own and list what is wrong (reads every chunk's metadata, no vectors)."""
    health = Health()
    if _marker(settings).exists() and _marker(settings).read_text(errors="replace").startswith("recreated"):
        health.problems.append("a `paperchat doctor --repair` was stopped before it finished: run it again to finish it")
    emb = _light_embedder(settings, embedder)
    catalog: Catalog | None = None
    store: VectorStore | None = None
    try:
        catalog = Catalog(settings.catalog_path)
        quick = catalog.integrity()
        if quick != "ok":
            health.problems.append(f"the catalogue {settings.catalog_path} is damaged ({quick})")
    except StoreError as exc:
        health.problems.append(exc.message)
    try:
        store = VectorStore(settings, emb)
    except EmbedderMismatch:
        raise
    except StoreError as exc:
        health.problems.append(exc.message)
    if catalog is not None and store is not None:
        inv = Inventory.of(store)
        papers = catalog.count()
        if papers == 0 and inv.ids:
            health.problems.append(f"the catalogue lists no papers but the vector store holds {len(inv.ids)} chunks")
        else:
            diff = compare(catalog, inv)
            if diff.missing_abstracts:
                health.problems.append(f"{len(diff.missing_abstracts)} papers have no abstract chunk in the vector store")
            if diff.missing_pdfs:
                health.problems.append(f"{len(diff.missing_pdfs)} papers have no PDF chunks in the vector store")
            if diff.orphans:
                health.problems.append(f"{len(diff.orphans)} papers in the vector store are not in the catalogue")
            if papers and catalog.get_meta("topics_hash") != TopicSet.load(settings.topics_file).hash:
                health.problems.append(f"topic membership is out of date (the rules in {settings.topics_file} changed)")
        lexical = SearchIndex(settings.search_index_dir).load_problem(store)
        if lexical:
            health.problems.append(lexical)
        mirror = catalog.read_mirror()
        if mirror:
            have = catalog.user_lists()
            lost = sum(len({k for k, _ in mirror[t]} - {k for k, _ in have[t]}) for t in ("follows", "saves"))
            if lost:
                health.problems.append(f"{lost} follows or saves are in user_lists.json but not in the catalogue")
            gone = {c[0] for c in mirror["collections"]} - {c[0] for c in have["collections"]}
            if gone:
                health.problems.append(f"{len(gone)} collections are in user_lists.json but not in the catalogue: {', '.join(sorted(gone)[:5])}")
        health.summary = f"{papers} papers in the catalogue, {len(inv.ids)} chunks in the vector store"
    if catalog is not None:
        catalog.close()
    return health


@dataclass
class RepairReport:
    """What `repair` did, one line per action, and what is left for the user."""

    actions: list[str] = field(default_factory=list)
    need_pdf: list[str] = field(default_factory=list)
    todo: list[str] = field(default_factory=list)


def _move_aside(path: Path) -> Path:
    stamp = dt.datetime.now().strftime("%Y%m%d-%H%M%S")
    target = path.with_name(f"{path.name}.damaged-{stamp}")
    path.rename(target)
    for suffix in ("-wal", "-shm"):  # SQLite's side files belong to the file moved away
        side = path.with_name(path.name + suffix)
        if side.exists():
            side.rename(target.with_name(target.name + suffix))
    return target


def _open_catalog(settings: Settings, report: RepairReport) -> tuple[Catalog, bool]:
    """The catalogue, recreated when SQLite cannot read it; (catalog, recreated)."""
    path = settings.catalog_path
    try:
        catalog = Catalog(path)
        problem = catalog.integrity()
        if problem == "ok":
            return catalog, False
        catalog.close()
    except StoreError as exc:
        problem = exc.message
    moved = _move_aside(path)
    report.actions.append(f"moved the damaged catalogue to {moved.name} ({problem})")
    catalog = Catalog(path)  # a new file: it takes the follows and saves back from user_lists.json
    kept = catalog.user_lists()
    if kept["follows"] or kept["saves"] or kept["ratings"]:
        report.actions.append(
            f"restored {len(kept['follows'])} follows, {len(kept['saves'])} saves and {len(kept['ratings'])} ratings from user_lists.json"
        )
    got = catalog.restored
    if got.get("collections") or got.get("last visit") or got.get("ingest times"):
        report.actions.append(
            f"restored {got['collections']} collections ({got['collection papers']} memberships), "
            f"{'the last visit' if got['last visit'] else 'no last visit'} and {got['ingest times']} ingest times from user_lists.json"
        )
    return catalog, True


def _open_store(settings: Settings, emb: Embedder, report: RepairReport) -> None:
    try:
        VectorStore(settings, emb)
        return
    except EmbedderMismatch:
        raise
    except StoreError as exc:
        problem = exc.message
    forget_client(settings.chroma_dir)
    moved = settings.chroma_dir.with_name(f"{settings.chroma_dir.name}.damaged-{time.strftime('%Y%m%d-%H%M%S')}")
    shutil.move(str(settings.chroma_dir), moved)
    report.actions.append(f"moved the damaged vector store to {moved.name} ({problem})")


def repair(settings: Settings, embedder: Embedder | None = None) -> RepairReport:
    """Make the catalogue, the vector store and the lexical index agree again (see the module docstring)."""
    report = RepairReport()
    emb = _light_embedder(settings, embedder)
    with writer_lock(settings.data_dir):
        marker = _marker(settings)
        # an earlier repair was killed after it made a new catalogue: that catalogue is partial
        interrupted = marker.exists() and marker.read_text(errors="replace").startswith("recreated")
        settings.data_dir.mkdir(parents=True, exist_ok=True)
        marker.write_text("started " + dt.datetime.now(dt.UTC).isoformat() + "\n")
        try:
            catalog, recreated = _open_catalog(settings, report)
        except BaseException:
            marker.unlink(missing_ok=True)  # nothing was changed yet
            raise
        catalog.close()
        if recreated:  # from here a stop leaves a partial catalogue: the next repair must rebuild it
            marker.write_text("recreated " + dt.datetime.now(dt.UTC).isoformat() + "\n")
        if interrupted and not recreated:
            report.actions.append("an earlier repair was stopped midway: its rows are rebuilt again from the store, the copies and the mirrors")
            recreated = True
        _open_store(settings, emb, report)
        lib = Library(settings, embedder=emb)
        try:
            with lib.writing() as writer:
                synced = lib.sync_topics()
                if synced.synced:
                    report.actions.append(synced.describe())
                if _refill(lib, writer, recreated, report):
                    _restore_discovery(lib, report)
                writer.mark_dirty()  # a repair rebuilds the index from the store, whatever it changed
                writer.finish()
            report.actions.append(f"rebuilt the lexical index ({lib.store.count()} chunks)")
            restored = lib.catalog.restore_user_lists() if recreated else 0  # a healthy catalogue is the truth: a stale mirror must not undo unfollows
            if restored:
                report.actions.append(f"restored {restored} follows and saves from user_lists.json")
        except BaseException:
            if not recreated:  # the catalogue was sound when this run began: nothing for the next run to finish
                marker.unlink(missing_ok=True)
            raise
        finally:
            lib.close()
        marker.unlink(missing_ok=True)  # a repair that ran to its end clears it
    return report


def _marker(settings: Settings) -> Path:
    """The file a repair holds while it runs: still there afterwards means it was stopped midway (issue 33, case 3)."""
    return settings.data_dir / "REPAIR_IN_PROGRESS"


def _restore_discovery(lib: Library, report: RepairReport) -> None:
    """Discovered topics, tags and learned members back from discovered_topics.json into rebuilt rows (papers
    ingested after the last discovery get their tags back when their source is ingested again)."""
    name = lib.catalog.discovery_mirror.name
    try:
        got = lib.catalog.restore_discovery()
    except StoreError as exc:  # a mirror SQLite refuses (it checks what it can): the rest of the repair goes on
        report.todo.append(f"the topics in {name} could not be restored ({exc.message}): run `paperchat topics discover` again")
        return
    if got is None:
        if lib.catalog.discovery_mirror.exists():
            report.todo.append(f"{name} could not be read: run `paperchat topics discover` (and `topics learn`) again")
        return
    if got:
        report.actions.append(
            f"restored {got['topics']} discovered topics, the tags of {got['tagged papers']} papers and "
            f"{got['learned members']} learned topic members from {name}"
        )


def _refill(lib: Library, writer: Writer, recreated: bool, report: RepairReport) -> bool:
    """Make the catalogue and the store agree; True when the paper rows were rebuilt from the store."""
    inv = Inventory.of(lib.store)
    copies = lib.settings.uploads_dir.is_dir() and any(lib.settings.uploads_dir.glob("*.pdf"))
    # an empty catalogue beside a store that holds chunks, or beside the folder's own PDF copies or topic mirror
    # (the store and the catalogue both deleted, issue 33 case 5): the rows come back from what is left
    rebuilt = recreated or (lib.catalog.count() == 0 and (bool(inv.ids) or copies or lib.catalog.discovery_mirror.exists()))
    if rebuilt:
        _rows_from_store(lib, inv, report)
    diff = compare(lib.catalog, inv)
    if diff.orphans and not recreated:
        ids = lib.store.ids_of_papers(diff.orphans)
        writer.delete(ids)
        report.actions.append(f"dropped {len(ids)} chunks of {len(diff.orphans)} papers the catalogue does not list")
    if diff.missing_abstracts:
        _reembed_abstracts(lib, writer, diff.missing_abstracts, report)
    _reingest_pdfs(lib, diff.missing_pdfs, report)
    return rebuilt


def _rows_from_store(lib: Library, inv: Inventory, report: RepairReport) -> None:
    """Catalogue rows from the abstract chunks (title and abstract) and from the stored PDF copies."""
    rows: list[tuple[Paper, str | None, list[str]]] = []
    for batch in lib.store.iter_all():
        for c in batch.chunks:
            if c.kind == "pdf":
                continue
            title, _, abstract = c.text.partition("\n\n")
            pid = c.paper_id
            url = "" if pid.startswith(("pdf-", "file:")) else f"https://arxiv.org/abs/{pid}"
            paper = Paper(id=pid, title=title.strip() or pid, abstract=abstract.strip(), date=c.date, url=url)
            # no abstract hash: ingesting the source again rewrites the row with its authors and categories
            rows.append((paper, None, list(c.topics)))
    lib.catalog.upsert_papers(rows, arrived=False)  # rebuilt rows are not new papers: keep them out of the digest
    report.actions.append(f"refilled {len(rows)} paper rows from the abstract chunks in the vector store")
    report.todo.append("ingest your abstract files again to restore authors and categories (nothing is re-embedded)")
    copies = sorted(lib.settings.uploads_dir.glob("*.pdf")) if lib.settings.uploads_dir.is_dir() else []
    matched = 0
    arrived = {pid for pid, _ in lib.catalog.feed_lists()["arrivals"]}  # the ingest times restored from the mirror
    for copy in copies:  # the app's copies of ingested PDFs give back their paper rows (nothing re-embedded)
        from paperchat.ingestion.pipeline import Ingester

        ing = Ingester(lib)
        rep = ing.ingest_pdfs([copy])
        for pid in rep.paper_ids:
            if pid in inv.papers or not inv.ids:  # the store was lost too: the copies are all that is left of them
                matched += 1
            else:  # a copy of no paper the store held (its id was not found in it): leave it out
                ing.remove_paper(pid, keep_copy=True)  # the folder's copy stays: it may be another paper's PDF
    # rebuilt rows are not arrivals: only the ingest times the mirror gave back stay, the rest count as old (so
    # that ingesting the abstract files again, as the report asks, does not make them all new in the digest)
    lib.catalog.mark_old(set(lib.catalog.stored_hashes()) - arrived)
    if matched:
        report.actions.append(f"re-read {matched} stored PDF copies into paper rows")
    pdf_only = sorted(set(inv.pdf_chunks) - set(inv.abstracts) - set(lib.catalog.stored_hashes()))
    if pdf_only:
        report.need_pdf.extend(pdf_only)


def _reembed_abstracts(lib: Library, writer: Writer, paper_ids: list[str], report: RepairReport) -> None:
    papers = lib.catalog.get_many(paper_ids)
    todo: list[tuple[Paper, Any]] = [(p, c) for p in papers.values() if (c := abstract_chunk(p)) is not None]
    for i in range(0, len(todo), 512):
        part = todo[i : i + 512]
        chunks = [c for _, c in part]
        vectors = lib.embedder.embed([c.text for c in chunks], lib.settings.batch_size)
        writer.upsert([StoredChunk.of(c, p.date, p.topics) for p, c in part], vectors)
        lib.catalog.upsert_papers(((p, c.id, p.topics) for p, c in part), arrived=False)  # re-embedded, not new
    report.actions.append(f"re-embedded {len(todo)} abstract chunks from the catalogue")


def own_copy(settings: Settings, pdf_path: str | None, pdf_hash: str | None) -> Path | None:
    """This data folder's own copy of a paper's PDF (`uploads/<sha256>.pdf`, wherever the folder now is), and only
    when its content still has the recorded sha256: never the absolute path the catalogue recorded (a folder moved
    or copied would re-ingest another store's files) and never a file that changed (issue 33, case 4)."""
    sha = PdfStamp.sha_of(pdf_hash)
    candidates = [stored_copy(pdf_path, settings)]
    if re.fullmatch(r"[0-9a-f]{64}", sha):
        candidates.append(settings.uploads_dir / f"{sha}.pdf")
    for copy in candidates:
        if copy is not None and copy.is_file() and (not sha or sha256_file(copy) == sha):
            return copy
    return None


def _reingest_pdfs(lib: Library, paper_ids: list[str], report: RepairReport) -> None:
    if not paper_ids:
        return
    from paperchat.ingestion.pipeline import Ingester

    rows = lib.catalog.stored_hashes()
    done = 0
    for pid in paper_ids:
        _, pdf_hash, path = rows.get(pid, (None, None, None))
        copy = own_copy(lib.settings, path, pdf_hash)
        if copy is None:
            report.need_pdf.append(pid)
            continue
        rep = Ingester(lib).ingest_pdfs([copy], paper_id=pid)
        if not rep.papers:
            report.need_pdf.append(pid)
        else:
            done += 1
    if done:
        report.actions.append(f"re-ingested {done} PDFs from their stored copies")
