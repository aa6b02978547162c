"""Common parts of the grader: status words, issues, grades, and the context a check reads.

A check function is named after the rule it implements (`EVAL_2` for rule EVAL-2 of
docs/contract-rules.md), takes a `GradeContext` and returns a list of `Issue`. A category's status
is the worst status among its issues (invalid > unverified > unknown), `verified` when it has none,
`not_applicable` when the spec opts out of the category.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from pydantic import BaseModel, ValidationError

from experiment.contract.generation import generation_settings
from experiment.contract.spec import SpecError
from experiment.grading.evidence import EvidenceAccess

PASS = "verified"
NOT_APPLICABLE = "not_applicable"
INVALID, UNVERIFIED, UNKNOWN = "invalid", "unverified", "unknown"
FAILING = (INVALID, UNVERIFIED, UNKNOWN)
_SEVERITY = {INVALID: 3, UNVERIFIED: 2, UNKNOWN: 1}
CATEGORIES = ("evaluator", "decision", "restoration", "correctness", "feasibility", "generation_audit")
HEX64 = re.compile(r"^[0-9a-f]{64}$")
FLOAT_TOL = 1e-9  # relative (and, unless told, absolute) tolerance for a recomputed float
ABS_TOL = 1e-12  # the contract's absolute tolerance where it states one (docs/contract-rules.md: rel 1e-9, abs 1e-12)


# What an issue says is absent (experiment.grading.precedence): evidence the category rests on that is missing
# or not retained, or a field of the record that only summarises what that evidence would have given.
MISSING_EVIDENCE, MISSING_SUMMARY = "evidence", "summary"


@dataclass(frozen=True)
class Issue:
    rule: str  # e.g. "EVAL-2"
    status: str  # invalid | unverified | unknown
    message: str
    absence: str = ""  # MISSING_EVIDENCE, MISSING_SUMMARY, or "" for a finding about what the record does say

    def sentence(self) -> str:
        text = self.message.strip()
        return f"{self.rule}: {text}{'' if text.endswith('.') else '.'}"


@dataclass
class CategoryGrade:
    name: str
    status: str
    issues: list[Issue] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)  # said, but not failing (e.g. graded against a revision)

    @property
    def failing(self) -> bool:
        return self.status in FAILING

    def to_dict(self) -> dict[str, Any]:
        data: dict[str, Any] = {"status": self.status, "issues": [issue.sentence() for issue in self.issues]}
        if self.notes:
            data["notes"] = list(self.notes)
        return data


@dataclass
class Grade:
    categories: dict[str, CategoryGrade]
    problems: list[str] = field(default_factory=list)
    spec_source: str | None = None
    spec: Any = field(default=None, repr=False, compare=False)  # the Spec graded against (flows.validate --reproduce)

    @property
    def ok(self) -> bool:
        """No category is invalid, unverified or unknown, and no problem was found."""
        return not self.problems and not any(grade.failing for grade in self.categories.values())

    def to_dict(self) -> dict[str, Any]:
        return {"categories": {name: grade.to_dict() for name, grade in self.categories.items()},
                "problems": list(self.problems)}

    def record(self) -> dict[str, Any]:
        """The JSON stored in RESULT.grade (experiment.contract.result_models.GradeModel)."""
        return {"version": 1, "spec_source": self.spec_source, **self.to_dict()}


def category_status(issues: list[Issue]) -> str:
    if not issues:
        return PASS
    return max((issue.status for issue in issues), key=_SEVERITY.__getitem__)


@dataclass
class GradeContext:
    """Everything a check may read: the RESULT, its evidence, the spec it is graded against."""

    result: dict[str, Any]
    evidence: EvidenceAccess
    spec: dict[str, Any] | None = None  # the merged spec (file + revision) as a dict
    spec_model: Any = None  # the same spec, typed (experiment.contract.spec.Spec): what the run's own helpers take
    plan: Any = None  # experiment.contract.plan.ExecutionPlan built from that spec
    spec_source: str | None = None
    revision_fields: tuple[str, ...] = ()  # fields the recorded revision supplied
    run_dir: Path | None = None
    events: list[dict[str, Any]] | None = None  # run directory only
    problems: list[str] = field(default_factory=list)

    def section(self, name: str) -> Any:
        return self.result.get(name)

    def gate_applicable(self, gate: str) -> Any:
        """True, False or None (unknown) from the execution plan; None without a plan."""
        if self.plan is None:
            return None
        try:
            return self.plan.gate(gate).applicable
        except KeyError:
            return None

    def gate_reason(self, gate: str) -> str:
        try:
            return self.plan.gate(gate).reason if self.plan is not None else "no spec to grade against"
        except KeyError:
            return ""

    @property
    def generation_settings(self) -> Any:
        """The spec's task-generation settings (experiment.contract.generation.generation_settings: target,
        filter samples, keep band); None without a typed spec, or where the spec states none usable."""
        if self.spec_model is None:
            return None
        try:
            return generation_settings(self.spec_model)
        except (SpecError, KeyError, TypeError, ValueError):
            return None

    @property
    def finished(self) -> bool:
        return self.result.get("status") in ("succeeded", "failed")

    @property
    def measured(self) -> bool:
        """The comparison was measured: a verdict other than a never-measured stop was posted."""
        return self.result.get("verdict") in ("supported", "refuted") or (
            self.result.get("verdict") == "inconclusive" and self.result.get("outcome_reason") != "incomplete_execution")

    @property
    def trained(self) -> bool:
        return bool(self.result.get("completed_arms"))


Check = Callable[[GradeContext], list[Issue]]
_CHECK_NAME = re.compile(r"^([A-Z]+)_(\d+)(?:_\w+)?$")


def rule_of_check(name: str) -> str:
    """The rule id a check function implements, from its name: `EVAL_9_values` implements EVAL-9."""
    match = _CHECK_NAME.match(name)
    if match is None:
        raise ValueError(f"{name} is not named after a rule (RULE_N or RULE_N_what)")
    return f"{match.group(1)}-{match.group(2)}"


def applied(check: Check, ctx: GradeContext) -> list[Issue]:
    """The check's issues; a record so malformed that the check cannot be applied (a list where an
    object belongs, a missing key) is itself invalid, under the check's rule, never a traceback."""
    try:
        return check(ctx)
    except (AttributeError, KeyError, TypeError, ValueError, IndexError, ZeroDivisionError, OverflowError) as err:
        rule = rule_of_check(check.__name__)  # EVAL_9_values implements EVAL-9 (its own name is no rule id)
        return [Issue(rule, INVALID, f"the record has an unexpected shape, so {rule} cannot be applied "
                                     f"({type(err).__name__}: {short(str(err), 80)})")]


def run_checks(name: str, checks: list[Check], ctx: GradeContext) -> CategoryGrade:
    issues: list[Issue] = []
    for check in checks:
        issues.extend(applied(check, ctx))
    return CategoryGrade(name, category_status(issues), issues)


def model_issues(model: type[BaseModel], value: Any, rule: str, status: str, what: str) -> list[Issue]:
    """A record that does not fit its typed model: one issue naming the first bad field."""
    try:
        model.model_validate(value)
    except ValidationError as err:
        first = err.errors()[0]
        where = ".".join(str(part) for part in first["loc"]) or what
        more = f" (and {err.error_count() - 1} more)" if err.error_count() > 1 else ""
        return [Issue(rule, status, f"{what}.{where}: {first['msg']}{more}")]
    return []


def is_number(value: Any) -> bool:
    """A finite JSON number: never a boolean, and never an integer too large for a float (10**400 is a JSON integer
    whose every float comparison raises OverflowError)."""
    if not isinstance(value, (int, float)) or isinstance(value, bool):
        return False
    try:
        return math.isfinite(value)
    except OverflowError:
        return False


def is_integer(value: Any) -> bool:
    """A JSON integer: never a boolean, which Python counts as an int (True == 1)."""
    return isinstance(value, int) and not isinstance(value, bool)


def equal_json(a: Any, b: Any, tol: float = 0.0, abs_tol: float | None = None) -> bool:
    """The JSON value a is b: a boolean equals only a boolean (Python's True == 1 and False == 0.0 would let a
    boolean pass for a count), a number only a finite number, by value (1 == 1.0) up to `close`'s tolerances (none
    unless told), lists and tuples item by item, objects key by key, anything else with ==."""
    if isinstance(a, bool) or isinstance(b, bool):
        return type(a) is type(b) and a == b
    if isinstance(a, (int, float)) or isinstance(b, (int, float)):
        return close(a, b, tol, abs_tol)
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(equal_json(a[key], b[key], tol, abs_tol) for key in a)
    if isinstance(a, (list, tuple)) and type(a) is type(b):
        return len(a) == len(b) and all(equal_json(x, y, tol, abs_tol) for x, y in zip(a, b))
    return a == b


def close(a: Any, b: Any, tol: float = FLOAT_TOL, abs_tol: float | None = None) -> bool:
    """Two finite numbers, never a boolean, equal up to the relative `tol` and the absolute `abs_tol` (`tol` unless
    told)."""
    return is_number(a) and is_number(b) and math.isclose(float(a), float(b), rel_tol=tol,
                                                          abs_tol=tol if abs_tol is None else abs_tol)


def float_of(text: Any) -> float | None:
    """The number a text names (an LR-grid run's label names its learning rate: "0.001"), None where it names none."""
    try:
        return float(text)
    except (TypeError, ValueError):
        return None


def as_dict(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def as_list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


def short(value: Any, limit: int = 60) -> str:
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def run_seed(run: Any) -> int:
    """A planned training run's scheduled seed (0 where the plan states none)."""
    seed = getattr(run, "seed", None)
    return int(seed) if is_integer(seed) else 0


def run_label(run: Any) -> str:
    """A planned training run's key beneath its arm (metrics.arms.<arm>.runs, loss_eval, provenance `runs`): its
    learning rate, with `-seed<s>` at a further scheduled seed (experiment.contract.plan.TrainingRun.label)."""
    label = getattr(run, "label", None)
    return label if isinstance(label, str) else f"{float(run.lr):g}" if run.lr is not None else run.name


def first_difference(recorded: Any, expected: Any, where: str) -> str | None:
    """The first path where two JSON values differ (numbers within FLOAT_TOL), else None."""
    if isinstance(expected, dict):
        if not isinstance(recorded, dict) or set(recorded) != set(expected):
            return where
        return next((d for key in sorted(expected) if (d := first_difference(recorded[key], expected[key],
                                                                               f"{where}.{key}"))), None)
    if isinstance(expected, (list, tuple)):
        if not isinstance(recorded, list) or len(recorded) != len(expected):
            return where
        return next((d for i, (a, b) in enumerate(zip(recorded, expected)) if (d := first_difference(a, b, f"{where}[{i}]"))),
                    None)
    if is_number(expected):
        return None if close(recorded, expected) else where
    return None if recorded == expected and type(recorded) is type(expected) else where
