"""One exception root. Every error says what happened and what to do about it."""

from __future__ import annotations


class PaperchatError(Exception):
    """Root of every error paperchat raises on purpose.

    Args:
        message: what happened.
        hint: what the user can do about it.
    """

    def __init__(self, message: str, hint: str = "") -> None:
        super().__init__(message)
        self.message = message
        self.hint = hint

    def __str__(self) -> str:
        return f"{self.message} ({self.hint})" if self.hint else self.message


class ConfigError(PaperchatError):
    """A setting or configuration file is invalid."""


class SourceError(PaperchatError):
    """An input (PDF, record, file) could not be read."""


class StoreError(PaperchatError):
    """The store cannot be opened or does not match the settings."""


class EmbedderMismatch(StoreError):
    """The store was built with another embedder."""


class InputError(PaperchatError):
    """A question or other input from a person is unusable as given (too long, empty)."""


class NotFound(PaperchatError):
    """A paper, topic or file does not exist."""


class NetworkError(PaperchatError):
    """A remote service (arXiv API, LLM endpoint) could not be reached."""


class AnswererError(PaperchatError):
    """The answerer failed (endpoint down, bad response)."""


INTERRUPTED = "paperchat: interrupted; run the same command again to finish (nothing is lost)"  # a Ctrl-C, at any moment
