"""The experiment spec: a typed view of a spec file, read verbatim.

`load_spec(path)` reads `specs/<name>.json` and, when it exists, the companion plan file
`specs/<name>.plan.json` beside it. A plan file is a recorded spec revision: it may only add
top-level fields the spec lacks (a legacy spec such as the TriMuon one has no `arms`,
`decision_rule` or `experiment_features`), never override a field the spec has.

A plan file may also add fields *inside* sections the spec has (an arm's `role`, matched by arm
`name`; a correctness path's fields, matched by `id`) and fill in values the spec itself marks
UNRESOLVED (a string starting with "unresolved", any case). It may never change a value the spec
states. `--rehearse` (experiment.contract.rehearsal) rewrites the merged spec to rehearsal scale.

Unknown fields are kept (`extra="allow"`), so `spec.model_dump(exclude_unset=True)` round-trips
the merged spec. Every problem becomes one `SpecError` line naming the field, e.g.
`spec error: steps: must be a positive integer (got -3)`. Hostile files are refused the same way:
NaN/Infinity anywhere, nesting deeper than MAX_SPEC_DEPTH, numbers too large to run or so small
they parse as 0.0, a key repeated in one object (JSON would keep only the last), control characters,
lone surrogates and bidirectional overrides in any string (experiment.contract.text), learning rates
outside (0, MAX_LEARNING_RATE], a revision file whose learning rates leave out the spec's
`optimizer.lr`, files over MAX_SPEC_BYTES, data paths outside the project's data directories
(experiment.data).
"""

from __future__ import annotations

import hashlib
import json
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import BaseModel, BeforeValidator, ConfigDict, PrivateAttr, ValidationError

from experiment.contract.errors import SpecError  # noqa: F401  (re-exported: experiment.contract.spec.SpecError)
from experiment.contract.rehearsal import rehearse_spec
from experiment.contract.run_layout import SAFE_FILE_NAME
from experiment.contract.text import printable_line, unsafe_character
from experiment.data import DataError, resolve_data_path

DECISION_METHODS = {
    # per-item paired statistic with a one-sided Hoeffding bound (DEC-8)
    "paired_hoeffding",
    # best grid point of each arm compared against a fixed margin, no interval (TriMuon plan file)
    "best_lr_threshold",
}
# What the contract defines of decision methods, quoted when a spec names another (issue 46: paired_bootstrap_bca).
CONTRACT_DECISION_METHODS = (
    "the contract defines one decision method, exchange-contract.md section 7: \"method\": \"paired_hoeffding\" (the "
    "per-item statistic sum_arm w_arm * value_arm(item), its range sum |w| * (hi - lo), the one-sided Hoeffding "
    "half-width range * sqrt(ln(1/alpha) / (2 n)), passed when the lower bound exceeds margin), and for an SFT "
    "LR-grid spec the best LR per arm (section 1, item 8), which the revision file states as best_lr_threshold; it "
    "defines no resampling interval (no bootstrap, BCa or its resample count, seed or acceptance rule), so a verdict "
    "by any other method could not be recomputed by the exchange")
ROLE_LABELS = ("treatment", "baseline", "untrained_base")
TRAINING_TYPES = ("rl", "sft")
# Where a trained arm's data comes from (plan file `arm_data`: the spec's `arms[].data` text -> source).
DATA_SOURCES = ("dataset", "generated_tasks", "none")
DEFAULT_GROUP_SIZE = 8  # rollouts per prompt of an RL arm that states no group_size (the cookbook's math_rl)
MAX_SPEC_BYTES = 1024 * 1024  # a spec or plan file is a few KiB; anything this large is not a spec
MAX_SPEC_DEPTH = 32  # the seed specs nest 6 deep
MAX_SPEC_INTEGER = 2**53  # beyond this no count in a spec can run (and JSON peers lose precision)
# Sizes beyond which a run cannot be carried out on any service this pipeline targets.
MAX_STEPS = 1_000_000
MAX_BATCH = 1_000_000
MAX_EXAMPLES = 100_000_000
MAX_LORA_RANK = 65_536
# Learning rates a run can use: above the maximum no optimizer this pipeline targets trains (Adam at
# lr 10 diverges at once); below the minimum an update cannot change a float32 weight at all.
MIN_LEARNING_RATE = 1e-12
MAX_LEARNING_RATE = 10.0
STRUCTURE_A_PLAN_FILE_SUPPLIES = ("arms", "decision_rule", "experiment_features")


def _positive_int(value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
        raise ValueError(f"must be a positive integer (got {value!r})")
    return value


def _positive_number(value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value <= 0:
        raise ValueError(f"must be a positive number (got {value!r})")
    return value


def _integer(value: Any) -> int:
    """A JSON integer as written: never a string ("0") or a boolean, which pydantic would turn into one."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise ValueError(f"must be an integer (got {value!r})")
    return value


def _number(value: Any) -> float:
    """A JSON number as written: never a string ("0.05") or a boolean, which pydantic would turn into one."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ValueError(f"must be a number (got {value!r})")
    return value


def _at_most(limit: int):
    def check(value: Any) -> int:
        value = _positive_int(value)
        if value > limit:
            raise ValueError(f"is {value}, too large to run (limit {limit})")
        return value

    return check


def _nonempty_grid(value: Any) -> Any:
    if isinstance(value, list) and not value:
        raise ValueError("is empty; list at least one learning rate, or remove the field to use lr")
    return value


PositiveInt = Annotated[int, BeforeValidator(_positive_int)]
PositiveNumber = Annotated[float, BeforeValidator(_positive_number)]
Steps = Annotated[int, BeforeValidator(_at_most(MAX_STEPS))]
BatchSize = Annotated[int, BeforeValidator(_at_most(MAX_BATCH))]
Examples = Annotated[int, BeforeValidator(_at_most(MAX_EXAMPLES))]
Rank = Annotated[int, BeforeValidator(_at_most(MAX_LORA_RANK))]
Integer = Annotated[int, BeforeValidator(_integer)]
Number = Annotated[float, BeforeValidator(_number)]


class _Open(BaseModel):
    """Every spec section keeps the fields we do not model."""

    model_config = ConfigDict(extra="allow")


class EvalSpec(_Open):
    metric: str
    n_examples: Examples
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
    lr_grid: Annotated[list[PositiveNumber] | None, BeforeValidator(_nonempty_grid)] = None
    group_size: BatchSize | None = None
    groups_per_batch: BatchSize | None = None
    steps: Steps | None = None
    seed: Integer | None = None
    advantage: str | None = None


class CriterionSpec(_Open):
    id: str
    metric: str
    weights: dict[str, Number]
    margin: Number
    bounds: list[Number] | None = None


class DecisionRuleSpec(_Open):
    method: str
    criteria: list[CriterionSpec]
    alpha: Number | None = None
    seeds: list[Integer] | None = None
    unit: str | None = None


class Spec(_Open):
    title: str
    base_model: str
    training_type: Literal["rl", "sft"]  # TRAINING_TYPES
    steps: Steps
    eval: EvalSpec
    budget: BudgetSpec
    lora_rank: Rank | None = None
    batch_size: BatchSize | None = None
    max_seq_len: BatchSize | None = None
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

    def rollout_shape(self, arm_name: str) -> tuple[int, int]:
        """(group_size, groups_per_batch) of an RL arm's steps: its own, else DEFAULT_GROUP_SIZE rollouts per
        prompt and the spec's batch_size prompts (experiment.rl.recipe builds the loop's settings from this)."""
        arm = next((a for a in self.arms or [] if a.name == arm_name), None)
        if arm is None:
            raise KeyError(arm_name)
        if not (arm.groups_per_batch or self.batch_size):
            raise SpecError(f"arms[{arm_name}].groups_per_batch", "states no prompts per step, and the spec no "
                                                               "batch_size to take them from; give one")
        return int(arm.group_size or DEFAULT_GROUP_SIZE), int(arm.groups_per_batch or self.batch_size)

    def data_source(self, arm_name: str) -> str:
        """Where an arm's training data comes from: `dataset`, `generated_tasks` or `none`.

        The spec's own `arms[].data` text decides, through the plan file's `arm_data` mapping
        (text -> source). Without a mapping every trained arm trains on the spec's dataset."""
        arm = next((a for a in self.arms or [] if a.name == arm_name), None)
        if arm is None:
            raise KeyError(arm_name)
        mapping = getattr(self, "arm_data", None)
        if isinstance(mapping, dict) and arm.data in mapping:
            return mapping[arm.data]
        return "dataset" if arm.trained else "none"


@dataclass(frozen=True)
class SpecRevision:
    """A companion plan file: which fields it supplied, pinned by hash."""

    path: str
    sha256: str
    supplied: list[str] = field(default_factory=list)
    resolved: list[str] = field(default_factory=list)  # spec values marked UNRESOLVED that it pins

    def to_dict(self) -> dict[str, Any]:
        return {"path": self.path, "sha256": self.sha256, "supplied": list(self.supplied),
                "resolved": list(self.resolved)}


@dataclass(frozen=True)
class SpecSource:
    path: str
    file_sha256: str  # canonical JSON of the spec file alone
    sha256: str  # canonical JSON of spec file + plan file (the spec hash used in runs and the index)
    revision: SpecRevision | None
    # --rehearse: what was substituted (experiment.contract.rehearsal); sha256 then covers the rehearsed spec
    rehearsal: dict[str, Any] | None = None
    # --rehearse: the spec as written (before the rehearsal rewrote it), which intake must accept too
    as_written: Spec | None = field(default=None, compare=False, repr=False)

    @property
    def stem(self) -> str:
        return Path(self.path).name.removesuffix(".json")

    def to_dict(self) -> dict[str, Any]:
        data = {
            "path": self.path,
            "file_sha256": self.file_sha256,
            "sha256": self.sha256,
            "revision": self.revision.to_dict() if self.revision else None,
        }
        if self.rehearsal is not None:
            data["rehearsal"] = self.rehearsal
        return data


# optimizer names a spec may use for a family (the service's name on the right)
OPTIMIZER_FAMILY_ALIASES = {"adam": "adamw"}
# Spec optimizer config keys -> the AdamParams / OptimParams field names (spec 000 says `lr`).
OPTIMIZER_CONFIG_ALIASES = {"lr": "learning_rate"}
# Fields a service adds to a get_info optimizer_config that describe its state, not its configuration.
SERVER_STATE_KEYS = ("adapter_sha256", "optimizer_step", "last_optim_params")


def optimizer_family(name: str) -> str:
    """The family a server reports for a spec's optimizer name (REST-5: adam == adamw)."""
    family = name.split()[0].lower()  # "trimuon (fork)" -> "trimuon"
    return OPTIMIZER_FAMILY_ALIASES.get(family, family)


def canonical_sha256(value: Any) -> str:
    """sha256 of canonical JSON (sorted keys, compact separators), the project's hash for specs."""
    text = json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=True, allow_nan=False)
    return hashlib.sha256(text.encode()).hexdigest()


def plan_file_path(spec_path: Path) -> Path:
    """`specs/x.json` -> `specs/x.plan.json`."""
    return spec_path.with_name(spec_path.name.removesuffix(".json") + ".plan.json")


class _NonFinite:
    """NaN / Infinity / -Infinity as written in the file (refused with its field by _check_values)."""

    def __init__(self, text: str):
        self.text = text


class _HugeInteger:
    """An integer literal too long to convert; refused with its field by _check_values."""

    def __init__(self, text: str):
        self.text = text


class _Underflow:
    """A non-zero number literal that a float rounds to 0.0 (1e-400); refused with its field by _check_values."""

    def __init__(self, text: str):
        self.text = text


class _DuplicateKey(Exception):
    """A key written twice in one JSON object (json.loads would keep the last one silently)."""

    def __init__(self, key: str):
        super().__init__(key)
        self.key = key


def _parse_int(text: str) -> int | _HugeInteger:
    return _HugeInteger(text) if len(text.lstrip("-")) > 20 else int(text)


def _parse_float(text: str) -> float | _Underflow:
    value = float(text)
    mantissa = text.lower().split("e")[0]
    if value == 0.0 and any(digit in mantissa for digit in "123456789"):
        return _Underflow(text)
    return value


def _object_without_duplicate_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    value: dict[str, Any] = {}
    for key, item in pairs:
        if key in value:
            raise _DuplicateKey(key)
        value[key] = item
    return value


def _describe_number(text: str) -> str:
    return text if len(text) <= 24 else f"{text[:12]}... ({len(text.lstrip('-'))} digits)"


def _check_values(value: Any, where: str = "", depth: int = 1) -> None:
    """Depth and number checks on a parsed JSON document (iterative over siblings, depth-capped)."""
    if depth > MAX_SPEC_DEPTH:
        raise SpecError(where, f"nesting deeper than {MAX_SPEC_DEPTH} levels")
    if isinstance(value, dict):
        for key, item in value.items():
            inner = f"{where}.{printable_line(str(key))}" if where else printable_line(str(key))
            _check_text(str(key), inner, "its key")
            _check_values(item, inner, depth + 1)
    elif isinstance(value, list):
        for index, item in enumerate(value):
            _check_values(item, f"{where}[{index}]", depth + 1)
    elif isinstance(value, str):
        _check_text(value, where, "its text")
    elif isinstance(value, _NonFinite):
        raise SpecError(where, f"{value.text} is not a number a spec may hold (numbers must be finite)")
    elif isinstance(value, _Underflow):
        raise SpecError(where, f"{_describe_number(value.text)} is too small for a float: it would be read as 0.0")
    elif isinstance(value, _HugeInteger) or (isinstance(value, int) and not isinstance(value, bool)
                                             and abs(value) > MAX_SPEC_INTEGER):
        text = value.text if isinstance(value, _HugeInteger) else str(value)
        raise SpecError(where, f"{_describe_number(text)} is too large to run (limit {MAX_SPEC_INTEGER})")
    elif isinstance(value, float) and not math.isfinite(value):
        raise SpecError(where, f"{value!r} is not a finite number (a literal too large for a float?)")


def _check_text(text: str, where: str, what: str) -> None:
    problem = unsafe_character(text)
    if problem:
        raise SpecError(where, f"{what} holds {problem}; spec text may hold printable characters, newlines and "
                               "tabs only")


def parse_json_text(text: str, label: str) -> Any:
    """Strict JSON for specs and plan files: finite numbers only, each key once per object, plain text,
    bounded nesting and size."""
    if len(text) > MAX_SPEC_BYTES:
        raise SpecError("", f"{label}: {len(text)} characters; a spec file is at most {MAX_SPEC_BYTES}")
    try:
        value = json.loads(text, parse_constant=_NonFinite, parse_int=_parse_int, parse_float=_parse_float,
                           object_pairs_hook=_object_without_duplicate_keys)
    except _DuplicateKey as err:
        raise SpecError("", f"{label}: key '{printable_line(err.key)}' appears twice in one object; JSON keeps only "
                            "the last, so a spec may not repeat a key") from None
    except RecursionError:
        raise SpecError("", f"{label}: nesting deeper than {MAX_SPEC_DEPTH} levels") from None
    except json.JSONDecodeError as err:
        raise SpecError("", f"{label}: not valid JSON ({err})") from None
    _check_values(value)
    return value


def _read_json_object(path: Path) -> dict[str, Any]:
    if not path.is_file():
        raise SpecError("", f"{path}: {'not a regular file' if path.exists() else 'no such file'}")
    if path.stat().st_size > MAX_SPEC_BYTES:
        raise SpecError("", f"{path}: {path.stat().st_size} bytes; a spec file is at most {MAX_SPEC_BYTES}")
    try:
        with open(path, "rb") as handle:
            text = handle.read(MAX_SPEC_BYTES + 1).decode("utf-8")
    except UnicodeDecodeError as err:
        raise SpecError("", f"{path}: not valid UTF-8 ({err.reason})") from None
    try:
        value = parse_json_text(text, str(path))
    except SpecError as err:
        if err.field_name:  # name the file too: the field may come from a plan file
            raise SpecError(err.field_name, f"{err.problem} (in {path})") from None
        raise
    if not isinstance(value, dict):
        raise SpecError("", f"{path}: must be a JSON object (got {type(value).__name__})")
    return value


def _first_error(err: ValidationError) -> SpecError:
    first = err.errors()[0]
    where = ".".join(f"[{p}]" if isinstance(p, int) else str(p) for p in first["loc"]).replace(".[", "[")
    if first["type"] == "missing":
        return SpecError(where, "required field is missing")
    if is_unresolved(first.get("input")):  # the spec leaves it open: a revision pins it (issue 46, onboarding)
        return SpecError(where, f"the spec leaves this value open ({first['input']!r}); pin it in the spec's revision "
                                "file (<name>.plan.json beside the spec; `python -m flows.run SPEC --draft-revision` "
                                "drafts the pin)")
    message = first["msg"].removeprefix("Value error, ")
    if first["type"] != "value_error":
        message = f"{message} (got {first.get('input')!r})"
    return SpecError(where, message)


def _join_or(names: list[str]) -> str:
    return names[0] if len(names) == 1 else ", ".join(names[:-1]) + " or " + names[-1]


def is_unresolved(value: Any) -> bool:
    """A value the spec itself leaves open for a revision to pin ("UNRESOLVED: ...", "unresolved: ...")."""
    return isinstance(value, str) and value.strip().lower().startswith("unresolved")


def _list_key(items: list[Any]) -> str | None:
    """Lists of objects merge element by element on `name` (arms) or `id` (paths, criteria)."""
    for key in ("name", "id"):
        if items and all(isinstance(item, dict) and isinstance(item.get(key), str) for item in items):
            return key
    return None


def _merge_revision(spec_value: Any, plan_value: Any, where: str, plan_path: Path, resolved: list[str]) -> Any:
    """Add what the spec lacks and pin what it marks UNRESOLVED; refuse any other change."""
    if isinstance(spec_value, dict) and isinstance(plan_value, dict):
        merged = dict(spec_value)
        for key, value in plan_value.items():
            inner = f"{where}.{key}"
            merged[key] = _merge_revision(spec_value[key], value, inner, plan_path, resolved) if key in spec_value else value
        return merged
    if isinstance(spec_value, list) and isinstance(plan_value, list):
        key = _list_key(spec_value)
        if key is not None and _list_key(plan_value) == key:
            by_key = {item[key]: item for item in plan_value}
            unknown = sorted(set(by_key) - {item[key] for item in spec_value})
            if unknown:
                raise SpecError(where, f"plan file {plan_path} names {key} {unknown[0]!r}, which the spec does not have")
            return [
                _merge_revision(item, by_key[item[key]], f"{where}[{item[key]}]", plan_path, resolved)
                if item[key] in by_key else item
                for item in spec_value
            ]
    if spec_value == plan_value:
        return spec_value
    if is_unresolved(spec_value) and not is_unresolved(plan_value):
        resolved.append(where)
        return plan_value
    raise SpecError(
        where, f"plan file {plan_path} changes a value the spec states; a plan file may only add missing fields "
               "or pin values the spec marks UNRESOLVED",
    )


def apply_revision(raw: dict[str, Any], plan: dict[str, Any], plan_path: Path | str = "plan file"
                   ) -> tuple[dict[str, Any], list[str]]:
    """(spec + revision file, the UNRESOLVED values it pinned); SpecError when it changes a stated value."""
    resolved: list[str] = []
    merged = dict(raw)
    for key, value in plan.items():
        merged[key] = _merge_revision(raw[key], value, key, Path(plan_path), resolved) if key in raw else value
    _check_values(merged)
    return merged, resolved


# An open correctness revision is handled where it is read: it pins nothing, the run stops at
# correctness_preflight before any training and requests the pin (CORR-6), so a revision may leave it open.
OPEN_REVISION_KEYS = ("baseline_revision", "reference_revision")


def _unresolved_paths(value: Any, where: str = "") -> list[str]:
    """Where a revision file's values still say UNRESOLVED (open correctness revisions aside)."""
    if isinstance(value, dict):
        return [p for key, inner in value.items() if key not in OPEN_REVISION_KEYS
                for p in _unresolved_paths(inner, f"{where}.{key}" if where else key)]
    if isinstance(value, list):
        return [p for index, inner in enumerate(value) for p in _unresolved_paths(inner, f"{where}[{index}]")]
    return [where] if is_unresolved(value) else []


def _merge_plan_file(spec_path: Path, raw: dict[str, Any]) -> tuple[dict[str, Any], SpecRevision | None]:
    plan_path = plan_file_path(spec_path)
    if plan_path.is_symlink():  # a dangling link or a loop is no "absent" revision file (exists() says False)
        raise SpecError("", f"{plan_path} is a symbolic link: a revision file is a regular file beside its spec, "
                            "recorded with it; copy the file itself there")
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
    if "draft_items" in plan:  # written by --draft-revision (experiment/contract/draft.py), not yet finished
        raise SpecError("draft_items", f"{plan_path} is an unfinished draft: fill its UNRESOLVED values, confirm the "
                                       "proposed ones, then delete draft_items (docs/new-spec.md)")
    left_open = _unresolved_paths(plan)
    if left_open:  # a revision pins open values; one it leaves open would only fail after training
        raise SpecError(left_open[0], f"{plan_path} leaves this value UNRESOLVED: a revision file pins values, "
                                      "it never adds open ones")
    merged, resolved = apply_revision(raw, plan, plan_path)
    revision = SpecRevision(path=str(plan_path), sha256=canonical_sha256(plan), supplied=sorted(plan),
                            resolved=resolved)
    return merged, revision


def _check_decision_rule(spec: Spec) -> None:
    features = spec.experiment_features or {}
    if spec.decision_rule is None:
        if features.get("paired_comparison") is True:
            raise SpecError("decision_rule", "required because experiment_features.paired_comparison is true")
        return
    rule = spec.decision_rule
    if rule.method not in DECISION_METHODS:
        raise SpecError("decision_rule.method", f"unknown method {rule.method!r} (known: {', '.join(sorted(DECISION_METHODS))}); "
                                                f"{CONTRACT_DECISION_METHODS}")
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
        if not SAFE_FILE_NAME.fullmatch(arm.name):
            raise SpecError(f"arms[{index}].name", f"{arm.name!r}: an arm's name names its run's files (predictions-"
                                                   "<arm>.jsonl), so it may use ASCII letters, digits, '.', '_' and '-', "
                                                   "starting with a letter or digit")
        if arm.role is not None and arm.role not in ROLE_LABELS:
            raise SpecError(f"arms[{index}].role", f"must be one of {', '.join(ROLE_LABELS)} (got {arm.role!r})")


def _check_arm_data(spec: Spec) -> None:
    """The plan file's `arm_data` maps every arm's `data` text to a source; generated data is used."""
    mapping = getattr(spec, "arm_data", None)
    if mapping is not None:
        if not isinstance(mapping, dict):
            raise SpecError("arm_data", "must map an arm's data text to one of " + ", ".join(DATA_SOURCES))
        for text, source in mapping.items():
            if source not in DATA_SOURCES:
                raise SpecError(f"arm_data.{text}", f"must be one of {', '.join(DATA_SOURCES)} (got {source!r})")
        for index, arm in enumerate(spec.arms or []):
            if arm.data not in mapping:
                raise SpecError(f"arms[{index}].data", f"{arm.data!r} has no entry in arm_data, so its source is unknown")
            if arm.trained and mapping[arm.data] == "none":
                raise SpecError(f"arms[{index}].data", f"arm {arm.name} is trained but arm_data maps its data to none")
    if spec.feature("generated_training_data") and not any(
        spec.data_source(arm.name) == "generated_tasks" for arm in spec.arms or [] if arm.trained
    ):
        raise SpecError(
            "arm_data",
            "experiment_features.generated_training_data is true but no trained arm's data maps to generated_tasks; "
            "the spec's revision file must say which arms[].data is the generated set",
        )


def _learning_rate_problem(value: Any) -> str | None:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return f"must be a number (got {value!r})"
    if not MIN_LEARNING_RATE <= value <= MAX_LEARNING_RATE:
        return f"learning rate {value!r} is outside [{MIN_LEARNING_RATE:g}, {MAX_LEARNING_RATE:g}], the rates a run can train at"
    return None


def _check_learning_rates(spec: Spec) -> None:
    """optimizer.lr, every arm's lr and lr_grid: numbers a run can train at (0 < MIN <= lr <= MAX)."""
    stated: list[tuple[str, Any]] = []
    if "lr" in spec.section("optimizer"):
        stated.append(("optimizer.lr", spec.section("optimizer")["lr"]))
    for index, arm in enumerate(spec.arms or []):
        if arm.lr is not None:
            stated.append((f"arms[{index}].lr", arm.lr))
        stated += [(f"arms[{index}].lr_grid[{i}]", lr) for i, lr in enumerate(arm.lr_grid or [])]
    for where, value in stated:
        problem = _learning_rate_problem(value)
        if problem:
            raise SpecError(where, problem)


def _check_revision_keeps_spec_lr(raw: dict[str, Any], merged: dict[str, Any], revision: SpecRevision) -> None:
    """A revision file that gives an arm its learning rates (lr or lr_grid the spec's arm does not state)
    must include the spec's own `optimizer.lr` among them: otherwise the two files disagree on the rate."""
    spec_lr = (raw.get("optimizer") or {}).get("lr") if isinstance(raw.get("optimizer"), dict) else None
    if isinstance(spec_lr, bool) or not isinstance(spec_lr, (int, float)):
        return
    written = {arm.get("name"): arm for arm in raw.get("arms") or [] if isinstance(arm, dict)}
    for arm in merged.get("arms") or []:
        if not isinstance(arm, dict) or arm.get("trained") is False:
            continue
        own = written.get(arm.get("name"), {})
        if "lr" in own or "lr_grid" in own:
            continue  # the spec states this arm's rate itself
        field_name = "lr_grid" if arm.get("lr_grid") else "lr" if "lr" in arm else None
        rates = arm.get("lr_grid") or ([arm["lr"]] if field_name == "lr" else [])
        if field_name and not any(isinstance(rate, (int, float)) and math.isclose(rate, spec_lr, rel_tol=1e-9)
                                  for rate in rates):
            raise SpecError(
                f"arms[{arm.get('name')}].{field_name}",
                f"revision file {revision.path} gives {rates}, which leaves out the spec's optimizer.lr {spec_lr!r}; "
                "the spec and its revision file contradict each other",
            )


def _check_data_paths(raw: dict[str, Any]) -> None:
    for section in ("dataset", "eval"):
        block = raw.get(section)
        if isinstance(block, dict) and block.get("path") is not None:
            if not isinstance(block["path"], str):
                raise SpecError(f"{section}.path", f"must be a string (got {block['path']!r})")
            try:
                resolve_data_path(block["path"])
            except DataError as err:
                raise SpecError(f"{section}.path", str(err)) from None


def parse_spec(raw: dict[str, Any]) -> Spec:
    """Validate an already-merged spec dict (no file, no plan file)."""
    _check_values(raw)
    try:
        spec = Spec.model_validate(raw)
    except ValidationError as err:
        raise _first_error(err) from None
    _check_arms(spec)
    _check_arm_data(spec)
    _check_decision_rule(spec)
    _check_learning_rates(spec)
    _check_data_paths(raw)
    return spec


def load_spec(path: str | Path, rehearse: bool = False, rehearsal_scale: str = "standard") -> Spec:
    """Read a spec file (+ companion plan file), validate it, and record where it came from.

    `rehearse=True` validates the spec as written first, then rewrites it to rehearsal scale
    (experiment.contract.rehearsal, at `rehearsal_scale`) and validates the result; the source
    records every substitution."""
    spec_path = Path(path)
    if spec_path.name.endswith(".plan.json"):
        spec = spec_path.with_name(spec_path.name.removesuffix(".plan.json") + ".json")
        raise SpecError("", f"{spec_path} is a companion plan file; pass the spec {spec} instead")
    raw = _read_json_object(spec_path)
    merged, revision = _merge_plan_file(spec_path, raw)
    spec = parse_spec(merged)
    if revision is not None:
        _check_revision_keeps_spec_lr(raw, merged, revision)
    file_sha = canonical_sha256(raw)
    combined = canonical_sha256(merged) if revision else file_sha
    spec._source = SpecSource(path=str(spec_path), file_sha256=file_sha, sha256=combined, revision=revision)
    if rehearse:
        written = spec
        rehearsed, rehearsal = rehearse_spec(merged, stem=spec_path.name.removesuffix(".json"), spec_sha256=combined,
                                              parsed=spec, scale=rehearsal_scale)
        spec = parse_spec(rehearsed)
        combined = canonical_sha256({"rehearsal_of": combined, "spec": rehearsed})
        spec._source = SpecSource(path=str(spec_path), file_sha256=file_sha, sha256=combined, revision=revision,
                                  rehearsal=rehearsal, as_written=written)
    return spec
