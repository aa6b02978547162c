"""The generator's own check that a candidate's problem text determines its label (a filter before training).

The generator writes a problem and a `solve()` whose value is the label; the audit re-solves the text later with
its own reader (experiment/selfgen/text_resolver.py). This check is the generator's, and deliberately another
method, so that the two do not share one blind spot: it does not solve the text, it holds the generated program
against the text it claims to solve.
  1. the text is prose (no code or symbols such as = { } < > _ #), no sentence begins in lowercase, and it ends
     in its only question (or an instruction: "Calculate ...");
  2. the object a "How many <object> ..." question asks about is one the text mentions before the question
     clause (a unit stands for its family: "$" for dollars, hours for minutes), and so are the places the
     question names ("left in the jar") and, where the text names people, the people it names ("does Leo have");
  3. straight-line programs (assignments, then `return <expression>`) only: every number in the program is a
     number the text states (or a number word it uses: twice, half, dozen...), and every number the text states
     is used by the program;
  4. the program's arithmetic agrees with the objects the text attaches to its numbers ("7 apples", "2 toy
     cars": the words that follow a number): what is added or subtracted shares an object word; "N each" /
     "N in each" / "N per" times a count is that object; the result is the object the question asks about;
  5. the label is a whole number above zero (the text counts things; "how many" of nothing is no exercise).
A program it cannot read as straight-line arithmetic is held to 1 and 2 and the label's sign only.
`problems(text, code, label)` returns why the text does not determine the label ([] when nothing is found).
"""

from __future__ import annotations

import ast
import re

_QUESTION = re.compile(r"\bhow (many|much)\b", re.IGNORECASE)
_CODEISH = re.compile(r"[=`{}\[\]<>\\|_#~^]|\bdef \w+\(|\breturn\s+\w+\s*[-+*/%]")
_INSTRUCTION = re.compile(r"\b(?:calculate|find|determine|compute|work out|figure out|what|how)\b", re.IGNORECASE)
_ASKS = re.compile(r"\b(?:how (?:many|much|far|long|old|tall|fast|big|high|often|heavy|wide|deep)|what|which|who|"
                   r"when|where|why|calculate|find|determine|compute)\b", re.IGNORECASE)
_FUNCTION_WORDS = {"The", "A", "An", "There", "He", "She", "They", "It", "If", "After", "Before", "Each", "Every", "In",
                   "On", "At", "How", "What", "When", "This", "That", "These", "Those", "Then", "But", "And", "So",
                   "Her", "His", "Their", "Its", "One", "Two", "Three", "For", "From", "With", "All", "Some", "As",
                   "Of", "To", "While", "During", "Since", "Now", "Later", "First", "Finally", "Also", "I", "We", "You"}
_ABBREVIATION = re.compile(r"(?:\b[a-z]\.[a-z]\.|\b(?:vs|etc|Mr|Mrs|Ms|Dr|St|approx)\.)$")
# words of a "how many" question that name no object ("how many bolts in total", "how many years ago")
_NOT_OBJECTS = {"in", "total", "all", "of", "ago", "more", "fewer", "less", "longer", "shorter", "farther", "further",
                "early", "late", "later", "earlier", "old", "time", "different", "whole", "full", "other", "the",
                "a", "an", "his", "her", "their", "its", "each", "every", "doe", "does", "did", "do", "are", "is", "were",
                "wa", "was", "will", "can", "could", "would", "should", "ha", "has", "have", "had", "there", "he",
                "she", "they", "we", "you", "it", "i"}
# units one of which stands for all ("$5 ... how many dollars", "3 hours ... how many minutes")
_UNIT_FAMILIES = [{"$", "dollar", "cent"}, {"%", "percent"},
                  {"second", "minute", "hour", "day", "week", "month", "year"},
                  {"inch", "foot", "feet", "yard", "mile", "meter", "centimeter", "kilometer"},
                  {"ounce", "pound", "gram", "kilogram", "ton"}, {"cup", "pint", "quart", "gallon", "liter", "milliliter"}]
_CALENDAR = {"Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday", "January", "February",
             "March", "April", "May", "June", "July", "August", "September", "October", "November", "December"}
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
    if word in ("cookies", "movies", "pies", "ties", "brownies"):
        return word[:-1]
    if word.endswith("ies") and len(word) > 4:
        return word[:-3] + "y"
    if re.search(r"(ss|x|z|ch|sh)es$", word):
        return word[:-2]
    if word.endswith("s") and not word.endswith("ss") and len(word) > 2:
        return word[:-1]
    return word


def _object_after(text: str, end: int) -> frozenset[str] | None:
    """The words of the object a number at text[:end] counts: up to two lowercase words that follow it, singular
    ("toy cars" -> {toy, car}); None where a function word follows ("3 more", "5 of them", "4 left")."""
    words = []
    for word in re.findall(r"[A-Za-z]+|[^\sA-Za-z]", text[end:])[:2]:
        if not word.isalpha() or not word.islower() or word in _BARE_FOLLOWERS:
            break
        words.append(_stem(word))
    return frozenset(words) or None


def _names(obj: frozenset[str]) -> str:
    return "/".join(sorted(obj))


def _statement_and_question(text: str) -> tuple[str, str] | str:
    """(everything before the question clause, the question clause), or why the text is no single question."""
    flat = " ".join(text.split())
    if _CODEISH.search(flat):
        return "the text has code or symbols a word problem does not"
    if flat.count("?") > 1:
        return "the text asks more than one question"
    if "?" in flat and not flat.endswith("?"):
        return "the text goes on after its question"
    sentences = re.split(r"(?<=[.?!])(?<!\bMrs\.)(?<!\bMr\.)(?<!\bMs\.)(?<!\bDr\.)(?<!\bvs\.)\s+", flat)
    if flat[:1].islower() or any(sentence[:1].islower() and not _ABBREVIATION.search(before)
                                 for before, sentence in zip(sentences, sentences[1:])):
        return "a sentence begins with a lowercase letter"
    if not _INSTRUCTION.search(sentences[-1]) or flat.endswith("?") and not _ASKS.search(sentences[-1]):
        return "the text ends in no question"
    last = len(flat) - len(sentences[-1])
    asks = list(_QUESTION.finditer(sentences[-1]))
    start = last + (asks[-1].start() if asks else 0)
    return flat[:start], flat[start:]


def _asked_words(question: str) -> set[str]:
    """The words of what a "how many <words> <verb>" question asks about, singular ("toy cars" -> {toy, car})."""
    match = re.match(r"how many ((?:[a-z]+ ){0,3}?[a-z]+) (?:does|did|do|are|is|were|was|will|can|could|would|should|"
                     r"has|have|had|there)\b", question, re.IGNORECASE)
    if match is None:  # no verb where one belongs: the word after "how many" is what it asks about
        match = re.match(r"how many (?:more |fewer )?([a-z]+)\b", question, re.IGNORECASE)
    return {_stem(word.lower()) for word in match.group(1).split()} - _NOT_OBJECTS if match else set()


def _asked_object(question: str) -> str | None:
    """The head of what the question asks about (the last of its words), None where it names nothing."""
    match = re.match(r"how many (?:more |fewer )?((?:[a-z]+ ){0,2}?[a-z]+) (?:does|did|do|are|is|were|was|will|can|"
                     r"could|would|should|has|have|had|there)\b", question, re.IGNORECASE)
    head = _stem(match.group(1).split()[-1].lower()) if match else None
    return None if head in _NOT_OBJECTS else head


def _mentioned(statement: str) -> set[str]:
    """The statement's words, singular, with every unit of a family it uses ("$" mentions cents and dollars)."""
    words = {_stem(word) for word in _WORD.findall(statement.lower())} | set(re.findall(r"[$%]", statement))
    for family in _UNIT_FAMILIES:
        if words & family:
            words |= family
    return words


def _numbers(text: str) -> list[tuple[int, frozenset[str] | None, bool]]:
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
        if isinstance(statement, ast.Assign) and all(isinstance(target, ast.Name) for target in statement.targets):
            value = substitute(statement.value)
            names.update((target.id, value) for target in statement.targets)  # a = b = 7 binds both
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

    def __init__(self, numbers: list[tuple[int, frozenset[str] | None, bool]]):
        self.stated: dict[int, list[tuple[frozenset[str] | None, bool]]] = {}
        for value, obj, per in numbers:
            self.stated.setdefault(value, []).append((obj, per))
        self.used: dict[int, int] = {}

    def result(self, node: ast.expr, problems: list[str]) -> tuple[frozenset[str] | None, bool]:
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
            if left[0] and right[0] and not left[0] & right[0]:
                problems.append(f"the program {'adds' if isinstance(node.op, ast.Add) else 'subtracts'} "
                                f"{_names(left[0])} and {_names(right[0])}")
                return None, False
            return (left[0] & right[0] if left[0] and right[0] else left[0] or right[0]), False
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
    numbers = _numbers(statement + " " + question)
    words = _mentioned(statement)
    asked, asked_words = _asked_object(question), _asked_words(question)
    if asked_words and not asked_words & words:
        found.append(f"the question asks about {' '.join(sorted(asked_words))}, which the text never mentions")
    people = [w for w in re.findall(r"[A-Za-z]+", statement) if w[0].isupper() and w not in _CALENDAR | _FUNCTION_WORDS]
    named = [w for w in re.findall(r"[A-Za-z]+", question)[1:] if w[0].isupper() and not w.isupper()
             and w not in _CALENDAR | _FUNCTION_WORDS] if people else []
    named += [w for w in re.findall(r"\b(?:left|are|is) (?:in|on|inside) the ([a-z]+)", question) if _stem(w) not in words]
    missing = [w for w in named if not re.search(rf"\b{re.escape(w)}", statement)]
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
    if result and asked and asked not in result:
        found.append(f"the program counts {_names(result)}; the question asks about {asked}")
    return found
