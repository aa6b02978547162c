"""The generator's own check that a candidate's problem text determines its label (a filter before training).

The generator writes a problem and a `solve()` whose value is the label; the audit re-solves the text later with
its own reader (experiment/selfgen/text_resolver.py). This check is the generator's, and deliberately another
method, so that the two do not share one blind spot: it does not solve the text, it holds the generated program
against the text it claims to solve.
  1. the text is words, numbers and punctuation in sentences that begin with a capital letter, and ends in its
     only question, "How many/much ...?";
  2. the object the question asks about is one the text gives a number of ("How many toy cars" needs "N toy cars"),
     and whoever and whatever else the question names ("does Leo have", "left in the jar") the text names before;
  3. straight-line programs (assignments, then `return <expression>`) only: every number in the program is a
     number the text states (or a number word it uses: twice, half, dozen...), and every number the text states
     is used by the program;
  4. the program's arithmetic agrees with the objects the text attaches to its numbers ("7 apples", "2 toy
     cars"): what is added or subtracted is one object; "N each" / "N in each" / "N per" times a count is that
     object; the result is the object the question asks about;
  5. the label is a whole number above zero (the text counts things; "how many" of nothing is no exercise).
A program it cannot read as straight-line arithmetic is held to 1 and 2 and the label's sign only.
`problems(text, code, label)` returns why the text does not determine the label ([] when nothing is found).
"""

from __future__ import annotations

import ast
import re

_QUESTION = re.compile(r"\bhow (many|much)\b", re.IGNORECASE)
_NUMBER = re.compile(r"(?<![\w.])(\d+(?:,\d{3})*)(?![\w]|\.\d)")
_WORD = re.compile(r"[a-z]+")
_BARE_FOLLOWERS = {"more", "fewer", "less", "of", "to", "out", "left", "and", "in", "on", "at", "from", "for",
                   "with", "each", "the", "a", "an", "times", "percent", "per", "than", "them", "it", "away",
                   "already", "now", "then", "is", "are", "was", "were", "has", "have", "had", "does", "did",
                   "by", "into", "among", "between", "but", "so", "minus", "plus"}
_IMPLIED_NUMBERS = {"twice": 2, "double": 2, "doubles": 2, "half": 2, "halves": 2, "triple": 3, "thrice": 3,
                    "dozen": 12, "dozens": 12, "pair": 2, "pairs": 2, "week": 7, "weeks": 7, "hour": 60, "hours": 60,
                    "minute": 60, "minutes": 60, "percent": 100, "cents": 100, "day": 24, "days": 24}
_PER = re.compile(r"^\s+(?:[a-z]+\s+){0,2}?(?:in each|to each|each|per|for each)\b")


def _stem(word: str) -> str:
    if word.endswith("ies") and len(word) > 4:
        return word[:-3] + "y"
    if re.search(r"(ss|x|z|ch|sh)es$", word):
        return word[:-2]
    if word.endswith("s") and not word.endswith("ss") and len(word) > 2:
        return word[:-1]
    return word


def _object_after(text: str, end: int) -> str | None:
    """The object noun a number at text[:end] counts: the last of up to two lowercase words that follow it
    (its head: "toy cars" -> "car"), None where a function word follows ("3 more", "5 of them", "4 left")."""
    words = []
    for word in re.findall(r"[A-Za-z]+|[^\sA-Za-z]", text[end:])[:2]:
        if not word.isalpha() or not word.islower() or word in _BARE_FOLLOWERS:
            break
        words.append(word)
    return _stem(words[-1]) if words else None


def _statement_and_question(text: str) -> tuple[str, str] | str:
    flat = " ".join(text.split())
    if not re.fullmatch(r"[A-Za-z0-9 .,?!'$%:;\-]*", flat):
        return "the text has characters a word problem does not"
    if flat.count("?") != 1 or not flat.endswith("?"):
        return "the text does not end in its only question"
    if any(not sentence[0].isupper() for sentence in re.split(r"(?<=[.?!]) ", flat)):
        return "a sentence does not begin with a capital letter"
    start = max(flat.rfind(". ", 0, len(flat) - 1), flat.rfind("! ", 0, len(flat) - 1))
    question = flat[start + 2:] if start >= 0 else flat
    if not _QUESTION.search(question):
        return "the question is not 'how many' or 'how much'"
    return flat[:start + 1] if start >= 0 else "", question


def _asked_object(question: str) -> str | None:
    match = re.search(r"\bhow many (?:more |fewer )?((?:[a-z]+ ){0,2}?[a-z]+) (?:does|did|do|are|is|were|was|will|can|could|would|should|has|have|had)\b",
                      question, re.IGNORECASE)
    return _stem(match.group(1).split()[-1].lower()) if match else None


def _numbers(text: str) -> list[tuple[int, str | None, bool]]:
    """(value, the object it counts, whether it is a per-each amount) of every number in the text, in order."""
    found = []
    for match in _NUMBER.finditer(text):
        value = int(match.group(1).replace(",", ""))
        found.append((value, _object_after(text, match.end()), bool(_PER.match(text[match.end():]))))
    return found


class _NotStraightLine(Exception):
    pass


def _return_expression(code: str) -> ast.expr:
    """solve()'s return expression with its straight-line assignments substituted."""
    try:
        tree = ast.parse(code)
    except SyntaxError as err:
        raise _NotStraightLine from err
    solve = next((node for node in tree.body if isinstance(node, ast.FunctionDef) and node.name == "solve"), None)
    if solve is None:
        raise _NotStraightLine
    names: dict[str, ast.expr] = {}

    def substitute(node: ast.expr) -> ast.expr:
        if isinstance(node, ast.Name):
            if node.id not in names:
                raise _NotStraightLine
            return names[node.id]
        if isinstance(node, ast.BinOp):
            return ast.BinOp(substitute(node.left), node.op, substitute(node.right))
        if isinstance(node, ast.UnaryOp):
            return ast.UnaryOp(node.op, substitute(node.operand))
        if isinstance(node, ast.Constant) and isinstance(node.value, (int, float)) and not isinstance(node.value, bool):
            return node
        raise _NotStraightLine

    for statement in solve.body:
        if isinstance(statement, ast.Assign) and len(statement.targets) == 1 and isinstance(statement.targets[0], ast.Name):
            names[statement.targets[0].id] = substitute(statement.value)
        elif isinstance(statement, ast.Return) and statement.value is not None:
            return substitute(statement.value)
        elif isinstance(statement, ast.Expr) and isinstance(statement.value, ast.Constant):
            continue  # a docstring
        else:
            raise _NotStraightLine
    raise _NotStraightLine


def _literals(node: ast.expr) -> list[int | float]:
    return [n.value for n in ast.walk(node) if isinstance(n, ast.Constant)]


class _Objects:
    """The object each literal counts: the k-th use of a number in the program is the k-th time the text states it."""

    def __init__(self, numbers: list[tuple[int, str | None, bool]]):
        self.stated: dict[int, list[tuple[str | None, bool]]] = {}
        for value, obj, per in numbers:
            self.stated.setdefault(value, []).append((obj, per))
        self.used: dict[int, int] = {}

    def result(self, node: ast.expr, problems: list[str]) -> tuple[str | None, bool]:
        if isinstance(node, ast.Constant):
            uses = self.used[node.value] = self.used.get(node.value, 0) + 1
            stated = self.stated.get(node.value, [])
            return stated[uses - 1] if uses <= len(stated) else (None, False)
        if isinstance(node, ast.UnaryOp):
            return self.result(node.operand, problems)
        if not isinstance(node, ast.BinOp):
            return None, False
        left, right = self.result(node.left, problems), self.result(node.right, problems)
        if isinstance(node.op, (ast.Add, ast.Sub)):
            if left[0] and right[0] and left[0] != right[0]:
                problems.append(f"the program {'adds' if isinstance(node.op, ast.Add) else 'subtracts'} "
                                f"{left[0]}s and {right[0]}s")
                return None, False
            return left[0] or right[0], False
        if isinstance(node.op, ast.Mult):
            per = [side for side in (left, right) if side[1]]
            return (per[0][0], False) if len(per) == 1 else (None, False)
        return None, False


def problems(text: str, code: str | None, label: int | float | None) -> list[str]:
    """Why the problem text does not determine this label ([] when the check finds nothing)."""
    parts = _statement_and_question(text)
    if isinstance(parts, str):
        return [parts]
    statement, question = parts
    found: list[str] = []
    numbers = _numbers(statement)
    asked = _asked_object(question)
    if _QUESTION.search(question).group(1).lower() == "many":
        if asked is None:
            found.append("the question names no object it asks about")
        elif asked not in {obj for _, obj, _ in numbers} and not re.search(rf"\b{re.escape(asked)}", statement.lower()):
            found.append(f"the question asks about {asked}s, which the text never mentions")
        elif asked not in {obj for _, obj, _ in numbers}:
            found.append(f"the question asks about {asked}s, of which the text states no number")
    named = [w for w in re.findall(r"[A-Za-z]+", question)[1:] if w[0].isupper()]
    named += re.findall(r"\bthe ([a-z]+)", question)
    missing = [w for w in named if not re.search(rf"\b{re.escape(w)}\b", statement)]
    if missing:
        found.append(f"the question names {', '.join(missing)}, which the text does not")
    if isinstance(label, bool) or not isinstance(label, (int, float)) or label != int(label) or label <= 0:
        found.append(f"the label {label!r} is not a whole number above zero")
    if code is None:
        return found
    try:
        expression = _return_expression(code)
    except _NotStraightLine:
        return found
    stated = [value for value, _, _ in numbers]
    implied = {_IMPLIED_NUMBERS[w] for w in _WORD.findall(text.lower()) if w in _IMPLIED_NUMBERS}
    literals = _literals(expression)
    foreign = [v for v in literals if v not in stated and v not in implied]
    unused = [v for v in stated if v not in literals]
    if foreign:
        found.append(f"the program uses {', '.join(map(str, foreign))}, which the text does not state")
    if unused:
        found.append(f"the text states {', '.join(map(str, unused))}, which the program does not use")
    result, _ = _Objects(numbers).result(expression, found)
    if result and asked and result != asked:
        found.append(f"the program counts {result}s; the question asks about {asked}s")
    return found
