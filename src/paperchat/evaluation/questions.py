"""Question sets (JSONL, the format of ../shared/data/eval/README.md): load, validate, hash."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from paperchat.assistant import Failure
from paperchat.errors import ConfigError


class Question(BaseModel):
    """One evaluation question; unknown fields are kept (extra) and ignored."""

    model_config = ConfigDict(extra="allow")

    id: str
    scope: Literal["paper", "topic"]
    question: str = Field(min_length=1)
    pdf: str = ""
    paper_id: str = ""
    topic: str = ""
    gold_answer: str = ""
    answer_aliases: list[str] = Field(default_factory=list)
    gold_pages: list[int] = Field(default_factory=list)
    gold_papers: list[str] = Field(default_factory=list)
    evidence: str = ""
    unanswerable: bool = False
    kind: str = ""
    set_name: str = ""


def load_set(path: Path) -> tuple[list[Question], list[Failure], str]:
    """Questions of a set, the malformed lines (by line number) and the file's sha256."""
    raw = path.read_bytes()
    sha = hashlib.sha256(raw).hexdigest()
    out: list[Question] = []
    bad: list[Failure] = []
    seen: set[str] = set()
    for lineno, line in enumerate(raw.decode("utf-8", errors="replace").splitlines(), start=1):
        if not line.strip():
            continue
        try:
            rec: Any = json.loads(line)
            q = Question.model_validate({**rec, "set_name": path.stem} if isinstance(rec, dict) else rec)
        except json.JSONDecodeError as exc:
            bad.append(Failure(f"{path}:{lineno}", f"malformed JSON: {exc.msg}"))
            continue
        except ValidationError as exc:
            first = exc.errors()[0]
            bad.append(Failure(f"{path}:{lineno}", f"invalid question: {'.'.join(str(x) for x in first['loc'])}: {first['msg']}"))
            continue
        if q.scope == "paper" and not (q.pdf or q.paper_id):
            bad.append(Failure(f"{path}:{lineno}", "a paper question needs 'pdf' or 'paper_id'"))
            continue
        if q.scope == "topic" and not q.topic:
            bad.append(Failure(f"{path}:{lineno}", "a topic question needs 'topic'"))
            continue
        if q.id in seen:
            bad.append(Failure(f"{path}:{lineno}", f"duplicate id {q.id}"))
            continue
        seen.add(q.id)
        out.append(q)
    return out, bad, sha


Judgments = dict[str, dict[str, int]]  # question id -> paper id -> graded relevance (0, 1, 2)


def load_judgments(paths: Sequence[Path]) -> Judgments:
    """Graded relevance judgments of (topic question, paper) pairs (`eval/topic_judged.jsonl`: one
    {"id", "paper", "rel"} object a line, rel 2 relevant, 1 partly, 0 not). A bad line is an error that names it:
    a judgment file is written once and read by every run, so it should not degrade quietly."""
    out: Judgments = {}
    where: dict[tuple[str, str], str] = {}
    for path in paths:
        if not path.is_file():
            raise ConfigError(f"judgment file {path} not found", "check the path")
        for lineno, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
            if not line.strip():
                continue
            try:
                rec = json.loads(line)
                qid, paper, rel = rec["id"], rec["paper"], rec["rel"]
            except (json.JSONDecodeError, KeyError, TypeError) as exc:
                raise ConfigError(f"{path}:{lineno}: not a judgment ({exc})", 'each line needs "id", "paper" and "rel" (0, 1 or 2)') from exc
            if not (isinstance(qid, str) and qid and isinstance(paper, str) and paper):
                raise ConfigError(f"{path}:{lineno}: not a judgment (id and paper must be non-empty strings)", "fix the line")
            if isinstance(rel, bool) or rel not in (0, 1, 2):
                raise ConfigError(f"{path}:{lineno}: rel must be 0, 1 or 2, not {rel!r}", "fix the line")
            here = f"{path}:{lineno}"
            if (qid, paper) in where:
                raise ConfigError(f"{here}: {paper} is judged for {qid} already at {where[qid, paper]}", "keep one judgment per question and paper")
            where[qid, paper] = here
            out.setdefault(qid, {})[paper] = int(rel)
    return out

