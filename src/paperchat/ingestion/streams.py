"""Reading record files as a stream: blocks, not lines, so memory stays flat for any input (a 3 GB line,
a sparse file of NULs, gigabytes of blank lines)."""

from __future__ import annotations

import gzip
import os
import re
import stat
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import IO, TypeVar

F = TypeVar("F")
_BLOCK = 1 << 20


def _too_long(lineno: int, max_line: int) -> str:
    return f"line {lineno} is longer than {max_line / 1048576:g} MB (PAPERCHAT_MAX_RECORD_LINE_MB): is this a JSONL file? (line skipped)"


def not_a_regular_file(path: Path) -> str | None:
    """Why the path cannot be read as a file of records (a device such as /dev/zero, a FIFO, a folder, a link to
    one of them), or None for a regular file. Checked before opening: a FIFO would block the open itself and a
    device never ends (issue 33, case 8)."""
    try:
        mode = os.stat(path).st_mode
    except FileNotFoundError:
        return None  # the caller's open says "no such file"
    except OSError as exc:
        return f"cannot read: {exc.strerror or exc}"
    if stat.S_ISREG(mode):
        return None
    kind = (
        "a folder" if stat.S_ISDIR(mode) else "a FIFO" if stat.S_ISFIFO(mode)
        else "a device" if stat.S_ISCHR(mode) or stat.S_ISBLK(mode) else "not a regular file"
    )
    return f"{path} is {kind}, not a regular file: give the path of a file"


def open_binary(path: Path) -> IO[bytes]:
    """The file opened for reading bytes, gunzipped on the fly when it ends in .gz (the caller closes it)."""
    if path.suffix == ".gz":
        return gzip.open(path, "rb")  # type: ignore[return-value]  # GzipFile is an IO[bytes] in practice
    return open(path, "rb")  # noqa: SIM115 - caller closes


def lines(fh: IO[bytes], where: str, max_line: int, failure: Callable[[str, str], F]) -> Iterator[tuple[int, bytes] | F]:
    """Non-empty lines with their numbers, read in blocks: memory stays flat whatever the file holds.
    Problems come out as `failure(source, reason)`.

    A line longer than `max_line` bytes becomes a failure and is skipped (read past, never held whole);
    NUL bytes at the start mean a binary file: one failure and the file is not read further.
    """
    buf = b""
    lineno = 1  # number of the line that starts buf
    skipping = False
    first = True
    while True:
        block = fh.read(_BLOCK)
        if not block:
            break
        if first:
            first = False
            nul = block.find(b"\x00", 0, 65536)
            if nul >= 0:
                yield failure(where, f"binary content (a NUL byte at byte {nul}): is this a JSONL file?")
                return
        data = buf + block if buf else block
        pos = 0
        if skipping:
            nl = data.find(b"\n")
            if nl < 0:
                buf = b""
                continue
            skipping, pos, lineno = False, nl + 1, lineno + 1
        last = data.rfind(b"\n")
        if last >= pos:
            cur = pos
            for m in re.finditer(rb"[^\n]+", data[pos : last + 1]):
                start = pos + m.start()
                lineno += data.count(b"\n", cur, start)
                cur = start
                line = m.group()
                if len(line) > max_line:
                    yield failure(f"{where}:{lineno}", _too_long(lineno, max_line))
                elif line.strip():
                    yield lineno, line
            lineno += data.count(b"\n", cur, last + 1)
            rest = data[last + 1 :]
        else:
            rest = data[pos:]
        if len(rest) > max_line:
            yield failure(f"{where}:{lineno}", _too_long(lineno, max_line))
            skipping, buf = True, b""
        else:
            buf = rest
    if buf.strip() and not skipping:
        yield lineno, buf


def first_byte(path: Path) -> bytes:
    """The first non-space byte of a (possibly gzipped) file, or b''."""
    with open_binary(path) as fh:
        while True:
            block = fh.read(4096)
            if not block:
                return b""
            stripped = block.lstrip()
            if stripped:
                return stripped[:1]
