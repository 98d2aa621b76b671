"""LaTeX in arXiv titles and abstracts, shown as plain text ("AT$^2$PO" -> "AT²PO", "\\textbf{S}afe" -> "Safe").

For display only: stored chunks keep the text as the authors wrote it, so quotes stay verbatim in their
sources and chunk ids (content hashes) do not change.
"""

from __future__ import annotations

import re

_SYMBOLS = {
    "times": "×", "sim": "~", "approx": "≈", "rightarrow": "→", "to": "→", "leftarrow": "←", "Rightarrow": "⇒",
    "pm": "±", "leq": "≤", "le": "≤", "geq": "≥", "ge": "≥", "neq": "≠", "in": "∈", "infty": "∞", "cdot": "·",
    "alpha": "α", "beta": "β", "gamma": "γ", "delta": "δ", "epsilon": "ε", "varepsilon": "ε", "theta": "θ",
    "lambda": "λ", "mu": "μ", "pi": "π", "rho": "ρ", "sigma": "σ", "tau": "τ", "phi": "φ", "omega": "ω",
    "Delta": "Δ", "Sigma": "Σ", "Omega": "Ω", "log": "log", "ell": "ℓ", "checkmark": "✓", "dots": "...",
    "ldots": "...", "cdots": "...", "textbackslash": "\\",
}
_SUP = str.maketrans("0123456789+-=()nik", "⁰¹²³⁴⁵⁶⁷⁸⁹⁺⁻⁼⁽⁾ⁿⁱᵏ")
_SUB = str.maketrans("0123456789+-=()", "₀₁₂₃₄₅₆₇₈₉₊₋₌₍₎")
# commands whose argument is the text to show (\textbf{X} -> X); \href{url}{X} keeps X
_WRAP = re.compile(
    r"\\(?:textbf|textit|emph|textsc|texttt|textrm|textsf|underline|text|mathrm|mathbf|mathit|mathcal|mathbb|mathsf|mathtt|boldsymbol|bm|operatorname|url)\s*\{([^{}]*)\}"
)
_HREF = re.compile(r"\\href\s*\{[^{}]*\}\s*\{([^{}]*)\}")
_DROP = re.compile(r"\\(?:cite[tp]?|ref|label|footnote)\s*\{[^{}]*\}")
_CMD = re.compile(r"\\(?:([A-Za-z]+)(\s?)|([%&_#${}]))")
# inline math as TeX reads it in prose: no space just inside the dollars, and not an amount of money
# ("costs $5 and $10")
_MATH = re.compile(r"\$\$?(?!\s)(?!\d[\d.,]*\s)([^$]{1,120}?)(?<!\s)\$\$?")
_SCRIPT = re.compile(r"([\^_])(?:\{([^{}]*)\}|(\S))")


def _script(m: re.Match[str]) -> str:
    body = m.group(2) if m.group(2) is not None else m.group(3)
    table = _SUP if m.group(1) == "^" else _SUB
    shown = body.translate(table)
    if all(ch != orig or ch in " " for ch, orig in zip(shown, body, strict=True)):
        return shown  # every character has a super/subscript form
    return ("^" if m.group(1) == "^" else "_") + body


def _math(m: re.Match[str]) -> str:
    return _SCRIPT.sub(_script, m.group(1))


def _command(m: re.Match[str]) -> str:
    if m.group(3):  # an escaped character: \% -> %
        return m.group(3)
    name, space = m.group(1), m.group(2)
    # a known symbol keeps the space TeX swallowed after its name ("\alpha x" reads "α x"); an unknown
    # command shows its name
    return _SYMBOLS.get(name, name) + (space if name in _SYMBOLS else "")


def plain(text: str) -> str:
    """Readable text for a title, abstract or quote that may hold LaTeX markup (idempotent on plain text)."""
    if "\\" not in text and "$" not in text:
        return text
    out = text
    for _ in range(3):  # nested wrappers: \textbf{\textit{X}}
        new = _HREF.sub(r"\1", _WRAP.sub(r"\1", out))
        if new == out:
            break
        out = new
    out = _DROP.sub("", out)
    out = _MATH.sub(_math, out)
    out = _CMD.sub(_command, out)
    out = re.sub(r"\{([^{}]*)\}", r"\1", out)
    return re.sub(r"[ \t]{2,}", " ", out)
