"""The grader's own re-solver of generated word problems: it reads the task's text, never a generator template.

`resolve(text)` finds the question's target ("How many <things> ..."), every stated quantity with the thing it
counts (a bare number counts what the number before it counted: "has 40 flowers. He gives 1 to Yuki"), and the
operation the wording asks for:

- `What is 3 + 4?` (and -, *, x, /): the arithmetic itself;
- a rate ("in each", "each of", "per", "every"): the product of the stated numbers, when the target is one of
  the things counted;
- a removal ("gives", "lost", "sold", "ate", "spent", "left", "already has", ...): the first quantity of the
  target minus the rest;
- otherwise a collection ("and", "more", "altogether", "in total"): the sum of the quantities of the target.

The answer is a `Resolution`: `solved` with the answer, `ill_posed` when the text does not determine the number
asked for (the target is no thing the text counts: "7 apples in a crate and 2 toy cars ... how many marbles"), or
`not_understood` (no question, no number, a form it does not read). Only `solved` and `ill_posed` are findings; a
task it does not understand is said, never graded.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from fractions import Fraction

SOLVED, ILL_POSED, NOT_UNDERSTOOD = "solved", "ill_posed", "not_understood"

_ARITHMETIC = re.compile(r"what\s+is\s+(-?\d+(?:\.\d+)?)\s*([-+*/x×÷])\s*(-?\d+(?:\.\d+)?)\s*\??\s*$")
_WORD = re.compile(r"[a-z]+|\d+(?:\.\d+)?|[.,;:!?]")
_FUNCTION_WORDS = frozenset(
    "a an the to of in on at by for from with and or but then left more extra out off away back up down fewer less each every per than "
    "into onto he she they it his her their its them him is are was were has have had does did do will would can "
    "could should some all altogether total away now today yesterday monday tuesday wednesday thursday friday "
    "saturday sunday after before".split())
_QUESTION_STOP = frozenset("are is was were does did do will would can could should must may might need needs fit get "
                           "has have had in on of there "
                           "altogether total".split())
_RATE_CUES = re.compile(r"\b(?:in each|each of|per|every)\b|(?:^|[.!?]\s*)each\b")  # "3 bags. each bag has 4"
_REMOVAL_CUES = re.compile(r"\b(?:gives?|gave|giving|lost|loses?|sold|sells?|selling|ate|eats?|spent|spends?|left|already "
                          r"(?:has|have)|remains?|remaining|broke|breaks?|used|uses?|takes?|took|away|drinks?|drank|drops?|dropped)\b")
_MORE = re.compile(r"\d+(?:\.\d+)?\s+(?:more|extra)\b")
_GENERIC_TARGETS = frozenset({"thing", "item", "object"})
# what a text it reads never holds: spelled-out or relative numbers, money, percentages, a second question
_OUTSIDE_ITS_READING = re.compile(
    r"\b(?:one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve|twenty|thirty|forty|fifty|hundred|thousand|"
    r"half|twice|double|triple|third|quarter|dozen|percent|each other|if|times|as many|than|while|except|when|ago|"
    r"fewer|less|pairs?|legs?|average|among|between|equally|shares?|shared|splits?|divides?|divided|"
    r"amount|number|rest|remaining|some of|all of|minutes?|hours?|days?|weeks?|months?|years?|miles?|feet|foot|"
    r"inch(?:es)?|grams?|kilograms?|pounds?|ounces?|liters?|litres?|gallons?|meters?|metres?|km|kg|cm)\b|[$%€£]")
# a place ("on the shelf", "in anna's box"): a question that names one among several places it does not read
_PLACE = re.compile(r"\b(?:in|on|inside|at) (?:a|an|the|his|her|their|[a-z]+'s) [a-z]+")
# who holds a stated number ("tom has 5", "anna had 3"): two holders and a question about one it does not read
_HOLDER = re.compile(r"\b([a-z]+) (?:has|had|have|owns|holds) \d")
_EVERYONE = re.compile(r"\b(?:altogether|in total|in all|together|they|both)\b")
MAX_SENTENCES = 3  # the stated facts and the question: a longer text is not one it reads


@dataclass(frozen=True)
class Resolution:
    status: str  # solved | ill_posed | not_understood
    answer: str | None
    reasoning: str


def _singular(word: str) -> str:
    """A plural's singular, well enough to compare two mentions of one thing (both sides go through it)."""
    if word.endswith("ies") and len(word) > 4:
        return word[:-3] + "y"
    if word.endswith(("ches", "shes", "sses", "xes", "zes")):
        return word[:-2]
    return word[:-1] if word.endswith("s") and not word.endswith("ss") and len(word) > 2 else word


def _number_text(value: Fraction) -> str:
    return str(value.numerator) if value.denominator == 1 else str(float(value))


def _target(question: str) -> tuple[tuple[str, ...], str] | None:
    """The (singular) words of the thing asked for after "how many", "more" left out, and those words as written;
    None without one."""
    found = re.search(r"how\s+many\s+(.*)$", question)
    if not found:
        return None
    words: list[str] = []
    for word in _WORD.findall(found.group(1)):
        if word in _QUESTION_STOP or not word[0].isalpha() or len(words) == 2:
            break
        if word in ("more", "extra"):
            continue
        words.append(word)
    return (tuple(_singular(word) for word in words), " ".join(words)) if words else None


def _quantities(statement: str) -> list[tuple[Fraction, tuple[str, ...]]]:
    """(number, the singular words of what it counts) of every number stated, in order."""
    words = _WORD.findall(statement)
    found: list[tuple[Fraction, tuple[str, ...]]] = []
    for index, word in enumerate(words):
        if not word[0].isdigit():
            continue
        unit: list[str] = []
        for following in words[index + 1:index + 3]:
            if following in _FUNCTION_WORDS or not following[0].isalpha():
                break
            unit.append(_singular(following))
        if not unit and found:
            unit = list(found[-1][1])  # "gives 1 to Yuki": counts what the number before counted
        found.append((Fraction(word), tuple(unit)))
    return found


def _counts(unit: tuple[str, ...], target: tuple[str, ...]) -> bool:
    """The quantity counts the target: the same thing (its last word), any modifier the target names included."""
    return bool(unit) and unit[-1] == target[-1] and set(target[:-1]) <= set(unit)


def resolve(text: str) -> Resolution:
    text = " ".join(str(text).lower().split())
    arithmetic = _ARITHMETIC.search(text)
    if arithmetic:
        a, op, b = Fraction(arithmetic.group(1)), arithmetic.group(2), Fraction(arithmetic.group(3))
        if op in "/÷" and b == 0:
            return Resolution(ILL_POSED, None, "division by zero")
        value = {"+": a + b, "-": a - b, "*": a * b, "x": a * b, "×": a * b}.get(op, a / b if b else None)
        return Resolution(SOLVED, _number_text(value), f"arithmetic: {arithmetic.group(0).strip()}")
    cut = text.rfind("how many")
    if cut < 0:
        return Resolution(NOT_UNDERSTOOD, None, "no 'how many' question")
    statement, question = text[:cut], text[cut:]
    asked = _target(question)
    quantities = _quantities(statement)
    if asked is None or not quantities:
        return Resolution(NOT_UNDERSTOOD, None, "no target or no stated number")
    target, shown = asked
    numbers = [value for value, _ in quantities]
    sentences = [part for part in re.split(r"[.!?]", text) if part.strip()]
    if (len(numbers) != 2 or len(sentences) > MAX_SENTENCES or text.count("how many") != 1
            or re.search(r"\d", question) or _OUTSIDE_ITS_READING.search(text)
            or _PLACE.search(question) and len(_PLACE.findall(statement)) > 1
            or len(set(_HOLDER.findall(statement))) > 1 and not _EVERYONE.search(question)):
        return Resolution(NOT_UNDERSTOOD, None, "not a two-number problem of the forms it reads")
    matching = [value for value, unit in quantities if _counts(unit, target)]
    if _RATE_CUES.search(text):
        if not matching:
            return Resolution(ILL_POSED, None, f"rate: the text counts no {shown}")
        product = Fraction(1)
        for value in numbers:
            product *= value
        return Resolution(SOLVED, _number_text(product), f"rate: product of {', '.join(map(_number_text, numbers))}")
    if not _MORE.search(statement) and _REMOVAL_CUES.search(statement):
        if not matching:
            return Resolution(ILL_POSED, None, f"removal: the text counts no {shown}")
        value = matching[0] - sum(matching[1:], Fraction(0))
        return Resolution(SOLVED, _number_text(value), f"removal: {' - '.join(map(_number_text, matching))}")
    if "how many more" in question:
        return Resolution(NOT_UNDERSTOOD, None, "a difference asked without a removal stated")
    if target[-1] in _GENERIC_TARGETS:
        matching = numbers
    if not matching:
        return Resolution(ILL_POSED, None, f"collection: the text counts no {shown}")
    return Resolution(SOLVED, _number_text(sum(matching, Fraction(0))),
                      f"collection: sum of the {shown} counted ({', '.join(map(_number_text, matching))})")
