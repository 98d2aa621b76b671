"""Optional LLM judge (`paperchat eval run --judge`): an OpenAI-compatible model grades each answer's
correctness against the gold answer and its faithfulness to the sources it cites.

Off by default and never needed for the other metrics. The judge is `PAPERCHAT_JUDGE=openai:<model>`
(same endpoint settings as the answerer), or the answerer itself when that is an OpenAI-compatible one.
"""

from __future__ import annotations

import json
import re
from typing import Any

from paperchat.assistant import llm_model, resolve_answerer
from paperchat.errors import AnswererError, ConfigError
from paperchat.settings import Settings

JUDGE_PROMPT = """You grade an answer to a question about scientific papers.

Question: {question}
Reference answer: {gold}
Sources the answer was given:
{sources}

Answer to grade:
{answer}

Give two grades from 0 to 1:
- correct: does the answer say what the reference answer says (1), part of it (0.5), or not (0)?
  If the reference answer is "(unanswerable)", an answer that declines to answer is correct.
- faithful: is every claim of the answer supported by the sources (1), most (0.5), or not (0)?
Reply with JSON only, like {{"correct": 1, "faithful": 1, "why": "one short sentence"}}."""

_JSON = re.compile(r"\{.*\}", re.S)


class Judge:
    """Grades answers with an answerer that can complete a free prompt (its `complete` capability).

    Raises:
        ConfigError: neither PAPERCHAT_JUDGE nor the answerer names an OpenAI-compatible model.
    """

    def __init__(self, settings: Settings) -> None:
        name = settings.judge or settings.answerer
        model = llm_model(name)
        if model is None:
            raise ConfigError(
                "--judge needs an OpenAI-compatible model",
                "set PAPERCHAT_JUDGE=openai:<model> (with PAPERCHAT_LLM_BASE_URL for a local server, or OPENAI_API_KEY)",
            )
        self.model = model
        self.llm = resolve_answerer(settings, name)  # an openai:<model> answerer: it can `complete`

    def grade(self, question: str, gold: str, answer: dict[str, Any], source_texts: dict[int, str]) -> tuple[dict[str, float | None], str]:
        """(metrics judge.correct / judge.faithful, reason); None grades when the judge fails or replies badly."""
        srcs = "\n".join(f"[{n}] {t[:800]}" for n, t in sorted(source_texts.items())) or "(none)"
        prompt = JUDGE_PROMPT.format(question=question, gold=gold or "(unanswerable)", sources=srcs, answer=answer.get("answer", ""))
        try:
            reply = self.llm.complete(prompt)
        except AnswererError as exc:
            return {"judge.correct": None, "judge.faithful": None}, f"judge failed: {exc.message}"
        m = _JSON.search(reply)
        try:
            data = json.loads(m.group(0)) if m else {}
            c, f = float(data["correct"]), float(data["faithful"])
        except (ValueError, KeyError, TypeError):
            return {"judge.correct": None, "judge.faithful": None}, f"judge reply was not the asked JSON: {reply[:120]!r}"
        clip = lambda v: min(1.0, max(0.0, v))  # noqa: E731
        return {"judge.correct": clip(c), "judge.faithful": clip(f)}, str(data.get("why", ""))[:300]
