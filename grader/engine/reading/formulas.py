"""Formulas in student text: found, parsed and compared for equivalence, without ``eval``.

A student's "how many" answer is a value or a formula (``2^(n-1)``, ``2的n-1次方``, ``n/2``,
``0.5n``) and a complexity answer a big-O (``O(n^2)``, ``O⑴``). Comparing them as text fails
on every rewriting, so they are parsed by a small recursive-descent parser (numbers, one-letter
variables, + - * / ^, parentheses, implicit products like ``2n``, ``log``) and compared by
value at a few points with exact fractions. Not sympy: ``sympify`` evaluates strings with
``eval``, and student answers are untrusted. Every step is a single left-to-right pass, so the
work is linear in the text (the parser's depth and the exponents are bounded too).
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from fractions import Fraction

MAX_DEPTH = 24  # nested parentheses or signs beyond this are not a formula anyone writes
MAX_EXPONENT = 64  # 2^64 is an answer; 2^100000 is an attack on the arithmetic
MAX_BITS = 4096  # no value a student writes needs more
MAX_DIGITS = 30
MAX_TOKENS = 120  # longer is prose with numbers in it, and a deeper evaluation
SAMPLES = (2, 3, 5, 7, 11)
_SUPERSCRIPTS = str.maketrans("⁰¹²³⁴⁵⁶⁷⁸⁹⁺⁻⁽⁾ⁿ", "0123456789+-()n")
_PLAIN = str.maketrans(
    {"（": "(", "）": ")", "×": "*", "·": "*", "÷": "/", "−": "-", "–": "-", "＋": "+",
     "－": "-", "，": ",", "＊": "*", "／": "/", "＾": "^", "＝": "=", "⑴": "(1)", "⑵": "(2)",
     "ｎ": "n", "Ｏ": "O", "０": "0", "１": "1", "２": "2", "３": "3", "４": "4"}
)  # fmt: skip
_SUPER_RUN = re.compile(r"[⁰¹²³⁴⁵⁶⁷⁸⁹⁺⁻⁽⁾ⁿ]+")
# "2的n-1次方" / "2的（n-1）次方" / "n的平方": a power written in words. Bounded operands.
_WORD_POWER = re.compile(r"([0-9A-Za-z)]{1,8})的[(]?([0-9A-Za-z+\-*/ ]{1,12}?)[)]?次[方幂冪]")
_POW = re.compile(r"pow\s*\(([^(),]{1,12}),([^(),]{1,12})\)")
_SQUARE = re.compile(r"([0-9A-Za-z)]{1,8})的平方")
_LOG = re.compile(r"(?:log_?2|lg|ln|log)\s*(?=[(a-z0-9])")
# A run of formula characters: the candidates a reader compares (linear: one character class).
_RUN = re.compile(r"[0-9A-Za-z+\-*/^().]+")
_ENUMERATOR = re.compile(r"^\(\d{1,2}\)(?=[0-9A-Za-z(])")
_FORMULA_LIKE = re.compile(r"[0-9+\-*/^]")
_LOG_ONLY = re.compile(r"[a-z]?L[a-z]$")  # nLn, Ln: n log n and log n after ``plain``

Value = Fraction | float  # exact until a log makes it a float
Values = dict[str, int]  # a value for each variable
Node = Callable[[Values], Value]  # a parsed (sub)formula


class Expression:
    """A parsed formula: call it with variable values to get an exact value (or None)."""

    def __init__(self, text: str, symbols: frozenset[str], value: Node):
        self.text = text
        self.symbols = symbols
        self._value = value

    def at(self, values: Values) -> Value | None:
        try:
            result = self._value(values)
        except (ZeroDivisionError, OverflowError, ValueError):
            return None
        return result if isinstance(result, Fraction | float) else None


def plain(text: str) -> str:
    """Full-width, superscript and word forms of a formula as ASCII: ``2的n-1次方`` → ``2^(n-1)``."""
    text = text.translate(_PLAIN)
    text = _SUPER_RUN.sub(lambda m: "^(" + m.group(0).translate(_SUPERSCRIPTS) + ")", text)
    text = _WORD_POWER.sub(lambda m: f"{_group(m.group(1))}^({m.group(2).replace(' ', '')})", text)
    text = _POW.sub(lambda m: f"{_group(m.group(1))}^({m.group(2)})", text)
    text = _SQUARE.sub(lambda m: f"{_group(m.group(1))}^2", text)
    return _LOG.sub("L", text.replace("**", "^"))


def _group(base: str) -> str:
    """A power's base as written, bracketed only when it is more than one number or letter
    (``(2)^n`` would read as the list mark ``(2)``)."""
    return base if base.isdigit() or (len(base) == 1 and base.isalpha()) else f"({base})"


def runs(text: str) -> list[str]:
    """Every run of formula characters in ``plain`` text that looks like a formula (a digit,
    an operator, one letter, or a log: ``n``, ``nLn``; not an English word), list marks
    such as ``(1)`` cut off. A bare number followed by spaces and more formula (``2 n-1``, a
    superscript lost in copying) stays one run, which then does not parse."""
    found: list[str] = []
    end = -1
    for m in _RUN.finditer(text):
        run = _ENUMERATOR.sub("", m.group(0).strip("."))
        if end >= 0 and found and found[-1].isdigit() and not text[end : m.start()].strip():
            run = found.pop() + " " + run
        end = -1
        if run and (_FORMULA_LIKE.search(run) or len(run) == 1 or _LOG_ONLY.match(run)):
            found.append(run)
            end = m.end()
    return found


def parse(text: str) -> Expression | None:
    """The formula ``text`` (already ``plain``), or None when it is not one."""
    tokens = _tokens(text) if not _SPACED_PRODUCT.search(text) else []
    if not tokens or len(tokens) > MAX_TOKENS:
        return None
    parser = _Parser(tokens)
    try:
        value = parser.expression(0)
    except _NotAFormula:
        return None
    if parser.at < len(tokens):
        return None
    return Expression(text, frozenset(parser.symbols), value)


def equivalent(a: Expression, b: Expression) -> bool | None:
    """Same value at every sample point: True / False; None when they cannot be compared
    (``b`` names a variable ``a`` lacks, or neither evaluates)."""
    if not b.symbols <= a.symbols:
        return None
    compared = False
    for k, n in enumerate(SAMPLES):
        values = {s: n + 3 * i + k for i, s in enumerate(sorted(a.symbols))}
        x, y = a.at(values), b.at(values)
        if x is None or y is None:
            continue
        compared = True
        if not math.isclose(float(x), float(y), rel_tol=1e-9, abs_tol=1e-12):
            return False
    return True if compared else None


def same_growth(a: Expression, b: Expression) -> bool | None:
    """Big-O equality: the ratio of the two settles to one constant (``O(2n)`` is ``O(n)``)."""
    if not b.symbols <= a.symbols | {"n"}:
        return None
    ratios = []
    for n in (2**12, 2**24):
        x, y = a.at(dict.fromkeys(a.symbols, n)), b.at(dict.fromkeys(b.symbols, n))
        if x is None or y is None or float(y) == 0:
            return None
        ratios.append(float(x) / float(y))
    return math.isclose(ratios[0], ratios[1], rel_tol=0.05)


class _NotAFormula(Exception):
    pass


# "2 n-1": a superscript lost in copying, not a product; a formula never spaces one.
_SPACED_PRODUCT = re.compile(r"[0-9A-Za-z)]\s+[0-9A-Za-z(]")
_TOKEN = re.compile(r"\s*(?:(\d+(?:\.\d+)?)|([A-Za-z])|([-+*/^()]))")


def _tokens(text: str) -> list[str]:
    out: list[str] = []
    at = 0
    while at < len(text):
        m = _TOKEN.match(text, at)
        if m is None or m.end() == at:
            return [] if text[at:].strip() else out
        out.append(m.group(1) or m.group(2) or m.group(3))
        if len(out) > MAX_TOKENS:
            return out  # too long to be a formula: ``parse`` says so without reading on
        at = m.end()
    return out


class _Parser:
    """expression := term (('+'|'-') term)*; term := unary (('*'|'/'|implicit) unary)*;
    unary := '-' unary | power; power := atom ('^' unary)?; atom := number | var | L atom | (e)"""

    def __init__(self, tokens: list[str]):
        self.tokens, self.at = tokens, 0
        self.symbols: set[str] = set()

    def peek(self) -> str | None:
        return self.tokens[self.at] if self.at < len(self.tokens) else None

    def take(self) -> str:
        token = self.tokens[self.at]
        self.at += 1
        return token

    def expression(self, depth: int) -> Node:
        if depth > MAX_DEPTH:
            raise _NotAFormula
        value = self.term(depth)
        while self.peek() in {"+", "-"}:
            op, right, left = self.take(), self.term(depth), value
            value = _add(left, right) if op == "+" else _sub(left, right)
        return value

    def term(self, depth: int) -> Node:
        value = self.unary(depth)
        while (token := self.peek()) is not None and (token in {"*", "/", "("} or _atomic(token)):
            op = self.take() if token in {"*", "/"} else "*"
            right, left = self.unary(depth), value
            value = _mul(left, right) if op == "*" else _div(left, right)
        return value

    def unary(self, depth: int) -> Node:
        if depth > MAX_DEPTH:
            raise _NotAFormula
        if self.peek() == "-":
            self.take()
            inner = self.unary(depth + 1)
            return lambda v: -inner(v)
        return self.power(depth)

    def power(self, depth: int) -> Node:
        base = self.atom(depth)
        if self.peek() != "^":
            return base
        self.take()
        exponent = self.unary(depth + 1)
        return lambda v: _pow(base(v), exponent(v))

    def atom(self, depth: int) -> Node:
        token = self.take() if self.peek() is not None else None
        if token is None:
            raise _NotAFormula
        if token == "(":
            inner = self.expression(depth + 1)
            if self.peek() != ")":
                raise _NotAFormula
            self.take()
            return inner
        if token == "L":
            argument = self.atom(depth + 1)
            return lambda v: _log(argument(v))
        if token[0].isdigit():
            if len(token) > MAX_DIGITS:
                raise _NotAFormula
            number = Fraction(token)
            return lambda v: number
        if token.isalpha() and token not in {"O", "o"}:
            self.symbols.add(token)
            return lambda v: Fraction(v[token])
        raise _NotAFormula


def _atomic(token: str) -> bool:
    return token[0].isdigit() or (token.isalpha() and token not in {"O", "o"})


def _bounded(x: Value) -> Value:
    """Values past ``MAX_BITS`` are no answer a student means, and would cost unbounded work
    (``((n^64)^64)^64``): the comparison gives up instead."""
    if (
        isinstance(x, Fraction)
        and max(x.numerator.bit_length(), x.denominator.bit_length()) > MAX_BITS
    ):
        raise OverflowError
    return x


def _add(a: Node, b: Node) -> Node:
    return lambda v: _bounded(a(v) + b(v))


def _sub(a: Node, b: Node) -> Node:
    return lambda v: _bounded(a(v) - b(v))


def _mul(a: Node, b: Node) -> Node:
    return lambda v: _bounded(a(v) * b(v))


def _div(a: Node, b: Node) -> Node:
    return lambda v: _bounded(a(v) / b(v))


def _pow(base: Value, exponent: Value) -> Value:
    if not (isinstance(exponent, Fraction) and exponent.denominator == 1):
        raise ValueError("only whole exponents are compared")
    if abs(exponent) > MAX_EXPONENT:
        raise OverflowError
    if isinstance(base, Fraction):
        size = max(base.numerator.bit_length(), base.denominator.bit_length())
        if size * abs(int(exponent)) > MAX_BITS:
            raise OverflowError
    return _bounded(base ** int(exponent))


def _log(x: Value) -> float:
    if float(x) <= 0:
        raise ValueError
    return math.log2(float(x))
