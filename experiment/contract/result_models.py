"""Typed RESULT (pydantic v2): the contract's result object and its records.

Field names follow the run contract (docs/contract-rules.md; rule ids in comments). Every model
accepts extra fields (`extra="allow"`): the contract lets a run add detail (e.g. `verified_keys`
beside an optimizer check), and a reviewer must see a record as written, never a trimmed copy.
Types are the contract's; the grader turns a `ValidationError` into an issue of the rule the
field belongs to. The writer can build records with these models and dump them with
`model_dump(exclude_none=True)`.

`Evidence.files[]` carries its `content` inline (text as is, `encoding: "utf-8"`; binary as
base64 with `encoding: "base64"`) and the sha256 of the original bytes (EVID-1, EVID-2);
`evidence_file()` builds such an entry from bytes.
"""

from __future__ import annotations

import base64
import hashlib
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

HEX64 = r"^[0-9a-f]{64}$"


class _Open(BaseModel):
    model_config = ConfigDict(extra="allow", populate_by_name=True)


# ---------------------------------------------------------------- evidence (EVID-*)


class EvidenceFile(_Open):
    name: str
    kind: str
    sha256: str | None = Field(default=None, pattern=HEX64)
    content: str | None = None
    encoding: Literal["utf-8", "base64"] | None = None
    source_url: str | None = None
    partial: bool | None = None  # set by the writer when the bytes could not be inlined within the caps

    def data(self) -> bytes | None:
        """The original bytes (None when the content is not inline)."""
        if self.content is None:
            return None
        if self.encoding == "base64":
            return base64.b64decode(self.content, validate=True)
        return self.content.encode("utf-8")


def evidence_file(name: str, kind: str, data: bytes) -> dict[str, Any]:
    """An inline evidence entry: UTF-8 text as is, anything else base64; sha256 of the bytes."""
    try:
        content, encoding = data.decode("utf-8"), "utf-8"
    except UnicodeDecodeError:
        content, encoding = base64.b64encode(data).decode("ascii"), "base64"
    return {"name": name, "kind": kind, "content": content, "encoding": encoding,
            "sha256": hashlib.sha256(data).hexdigest()}


class CheckpointRef(_Open):
    arm: str  # the spec's arm name (a seed replica's checkpoint names its arm and its seed)
    step: int
    uri: str
    seed: int | None = None


class Evidence(_Open):
    version: Literal[1] = 1
    files: list[EvidenceFile] = Field(default_factory=list)
    checkpoints: list[CheckpointRef] = Field(default_factory=list)
    per_arm_metrics: dict[str, dict[str, Any]] = Field(default_factory=dict)


# ---------------------------------------------------------------- evaluation (EVAL-*)


class Decoding(_Open):
    temperature: float
    max_tokens: int
    stop: list[str]


class EvaluatorItems(_Open):
    ids: list[str] | None = None
    manifest_ref: str | None = None
    manifest_sha256: str | None = None


class EvaluatorRecord(_Open):
    code_sha256: str = Field(pattern=HEX64)
    prompt_template: str
    decoding: Decoding
    parser: str
    items: EvaluatorItems


class Score(_Open):
    arm: str
    metric: str
    value: float
    evaluator_id: str
    seed: int | None = None
    predictions_ref: str | None = None


class Comparison(_Open):
    metric: str
    arms: list[str]


class Evaluation(_Open):
    version: Literal[1]
    evaluators: dict[str, EvaluatorRecord]
    scores: list[Score] = Field(default_factory=list)
    comparisons: list[Comparison] = Field(default_factory=list)


class PredictionRow(_Open):
    item_id: str
    arm: str
    prediction: Any
    reference: Any
    metric: str
    evaluator_id: str
    seed: int | None = None
    checkpoint: str | None = None


# ---------------------------------------------------------------- decision (DEC-*)


class ObservationRow(_Open):
    item_id: str
    arm: str
    seed: int
    metric: str
    value: float
    evaluator_id: str | None = None


class ObservationsFile(_Open):
    name: str
    sha256: str = Field(pattern=HEX64)


class Decision(_Open):
    version: Literal[1]
    observations: list[ObservationRow] | None = None
    observations_file: ObservationsFile | None = None
    method: str | None = None
    adjustment: str | None = None
    role_to_arm: dict[str, str] | None = None
    criteria: list[dict[str, Any]] | None = None
    selection: dict[str, Any] | None = None


# ---------------------------------------------------------------- restoration (REST-*)


class Initialization(_Open):
    base_checkpoint: str
    source: str | None = None
    adapter_sha256: str | None = None
    checkpoint_uri: str | None = None
    checkpoint_immutable: bool | None = None
    checkpoint_scope: str | None = None
    loaded_checkpoint_uri: str | None = None
    load_succeeded: bool | None = None
    evidence_ref: str | None = None
    before_first_update: bool | None = None


class OptimizerCheck(_Open):
    after_restore: int
    before_next_update: bool
    requested: dict[str, Any]
    actual_family: str | None = None
    actual_config: dict[str, Any] | None = None
    source: str
    evidence_ref: str | None = None


class InitialOutput(_Open):
    available: bool
    batch_sha256: str | None = None
    output_sha256: str | None = None
    evidence_ref: str | None = None
    before_first_update: bool | None = None
    reason: str | None = None


class ArmProvenance(_Open):
    initialization: Initialization
    restore_count: int
    optimizer_checks: list[OptimizerCheck]
    initial_output: InitialOutput


class InitializationProvenance(_Open):
    version: Literal[1]
    arms: dict[str, ArmProvenance]


# ---------------------------------------------------------------- correctness (CORR-*)


class ParityErrors(_Open):
    max_abs_error: float
    reference_max_abs: float
    relative_l2_error: float
    cosine_similarity: float | None = None


class FixedInput(_Open):
    sha256: str = Field(pattern=HEX64)
    description: str = ""


class LrProbe(_Open):
    learning_rate: float
    update_norm: float


class CorrectnessPath(_Open):
    id: str
    fixed_input: FixedInput
    baseline_revision: str
    reference_revision: str
    implementation_revision: str | None = None
    precision: str | None = None
    normalization: str | None = None
    errors: dict[str, ParityErrors]
    lr_scaling: list[LrProbe] = Field(default_factory=list)


class CorrectnessPreflight(_Open):
    required: bool
    paths: list[CorrectnessPath]


# ---------------------------------------------------------------- feasibility (FEAS-*)


class PhaseMeasurement(_Open):
    seconds: float | None
    units: float | None
    planned_units: float | None
    samples: float | None
    gpu_count: int | None
    allocation_source: str | None


class Recovery(_Open):
    seconds: float
    gpu_count: int | None
    allocation_source: str | None


class Generation(_Open):
    attempted: int
    accepted: int
    target_accepted: int
    filter_samples_per_candidate: int | float


class Feasibility(_Open):
    config: dict[str, Any]
    effective_config: dict[str, Any]
    primary_endpoint: str
    source: str
    measurements: dict[str, PhaseMeasurement | None]
    generation: Generation | None = None
    recovery: Recovery


# ---------------------------------------------------------------- generation audit (GA-*)


class AuditCounts(_Open):
    generated: int
    accepted: int
    rejected: int
    execution_errors: int


class AuditSample(_Open):
    item_id: str
    independent_answer: Any
    resolver_id: str
    method: str  # "independent_resolve" (GA-6)
    reasoning: str
    blind_to_label: bool  # true (GA-6)


class GenerationAudit(_Open):
    version: Literal[1]
    stage: Literal["before_training"]
    dataset_file: str
    evaluation_file: str
    audit_file: str
    sample_seed: int
    counts: AuditCounts
    samples: list[AuditSample]
    label_error_count: int
    overlap_count: int


# ---------------------------------------------------------------- loss eval (LOSS-*), manifests


class LossEvalArm(_Open):
    aggregation: Literal["token_mean", "example_mean"]
    value: float
    token_mean: float | None = None
    example_mean: float | None = None
    nll_sum: float
    n_tokens: int
    n_examples: int
    n_empty: int = 0


class LossEvalRecord(_Open):
    aggregation: Literal["token_mean", "example_mean"]
    arms: dict[str, LossEvalArm]


class AdaptationManifest(_Open):
    arm: str
    pair: str
    warmup_batches: int
    adaptation_batch_ids: list[str]
    adaptation_batch_hash: str


class Deviation(_Open):
    field: Literal["model", "objective", "effective_batch", "steps", "dataset", "evaluator", "endpoint",
                   "learning_rate", "lora_rank", "max_seq_len", "rollout", "budget", "tolerance"]  # DEVIATION_FIELDS
    original: Any = ""
    effective: Any = ""
    reason: str = ""


class CapacityBlock(_Open):
    error: str
    comparison_steps_completed: int
    released_clients: bool


# ---------------------------------------------------------------- grade (stored by the flow)


class CategoryGradeModel(_Open):
    status: Literal["verified", "not_applicable", "invalid", "unverified", "unknown"]
    issues: list[str] = Field(default_factory=list)


class GradeModel(_Open):
    version: Literal[1] = 1
    spec_source: str | None = None
    categories: dict[str, CategoryGradeModel]
    problems: list[str] = Field(default_factory=list)


# ---------------------------------------------------------------- RESULT (GEN-*)


class Result(_Open):
    status: Literal["running", "succeeded", "failed"]
    summary: str | None = None
    metrics: dict[str, Any] = Field(default_factory=dict)
    completed_arms: list[str] = Field(default_factory=list)
    verdict: Literal["supported", "refuted", "inconclusive"] | None = None
    confidence: Literal["strong", "weak"] | None = None
    effect: float | None = None
    margin: float | None = None
    ci: list[float] | None = None
    seeds: int | None = None
    grid_edge: bool | None = None
    reasoning: str | None = None
    outcome_reason: str | None = None
    capacity_block: CapacityBlock | None = None
    deviations: list[Deviation] = Field(default_factory=list)
    original_hypothesis_tested: bool | None = None
    tested_instead: str | None = None
    correctness_preflight: dict[str, Any] | None = None
    activation_calibration: dict[str, Any] | None = None
    initialization_provenance: dict[str, Any] | None = None
    feasibility: dict[str, Any] | None = None
    generation_audit: dict[str, Any] | None = None
    evaluation: dict[str, Any] | None = None
    decision: dict[str, Any] | None = None
    loss_eval: dict[str, Any] | None = None
    adaptation_manifests: list[dict[str, Any]] | None = None
    evidence: Evidence = Field(default_factory=Evidence)
    grade: GradeModel | None = None


# The record models per RESULT section, validated by the category that owns the section.
SECTION_MODELS: dict[str, type[BaseModel]] = {
    "evaluation": Evaluation,
    "decision": Decision,
    "initialization_provenance": InitializationProvenance,
    "correctness_preflight": CorrectnessPreflight,
    "feasibility": Feasibility,
    "generation_audit": GenerationAudit,
    "loss_eval": LossEvalRecord,
}
