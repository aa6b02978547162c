"""Ground truth for tasks written by the local selfgen generator: a careful reading of the embedded arithmetic
family, the checker the generation-audit tests measure the audit and the generator's filter against.

The generator (embedded_tinker/assets/selfgen-generator) was trained on the family's sentence forms
(embedded_tinker/tasks/arithmetic.py), and it writes them with slots filled inconsistently ("7 apples in a crate
and 2 toy cars ... how many toy cars"). This checker matches a text against the family's forms with one capture
per slot OCCURRENCE, then reads it as a careful person would: a quantity counts only for the object and the holder
it is stated for; the question must ask about a holder and an object the text gives a quantity of; what is given
away, lost, sold or taken cannot exceed what there was; a text that is none of the forms is not a problem of the
family (ill-posed). Pronoun gender is not checked (one person, "He" or "She", is still that person).

It is test code: it reads the generator's own sentence forms, which the audit's re-solver
(experiment/selfgen/text_resolver.py) and the generator's filter (experiment/selfgen/text_label_check.py) must not.
Hand-checked: 40 parsed texts of the committed generated sample (tests/fixtures/selfgen_generated_sample.jsonl,
shuffled with random.Random(1), the first 40 that parse) were read by hand on 7 December 2026; the checker's
verdict (the answer, or ill-posed) agreed with the hand reading on all 40 (6 well-posed, 34 ill-posed: an asked
object the text never counts, a taker or subject garbled, more taken than there is). Used by
tests/unit/test_generator_label_check_rejects_ill_posed_tasks.py and
tests/unit/test_generation_audit_rejects_planted_tasks.py.
"""

from __future__ import annotations

import re
from collections.abc import Callable

from embedded_tinker.tasks.arithmetic import ADD_TEMPLATES, SUB_TEMPLATES, TIMES_TEMPLATES

_SLOT = {"a": r"(\d+)", "b": r"(\d+)", "name": r"([A-Z][a-z]+)", "friend": r"([A-Z][a-z]+)", "pron": r"(He|She)",
         "obj": r"([a-z]+(?: [a-z]+)?)", "box": r"([a-z]+)"}


def _compile(template: str) -> tuple[re.Pattern[str], list[str]]:
    parts = re.split(r"\{(\w+)\}", template)
    slots = parts[1::2]
    regex = "".join(_SLOT[p] if i % 2 else re.escape(p) for i, p in enumerate(parts))
    return re.compile(regex), slots


def _same(values: list[str]) -> bool:
    return len(set(values)) == 1


def _gather(q: dict[str, list]) -> tuple[int, int, list[str], list[str], list[str], list[str]]:
    return q["a"][0], q["b"][0], q.get("name", []), q["obj"], q.get("friend", []), q.get("box", [])


def _add_to_holder(q):  # has a obj. buys/finds b more. how many obj does name have
    a, b, names, objs, friends, _ = _gather(q)
    if not _same(names) or friends and friends[0] in names:
        return None, "the holder changes (or gives to themself)"
    if not _same(objs):
        return None, "the question asks about an object the text gives no quantity of"
    return a + b, "a + b"


def _sum_matching(q):  # two quantities, each with its own object; the question picks an object
    a, b, names, objs, _, _ = _gather(q)
    if names and not _same(names):
        return None, "the holder changes"
    *given, asked = objs
    total = sum(n for n, obj in zip((a, b), given) if obj == asked)
    if asked not in given:
        return None, "the question asks about an object the text gives no quantity of"
    return total, "the quantities of the asked object"


def _take_away(q):
    a, b, names, objs, friends, boxes = _gather(q)
    if not _same(names) or friends and friends[0] in names or boxes and not _same(boxes):
        return None, "the holder changes (or gives to themself)"
    if not _same(objs):
        return None, "the question asks about an object the text gives no quantity of"
    if b > a:
        return None, "more is taken than there is"
    return a - b, "a - b"


def _sold(q):
    a, b, names, objs, _, _ = _gather(q)
    if not _same(names) or not _same(objs):
        return None, "the holder or the object changes"
    if b >= a:
        return None, "'after selling some' leaves at least as many as there were"
    return a - b, "a - b"


def _groups(q):
    a, b, names, objs, _, _ = _gather(q)
    if names and not _same(names) or not _same(objs):
        return None, "the holder or the object changes"
    return a * b, "a * b"


READINGS: list[tuple[str, Callable]] = [
    (ADD_TEMPLATES[0], _add_to_holder), (ADD_TEMPLATES[1], _add_to_holder), (ADD_TEMPLATES[2], _sum_matching),
    (ADD_TEMPLATES[3], _sum_matching), (ADD_TEMPLATES[4], _add_to_holder),
    (SUB_TEMPLATES[0], _take_away), (SUB_TEMPLATES[1], _take_away), (SUB_TEMPLATES[2], _take_away),
    (SUB_TEMPLATES[3], _take_away), (SUB_TEMPLATES[4], _sold),
    (TIMES_TEMPLATES[0], _groups), (TIMES_TEMPLATES[1], _groups), (TIMES_TEMPLATES[2], _groups),
]
_COMPILED = [(_compile(template), reading) for template, reading in READINGS]


def careful_reading(text: str) -> tuple[int | None, str]:
    """(the answer, why) of a text of the family; (None, why) where the text does not determine one."""
    question = " ".join(str(text).split())
    for (pattern, slots), reading in _COMPILED:
        found = pattern.fullmatch(question)
        if found is None:
            continue
        values: dict[str, list] = {}
        for slot, value in zip(slots, found.groups()):
            values.setdefault(slot, []).append(int(value) if slot in "ab" else value)
        return reading(values)
    return None, "not a problem of the family (no sentence form matches)"
