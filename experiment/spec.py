"""The experiment spec: a typed view of a spec file, read verbatim.

`load_spec(path)` reads `specs/<name>.json` and, when it exists, the companion plan file
`specs/<name>.plan.json` beside it. A plan file is a recorded spec revision: it may only add
top-level fields the spec lacks (a legacy spec such as the TriMuon one has no `arms`,
`decision_rule` or `experiment_features`), never override a field the spec has.

Unknown fields are kept (`extra="allow"`), so `spec.model_dump(exclude_unset=True)` round-trips
the merged spec. Every problem becomes one `SpecError` line naming the field, e.g.
`spec error: steps: must be a positive integer (got -3)`.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated, Any

from pydantic import BaseModel, BeforeValidator, ConfigDict, PrivateAttr, ValidationError

DECISION_METHODS = {
    # per-item paired statistic with a one-sided Hoeffding bound (contract section 7)
    "paired_hoeffding",
    # best grid point of each arm compared against a fixed margin, no interval (TriMuon plan file)
    "best_lr_threshold",
}
ROLE_LABELS = ("treatment", "baseline", "untrained_base")
STRUCTURE_A_PLAN_FILE_SUPPLIES = ("arms", "decision_rule", "experiment_features")


class SpecError(ValueError):
    """A spec that cannot be run as written. str() is one line: `spec error: <field>: <problem>`."""

    def __init__(self, field_name: str, problem: str):
        self.field_name = field_name
        self.problem = problem
        super().__init__(f"spec error: {field_name}: {problem}" if field_name else f"spec error: {problem}")


def _positive_int(value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
        raise ValueError(f"must be a positive integer (got {value!r})")
    return value


def _positive_number(value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value <= 0:
        raise ValueError(f"must be a positive number (got {value!r})")
    return value


PositiveInt = Annotated[int, BeforeValidator(_positive_int)]
PositiveNumber = Annotated[float, BeforeValidator(_positive_number)]


class _Open(BaseModel):
    """Every spec section keeps the fields we do not model."""

    model_config = ConfigDict(extra="allow")


class EvalSpec(_Open):
    metric: str
    n_examples: PositiveInt
    benchmark: str | None = None
    aggregation: str | None = None


class BudgetSpec(_Open):
    gpu_hours: PositiveNumber
    max_wall_minutes: PositiveNumber


class ArmSpec(_Open):
    name: str
    role: str | None = None
    trained: bool = True
    data: str | None = None
    optimizer: str | dict[str, Any] | None = None
    lr: PositiveNumber | None = None
    lr_grid: list[PositiveNumber] | None = None
    group_size: PositiveInt | None = None
    groups_per_batch: PositiveInt | None = None
    steps: PositiveInt | None = None
    seed: int | None = None
    advantage: str | None = None


class CriterionSpec(_Open):
    id: str
    metric: str
    weights: dict[str, float]
    margin: float
    bounds: list[float] | None = None


class DecisionRuleSpec(_Open):
    method: str
    criteria: list[CriterionSpec]
    alpha: float | None = None
    seeds: list[int] | None = None
    unit: str | None = None


class Spec(_Open):
    title: str
    base_model: str
    training_type: str
    steps: PositiveInt
    eval: EvalSpec
    budget: BudgetSpec
    lora_rank: PositiveInt | None = None
    batch_size: PositiveInt | None = None
    max_seq_len: PositiveInt | None = None
    arms: list[ArmSpec] | None = None
    baseline: str | None = None
    decision_rule: DecisionRuleSpec | None = None
    experiment_features: dict[str, Any] | None = None
    _source: SpecSource | None = PrivateAttr(default=None)

    @property
    def source(self) -> SpecSource:
        """Where the spec came from: path, hashes and the plan-file revision (set by load_spec)."""
        if self._source is None:
            raise RuntimeError("spec was not loaded with load_spec(); it has no recorded source")
        return self._source

    def feature(self, name: str) -> bool | None:
        """experiment_features[name], or None when the spec gives no evidence for it."""
        if self.experiment_features is None:
            return None
        value = self.experiment_features.get(name)
        return value if isinstance(value, bool) else None

    def section(self, name: str) -> dict[str, Any]:
        """A top-level spec section as a plain dict ({} when absent or null)."""
        value = self.model_dump(exclude_unset=True).get(name)
        return value if isinstance(value, dict) else {}

    def to_dict(self) -> dict[str, Any]:
        """The merged spec (file + plan file), with exactly the fields that were given."""
        return self.model_dump(exclude_unset=True)


@dataclass(frozen=True)
class SpecRevision:
    """A companion plan file: which fields it supplied, pinned by hash."""

    path: str
    sha256: str
    supplied: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return {"path": self.path, "sha256": self.sha256, "supplied": list(self.supplied)}


@dataclass(frozen=True)
class SpecSource:
    path: str
    file_sha256: str  # canonical JSON of the spec file alone
    sha256: str  # canonical JSON of spec file + plan file (the spec hash used in runs and the index)
    revision: SpecRevision | None

    @property
    def stem(self) -> str:
        return Path(self.path).name.removesuffix(".json")

    def to_dict(self) -> dict[str, Any]:
        return {
            "path": self.path,
            "file_sha256": self.file_sha256,
            "sha256": self.sha256,
            "revision": self.revision.to_dict() if self.revision else None,
        }


def canonical_sha256(value: Any) -> str:
    """sha256 of canonical JSON (sorted keys, compact separators), the project's hash for specs."""
    text = json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=True, allow_nan=False)
    return hashlib.sha256(text.encode()).hexdigest()


def plan_file_path(spec_path: Path) -> Path:
    """`specs/x.json` -> `specs/x.plan.json`."""
    return spec_path.with_name(spec_path.name.removesuffix(".json") + ".plan.json")


def _read_json_object(path: Path) -> dict[str, Any]:
    if not path.is_file():
        raise SpecError("", f"{path}: no such file")
    try:
        value = json.loads(path.read_text(encoding="utf-8"))
    except (json.JSONDecodeError, UnicodeDecodeError) as err:
        raise SpecError("", f"{path}: not valid JSON ({err})") from None
    if not isinstance(value, dict):
        raise SpecError("", f"{path}: must be a JSON object (got {type(value).__name__})")
    return value


def _first_error(err: ValidationError) -> SpecError:
    first = err.errors()[0]
    where = ".".join(f"[{p}]" if isinstance(p, int) else str(p) for p in first["loc"]).replace(".[", "[")
    if first["type"] == "missing":
        return SpecError(where, "required field is missing")
    message = first["msg"].removeprefix("Value error, ")
    if first["type"] != "value_error":
        message = f"{message} (got {first.get('input')!r})"
    return SpecError(where, message)


def _join_or(names: list[str]) -> str:
    return names[0] if len(names) == 1 else ", ".join(names[:-1]) + " or " + names[-1]


def _merge_plan_file(spec_path: Path, raw: dict[str, Any]) -> tuple[dict[str, Any], SpecRevision | None]:
    plan_path = plan_file_path(spec_path)
    if not plan_path.exists():
        missing = [name for name in STRUCTURE_A_PLAN_FILE_SUPPLIES if name not in raw]
        if "arms" in missing:
            raise SpecError(
                "",
                f"{spec_path} has no {_join_or(missing)}; "
                f"expected companion plan file {plan_path} supplying them",
            )
        return raw, None
    plan = _read_json_object(plan_path)
    overridden = sorted(name for name in plan if name in raw)
    if overridden:
        raise SpecError(
            overridden[0], f"plan file {plan_path} overrides a field the spec has; a plan file may only add missing fields"
        )
    revision = SpecRevision(path=str(plan_path), sha256=canonical_sha256(plan), supplied=sorted(plan))
    return {**raw, **plan}, revision


def _check_decision_rule(spec: Spec) -> None:
    features = spec.experiment_features or {}
    if spec.decision_rule is None:
        if features.get("paired_comparison") is True:
            raise SpecError("decision_rule", "required because experiment_features.paired_comparison is true")
        return
    rule = spec.decision_rule
    if rule.method not in DECISION_METHODS:
        raise SpecError("decision_rule.method", f"unknown method {rule.method!r} (known: {', '.join(sorted(DECISION_METHODS))})")
    if not rule.criteria:
        raise SpecError("decision_rule.criteria", "must list at least one criterion")
    if rule.alpha is not None and not 0 < rule.alpha < 1:
        raise SpecError("decision_rule.alpha", f"must be between 0 and 1 (got {rule.alpha!r})")
    arm_names = [arm.name for arm in spec.arms or []]
    for index, criterion in enumerate(rule.criteria):
        for key in criterion.weights:
            if key not in arm_names and key not in ROLE_LABELS:
                raise SpecError(
                    f"decision_rule.criteria[{index}].weights",
                    f"names arm {key!r} that does not exist (arms: {', '.join(arm_names) or 'none'}; "
                    f"roles: {', '.join(ROLE_LABELS)})",
                )


def _check_arms(spec: Spec) -> None:
    if not spec.arms:
        raise SpecError("arms", "must list at least one arm")
    seen: set[str] = set()
    for index, arm in enumerate(spec.arms):
        if arm.name in seen:
            raise SpecError(f"arms[{index}].name", f"duplicate arm name {arm.name!r}")
        seen.add(arm.name)
        if arm.role is not None and arm.role not in ROLE_LABELS:
            raise SpecError(f"arms[{index}].role", f"must be one of {', '.join(ROLE_LABELS)} (got {arm.role!r})")


def parse_spec(raw: dict[str, Any]) -> Spec:
    """Validate an already-merged spec dict (no file, no plan file)."""
    try:
        spec = Spec.model_validate(raw)
    except ValidationError as err:
        raise _first_error(err) from None
    _check_arms(spec)
    _check_decision_rule(spec)
    return spec


def load_spec(path: str | Path) -> Spec:
    """Read a spec file (+ companion plan file), validate it, and record where it came from."""
    spec_path = Path(path)
    if spec_path.name.endswith(".plan.json"):
        spec = spec_path.with_name(spec_path.name.removesuffix(".plan.json") + ".json")
        raise SpecError("", f"{spec_path} is a companion plan file; pass the spec {spec} instead")
    raw = _read_json_object(spec_path)
    merged, revision = _merge_plan_file(spec_path, raw)
    spec = parse_spec(merged)
    file_sha = canonical_sha256(raw)
    combined = canonical_sha256(merged) if revision else file_sha
    spec._source = SpecSource(path=str(spec_path), file_sha256=file_sha, sha256=combined, revision=revision)
    return spec
