"""What every command shares: the one place that builds Settings from arguments, opening the facade,
argument types with ranges, and printing an ingest report."""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn

from paperchat.assistant import Assistant
from paperchat.settings import Settings, load_settings
from paperchat.text import printable

if TYPE_CHECKING:
    from paperchat.assistant import IngestReport


class OneLineParser(argparse.ArgumentParser):
    """An ArgumentParser whose usage errors are one line saying where to read the usage, exit 2."""

    def error(self, message: str) -> NoReturn:
        """Print `paperchat ...: error: message (run ... --help)` and exit 2."""
        self.exit(2, printable(f"{self.prog}: error: {message} (run `{self.prog} --help` for the usage)") + "\n")


def settings_from(args: argparse.Namespace, default_data_dir: Path | None = None) -> Settings:
    """Settings from the environment and .env (checked: an unknown PAPERCHAT_ name or a bad value is a
    one-line ConfigError) with the arguments that override them: --data-dir and --answerer.

    Args:
        args: the parsed arguments.
        default_data_dir: the data dir when neither --data-dir nor PAPERCHAT_DATA_DIR gives one.
    """
    overrides: dict[str, Any] = {}
    if getattr(args, "data_dir", None):
        overrides["data_dir"] = Path(args.data_dir)
    elif default_data_dir is not None and "PAPERCHAT_DATA_DIR" not in os.environ:
        overrides["data_dir"] = default_data_dir
    if getattr(args, "answerer", None):
        overrides["answerer"] = args.answerer
    return load_settings(**overrides)


def open_assistant(settings: Settings) -> Assistant:
    """The facade over the data dir with topic membership synced with the rules (an explicit step: the
    topics file may have changed since the last command); what the open-time check found is printed first,
    once, to stderr."""
    assistant = Assistant(settings)
    for line in assistant.warnings:  # the store and the catalogue disagree: say so before anything else
        print(f"paperchat: warning: {line}", file=sys.stderr)
    assistant.sync_topics()
    return assistant


def int_in(lo: int, hi: int, what: str) -> Callable[[str], int]:
    """An argparse type: an integer in [lo, hi], with a message that says the range."""

    def parse(value: str) -> int:
        try:
            n = int(value)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{what} must be a whole number, not {value!r}") from None
        if not lo <= n <= hi:
            raise argparse.ArgumentTypeError(f"{what} must be between {lo:,} and {hi:,}, not {n:,}")
        return n

    return parse


def print_report(report: IngestReport, as_json: bool) -> int:
    """Print what an ingest did (one JSON object, or a summary line and up to 50 lines per kind) and
    return its exit code."""
    if as_json:
        print(json.dumps(report.to_json()))
    else:
        failures = report.failures
        notes = [f for f in report.failed if f.kept]
        print(
            f"{report.papers} papers, {report.chunks_added} chunks added, {report.chunks_skipped} already stored, "
            f"{report.chunks_removed} removed, {len(failures)} failed, {report.seconds:.1f} s"
            + (f", {len(notes)} notes" if notes else "")
            + (f", embedded on {report.device}" if report.device else "")
        )
        if report.device_note:
            print(f"  note: {report.device_note}", file=sys.stderr)
        for src, what in report.stored[:50]:
            print(printable(f"  {src}: {what}"))
        if len(report.stored) > 50:
            print(f"  ... and {len(report.stored) - 50} more files stored")
        for label, items in (("failed", failures), ("note", notes)):
            for f in items[:50]:
                print(printable(f"  {label}: {f.source}: {f.reason}"), file=sys.stderr)
            if len(items) > 50:
                print(f"  ... and {len(items) - 50} more", file=sys.stderr)
    return int(report.exit_code)
