"""The app's own copies of ingested PDFs: one folder of the data dir holding only `<sha256>.pdf` files.

The app serves exactly these files and nothing else, so a PDF ingested from `~/papers/` never opens
`~/papers/` (its dotfiles, notes, HTML) to the browser. Copies are written atomically (a temporary file,
then `os.replace`), so a killed run leaves either no copy or a whole one.
"""

from __future__ import annotations

import hashlib
import os
import re
import tempfile
from pathlib import Path

from paperchat.errors import SourceError
from paperchat.ingestion.pdf import sha256_file
from paperchat.library import Library
from paperchat.settings import Settings

_NAME = re.compile(r"[0-9a-f]{64}\.pdf")


def store_dir(settings: Settings) -> Path:
    """The folder of stored PDF copies (uploads land there too, under the same names)."""
    return settings.uploads_dir


def stored_copy(pdf_path: str | None, settings: Settings) -> Path | None:
    """This data dir's stored copy of a catalogue PDF path, or None when there is none to serve.

    Matched by the `<sha256>.pdf` name, so a data dir that was moved or copied still finds its copies;
    a path outside the store (an older store's `~/papers/x.pdf`) gives None.
    """
    if not pdf_path:
        return None
    name = Path(pdf_path).name
    if not _NAME.fullmatch(name):
        return None
    copy = store_dir(settings) / name
    return copy.resolve() if copy.is_file() else None


def store_pdf(src: Path, sha256: str, settings: Settings) -> Path:
    """Copy `src` into the store as `<sha256>.pdf` (atomically) unless it is there; returns the resolved copy.

    Raises:
        SourceError: the sha256 is not a hex digest, or the file cannot be copied.
    """
    if not _NAME.fullmatch(f"{sha256}.pdf"):
        raise SourceError(f"not a sha256 digest: {sha256!r}", "this is a bug; report it")
    folder = store_dir(settings)
    dest = folder / f"{sha256}.pdf"
    if dest.is_file() and dest.stat().st_size == src.stat().st_size:
        return dest.resolve()  # (a copy cut short by older code, which copied in place, is written again)
    try:
        folder.mkdir(parents=True, exist_ok=True)
        # the partial file lives beside the folder (same file system), never inside the served folder
        fd, tmp = tempfile.mkstemp(dir=folder.parent, prefix=".pdf-", suffix=".part")
        try:
            digest = hashlib.sha256()
            with os.fdopen(fd, "wb") as out, open(src, "rb") as fh:
                for block in iter(lambda: fh.read(1 << 20), b""):
                    digest.update(block)
                    out.write(block)
                out.flush()
                os.fsync(out.fileno())
            if digest.hexdigest() != sha256:  # the name must be the content's hash: the file changed under us
                raise SourceError(f"{src.name} changed while it was being read", "ingest it again")
            os.replace(tmp, dest)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise
    except OSError as exc:  # SourceError above is not an OSError and passes through
        raise SourceError(f"cannot copy {src.name} into {folder} ({exc.strerror or exc})", "check the disk space and permissions of the data folder") from exc
    return dest.resolve()


def adopt_legacy_pdfs(library: Library) -> tuple[int, int]:
    """Move catalogue PDF paths that point outside the store (older stores) onto stored copies.

    A file is copied only when it still exists and its sha256 is the one the catalogue recorded for that
    paper; otherwise the paper keeps its path, which the app never links or serves.

    Returns:
        (papers adopted, papers left unlinked).
    """
    settings = library.settings
    adopted = left = 0
    for paper in list(library.catalog.iter_papers()):
        if not paper.pdf_path or stored_copy(paper.pdf_path, settings) is not None:
            continue
        src = Path(paper.pdf_path)
        try:
            sha = sha256_file(src)
        except OSError:
            left += 1
            continue
        owner = library.catalog.find_by_pdf_sha(sha)
        pdf_hash = library.catalog.hashes([paper.id]).get(paper.id, (None, None))[1]
        if owner is None or owner.id != paper.id or not pdf_hash:
            left += 1
            continue
        try:
            copy = store_pdf(src, sha, settings)
        except SourceError:
            left += 1
            continue
        # iter_papers leaves topics out: keep the paper's own, or set_pdf would clear its membership
        known = library.catalog.get(paper.id)
        library.catalog.set_pdf(paper, str(copy), sha, pdf_hash, known.topics if known else [])
        adopted += 1
    return adopted, left
