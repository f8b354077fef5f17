"""Inline TeX in titles: rendered as readable plain text, or found so it can be left out.

A box title such as 「\\(b\\) が偶数のときの解の公式」 is shown in search results, tool answers and
the embedded text; MathJax is not there to typeset it. `readable` turns the common school
notation into Unicode (`\\frac{a}{b}` -> a/b, `\\sqrt{x}` -> √x, `x^2` -> x², `\\times` -> ×);
anything it does not know loses its backslash and braces rather than staying as markup.
`without_math` removes the math spans entirely (slugs are words of the title, never formulas).
"""

from __future__ import annotations

import re

# \( … \) and \[ … \]; a lone $ is too often a price to be taken for math. A span never
# runs over another opening delimiter, so an unclosed \( costs a scan to the next one, not to
# the end of the text (linear time on a hostile heading of many \( ).
MATH_SPAN = re.compile(r"\\\(((?:(?!\\[(\[]).)*?)\\\)|\\\[((?:(?!\\[(\[]).)*?)\\\]", re.DOTALL)

_SYMBOLS = {
    "times": "×", "div": "÷", "pm": "±", "mp": "∓", "cdot": "·", "cdots": "…", "ldots": "…", "dots": "…",
    "leq": "≤", "le": "≤", "geq": "≥", "ge": "≥", "neq": "≠", "ne": "≠", "lt": "<", "gt": ">",
    "approx": "≈", "equiv": "≡", "sim": "∼", "infty": "∞", "to": "→", "rightarrow": "→",
    "Rightarrow": "⇒", "Leftrightarrow": "⇔", "angle": "∠", "triangle": "△", "perp": "⊥",
    "parallel": "∥", "cap": "∩", "cup": "∪", "subset": "⊂", "in": "∈", "emptyset": "∅", "sum": "Σ",
    "int": "∫", "ell": "ℓ", "circ": "°", "prime": "′", "mid": "|", "alpha": "α", "beta": "β", "gamma": "γ",
    "delta": "δ", "Delta": "Δ", "epsilon": "ε", "theta": "θ", "lambda": "λ", "mu": "μ", "pi": "π",
    "sigma": "σ", "Sigma": "Σ", "phi": "φ", "varphi": "φ", "omega": "ω", "Omega": "Ω",
}
# Commands that only style or size their argument: the argument stays, the command goes.
_STYLE = {"text", "mathrm", "mathbf", "mathit", "boxed", "displaystyle", "textstyle", "left", "right",
          "Big", "big", "Bigg", "bigg", "operatorname", "overline", "bar", "vec", "hat"}
_SUPERSCRIPTS = dict(zip("0123456789+-=()n", "⁰¹²³⁴⁵⁶⁷⁸⁹⁺⁻⁼⁽⁾ⁿ"))
_SUBSCRIPTS = dict(zip("0123456789+-=()aehijklmnoprstuvx", "₀₁₂₃₄₅₆₇₈₉₊₋₌₍₎ₐₑₕᵢⱼₖₗₘₙₒₚᵣₛₜᵤᵥₓ"))
_GROUP = r"\{((?:[^{}]|\{[^{}]*\})*)\}"  # one brace group, one level of nesting inside
_ATOM = rf"(?:{_GROUP}|(\\[A-Za-z]+|[^\s{{}}\\]))"


def readable(text: str) -> str:
    """`text` with every inline math span rendered as plain Unicode text."""
    return MATH_SPAN.sub(lambda m: _render(next(g for g in m.groups() if g is not None)), text)


def without_math(text: str) -> str:
    """`text` with its math spans replaced by a space."""
    return MATH_SPAN.sub(" ", text)


def _render(tex: str) -> str:
    out = tex
    for _ in range(4):  # nested \sqrt and \frac: innermost first, a few levels are plenty
        before = out
        out = re.sub(rf"\\sqrt\s*(?:\[([^\]]*)\])?\s*{_ATOM}",
                     lambda m: f"{_root_index(m.group(1))}√{_wrap(_pick(m, 2))}", out)
        out = re.sub(rf"\\[dt]?frac\s*{_ATOM}\s*{_ATOM}",
                     lambda m: f"{_wrap(_pick(m, 1))}/{_wrap(_pick(m, 3))}", out)
        if out == before:
            break
    out = re.sub(rf"\^\s*{_ATOM}", lambda m: _script(_pick(m, 1), _SUPERSCRIPTS, "^"), out)
    out = re.sub(rf"_\s*{_ATOM}", lambda m: _script(_pick(m, 1), _SUBSCRIPTS, "_"), out)
    out = re.sub(r"\\([A-Za-z]+)", _command, out)
    out = re.sub(r"\\[,;:! ]|\\\\", " ", out).replace("\\{", "{").replace("\\}", "}")
    out = out.replace("{", "").replace("}", "")
    return re.sub(r"\s+", " ", out).strip()


def _pick(match, first: int) -> str:
    """An _ATOM's text: the brace group's content (group `first`) or the single token after it."""
    group = match.group(first)
    return group if group is not None else match.group(first + 1)


def _wrap(part: str) -> str:
    part = part.strip()
    return part if len(part) <= 1 or re.fullmatch(r"√?([0-9]+|[A-Za-z])|\\[A-Za-z]+", part) else f"({part})"


def _root_index(index: str | None) -> str:
    return "".join(_SUPERSCRIPTS.get(c, c) for c in index.strip()) if index else ""


def _script(part: str, table: dict, mark: str) -> str:
    part = part.strip()
    if mark == "^" and part in ("\\circ", "\\prime"):  # 90^\circ is 90°, f^\prime is f′
        return _SYMBOLS[part[1:]]
    if part and all(c in table for c in part):
        return "".join(table[c] for c in part)
    return f"{mark}{_wrap(part)}"


def _command(match) -> str:
    name = match.group(1)
    if name in _SYMBOLS:
        return _SYMBOLS[name]
    return "" if name in _STYLE else name  # \sin, \log, \cos: the name is what is written
