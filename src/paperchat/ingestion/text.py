"""Text cleaning for PDF pages and abstracts."""

from __future__ import annotations

import re
import unicodedata

_LIGATURES = {"\ufb00": "ff", "\ufb01": "fi", "\ufb02": "fl", "\ufb03": "ffi", "\ufb04": "ffl", "\ufb05": "st", "\ufb06": "st"}
_HYPHEN_BREAK = re.compile(r"(\w)[-\u00ad\u2010]\s*\n\s*([a-z])")
_SOFT_HYPHEN = re.compile("\u00ad")
_SPACES = re.compile(r"[ \t\f\v\u00a0\u2000-\u200b\u202f\u205f\u3000]+")
_NEWLINES = re.compile(r"\s*\n\s*")
_CONTROL = re.compile(r"[\x00-\x08\x0b\x0e-\x1f\x7f\ufffd]")


def clean_text(text: str) -> str:
    """Clean extracted text: ligatures, hyphenation at line ends, control characters, runs of whitespace.

    Line breaks become single spaces; the result has no leading or trailing whitespace.
    """
    for lig, repl in _LIGATURES.items():
        text = text.replace(lig, repl)
    text = unicodedata.normalize("NFKC", text)
    text = _CONTROL.sub(" ", text)
    text = text.replace("\r\n", "\n").replace("\r", "\n")
    # "cor-\npus" -> "corpus" (only when the next line starts in lower case: keeps "GPT-\n4").
    text = _HYPHEN_BREAK.sub(r"\1\2", text)
    text = _SOFT_HYPHEN.sub("", text)
    text = _NEWLINES.sub(" ", text)
    text = _SPACES.sub(" ", text)
    return text.strip()


def normalize_for_match(text: str) -> str:
    """Loose form for comparing quotes with chunks: cleaned, hyphen breaks removed, lower case."""
    text = clean_text(text)
    text = re.sub(r"(\w)- (\w)", r"\1\2", text)
    return re.sub(r"\s+", " ", text).lower().strip()


# Terminal escape sequences (CSI "ESC [ ... letter", OSC "ESC ] ... BEL/ST", and two-byte "ESC x"), control
# characters other than tab and line breaks (C0, DEL, C1), bidirectional overrides, and lone surrogates
# (valid as JSON escapes, but not encodable as UTF-8: they would fail the whole batch at the store).
_ESCAPES = re.compile(r"\x1b\[[0-?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)|\x1b[@-_]?|\x9b[0-?]*[ -/]*[@-~]")
_SPACING = re.compile(r"[\x0b\x0c\x1c-\x1f\x85]")  # vertical tab, form feed, separators, NEL: they separate words
_CONTROLS = re.compile(r"[\x00-\x08\x0e-\x1b\x7f-\x9f\u202a-\u202e\u2066-\u2069]")
_SURROGATES = re.compile(r"[\ud800-\udfff]")


def strip_control(text: str) -> str:
    """Remove terminal escape sequences and control characters (tab and line breaks kept); a lone surrogate
    becomes U+FFFD. The rest of the text is left exactly as it was."""
    if text.isprintable():
        return text
    text = _ESCAPES.sub("", text)
    text = _SPACING.sub(" ", text)
    text = _CONTROLS.sub("", text)
    return _SURROGATES.sub("\ufffd", text)


def printable(text: object) -> str:
    """Text safe to print on a terminal: `strip_control` of its str()."""
    return strip_control(str(text))
