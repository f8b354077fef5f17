"""Inline TeX as readable plain text (titles, list items, table cells), or found so it can be left out.

A box title such as 「\\(b\\) が偶数のときの解の公式」 or a table cell 「\\(\\bar{X}\\)」 is shown in search
results, tool answers and the embedded text; MathJax is not there to typeset it. `readable` turns the
common school notation into Unicode: `\\frac{a+b}{2c}` -> (a+b)/(2c), `\\sqrt{x}` -> √x, `x^2` -> x²,
`\\times` -> ×, `\\bar{X}` -> X̄ (a combining mark on each character of the argument),
`\\left\\{ … \\right\\}^2` -> {…}² (`\\{ \\}` are literal braces; `\\left`/`\\right` keep their
delimiter). Parentheses go where precedence needs them: around a numerator with an operator or a
space at its top level, around a denominator, root or script that is not a single atom, and around a
fraction written next to another factor (`\\frac{1}{2}x` -> (1/2)x). Anything it does not know loses
its backslash and braces rather than staying as markup. `without_math` removes the math spans
entirely (slugs are words of the title, never formulas).
"""

from __future__ import annotations

import re
import unicodedata

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
    "vert": "|", "lvert": "|", "rvert": "|", "Vert": "‖", "lbrace": "{", "rbrace": "}",
    "langle": "⟨", "rangle": "⟩", "quad": " ", "qquad": " ", "therefore": "∴", "because": "∵",
}
# Commands that only style their argument: the argument stays, the command goes.
_STYLE = {"text", "mathrm", "mathbf", "mathit", "mathsf", "mathtt", "textbf", "textrm", "mbox", "boxed",
          "operatorname"}
# Commands that only size or space: nothing is written.
_SILENT = {"displaystyle", "textstyle", "scriptstyle", "big", "Big", "bigg", "Bigg",
           "bigl", "bigr", "Bigl", "Bigr", "biggl", "biggr", "Biggl", "Biggr", "limits", "nolimits"}
# Accents: their combining mark follows each character of the argument (\bar{X} -> X̄).
_ACCENTS = {"bar": "\u0304", "overline": "\u0305", "hat": "\u0302", "widehat": "\u0302", "vec": "\u20d7",
            "overrightarrow": "\u20d7", "dot": "\u0307", "ddot": "\u0308", "tilde": "\u0303",
            "widetilde": "\u0303", "underline": "\u0332"}
_FRACTIONS = {"frac", "dfrac", "tfrac", "cfrac"}
_SPACES = {",", ";", ":", "!", " ", "\\"}  # \, \; \: \! "\ " and \\ are spaces or breaks
_SUPERSCRIPTS = dict(zip("0123456789+-=()n", "⁰¹²³⁴⁵⁶⁷⁸⁹⁺⁻⁼⁽⁾ⁿ"))
_SUBSCRIPTS = dict(zip("0123456789+-=()aehijklmnoprstuvx", "₀₁₂₃₄₅₆₇₈₉₊₋₌₍₎ₐₑₕᵢⱼₖₗₘₙₒₚᵣₛₜᵤᵥₓ"))
_SCRIPT_CHARS = "".join(_SUPERSCRIPTS.values()) + "".join(_SUBSCRIPTS.values()) + "′°"
_SUFFIXES = _SCRIPT_CHARS + "!'"  # what may follow an atom and still leave it one: x², n!, f′
_TOKEN = re.compile(r"\\[A-Za-z]+|\\.|\s+|.", re.DOTALL)
_MAX_DEPTH = 40  # groups and arguments nested deeper than this are dropped (bounded recursion)

# One atom: a number, a letter (with its marks), a Japanese word, a root of one, each with scripts.
_ATOM = re.compile(rf"√*(?:\d+(?:\.\d+)?|[^\W\d_][\u0300-\u036f\u20d0-\u20ff]*|[\u3040-\u30ff\u3400-\u9fff]+)"
                   rf"[{_SUFFIXES}]*")
_MARKED = re.compile(r"[^\s\u0300-\u036f\u20d0-\u20ff][\u0300-\u036f\u20d0-\u20ff]*")  # a character, its marks
_LOOSE = set("+-−=<>≤≥≠≈≡±∓,:;/÷⇒⇔→ ")  # operators that bind less tightly than a fraction bar


def readable(text: str) -> str:
    """`text` with every inline math span rendered as plain Unicode text."""
    return MATH_SPAN.sub(lambda m: _render(next(g for g in m.groups() if g is not None)), text)


def without_math(text: str) -> str:
    """`text` with its math spans replaced by a space."""
    return MATH_SPAN.sub(" ", text)


def _render(tex: str) -> str:
    pieces = _Reader(_TOKEN.findall(tex)).sequence(0, closing=False)
    return re.sub(r"\s+", " ", _joined(pieces)).strip()


class _Piece(str):
    """Rendered text; `fraction` marks a bare a/b, which needs parentheses next to another factor;
    `delimiter` is "left" or "right" for the delimiter of a \\left or \\right (|a/b| needs none)."""

    fraction = False
    delimiter = ""


def _fraction(text: str) -> _Piece:
    piece = _Piece(text)
    piece.fraction = True
    return piece


class _Reader:
    """Reads tokens left to right into rendered pieces; a brace group is read as one piece."""

    def __init__(self, tokens: list[str]):
        self.tokens = tokens
        self.at = 0

    def sequence(self, depth: int, closing: bool) -> list[str]:
        pieces: list[str] = []
        while self.at < len(self.tokens):
            token = self.tokens[self.at]
            if token == "}":
                self.at += 1
                if closing:
                    return pieces
                continue  # a stray closing brace is markup, not text
            if token in ("^", "_"):
                self.at += 1
                pieces.append(_script(self.argument(depth), token))
                continue
            pieces.append(self.piece(depth))
        return pieces

    def argument(self, depth: int) -> str:
        """The next piece after optional spaces (a command's or a script's argument)."""
        while self.at < len(self.tokens) and self.tokens[self.at].isspace():
            self.at += 1
        if self.at >= len(self.tokens):
            return ""
        if depth >= _MAX_DEPTH:  # arguments nested this deep are markup of a hostile page: dropped
            self.at += 1
            return ""
        return self.piece(depth + 1)

    def piece(self, depth: int) -> str:
        token = self.tokens[self.at]
        self.at += 1
        if token == "{":
            if depth >= _MAX_DEPTH:
                return ""
            depth += 1
            inner = self.sequence(depth, closing=True)
            return inner[0] if len(inner) == 1 else _Piece(_joined(inner))
        if token in ("&", "~"):
            return " "
        if not token.startswith("\\") or len(token) == 1:
            return "" if token == "\\" else token
        if len(token) == 2 and not token[1].isalpha():
            return " " if token[1] in _SPACES else token[1]  # \{ \} \| \% are the characters themselves
        return self.command(token[1:], depth)

    def command(self, name: str, depth: int) -> str:
        if name in _FRACTIONS:
            top, bottom = self.argument(depth), self.argument(depth)
            return _fraction(f"{_numerator(top)}/{_wrap(bottom)}")
        if name == "sqrt":
            index = self.optional(depth)
            return f"{_superscripted(index)}√{_wrap(self.argument(depth))}"
        if name in _ACCENTS:
            return _MARKED.sub(lambda m: m.group() + _ACCENTS[name], self.argument(depth))
        if name in _STYLE:
            return self.argument(depth)
        if name in ("left", "right"):
            invisible = self.tokens[self.at:self.at + 1] == ["."]  # \left. and \right. show nothing
            self.at += invisible
            delimiter = _Piece("" if invisible else self.argument(depth))
            delimiter.delimiter = name
            return delimiter
        if name in _SILENT:
            return ""
        return _SYMBOLS.get(name, name)  # \sin, \log, \cos: the name is what is written

    def optional(self, depth: int) -> str:
        """A `[…]` argument (the index of \\sqrt[3]{…}), or ""."""
        if self.at >= len(self.tokens) or self.tokens[self.at] != "[" or depth >= _MAX_DEPTH:
            return ""
        self.at += 1
        pieces = []
        while self.at < len(self.tokens) and self.tokens[self.at] != "]":
            pieces.append(self.piece(depth + 1))
        self.at += 1
        return _joined(pieces)


def _joined(pieces: list[str]) -> str:
    """The pieces as one text, each fraction written next to another factor put in parentheses."""
    solid = [i for i, p in enumerate(pieces) if p.strip()]
    out = list(pieces)
    for n, i in enumerate(solid):
        if not getattr(pieces[i], "fraction", False):
            continue
        before = pieces[solid[n - 1]] if n > 0 else ""
        after = pieces[solid[n + 1]] if n + 1 < len(solid) else ""
        before = "" if getattr(before, "delimiter", "") == "left" else before.rstrip()
        after = "" if getattr(after, "delimiter", "") == "right" else after.lstrip()
        if (before and _ends_a_factor(before[-1])) or (after and _starts_a_factor(after[0])):
            out[i] = f"({pieces[i]})"
    text = "".join(out)
    alone = len(solid) == 1 and out[solid[0]] is pieces[solid[0]]
    return _fraction(text) if alone and getattr(pieces[solid[0]], "fraction", False) else _Piece(text)


def _ends_a_factor(char: str) -> bool:
    return char.isalnum() or char in ")]}|!′°" or bool(unicodedata.combining(char))


def _starts_a_factor(char: str) -> bool:
    return char.isalnum() or char in "([{|√∫^_" or char in _SCRIPT_CHARS


def _numerator(part: str) -> str:
    """A numerator keeps its parentheses off unless an operator or a space stands at its top level:
    n(n+1)/2 is read as (n(n+1))/2, while a+b/2 is not (a+b)/2."""
    body = part.strip()
    if not body or _enclosed(body):
        return body
    if body[0] in "+-−±":
        return f"({body})"  # -(-4)/2, never --4/2
    depth = 0
    for char in body:
        depth += char in "([{"
        depth -= char in ")]}"
        if depth == 0 and char in _LOOSE:
            return f"({body})"
    return body


def _wrap(part: str) -> str:
    """A denominator, a root's or a script's argument: as is when it is one atom, else in parentheses."""
    body = part.strip()
    return body if not body or _ATOM.fullmatch(body) or _enclosed(body.rstrip(_SUFFIXES)) else f"({body})"


def _enclosed(text: str) -> bool:
    """Whether the whole text is one bracketed group: (…), […], {…} or |…| with no bar inside."""
    pairs = {"(": ")", "[": "]", "{": "}"}
    if not text:
        return False
    if text[0] == "|":
        return len(text) > 2 and text[-1] == "|" and "|" not in text[1:-1]
    if text[0] not in pairs or text[-1] != pairs[text[0]]:
        return False
    depth = 0
    for n, char in enumerate(text):
        depth += char == text[0]
        depth -= char == text[-1]
        if depth == 0 and n < len(text) - 1:
            return False  # (a+b)(c+d): the first group closes before the end
    return True


def _superscripted(index: str) -> str:
    return "".join(_SUPERSCRIPTS.get(c, c) for c in index.strip())


def _script(part: str, mark: str) -> str:
    """A superscript or subscript: Unicode script characters when all of it has them, else ^(…)/_(…)."""
    part = part.strip()
    if mark == "^" and part in ("°", "′"):  # 90^\circ is 90°, f^\prime is f′
        return part
    table = _SUPERSCRIPTS if mark == "^" else _SUBSCRIPTS
    if part and all(c in table for c in part):
        return "".join(table[c] for c in part)
    if not part:
        return ""
    alone = len(part) == 1 or _enclosed(part)
    return f"{mark}{part}" if alone else f"{mark}({part})"
