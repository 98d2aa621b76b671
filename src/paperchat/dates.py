"""Dates of papers: parsing the shapes arXiv metadata uses, and which dates are plausible.

A paper dated 9999-12-31 (or 1970-01-01) is a data error: it must not move "now" for every topic page or
the window of `ask --weeks`. Plausible means from 1991 (arXiv's first year) to tomorrow.
"""

from __future__ import annotations

import datetime as dt
import email.utils
import re
from collections.abc import Iterable
from typing import Any

EARLIEST = dt.date(1991, 1, 1)


def latest(today: dt.date | None = None) -> dt.date:
    """The last plausible date: tomorrow (a listing can carry the next day's date in some time zones)."""
    return (today or dt.date.today()) + dt.timedelta(days=1)


def is_plausible(d: dt.date | None, today: dt.date | None = None) -> bool:
    """True for dates from 1991-01-01 to tomorrow."""
    return d is not None and EARLIEST <= d <= latest(today)


def plausible(dates: Iterable[dt.date], today: dt.date | None = None) -> list[dt.date]:
    """The plausible dates of a list (outliers dropped)."""
    end = latest(today)
    return [d for d in dates if EARLIEST <= d <= end]


_MONTH = re.compile(r"\d{4}-\d{2}")


def parse_date(value: Any, month: bool = False) -> dt.date | None:
    """A date from 'YYYY-MM-DD...' or an RFC 2822 string ('Mon, 2 Apr 2007 19:18:42 GMT'); None otherwise.

    Args:
        value: the text (anything else gives None).
        month: also read 'YYYY-MM' as the first of that month (a PDF sidecar's version date).
    """
    if not value or not isinstance(value, str):
        return None
    value = value.strip()
    if month and _MONTH.fullmatch(value):
        value += "-01"
    try:
        return dt.date.fromisoformat(value[:10])
    except ValueError:
        pass
    try:
        return email.utils.parsedate_to_datetime(value).date()
    except (TypeError, ValueError, IndexError, OverflowError):
        return None


def user_day(value: str | None) -> dt.date | None:
    """A YYYY-MM-DD date typed by a user (CLI option, app box); None when empty.

    Raises:
        PaperchatError: the text is not such a date, saying so.
    """
    from paperchat.errors import PaperchatError

    if not value or not str(value).strip():
        return None
    try:
        return dt.date.fromisoformat(str(value).strip())
    except ValueError as exc:
        raise PaperchatError(f"'{value}' is not a date", "use YYYY-MM-DD") from exc
