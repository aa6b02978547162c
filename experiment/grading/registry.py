"""The grader's rule registry: every rule id, registered once, at the function that implements it.

A check function registers the rule it implements with a decorator next to its definition:

    @rule("EVAL-2", "evaluator", "invalid", "evaluator_id is the sha256 of the canonical provenance stored under it")
    def EVAL_2(ctx): ...

(id, category, the statuses a finding gives, one line). A rule implemented by more than one function is
registered once and each further function says `@implements("EVAL-9")`. A run-dir method lists the check ids
it emits with `@run_dir_checks((check id, the contract rule it restates, one line), ...)`. A rule the run
enforces and a record cannot show is declared without a check (`declare`, experiment.grading.rules).

The decorators return the function unchanged. experiment.grading.rules imports every grading module and
builds the rule table from this registry (`table()`); tests/unit/test_grading_rule_table.py holds it to the
ids the code emits and to docs/contract-rules.md.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, TypeVar

from experiment.grading.common import CATEGORIES, INVALID, UNKNOWN, UNVERIFIED

RECORD = "record"  # record-level: findings go to Grade.problems
PROBLEM = "problem"  # a record-level finding without a status word
SEVERITIES = (INVALID, UNVERIFIED, UNKNOWN, PROBLEM)

# The rule a category grade cites when the record is too malformed for the category's own guards
# (experiment.grading.grade._graded): the category's shape rule.
SHAPE_RULES = {"evaluator": "EVAL-1", "decision": "DEC-2", "restoration": "REST-1", "correctness": "CORR-2",
               "feasibility": "FEAS-1", "generation_audit": "GA-2"}
assert tuple(SHAPE_RULES) == CATEGORIES

_PACKAGE = "experiment.grading."

F = TypeVar("F", bound=Callable)


@dataclass(frozen=True)
class Rule:
    id: str
    category: str  # one of CATEGORIES, or RECORD
    severity: tuple[str, ...]  # what a finding gives (SEVERITIES); () for a rule the grader does not check
    description: str  # one line
    checks: tuple[str, ...] = ()  # where it is implemented, relative to experiment.grading
    restates: str = ""  # run-dir checks: the contract rule re-checked


_declared: dict[str, Rule] = {}  # id -> the rule as registered (its first check)
_further: dict[str, list[str]] = {}  # id -> the checks registered by `implements`
_shared: dict[str, tuple[Callable, ...]] = {}  # run-dir check id -> the contract rule's check functions it runs


def where(function: Callable) -> str:
    """`module.qualname` of a function, the module relative to experiment.grading (`run_dir.events._EventChecks.x`)."""
    module = function.__module__
    if not module.startswith(_PACKAGE):
        raise ValueError(f"{module}.{function.__qualname__} is not a grading module's function")
    return f"{module[len(_PACKAGE):]}.{function.__qualname__}"


def _severity(severity: str) -> tuple[str, ...]:
    words = tuple(severity.split("|")) if severity else ()
    unknown = [word for word in words if word not in SEVERITIES]
    if unknown:
        raise ValueError(f"unknown severity {unknown}; one of {SEVERITIES}, joined by |")
    return words


def _register(found: Rule) -> None:
    if found.id in _declared:
        raise ValueError(f"rule {found.id} is registered twice ({_declared[found.id].checks or 'declared'} and "
                         f"{found.checks or 'declared'})")
    if found.category not in (*CATEGORIES, RECORD):
        raise ValueError(f"rule {found.id}: category {found.category!r} is none of {(*CATEGORIES, RECORD)}")
    if not found.description or "\n" in found.description:
        raise ValueError(f"rule {found.id}: the description is one line")
    _declared[found.id] = found


def declare(rule_id: str, category: str, description: str) -> None:
    """A rule the run enforces and the grader cannot re-check from a record: no check, no severity."""
    _register(Rule(rule_id, category, (), description))


def rule(rule_id: str, category: str, severity: str, description: str) -> Callable[[F], F]:
    """Register `rule_id` (its category, the statuses a finding gives as `invalid|unverified`, one line) with the
    decorated function as its check."""
    def register(function: F) -> F:
        _register(Rule(rule_id, category, _severity(severity), description, (where(function),)))
        return function
    return register


def implements(rule_id: str) -> Callable[[F], F]:
    """The decorated function is a further check of `rule_id`, which is registered (once) elsewhere."""
    def register(function: F) -> F:
        _further.setdefault(rule_id, []).append(where(function))
        return function
    return register


def run_dir_checks(*checks: tuple[Any, ...]) -> Callable[[F], F]:
    """The run-dir layer's check ids the decorated method emits: (`<section>.<check>`, the contract rule it
    restates, one line[, the contract rule's check functions ...]). Each is a record-level problem. A check given the
    contract rule's functions runs that one implementation on the run directory's files (`shared`), and the
    functions are its row's checks; one contract rule may report under several run-dir ids, one function each."""
    def register(function: F) -> F:
        for check_id, restates, description, *implementation in checks:
            if implementation:
                _shared[check_id] = tuple(implementation)
                _further.setdefault(check_id, []).extend(where(f) for f in implementation)
            found = Rule(check_id, RECORD, (PROBLEM,), description, (where(function),), restates)
            if check_id in _declared:  # one id emitted by several methods: one row, every method its check
                _further.setdefault(check_id, []).append(found.checks[0])
                continue
            _register(found)
        return function
    return register


def shared(check_id: str) -> tuple[Callable, ...]:
    """The contract rule's check functions the run-dir check `check_id` runs (registered with `run_dir_checks`)."""
    return _shared[check_id]


def table() -> tuple[Rule, ...]:
    """Every registered rule, each with all its checks, in registration order."""
    unknown = sorted(set(_further) - set(_declared))
    if unknown:
        raise ValueError(f"checks registered for rules no one declared: {unknown}")
    rules = []
    for found in _declared.values():
        checks = found.checks + tuple(c for c in _further.get(found.id, ()) if c not in found.checks)
        if checks and not found.severity:
            raise ValueError(f"rule {found.id} has a check but no severity")
        rules.append(Rule(found.id, found.category, found.severity, found.description, checks, found.restates))
    return tuple(rules)
