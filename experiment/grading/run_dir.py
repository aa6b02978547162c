"""The grader's run-directory layer: the checks a run directory's files allow beyond its result.json.

`grade_record(result, run_dir=...)` (experiment.grading.grade) grades the record exactly as it grades a bare
result.json and adds these checks' findings to `problems` as "<check>: <message>". The decision steps run
them too, before a verdict is posted (the gate hands `validate_run` down: experiment.gates.decision).

`validate_run(run_dir)` returns a list of `Problem` (a check id and one line); an empty list
means every applicable check passed. `run_validation(run_dir)` also says which checks ran.

What the checks read (all written by `RunStore`):
    result.json                 the RESULT object
    events.jsonl                gate verdicts (event "gate") and RESULT updates (any event that
                                carries `status` and `deviations`), in order
    evidence/manifest.json      the retained evidence files with their sha256
    evidence/execution-plan.json, spec.json, spec-revision.plan.json
                                the plan and spec the run executed (fallback: the spec path
                                named by the run_created event)

A section is checked when RESULT has it. A missing section is a problem only when the gate that
produces it passed (so a run stopped at an early gate is not blamed for later sections).
Every check id is `<section>.<rule>`, e.g. `evaluation.evaluator_id`; each is in the grader's rule
table (experiment.grading.rules).
"""

from __future__ import annotations

import hashlib
import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterator

import pandas as pd

from experiment.stats.correctness import accepts
from experiment.stats.decision import (
    DecisionError,
    decision_summary,
    observation_from_row,
    read_observations_jsonl,
)
from experiment.stats.evaluation import evaluator_id
from experiment.stats.selection import confirmation_only_problems, selection_problems, split_items
from experiment.stats.feasibility import FEASIBILITY_PHASE_KEYS, GENERATION_KEYS, PROJECTION_KEYS
from experiment.contract.verdict import GATE_ORDER
from experiment.contract.plan import draft_plan
from experiment.contract.result import (
    DEVIATION_FIELDS,
    DIRECTION_VERDICTS,
    RESULT_STATUSES,
    THREE_WAY_ABSENT_FIELDS,
    THREE_WAY_REASONS,
    THREE_WAY_VERDICTS,
    adaptation_batch_hash,
)
from experiment.contract.spec import (
    DECISION_METHODS, OPTIMIZER_CONFIG_ALIASES, OPTIMIZER_FAMILY_ALIASES, SpecError, apply_revision, load_spec,
)
from experiment.grading.common import (
    ABS_TOL, FLOAT_TOL, HEX64, as_dict, as_list, close, equal_json, is_integer, is_number, short,
)
from experiment.grading.secrets import CREDENTIAL_ENV_VARS, HEADER_WITH_VALUE, SIGNED_URL, searchable_text
from experiment.run.store import (
    MAX_EVIDENCE_FILE_BYTES,
    MAX_EVIDENCE_FILES,
    MAX_EVIDENCE_TOTAL_BYTES,
    REQUIRED_EVIDENCE_KINDS,
)
from experiment.contract import run_layout
from experiment.contract.run_layout import EVIDENCE_DIR, GATES_TABLE, MANIFEST_FILE, events_path, evidence_path, result_path, table_path

LOSS_ARM_KEYS = ("aggregation", "value", "token_mean", "example_mean", "nll_sum", "n_tokens", "n_examples", "n_empty")
MAX_OBSERVATIONS = 100_000
# Which gate produces which RESULT section (a missing section is a problem only once that gate passed).
SECTION_GATES = {
    "correctness_preflight": "correctness_preflight",
    "initialization_provenance": "restoration_preflight",
    "feasibility": "feasibility_pilot",
    "generation_audit": "generation_audit",
    "evaluation": "evaluation",
    "loss_eval": "evaluation",
    "decision": "decision",
    "adaptation_manifests": "arm_training",
}


class RunDirError(ValueError):
    """The path is not a run directory that can be validated (one line, no traceback)."""


@dataclass(frozen=True)
class Problem:
    check: str
    message: str

    def __str__(self) -> str:
        return f"{self.check}: {self.message}"


@dataclass
class ValidationReport:
    problems: list[Problem] = field(default_factory=list)
    checks: list[str] = field(default_factory=list)  # the check groups that ran

    @property
    def ok(self) -> bool:
        return not self.problems


def validate_run(run_dir: str | Path) -> list[Problem]:
    """Every problem found in the run directory (empty when the run is consistent)."""
    return run_validation(run_dir).problems


def run_validation(run_dir: str | Path) -> ValidationReport:
    """Problems plus the names of the checks that ran. Raises RunDirError for a bad directory."""
    run = _RunFiles.load(Path(run_dir))
    return _Validator(run).run()


def validation_summary(problems: list[Problem]) -> dict[str, Any]:
    """A JSON-ready summary for embedding in RESULT (e.g. under `evidence` or `validation`)."""
    return {
        "version": 1,
        "status": "failed" if problems else "passed",
        "problem_count": len(problems),
        "failed_checks": sorted({problem.check for problem in problems}),
        "problems": [str(problem) for problem in problems],
    }


# ---------------------------------------------------------------------------------------------
# reading the run directory


def _read_json(path: Path, what: str) -> Any:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as err:
        raise RunDirError(f"{path}: cannot read {what} ({type(err).__name__}: {err})") from None


def read_event_lines(run_dir: Path) -> tuple[list[dict[str, Any]], list[int], list[int]]:
    """events.jsonl of a run directory: its events (the lines that are JSON objects, in order), the numbers of
    the lines that are not JSON, and of those that are JSON but no object; nothing without the file."""
    events: list[dict[str, Any]] = []
    not_json: list[int] = []
    not_objects: list[int] = []
    path = events_path(run_dir)
    if not path.is_file():
        return events, not_json, not_objects
    for number, line in enumerate(_lines(path), 1):
        if not line.strip():
            continue
        try:
            event = json.loads(line)
        except json.JSONDecodeError:
            not_json.append(number)
            continue
        if isinstance(event, dict):
            events.append(event)
        else:
            not_objects.append(number)
    return events, not_json, not_objects


def _lines(path: Path) -> Iterator[str]:
    """The file's lines as `read_text(encoding="utf-8", errors="replace").splitlines()` gives them, read one
    line at a time (streamed: the file's text is never held whole)."""
    with open(path, encoding="utf-8", errors="replace") as handle:
        for physical in handle:
            yield from physical.splitlines()


@dataclass
class _RunFiles:
    run_dir: Path
    result: dict[str, Any]
    events: list[dict[str, Any]]
    bad_event_lines: list[int]
    manifest: dict[str, Any] | None
    plan: dict[str, Any] | None
    spec: dict[str, Any] | None
    setup_problems: list[Problem]

    @classmethod
    def load(cls, run_dir: Path) -> _RunFiles:
        if not run_dir.is_dir():
            raise RunDirError(f"{run_dir}: no such directory")
        if not result_path(run_dir).is_file():
            raise RunDirError(f"{run_dir} is not a run directory (no result.json)")
        result = _read_json(result_path(run_dir), "RESULT")
        if not isinstance(result, dict):
            raise RunDirError(f"{result_path(run_dir)}: RESULT must be a JSON object")
        events, not_json, not_objects = read_event_lines(run_dir)
        bad_lines = sorted(not_json + not_objects)
        manifest_path = run_layout.manifest_path(run_dir)
        manifest = None
        setup: list[Problem] = []
        if manifest_path.is_file():
            try:
                manifest = json.loads(manifest_path.read_text(encoding="utf-8"))
            except (UnicodeDecodeError, json.JSONDecodeError) as err:
                setup.append(Problem("evidence.manifest", f"evidence/manifest.json is not valid JSON ({err})"))
            if manifest is not None and not isinstance(manifest, dict):
                setup.append(Problem("evidence.manifest", "evidence/manifest.json is not a JSON object"))
                manifest = None
        else:
            setup.append(Problem("evidence.manifest", "evidence/manifest.json is missing"))
        run = cls(run_dir, result, events, bad_lines, manifest, None, None, setup)
        run.plan, run.spec = run._load_plan_and_spec()
        return run

    # ---- evidence ----

    @property
    def evidence_entries(self) -> list[dict[str, Any]]:
        files = (self.manifest or {}).get("files")
        return [entry for entry in files if isinstance(entry, dict)] if isinstance(files, list) else []

    @property
    def evidence_names(self) -> set[str]:
        return {str(entry.get("name")) for entry in self.evidence_entries}

    def manifest_sha256(self, name: str) -> str | None:
        for entry in self.evidence_entries:
            if entry.get("name") == name:
                return entry.get("sha256")
        return None

    def evidence_bytes(self, name: str) -> bytes | None:
        """The bytes of a retained evidence file (listed in the manifest and present), else None."""
        if name not in self.evidence_names or "/" in name or name.startswith("."):
            return None
        path = evidence_path(self.run_dir, name)
        return path.read_bytes() if path.is_file() else None

    def is_retained(self, ref: Any) -> bool:
        """A reference `name` or `name#fragment` naming a file listed in the manifest and present."""
        if not isinstance(ref, str) or not ref:
            return False
        name = ref.split("#", 1)[0]
        return self.evidence_bytes(name) is not None

    # ---- gates ----

    def gate_status(self, gate: str) -> str | None:
        """The last recorded status of a gate (events first, then tables/gates.parquet)."""
        status = None
        for event in self.events:
            if event.get("event") == "gate" and event.get("gate") == gate:
                status = event.get("status")
        if status is None:
            table = table_path(self.run_dir, GATES_TABLE)
            if table.is_file():
                try:
                    for row in pd.read_parquet(table).to_dict("records"):
                        if row.get("gate") == gate:
                            status = row.get("status")
                except (OSError, ValueError):
                    return None
        return status

    def gate_passed(self, gate: str) -> bool:
        return self.gate_status(gate) == "passed"

    # ---- plan and spec ----

    def _load_plan_and_spec(self) -> tuple[dict[str, Any] | None, dict[str, Any] | None]:
        plan = spec = None
        plan_bytes = self.evidence_bytes("execution-plan.json")
        spec_bytes = self.evidence_bytes("spec.json")
        try:
            if plan_bytes is not None:
                plan = _json_object(plan_bytes, "execution-plan.json")
            rehearsed = self.evidence_bytes("rehearsal-spec.json")  # a rehearsal ran this spec, not the file
            if rehearsed is not None:
                spec = _json_object(rehearsed, "rehearsal-spec.json")
            elif spec_bytes is not None:
                spec = _json_object(spec_bytes, "spec.json")
                revision = self.evidence_bytes("spec-revision.plan.json")
                if revision is not None:
                    spec = apply_revision(spec, _json_object(revision, "spec-revision.plan.json"))[0]
        except SpecError as err:
            self.setup_problems.append(Problem("run.plan", f"retained spec revision does not apply ({err})"))
        except (UnicodeDecodeError, json.JSONDecodeError) as err:
            self.setup_problems.append(Problem("run.plan", f"retained spec or plan evidence is not valid JSON ({err})"))
        except _NotAnObject as err:
            self.setup_problems.append(Problem("run.plan", f"retained {err}"))
        if plan is None or spec is None:
            loaded_plan, loaded_spec = self._plan_from_spec_path()
            plan = plan if plan is not None else loaded_plan
            spec = spec if spec is not None else loaded_spec
        if plan is None or spec is None:
            self.setup_problems.append(
                Problem(
                    "run.plan",
                    "neither the retained spec/plan evidence (spec.json, execution-plan.json) nor the spec file named by "
                    "run_created could be read; plan-dependent checks were skipped",
                )
            )
        return plan, spec

    def _plan_from_spec_path(self) -> tuple[dict[str, Any] | None, dict[str, Any] | None]:
        created = next((event for event in self.events if event.get("event") == "run_created"), None)
        spec_path = created.get("spec_path") if created else None
        if not isinstance(spec_path, str) or not spec_path or not Path(spec_path).is_file():
            return None, None
        try:
            spec = load_spec(spec_path, rehearse=bool(created.get("rehearsal")))
            if created.get("spec_sha256") and spec.source.sha256 != created["spec_sha256"]:
                self.setup_problems.append(
                    Problem(
                        "run.plan",
                        f"spec file {spec_path} changed since the run started (hash differs); plan checks skipped",
                    )
                )
                return None, None
            return draft_plan(spec).to_dict(), spec.to_dict()
        except (SpecError, OSError) as err:
            self.setup_problems.append(Problem("run.plan", f"spec {spec_path} cannot be loaded: {err}"))
            return None, None


# ---------------------------------------------------------------------------------------------
# small helpers


class _NotAnObject(Exception):
    """Retained JSON evidence that parses but is no object (a tampered spec, plan or revision)."""


def _json_object(data: bytes, name: str) -> dict[str, Any]:
    value = json.loads(data)
    if not isinstance(value, dict):
        raise _NotAnObject(f"{name} is not a JSON object")
    return value


def _text_key(value: Any) -> str:
    """A dict key for a value read from a record (ids may be of any JSON type in a broken record)."""
    return value if isinstance(value, str) else json.dumps(value, sort_keys=True, default=str)


def _explicit_item_ids(provenance: Any) -> list[str] | None:
    """The evaluator's items.ids when it is an explicit list of strings, else None."""
    ids = as_dict(as_dict(provenance).get("items")).get("ids")
    if isinstance(ids, list) and all(isinstance(item, str) for item in ids):
        return ids
    return None


def _is_hex64(value: Any) -> bool:
    return isinstance(value, str) and bool(HEX64.match(value))


def _jsonl_rows(data: bytes, name: str) -> tuple[list[dict[str, Any]], str | None]:
    rows = []
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        return [], f"{name} is not UTF-8"
    for number, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except json.JSONDecodeError:
            return rows, f"{name} line {number} is not valid JSON"
        if not isinstance(row, dict):
            return rows, f"{name} line {number} is not a JSON object"
        rows.append(row)
    return rows, None


def audit_sample_ids(accepted_ids: list[str], seed: int, size: int) -> list[str]:
    """The deterministic audit sample (GA-5): accepted ids sorted by
    sha256(json.dumps([seed, item_id])), the first `size` of them."""

    def key(item_id: str) -> str:
        return hashlib.sha256(json.dumps([seed, item_id]).encode()).hexdigest()

    return sorted(accepted_ids, key=key)[:size]


# ---------------------------------------------------------------------------------------------
# the checks


class _Validator:
    def __init__(self, files: _RunFiles):
        self.files = files
        self.result = files.result
        self.plan = files.plan or {}
        self.spec = files.spec or {}
        self.report = ValidationReport(problems=list(files.setup_problems))

    def problem(self, check: str, message: str) -> None:
        self.report.problems.append(Problem(check, message))

    @property
    def vocabulary(self) -> str | None:
        return self.plan.get("vocabulary")

    @property
    def final(self) -> bool:
        return self.result.get("status") in ("succeeded", "failed")

    def plan_arm_names(self) -> list[str]:
        return [arm["name"] for arm in self.plan.get("arms") or [] if isinstance(arm, dict) and "name" in arm]

    def plan_gate(self, name: str) -> dict[str, Any]:
        for gate in self.plan.get("gates") or []:
            if isinstance(gate, dict) and gate.get("name") == name:
                return gate
        return {}

    def section_required(self, section: str) -> bool:
        """True when the gate producing `section` passed, so the section must be present."""
        gate = SECTION_GATES[section]
        return self.files.gate_passed(gate)

    def run(self) -> ValidationReport:
        checks = [
            ("events", self.check_events),
            ("result", self.check_result_shape),
            ("vocabulary", self.check_vocabulary),
            ("deviations", self.check_deviations),
            ("activation", self.check_activation_calibration),
            ("correctness", self.check_correctness),
            ("provenance", self.check_initialization_provenance),
            ("evaluation", self.check_evaluation),
            ("decision", self.check_decision),
            ("loss_eval", self.check_loss_eval),
            ("adaptation", self.check_adaptation),
            ("generation_audit", self.check_generation_audit),
            ("feasibility", self.check_feasibility),
            ("evidence", self.check_evidence),
            ("secrets", self.check_no_credentials),
        ]
        for name, check in checks:
            try:
                check()
            except (AttributeError, KeyError, TypeError, ValueError) as err:
                # a record so malformed that a rule could not be applied is itself a problem
                self.problem(
                    f"{name}.shape",
                    f"a record has an unexpected shape ({type(err).__name__}: {err}); the rest of this check was skipped",
                )
            self.report.checks.append(name)
        return self.report

    # ---- events and gates ----

    def check_events(self) -> None:
        if self.files.bad_event_lines:
            self.problem("events.format", f"events.jsonl lines {self.files.bad_event_lines[:5]} are not JSON objects")
        order = [event.get("gate") for event in self.files.events if event.get("event") == "gate"]
        positions = [GATE_ORDER.index(gate) for gate in order if gate in GATE_ORDER]
        if positions != sorted(positions):
            self.problem(
                "events.gate_order", f"gates were recorded out of contract order: {', '.join(map(str, order))}"
            )
        failed = [
            event.get("gate")
            for event in self.files.events
            if event.get("event") == "gate" and event.get("status") == "failed"
        ]
        if failed:
            first_failed = order.index(failed[0])
            later = [gate for gate in order[first_failed + 1 :] if gate != failed[0]]
            if later:
                self.problem(
                    "events.stop_on_failure", f"gate {failed[0]} failed but later gates ran: {', '.join(later)}"
                )
            if self.result.get("status") == "succeeded":
                self.problem("events.stop_on_failure", f"gate {failed[0]} failed but RESULT status is succeeded")

    # ---- RESULT shape ----

    def check_result_shape(self) -> None:
        result = self.result
        status = result.get("status")
        if status not in RESULT_STATUSES:
            self.problem("result.status", f"status {short(status)} is not one of {', '.join(RESULT_STATUSES)}")
        if not isinstance(result.get("summary"), str) or not result.get("summary", "").strip():
            self.problem("result.summary", "summary is missing or empty")
        metrics = result.get("metrics")
        if not isinstance(metrics, dict):
            self.problem("result.metrics", "metrics must be an object")
            metrics = {}
        arms_metrics = metrics.get("arms", {})
        if not isinstance(arms_metrics, dict):
            self.problem("result.metrics", "metrics.arms must be an object keyed by arm name")
            arms_metrics = {}
        arm_names = set(self.plan_arm_names()) | set(arms_metrics)
        for key in metrics:
            owner = next((arm for arm in arm_names if key.startswith(f"{arm}_")), None)
            if owner:
                self.problem(
                    "result.flat_arm_keys", f"metrics.{key} is a flat per-arm key; put it under metrics.arms.{owner}"
                )
        completed = result.get("completed_arms", [])
        if not isinstance(completed, list):
            self.problem("result.completed_arms", "completed_arms must be a list of arm names")
            completed = []
        for arm in completed:
            if not isinstance(arm, str):
                self.problem("result.completed_arms", f"completed_arms entry {short(arm)} is not an arm name")
                continue
            if arm not in arms_metrics:
                self.problem("result.completed_arms", f"arm {arm} is completed but has no metrics under metrics.arms")
            if self.plan and arm not in arm_names:
                self.problem("result.completed_arms", f"completed arm {arm} is not an arm of the plan")
        if result.get("original_hypothesis_tested") is False and not str(result.get("tested_instead", "")).strip():
            self.problem("result.tested_instead", "original_hypothesis_tested is false but tested_instead is empty")
        if self.plan:
            if "decision" in result and self.plan.get("decision") is None:
                self.problem("result.conditional", "decision is present but the spec has no decision_rule")
            if "loss_eval" in result and not (self.plan.get("eval") or {}).get("loss_eval"):
                self.problem("result.conditional", "loss_eval is present but the spec's endpoint is not a loss")
        block = result.get("capacity_block")
        if block is not None:
            if not isinstance(block, dict):
                self.problem("result.capacity_block", "capacity_block must be an object")
            else:
                if not isinstance(block.get("error"), str):
                    self.problem("result.capacity_block", "capacity_block.error must be a string")
                steps = block.get("comparison_steps_completed")
                if not is_integer(steps) or steps < 0:
                    self.problem(
                        "result.capacity_block",
                        "capacity_block.comparison_steps_completed must be a non-negative integer",
                    )
                if not isinstance(block.get("released_clients"), bool):
                    self.problem("result.capacity_block", "capacity_block.released_clients must be true or false")
            if status != "failed":
                self.problem(
                    "result.capacity_block",
                    f"capacity_block appears only when capacity stopped the run (status is {status})",
                )

    def check_vocabulary(self) -> None:
        if self.result.get("verdict") in ("supported", "refuted"):
            trained = [
                arm["name"] for arm in self.plan.get("arms") or [] if isinstance(arm, dict) and arm.get("trained")
            ]
            completed = [arm for arm in as_list(self.result.get("completed_arms")) if isinstance(arm, str)]
            not_run = [arm for arm in trained if arm not in completed]
            if not_run:
                self.problem(
                    "vocabulary.every_arm_ran",
                    f"verdict {self.result['verdict']} but arms {', '.join(not_run)} are not in completed_arms",
                )
        if self.vocabulary == "direction_confidence":
            self._check_direction_confidence()
        elif self.vocabulary == "three_way":
            self._check_three_way()
        elif self.plan:
            self.problem("vocabulary.unknown", f"the plan's vocabulary {short(self.vocabulary)} is not known")

    def _check_direction_confidence(self) -> None:
        result = self.result
        status, verdict = result.get("status"), result.get("verdict")
        if "verdict" in result:
            if status != "succeeded":
                self.problem(
                    "vocabulary.verdict_timing",
                    f"verdict is present while status is {status}; it belongs only in the final succeeded update",
                )
            if verdict not in DIRECTION_VERDICTS:
                self.problem("vocabulary.verdict", f"verdict {short(verdict)} is not supported or refuted")
            if result.get("confidence") not in ("strong", "weak"):
                self.problem(
                    "vocabulary.confidence", f"confidence {short(result.get('confidence'))} is not strong or weak"
                )
            if result.get("confidence") == "strong" and result.get("grid_edge") is True:
                self.problem("vocabulary.confidence", "grid_edge is true but confidence is strong")
            if not isinstance(result.get("reasoning"), str) or not result["reasoning"].strip():
                self.problem("vocabulary.reasoning", "a verdict needs reasoning (2-4 sentences)")
        elif "confidence" in result:
            self.problem("vocabulary.confidence", "confidence is present without a verdict")
        if "outcome_reason" in result and result.get("outcome_reason") != "incomplete_execution":
            self.problem(
                "vocabulary.outcome_reason",
                f"outcome_reason {short(result.get('outcome_reason'))} is not incomplete_execution, the only value of this vocabulary",
            )
        elif status == "failed" and "outcome_reason" not in result:
            self.problem("vocabulary.outcome_reason", "a failed run needs outcome_reason incomplete_execution")
        if status == "succeeded" and self.plan.get("decision") is not None and "verdict" not in result:
            self.problem(
                "vocabulary.verdict", "status is succeeded and the spec has a decision_rule, but there is no verdict"
            )

    def _check_three_way(self) -> None:
        result = self.result
        status, verdict, reason = result.get("status"), result.get("verdict"), result.get("outcome_reason")
        present = [name for name in THREE_WAY_ABSENT_FIELDS if name in result]
        if present:
            self.problem("vocabulary.three_way_fields", f"the three-way shape has no {', '.join(present)}")
        if status == "running":
            for name in ("verdict", "outcome_reason"):
                if name in result:
                    self.problem(
                        "vocabulary.verdict_timing",
                        f"{name} is present while status is running; it belongs only in the final update",
                    )
            return
        if verdict not in THREE_WAY_VERDICTS:
            self.problem(
                "vocabulary.verdict",
                f"the final update needs verdict supported, refuted or inconclusive (got {short(verdict)})",
            )
        if status == "failed" and verdict != "inconclusive":
            self.problem("vocabulary.verdict", f"a failed run is inconclusive (got {short(verdict)})")
        if reason is not None:
            if reason not in THREE_WAY_REASONS:
                self.problem(
                    "vocabulary.outcome_reason",
                    f"outcome_reason {short(reason)} is not one of {', '.join(THREE_WAY_REASONS)}",
                )
            elif reason in ("supported", "refuted") and reason != verdict:
                self.problem(
                    "vocabulary.outcome_reason", f"outcome_reason {reason} must equal the verdict ({short(verdict)})"
                )
            elif reason not in ("supported", "refuted") and verdict != "inconclusive":
                self.problem(
                    "vocabulary.outcome_reason",
                    f"outcome_reason {reason} requires verdict inconclusive (got {short(verdict)})",
                )
        if status == "failed" and reason not in (None, "incomplete_execution"):
            self.problem(
                "vocabulary.outcome_reason",
                f"a failed run's outcome_reason is incomplete_execution (got {short(reason)})",
            )

    # ---- deviations ----

    def _spec_models(self) -> set[Any]:
        """The spec's own base model (a rehearsal's record names it too): the substitution that summary
        must state. Other `model` deviations (rank, LR, the preflights' settings) are in deviations."""
        rehearsal = self.result.get("rehearsal") if isinstance(self.result.get("rehearsal"), dict) else {}
        return {name for name in (self.spec.get("base_model"), rehearsal.get("spec_model")) if name}

    def check_deviations(self) -> None:
        deviations = self.result.get("deviations", [])
        if not isinstance(deviations, list):
            self.problem("deviations.shape", "deviations must be a list ([] when the spec runs as written)")
            return
        for index, deviation in enumerate(deviations):
            if not isinstance(deviation, dict):
                self.problem("deviations.shape", f"deviations[{index}] is not an object")
                continue
            if deviation.get("field") not in DEVIATION_FIELDS:
                self.problem(
                    "deviations.shape",
                    f"deviations[{index}].field {short(deviation.get('field'))} is not one of {', '.join(DEVIATION_FIELDS)}",
                )
            for key in ("original", "effective", "reason"):
                if not isinstance(deviation.get(key), str):
                    self.problem("deviations.shape", f"deviations[{index}].{key} must be a string")
            if deviation.get("field") == "model" and deviation.get("original") in self._spec_models() and str(
                deviation.get("effective")) not in str(self.result.get("summary", "")):
                self.problem(
                    "deviations.model_in_summary",
                    f"the served model {short(deviation.get('effective'))} replaces the spec's model but summary does not say so",
                )
            if (
                deviation.get("field") in ("objective", "endpoint")
                and self.result.get("original_hypothesis_tested") is not False
            ):
                self.problem(
                    "deviations.hypothesis",
                    f"a changed {deviation['field']} means original_hypothesis_tested false with tested_instead",
                )
        if deviations:
            self._check_deviations_recorded_before_use(deviations)

    def _check_deviations_recorded_before_use(self, deviations: list[Any]) -> None:
        """Each deviation must appear in a `status: running` update recorded in events.jsonl.

        Updates are events that carry `status` and a `deviations` list. Without such events the
        only evidence is the spec_intake gate's measured deviation count (its running update)."""
        updates = [
            event for event in self.files.events if isinstance(event.get("deviations"), list) and "status" in event
        ]
        if updates:
            recorded = [
                json.dumps(deviation, sort_keys=True)
                for event in updates
                if event.get("status") == "running"
                for deviation in event["deviations"]
            ]
            for deviation in deviations:
                if json.dumps(deviation, sort_keys=True) not in recorded:
                    field_name = deviation.get("field") if isinstance(deviation, dict) else "?"
                    self.problem(
                        "deviations.unrecorded",
                        f"the {field_name} deviation first appears outside a status running update (unrecorded)",
                    )
            return
        intake = [
            event for event in self.files.events if event.get("event") == "gate" and event.get("gate") == "spec_intake"
        ]
        counted = (intake[-1].get("measured") or {}).get("deviations") if intake else None
        if not is_integer(counted):
            self.problem(
                "deviations.unrecorded",
                f"{len(deviations)} deviations but events.jsonl records no running update carrying them",
            )
        elif counted < len(deviations):
            self.problem(
                "deviations.unrecorded",
                f"{len(deviations)} deviations but only {counted} were posted in the running update of spec_intake",
            )

    # ---- activation gate (ACT-1, ACT-2) ----

    def check_activation_calibration(self) -> None:
        """When the activation gate passed, every prespecified check has a measured value in range."""
        gate = self.plan_gate("activation_gate")
        record = self.result.get("activation_calibration")
        if gate.get("applicable") is not True or not self.files.gate_passed("activation_gate"):
            return
        values = record.get("values") if isinstance(record, dict) else None
        if not isinstance(values, dict):
            self.problem(
                "activation.missing", "the activation gate passed but activation_calibration.values is missing"
            )
            return
        metrics = as_dict(self.result.get("metrics"))
        for check in (gate.get("details") or {}).get("checks") or []:
            metric = check.get("metric")
            value = values.get(metric)
            if metric in metrics:
                self.problem(
                    "activation.separate",
                    f"{metric} is in metrics; activation values belong only in activation_calibration",
                )
            if value is None:
                self.problem("activation.missing", f"check {metric} has no measured value")
            elif not _activation_in_range(value, check):
                self.problem(
                    "activation.range",
                    f"{metric} = {short(value)} is outside its prespecified range but the gate passed",
                )

    # ---- correctness preflight (CORR-*) ----

    def check_correctness(self) -> None:
        """Long because: the run-dir correctness checks, one after another in the order of CORR-1..CORR-11; each is a few
        lines.
        """
        record = self.result.get("correctness_preflight")
        gate = self.plan_gate("correctness_preflight")
        applies = gate.get("applicable") is not False if gate else False
        if record is None or record == {}:
            if applies and self.section_required("correctness_preflight"):
                self.problem(
                    "correctness.missing",
                    "the correctness_preflight gate passed but RESULT has no correctness_preflight record",
                )
            return
        if (
            not isinstance(record, dict)
            or not isinstance(record.get("required"), bool)
            or not isinstance(record.get("paths"), list)
        ):
            self.problem("correctness.shape", "correctness_preflight must be {required: bool, paths: [...]}")
            return
        if not record["required"]:
            if applies:
                self.problem(
                    "correctness.required",
                    "the plan says a correctness preflight applies but the record says required false",
                )
            if record["paths"]:
                self.problem("correctness.shape", "a stock-only record has paths []")
            return
        spec_paths = {
            path.get("id"): path
            for path in (self.spec.get("correctness_preflight") or {}).get("paths", [])
            if isinstance(path, dict)
        }
        reported = {_text_key(path.get("id")): path for path in record["paths"] if isinstance(path, dict)}
        for path_id in spec_paths:
            if path_id not in reported:
                self.problem(
                    "correctness.paths", f"spec path {path_id} has no record (a missing check blocks like a failed one)"
                )
        spec_unresolved = False
        for path_id, path in reported.items():
            spec_path = spec_paths.get(path_id)
            if spec_paths and spec_path is None:
                self.problem("correctness.paths", f"recorded path {short(path_id)} is not a path of the spec")
            fixed = as_dict(path.get("fixed_input"))
            if not _is_hex64(fixed.get("sha256")):
                self.problem("correctness.fixed_input", f"path {path_id}: fixed_input.sha256 is not a 64-hex hash")
            for key in ("baseline_revision", "reference_revision"):
                value = path.get(key)
                if not isinstance(value, str) or not value.strip() or "UNRESOLVED" in value:
                    self.problem("correctness.revisions", f"path {path_id}: {key} is not pinned ({short(value)})")
                pinned = (spec_path or {}).get(key)
                if isinstance(pinned, str) and "UNRESOLVED" in pinned:
                    spec_unresolved = True
                elif isinstance(pinned, str) and pinned and value != pinned and not (
                        key == "baseline_revision" and _same_code_parity(path)):  # reported as ran: CORR-3 unverified
                    self.problem(
                        "correctness.revisions",
                        f"path {path_id}: {key} {short(value)} differs from the spec's {short(pinned)}",
                    )
            self._check_correctness_errors(path_id, path, (spec_path or {}).get("tolerances") or {})
            for probe in as_list(path.get("lr_scaling")):
                if not (
                    isinstance(probe, dict)
                    and is_number(probe.get("learning_rate"))
                    and is_number(probe.get("update_norm"))
                ):
                    self.problem(
                        "correctness.lr_scaling",
                        f"path {path_id}: each lr_scaling entry needs numeric learning_rate and update_norm",
                    )
                    break
        reasoning = str(self.result.get("reasoning", "")).lower()
        if (
            spec_unresolved
            and self.vocabulary == "direction_confidence"
            and "reasoning" in self.result
            and "unverified" not in reasoning
        ):
            self.problem(
                "correctness.unresolved_note",
                "the spec's correctness revisions are UNRESOLVED; reasoning must say the exchange may grade the check unverified",
            )

    def _check_correctness_errors(self, path_id: Any, path: dict[str, Any], tolerances: dict[str, Any]) -> None:
        errors = path.get("errors")
        if not isinstance(errors, dict):
            self.problem("correctness.errors", f"path {path_id}: errors must be an object of measured errors")
            return
        gate_passed = self.files.gate_passed("correctness_preflight")
        for check, tolerance in tolerances.items():
            measured = errors.get(check)
            keys = ("max_abs_error", "reference_max_abs", "relative_l2_error", "cosine_similarity")
            if not isinstance(measured, dict) or not all(is_number(measured.get(key)) for key in keys):
                self.problem("correctness.errors", f"path {path_id}: check {check} has no measured {', '.join(keys)}")
                continue
            accepted, why = accepts(measured, tolerance)
            if not accepted and (gate_passed or self.result.get("status") == "succeeded"):
                self.problem(
                    "correctness.acceptance",
                    f"path {path_id}: check {check} fails the spec's tolerance ({why}) but the run went on",
                )

    # ---- initialization provenance (REST-*) ----

    def check_initialization_provenance(self) -> None:
        record = self.result.get("initialization_provenance")
        groups = (self.spec.get("restoration_preflight") or {}).get("groups") or []
        if record is None or record == {}:
            if (
                self.section_required("initialization_provenance")
                and self.plan_gate("restoration_preflight").get("applicable") is not False
            ):
                self.problem(
                    "provenance.missing",
                    "the restoration_preflight gate passed but RESULT has no initialization_provenance",
                )
            return
        if not isinstance(record, dict) or not equal_json(record.get("version"), 1) or not isinstance(record.get("arms"), dict):
            self.problem("provenance.shape", "initialization_provenance must be {version: 1, arms: {<arm>: ...}}")
            return
        arms = record["arms"]
        group_arms = [
            [arm.get("name") for arm in group.get("arms", []) if isinstance(arm, dict)]
            for group in groups
            if isinstance(group, dict)
        ]
        requested_by_arm = {
            arm.get("name"): arm
            for group in groups
            if isinstance(group, dict)
            for arm in group.get("arms", [])
            if isinstance(arm, dict)
        }
        expected = [name for names in group_arms for name in names]
        if not expected:  # no groups in the spec: every trained arm of the plan
            expected = [arm["name"] for arm in self.plan.get("arms") or [] if arm.get("trained")]
        for name in expected:
            if name not in arms:
                self.problem("provenance.arm_missing", f"arm {name} has no initialization_provenance entry")
        for name, entry in arms.items():
            if not isinstance(entry, dict):
                self.problem("provenance.shape", f"arm {name}: entry must be an object")
                continue
            self._check_initialization(name, entry.get("initialization"))
            self._check_optimizer_checks(name, entry, requested_by_arm.get(name))
            self._check_initial_output(name, entry.get("initial_output"))
        for names in group_arms or [expected]:
            self._check_group_consistency([name for name in names if isinstance(arms.get(name), dict)], arms)

    def _check_initialization(self, arm: str, init: Any) -> None:
        if not isinstance(init, dict):
            self.problem("provenance.initialization", f"arm {arm}: initialization is missing")
            return
        if not init.get("base_checkpoint"):
            self.problem("provenance.initialization", f"arm {arm}: initialization.base_checkpoint is missing")
        has_adapter = _is_hex64(init.get("adapter_sha256")) and init.get("source") in ("server_response", "local_hash")
        has_checkpoint = (
            bool(init.get("checkpoint_uri"))
            and init.get("checkpoint_immutable") is True
            and init.get("checkpoint_scope") == "full_initialization"
            and bool(init.get("loaded_checkpoint_uri"))
            and init.get("load_succeeded") is True
            and init.get("source") == "server_response"
        )
        if not (has_adapter or has_checkpoint):
            self.problem(
                "provenance.initialization",
                f"arm {arm}: no measured adapter_sha256 and no immutable full-initialization checkpoint proof from a server response",
            )
        if not self.files.is_retained(init.get("evidence_ref")):
            self.problem(
                "provenance.evidence_ref",
                f"arm {arm}: initialization.evidence_ref {short(init.get('evidence_ref'))} names no retained evidence file",
            )
        if init.get("before_first_update") is not True:
            self.problem("provenance.initialization", f"arm {arm}: initialization.before_first_update is not true")

    def _check_optimizer_checks(self, arm: str, entry: dict[str, Any], spec_arm: dict[str, Any] | None) -> None:
        restore_count = entry.get("restore_count")
        if not is_integer(restore_count) or restore_count < 0:
            self.problem("provenance.restore_count", f"arm {arm}: restore_count must be a non-negative integer")
            return
        checks = entry.get("optimizer_checks")
        if not isinstance(checks, list):
            self.problem("provenance.optimizer_checks", f"arm {arm}: optimizer_checks is missing")
            return
        seen = sorted(
            check.get("after_restore")
            for check in checks
            if isinstance(check, dict) and is_integer(check.get("after_restore"))
        )
        if seen != list(range(restore_count + 1)):
            self.problem(
                "provenance.optimizer_checks",
                f"arm {arm}: optimizer checks after_restore {seen} must be exactly 0..{restore_count} (one at creation, one per restore)",
            )
        for check in checks:
            if not isinstance(check, dict):
                continue
            where = f"arm {arm}, after_restore {check.get('after_restore')}"
            if check.get("before_next_update") is not True:
                self.problem("provenance.optimizer_checks", f"{where}: before_next_update is not true")
            if (
                check.get("source") != "server_response"
                or check.get("actual_family") is None
                or not isinstance(check.get("actual_config"), dict)
            ):
                self.problem(
                    "provenance.unverified",
                    f"{where}: no actual optimizer family/config from a server response (unverified)",
                )
                continue
            if not self.files.is_retained(check.get("evidence_ref")):
                self.problem(
                    "provenance.evidence_ref",
                    f"{where}: evidence_ref {short(check.get('evidence_ref'))} names no retained evidence file",
                )
            requested = check.get("requested") if isinstance(check.get("requested"), dict) else {}
            if spec_arm and not requested:
                self.problem("provenance.optimizer_checks", f"{where}: requested optimizer is missing")
            elif spec_arm:
                self._check_requested_matches_spec(where, requested, spec_arm)
            family = requested.get("family")
            if family and family != check.get("actual_family"):
                self.problem(
                    "provenance.optimizer_mismatch",
                    f"{where}: actual family {check.get('actual_family')} is not the requested {family}",
                )
            self._check_actual_config(where, requested, check["actual_config"])

    def _check_requested_matches_spec(self, where: str, requested: dict[str, Any], spec_arm: dict[str, Any]) -> None:
        """`requested` is the spec group's optimizer and optimizer_config (adam == adamw, lr == learning_rate)."""
        family = str(spec_arm.get("optimizer") or "").split(" ")[0].lower()
        expected = {"family": OPTIMIZER_FAMILY_ALIASES.get(family, family)}
        for key, value in (spec_arm.get("optimizer_config") or {}).items():
            expected[OPTIMIZER_CONFIG_ALIASES.get(key, key)] = value
        for key, value in expected.items():
            got = requested.get(key)
            same = equal_json(got, value, FLOAT_TOL, ABS_TOL)
            if not same:
                self.problem(
                    "provenance.requested",
                    f"{where}: requested {key} is {short(got)} but the spec's group asks for {short(value)}",
                )

    def _check_actual_config(self, where: str, requested: dict[str, Any], actual: dict[str, Any]) -> None:
        wanted = {key: value for key, value in requested.items() if key != "family"}
        shared = [key for key in wanted if key in actual]
        if wanted and not shared:
            self.problem(
                "provenance.actual_config",
                f"{where}: actual_config has none of the requested values ({', '.join(sorted(wanted))})",
            )
        for key in shared:
            a, b = wanted[key], actual[key]
            same = equal_json(a, b, FLOAT_TOL, ABS_TOL)
            if not same:
                self.problem(
                    "provenance.optimizer_mismatch", f"{where}: {key} is {short(b)} but {short(a)} was requested"
                )

    def _check_initial_output(self, arm: str, output: Any) -> None:
        if not isinstance(output, dict):
            self.problem("provenance.initial_output", f"arm {arm}: initial_output is missing")
            return
        if output.get("available") is not True:
            if not output.get("reason"):
                self.problem("provenance.initial_output", f"arm {arm}: initial_output unavailable without a reason")
            if (self.spec.get("restoration_preflight") or {}).get("fixed_batch_required"):
                self.problem(
                    "provenance.initial_output",
                    f"arm {arm}: the spec requires a fixed-batch initial_output but it is unavailable",
                )
            return
        for key in ("batch_sha256", "output_sha256"):
            if not _is_hex64(output.get(key)):
                self.problem("provenance.initial_output", f"arm {arm}: initial_output.{key} is not a 64-hex hash")
        if not self.files.is_retained(output.get("evidence_ref")):
            self.problem(
                "provenance.evidence_ref",
                f"arm {arm}: initial_output.evidence_ref {short(output.get('evidence_ref'))} names no retained evidence file",
            )
        if output.get("before_first_update") is not True:
            self.problem("provenance.initial_output", f"arm {arm}: initial_output.before_first_update is not true")

    def _check_group_consistency(self, names: list[str], arms: dict[str, Any]) -> None:
        if len(names) < 2:
            return
        fields = [
            ("initialization", "base_checkpoint"),
            ("initialization", "adapter_sha256"),
            ("initialization", "checkpoint_uri"),
            ("initialization", "loaded_checkpoint_uri"),
            ("initial_output", "batch_sha256"),
            ("initial_output", "output_sha256"),
        ]
        for part, key in fields:
            values = {name: as_dict(arms[name].get(part)).get(key) for name in names}
            present = {_text_key(value) for value in values.values() if value is not None}
            if len(present) > 1:
                listed = ", ".join(f"{name}={short(value, 20)}" for name, value in values.items())
                self.problem("provenance.group_mismatch", f"{part}.{key} differs across the group ({listed})")

    # ---- evaluation (EVAL-*) ----

    def check_evaluation(self) -> None:
        record = self.result.get("evaluation")
        if record is None or record == {}:
            if self.section_required("evaluation"):
                self.problem("evaluation.missing", "the evaluation gate passed but RESULT has no evaluation record")
            return
        if not isinstance(record, dict) or not equal_json(record.get("version"), 1) or not isinstance(record.get("evaluators"), dict):
            self.problem(
                "evaluation.shape",
                "evaluation must be {version: 1, evaluators: {...}, scores: [...], comparisons: [...]}",
            )
            return
        evaluators = record["evaluators"]
        for identifier, provenance in evaluators.items():
            self._check_evaluator(identifier, provenance)
        scores = record.get("scores") if isinstance(record.get("scores"), list) else []
        for score in scores:
            if not isinstance(score, dict):
                self.problem("evaluation.scores", f"a score is no object ({short(score)})")
                continue
            if _text_key(score.get("evaluator_id")) not in evaluators:
                self.problem("evaluation.scores", f"score of arm {score.get('arm')} names an unknown evaluator")
            if not is_number(score.get("value")):
                self.problem("evaluation.scores", f"score of arm {score.get('arm')} has no finite value")
            if score.get("predictions_ref") is not None and not self.files.is_retained(score.get("predictions_ref")):
                self.problem(
                    "evaluation.predictions_missing",
                    f"score of arm {score.get('arm')}: predictions_ref {short(score.get('predictions_ref'))} is not a retained evidence file",
                )
        self._check_predictions_cover(evaluators, scores)

    def _check_evaluator(self, identifier: str, provenance: Any) -> None:
        if not isinstance(provenance, dict):
            self.problem("evaluation.shape", f"evaluator {identifier[:12]}: provenance must be an object")
            return
        try:
            recomputed = evaluator_id(provenance)
        except (TypeError, ValueError) as err:
            self.problem(
                "evaluation.evaluator_id", f"evaluator {identifier[:12]}: provenance is not canonical JSON ({err})"
            )
            return
        if recomputed != identifier:
            self.problem(
                "evaluation.evaluator_id",
                f"evaluator id {identifier[:12]}... is not the hash of its provenance ({recomputed[:12]}...)",
            )
        if not _is_hex64(provenance.get("code_sha256")):
            self.problem(
                "evaluation.code_sha256",
                f"evaluator {identifier[:12]}: code_sha256 {short(provenance.get('code_sha256'), 40)} is not a 64-hex hash",
            )
        items = provenance.get("items")
        ids = items.get("ids") if isinstance(items, dict) else None
        if isinstance(items, dict) and "manifest_ref" in items and ids is None:
            if self.plan.get("decision") is not None:
                self.problem(
                    "evaluation.item_ids",
                    f"evaluator {identifier[:12]}: a decision_rule needs explicit items.ids, not a manifest",
                )
        elif not isinstance(ids, list) or not ids or not all(isinstance(item, str) and item for item in ids):
            self.problem(
                "evaluation.item_ids",
                f"evaluator {identifier[:12]}: items.ids must be an explicit list of item id strings (got {short(ids, 40)})",
            )
        elif len(set(ids)) != len(ids):
            self.problem("evaluation.item_ids", f"evaluator {identifier[:12]}: items.ids has duplicates")
        decoding = provenance.get("decoding")
        stop = decoding.get("stop") if isinstance(decoding, dict) else None
        if not isinstance(stop, list) or not all(isinstance(s, str) for s in stop):
            self.problem(
                "evaluation.decoding", f"evaluator {identifier[:12]}: decoding.stop must be a list of stop strings"
            )
        text = json.dumps(provenance)
        for key in ("arm", "checkpoint"):
            if f'"{key}":' in text:
                self.problem("evaluation.provenance", f"evaluator {identifier[:12]}: provenance names the scored {key}")

    def _scheduled_seeds(self, scores: list[Any]) -> list[int]:
        seeds = (self.plan.get("decision") or {}).get("seeds")
        if isinstance(seeds, list) and seeds:
            return seeds
        return sorted(
            {score.get("seed") for score in scores if isinstance(score, dict) and isinstance(score.get("seed"), int)}
        )

    def _check_predictions_cover(self, evaluators: dict[str, Any], scores: list[Any]) -> None:
        rows: list[dict[str, Any]] = []
        for name in sorted(
            {
                str(score.get("predictions_ref")).split("#")[0]
                for score in scores
                if isinstance(score, dict) and score.get("predictions_ref")
            }
        ):
            data = self.files.evidence_bytes(name)
            if data is None:
                continue
            file_rows, error = _jsonl_rows(data, name)
            if error:
                self.problem("evaluation.predictions_format", error)
            rows += file_rows
        if not rows:
            if self.section_required("evaluation") or scores:
                self.problem(
                    "evaluation.predictions_missing", "no retained prediction rows (JSONL) for the scored arms"
                )
            return
        required = ("item_id", "arm", "prediction", "reference", "metric", "evaluator_id")
        bad = [row for row in rows if any(key not in row for key in required)]
        if bad:
            missing = [key for key in required if key not in bad[0]]
            self.problem(
                "evaluation.predictions_format",
                f"{len(bad)} prediction rows lack fields (first lacks {', '.join(missing)})",
            )
        scored_arms = sorted(
            {score.get("arm") for score in scores if isinstance(score, dict) and isinstance(score.get("arm"), str)}
        )
        arms = self.plan_arm_names() or scored_arms
        seeds = self._scheduled_seeds(scores)
        present = {(row.get("arm"), row.get("seed"), row.get("item_id")) for row in rows}
        for provenance in evaluators.values():
            ids = _explicit_item_ids(provenance)
            if ids is None:
                continue
            for arm in arms:
                for seed in seeds:
                    missing = [item for item in ids if (arm, seed, item) not in present]
                    if missing:
                        self.problem(
                            "evaluation.predictions_cover",
                            f"arm {arm} seed {seed}: {len(missing)} of {len(ids)} items have no prediction row (first: {short(missing[0], 30)})",
                        )
        for score in scores:
            if not isinstance(score, dict) or not is_number(score.get("value")):
                continue
            values = [
                row.get("value")
                for row in rows
                if row.get("arm") == score.get("arm")
                and row.get("seed") == score.get("seed")
                and row.get("metric") == score.get("metric")
                and row.get("evaluator_id") == score.get("evaluator_id")
            ]
            if values and all(is_number(v) for v in values) and not close(sum(values) / len(values), score["value"], abs_tol=ABS_TOL):
                self.problem(
                    "evaluation.score_reproduces",
                    f"score of arm {score.get('arm')} seed {score.get('seed')} ({score['value']}) is not the mean of its prediction rows ({sum(values) / len(values)})",
                )

    # ---- decision (DEC-*) ----

    def check_decision(self) -> None:
        record = self.result.get("decision")
        rule = self.spec.get("decision_rule")
        if record is None:
            if rule is not None and (self.section_required("decision") or self.result.get("status") == "succeeded"):
                self.problem(
                    "decision.missing",
                    "the spec has a decision_rule and the decision stage finished, but RESULT has no decision",
                )
            return
        if not isinstance(record, dict) or not equal_json(record.get("version"), 1):
            self.problem("decision.shape", "decision must be an object with version 1")
            return
        has_inline, has_file = "observations" in record, "observations_file" in record
        if has_inline == has_file:
            self.problem("decision.shape", "decision needs exactly one of observations and observations_file")
            return
        method = rule.get("method", "paired_hoeffding") if isinstance(rule, dict) else None
        if method != "paired_hoeffding":
            if isinstance(rule, dict) and method not in DECISION_METHODS:
                self.problem("decision.recompute", f"decision_rule.method {short(method)} is no method the contract "
                                                   "defines: the decision cannot be recomputed")
            return  # only paired_hoeffding decisions are recomputed here (the TriMuon plan's best_lr_threshold is not)
        if has_file:
            observations = self._observations_from_file(record["observations_file"])
        else:
            observations = self._observations_inline(record["observations"])
        if observations is None:
            return
        role_to_arm = {
            role: entry.get("arm")
            for role, entry in (self.plan.get("role_to_arm") or {}).items()
            if isinstance(entry, dict)
        }
        selection = self.plan.get("selection")
        if selection:  # adaptive selection: the candidates' role maps to the frozen choice (DEC-13)
            recorded = record.get("selection")
            for problem in selection_problems(recorded, self._selection_items(recorded), None):
                self.problem("decision.selection", problem)
            for problem in confirmation_only_problems(observations, recorded):
                self.problem("decision.selection", problem)
            chosen = recorded.get("selected") if isinstance(recorded, dict) else None
            if chosen in selection["candidates"]:
                role_to_arm[selection["role"]] = chosen
        # DEC-8 from the spec, as the plan builder derives it (experiment.contract.plan), never the retained plan's word
        simultaneous = len(as_list(rule.get("criteria"))) > 1
        planned = (self.plan.get("decision") or {}).get("adjustment")
        if planned != ("bonferroni" if simultaneous else "none"):
            self.problem("decision.recompute", f"the retained plan's adjustment {short(planned)} is not the spec's "
                                               f"({'bonferroni' if simultaneous else 'none'}: "
                                               f"{len(as_list(rule.get('criteria')))} criteria)")
        try:
            summary = decision_summary(
                rule,
                observations,
                self.vocabulary or "direction_confidence",
                role_to_arm=role_to_arm,
                simultaneous=simultaneous,
            )
        except DecisionError as err:
            self.problem(
                "decision.recompute", f"the decision cannot be recomputed from the retained observations: {err}"
            )
            return
        self._check_observation_evaluators(observations)
        self._compare_decision(record, summary)

    def _selection_items(self, recorded: Any) -> list[str] | None:
        """The explicit item ids of the evaluator a recorded selection names (None when there are none)."""
        evaluation = self.result.get("evaluation")
        evaluators = evaluation.get("evaluators") if isinstance(evaluation, dict) else None
        identifier = recorded.get("evaluator_id") if isinstance(recorded, dict) else None
        if not isinstance(evaluators, dict) or identifier not in evaluators:
            return None
        return _explicit_item_ids(evaluators[identifier])

    def _observations_from_file(self, reference: Any) -> list[Any] | None:
        if not isinstance(reference, dict) or not isinstance(reference.get("name"), str):
            self.problem("decision.observations_file", "observations_file must be {name, sha256}")
            return None
        name, digest = reference["name"], reference.get("sha256")
        data = self.files.evidence_bytes(name)
        if data is None:
            self.problem("decision.observations_missing", f"observations file {name} is not retained in evidence")
            return None
        actual = hashlib.sha256(data).hexdigest()
        if digest != actual:
            self.problem(
                "decision.observations_sha256",
                f"decision names sha256 {short(digest, 20)} but {name} hashes to {actual[:16]}...",
            )
        if self.files.manifest_sha256(name) != actual:
            self.problem("decision.observations_sha256", f"the manifest's sha256 of {name} does not match the file")
        kind = next((entry.get("kind") for entry in self.files.evidence_entries if entry.get("name") == name), None)
        if kind != "metrics":
            self.problem(
                "decision.observations_file",
                f"observations file {name} is retained as kind {short(kind)}, not metrics",
            )
        if len(data) > MAX_EVIDENCE_FILE_BYTES:
            self.problem("decision.observations_cap", f"observations file {name} is over 10 MiB")
        path = evidence_path(self.files.run_dir, name)
        try:
            observations = read_observations_jsonl(path)
        except DecisionError as err:
            self.problem("decision.observations_format", str(err).replace(str(path), name))
            return None
        if len(observations) > MAX_OBSERVATIONS:
            self.problem(
                "decision.observations_cap", f"{len(observations)} observations exceed the cap of {MAX_OBSERVATIONS}"
            )
        return observations

    def _observations_inline(self, rows: Any) -> list[Any] | None:
        if not isinstance(rows, list) or not rows:
            self.problem("decision.observations_format", "decision.observations must be a non-empty list")
            return None
        try:
            return [observation_from_row(row, f"observation {index}") for index, row in enumerate(rows)]
        except DecisionError as err:
            self.problem("decision.observations_format", str(err))
            return None

    def _check_observation_evaluators(self, observations: list[Any]) -> None:
        evaluation = self.result.get("evaluation")
        evaluators = evaluation.get("evaluators") if isinstance(evaluation, dict) else None
        if not isinstance(evaluators, dict):
            return
        unknown = sorted(
            {o.evaluator_id for o in observations if o.evaluator_id is not None and o.evaluator_id not in evaluators}
        )
        if unknown:
            self.problem(
                "decision.evaluator", f"observations name evaluators not in RESULT.evaluation: {unknown[0][:12]}..."
            )
        for identifier, provenance in evaluators.items():
            ids = _explicit_item_ids(provenance)
            if ids is None:
                continue
            observed = {o.item_id for o in observations if o.evaluator_id == identifier}
            if self.plan.get("selection"):  # adaptive selection: the confirmation items only
                try:
                    ids = split_items([str(item) for item in ids]).confirmation_ids
                except DecisionError:
                    continue  # decision.selection reports the split
            if observed and observed != set(ids):
                self.problem(
                    "decision.observations_cover",
                    f"observations of evaluator {identifier[:12]} cover {len(observed)} items, the evaluator lists {len(ids)}",
                )

    def _compare_decision(self, record: dict[str, Any], summary: dict[str, Any]) -> None:
        criteria = summary["criteria"]
        recorded = {_text_key(c.get("id")): c for c in as_list(record.get("criteria")) if isinstance(c, dict)}
        for criterion in criteria:
            mine = recorded.get(criterion["id"])
            if mine is None:
                continue
            for key in ("effect", "lower", "upper"):
                if key in mine and not close(mine[key], criterion[key], abs_tol=ABS_TOL):
                    self.problem(
                        "decision.recompute",
                        f"criterion {criterion['id']}: recorded {key} {mine[key]} but the observations give {criterion[key]}",
                    )
        self._compare_arm_means(criteria)
        if self.vocabulary == "direction_confidence" and criteria and any(
                key in self.result for key in ("effect", "ci", "margin")):
            primary = criteria[0]
            if "effect" in self.result and not close(self.result.get("effect"), primary["effect"], abs_tol=ABS_TOL):
                self.problem(
                    "decision.effect",
                    f"RESULT effect {self.result.get('effect')} but the observations give {primary['effect']}",
                )
            ci = self.result.get("ci")
            if not (
                isinstance(ci, list)
                and len(ci) == 2
                and close(ci[0], primary["lower"], abs_tol=ABS_TOL)
                and close(ci[1], primary["upper"], abs_tol=ABS_TOL)
            ):
                self.problem(
                    "decision.ci",
                    f"RESULT ci {short(ci)} but the observations give [{primary['lower']}, {primary['upper']}]",
                )
            if "margin" in self.result and not close(self.result.get("margin"), primary["margin"], abs_tol=ABS_TOL):
                self.problem(
                    "decision.margin",
                    f"RESULT margin {self.result.get('margin')} is not the criterion's margin {primary['margin']}",
                )
        verdict = self.result.get("verdict")
        if verdict is None:
            return
        if self.vocabulary == "direction_confidence":
            if verdict != summary["verdict"]:
                self.problem(
                    "decision.verdict", f"RESULT verdict {verdict} but the observations give {summary['verdict']}"
                )
            if self.result.get("confidence") == "strong" and summary["confidence"] == "weak":
                self.problem("decision.confidence", "confidence is strong but an interval straddles its margin")
        elif self.vocabulary == "three_way" and verdict in ("supported", "refuted") and verdict != summary["verdict"]:
            self.problem(
                "decision.verdict",
                f"RESULT verdict {verdict} but the observations give {summary['verdict']} ({summary.get('outcome_reason')})",
            )

    def _compare_arm_means(self, criteria: list[dict[str, Any]]) -> None:
        """Unrounded per-arm, per-seed means from the observations reproduce the evaluation scores (not with
        adaptive selection: the scores cover every evaluated item, the observations the confirmation items)."""
        if self.plan.get("selection"):
            return
        evaluation = self.result.get("evaluation")
        scores = evaluation.get("scores") if isinstance(evaluation, dict) else None
        for score in scores if isinstance(scores, list) else []:
            if not isinstance(score, dict) or not is_number(score.get("value")):
                continue
            for criterion in criteria:
                means = criterion["per_arm_seed_means"].get(_text_key(score.get("arm")), {})
                mean = means.get(str(score.get("seed")))
                if criterion["metric"] == score.get("metric") and mean is not None and not close(mean, score["value"], abs_tol=ABS_TOL):
                    self.problem(
                        "decision.arm_means",
                        f"score of arm {score.get('arm')} seed {score.get('seed')} is {score['value']} but its observations average {mean}",
                    )
                    break

    # ---- loss evaluation (LOSS-1, LOSS-2) ----

    def check_loss_eval(self) -> None:
        record = self.result.get("loss_eval")
        plan_eval = self.plan.get("eval") or {}
        if record is None:
            if plan_eval.get("loss_eval") and self.section_required("loss_eval"):
                self.problem(
                    "loss_eval.missing",
                    "the endpoint is a held-out loss and evaluation passed, but RESULT has no loss_eval",
                )
            return
        if not isinstance(record, dict) or not isinstance(record.get("arms"), dict):
            self.problem("loss_eval.shape", "loss_eval must be {aggregation, arms: {<arm>: {...}}}")
            return
        aggregation = record.get("aggregation")
        if aggregation not in ("token_mean", "example_mean"):
            self.problem(
                "loss_eval.aggregation", f"aggregation {short(aggregation)} is not token_mean or example_mean"
            )
        if plan_eval.get("aggregation") and aggregation != plan_eval["aggregation"]:
            self.problem(
                "loss_eval.aggregation", f"aggregation {aggregation} is not the spec's {plan_eval['aggregation']}"
            )
        counts = {}
        for arm, entry in record["arms"].items():
            if not isinstance(entry, dict):
                self.problem("loss_eval.shape", f"arm {arm}: entry must be an object")
                continue
            missing = [key for key in LOSS_ARM_KEYS if key not in entry]
            if missing:
                self.problem("loss_eval.shape", f"arm {arm}: missing {', '.join(missing)}")
            if entry.get("aggregation") != aggregation:
                self.problem(
                    "loss_eval.aggregation",
                    f"arm {arm}: aggregation {short(entry.get('aggregation'))} differs from {aggregation}",
                )
            value, nll_sum, n_tokens = entry.get("value"), entry.get("nll_sum"), entry.get("n_tokens")
            if not (is_number(value) and is_number(nll_sum) and is_number(n_tokens) and n_tokens > 0):
                self.problem(
                    "loss_eval.values", f"arm {arm}: value, nll_sum and n_tokens must be finite with n_tokens > 0"
                )
                continue
            if aggregation == "token_mean" and not close(value, nll_sum / n_tokens, 1e-6, ABS_TOL):
                self.problem(
                    "loss_eval.value", f"arm {arm}: value {value} is not nll_sum / n_tokens = {nll_sum / n_tokens}"
                )
            if (
                aggregation == "token_mean"
                and "token_mean" in entry
                and not close(entry["token_mean"], nll_sum / n_tokens, 1e-6, ABS_TOL)
            ):
                self.problem(
                    "loss_eval.value", f"arm {arm}: token_mean {entry['token_mean']} is not nll_sum / n_tokens"
                )
            if aggregation == "example_mean" and not close(value, entry.get("example_mean"), 1e-6, ABS_TOL):
                self.problem(
                    "loss_eval.value", f"arm {arm}: value {value} is not its example_mean {entry.get('example_mean')}"
                )
            counts[arm] = (n_tokens, entry.get("n_examples"))
        if len(set(counts.values())) > 1:
            listed = ", ".join(f"{arm}={count}" for arm, count in counts.items())
            self.problem("loss_eval.same_tokens", f"arms are not scored on the same (n_tokens, n_examples): {listed}")

    # ---- adaptation manifests (ADAPT-1) ----

    def check_adaptation(self) -> None:
        manifests = self.result.get("adaptation_manifests")
        applies = (
            self.spec.get("experiment_features", {}).get("warmup_adaptation") is True
            if isinstance(self.spec.get("experiment_features"), dict)
            else False
        )
        if manifests is None:
            if applies and self.section_required("adaptation_manifests"):
                self.problem(
                    "adaptation.missing",
                    "warmup_adaptation is true and arm training passed, but RESULT has no adaptation_manifests",
                )
            return
        if not isinstance(manifests, list):
            self.problem("adaptation.shape", "adaptation_manifests must be a list")
            return
        hashes_by_pair: dict[Any, dict[str, str]] = {}
        for index, entry in enumerate(manifests):
            if not isinstance(entry, dict):
                self.problem("adaptation.shape", f"adaptation_manifests[{index}] is not an object")
                continue
            arm, ids, digest = entry.get("arm"), entry.get("adaptation_batch_ids"), entry.get("adaptation_batch_hash")
            if not is_integer(entry.get("warmup_batches")):
                self.problem("adaptation.shape", f"arm {arm}: warmup_batches must be a count")
            if not isinstance(ids, list):
                self.problem("adaptation.shape", f"arm {arm}: adaptation_batch_ids must be a list")
                continue
            if digest != adaptation_batch_hash(ids):
                self.problem(
                    "adaptation.hash",
                    f"arm {arm}: adaptation_batch_hash is not sha256(json.dumps(adaptation_batch_ids))",
                )
            hashes_by_pair.setdefault(entry.get("pair"), {})[str(arm)] = adaptation_batch_hash(ids)
        for pair, hashes in hashes_by_pair.items():
            if len(set(hashes.values())) > 1:
                limited = self.result.get("confidence") == "weak" or self.result.get("verdict") in (
                    None,
                    "inconclusive",
                )
                if not limited:
                    self.problem(
                        "adaptation.pair_mismatch",
                        f"pair {pair}: arms {', '.join(sorted(hashes))} consumed different batches but the result is not limited (weak/inconclusive)",
                    )

    # ---- generation audit (GA-*) ----

    def check_generation_audit(self) -> None:
        record = self.result.get("generation_audit")
        gate = self.plan_gate("generation_audit")
        if record is None or record == {}:
            if gate.get("applicable") is not False and gate and self.section_required("generation_audit"):
                self.problem(
                    "generation_audit.missing",
                    "the generation_audit gate passed but RESULT has no generation_audit record",
                )
            return
        if not isinstance(record, dict) or not equal_json(record.get("version"), 1):
            self.problem("generation_audit.shape", "generation_audit must be an object with version 1")
            return
        if record.get("stage") != "before_training":
            self.problem("generation_audit.shape", f"stage {short(record.get('stage'))} is not before_training")
        for key in ("dataset_file", "evaluation_file", "audit_file"):
            if not self.files.is_retained(record.get(key)):
                self.problem(
                    "generation_audit.files", f"{key} {short(record.get(key))} is not a retained evidence file"
                )
        seed = record.get("sample_seed")
        if not is_integer(seed):
            self.problem("generation_audit.shape", "sample_seed must be an integer")
            seed = None
        counts = record.get("counts") if isinstance(record.get("counts"), dict) else {}
        keys = ("generated", "accepted", "rejected", "execution_errors")
        if not all(is_integer(counts.get(key)) for key in keys):
            self.problem("generation_audit.counts", f"counts must give integer {', '.join(keys)}")
            return
        if counts["generated"] != counts["accepted"] + counts["rejected"] + counts["execution_errors"]:
            self.problem("generation_audit.counts", "generated is not accepted + rejected + execution_errors")
        accepted_ids = self._audit_dataset_ids(record.get("dataset_file"), counts)
        audit_spec = self.spec.get("generation_audit") or {}
        size = min(counts["accepted"], audit_spec.get("min_sample_size") or 100)
        samples = record.get("samples") if isinstance(record.get("samples"), list) else []
        sampled = [sample.get("item_id") for sample in samples if isinstance(sample, dict)]
        if accepted_ids is not None and seed is not None:
            expected = audit_sample_ids(accepted_ids, seed, size)
            if sorted(map(str, sampled)) != sorted(expected):
                self.problem(
                    "generation_audit.sample",
                    f"the {len(sampled)} sampled ids are not the first {size} accepted ids sorted by sha256(json.dumps([seed, item_id]))",
                )
        elif len(sampled) != size:
            self.problem(
                "generation_audit.sample",
                f"{len(sampled)} samples, expected min(accepted, min_sample_size or 100) = {size}",
            )
        for sample in samples:
            if isinstance(sample, dict) and (
                sample.get("method") != "independent_resolve"
                or sample.get("blind_to_label") is not True
                or not sample.get("resolver_id")
            ):
                self.problem(
                    "generation_audit.sample",
                    f"sample {short(sample.get('item_id'))}: needs method independent_resolve, blind_to_label true and a resolver_id",
                )
                break
        for count_key, limit_key in (("label_error_count", "max_label_errors"), ("overlap_count", "max_eval_overlaps")):
            count = record.get(count_key)
            if not is_integer(count) or count < 0:
                self.problem("generation_audit.counts", f"{count_key} must be a non-negative integer")
            elif (
                isinstance(audit_spec.get(limit_key), int)
                and count > audit_spec[limit_key]
                and self.files.gate_passed("generation_audit")
            ):
                self.problem(
                    "generation_audit.limits",
                    f"{count_key} {count} exceeds the spec's {limit_key} {audit_spec[limit_key]} but the audit gate passed",
                )

    def _audit_dataset_ids(self, dataset_file: Any, counts: dict[str, int]) -> list[str] | None:
        data = self.files.evidence_bytes(str(dataset_file).split("#")[0]) if isinstance(dataset_file, str) else None
        if data is None:
            return None
        rows, error = _jsonl_rows(data, str(dataset_file))
        if error:
            self.problem("generation_audit.files", error)
            return None
        dispositions = [row.get("disposition") for row in rows]
        tally = {
            "generated": len(rows),
            "accepted": dispositions.count("accepted"),
            "rejected": dispositions.count("rejected"),
            "execution_errors": dispositions.count("execution_error"),
        }
        for key, value in tally.items():
            if counts.get(key) != value:
                self.problem(
                    "generation_audit.counts", f"counts.{key} is {counts.get(key)} but {dataset_file} has {value}"
                )
        return [str(row.get("item_id")) for row in rows if row.get("disposition") == "accepted"]

    # ---- feasibility (FEAS-*) ----

    def check_feasibility(self) -> None:
        record = self.result.get("feasibility")
        if record is None or record == {}:
            if self.section_required("feasibility"):
                self.problem("feasibility.missing", "the feasibility pilot passed but RESULT has no feasibility record")
            return
        if not isinstance(record, dict):
            self.problem("feasibility.shape", "feasibility must be an object")
            return
        for key in ("config", "effective_config"):
            config = record.get(key)
            missing = [k for k in PROJECTION_KEYS if not isinstance(config, dict) or k not in config]
            if missing:
                self.problem("feasibility.config", f"{key} lacks the projection keys {', '.join(missing)}")
        if not record.get("source"):
            self.problem("feasibility.source", "source (the pilot evidence) is not recorded")
        endpoint = self.plan.get("primary_endpoint")
        if endpoint and record.get("primary_endpoint") != endpoint:
            self.problem(
                "feasibility.primary_endpoint",
                f"primary_endpoint {short(record.get('primary_endpoint'))} is not the spec's {endpoint}",
            )
        measurements = record.get("measurements") if isinstance(record.get("measurements"), dict) else {}
        for phase in ("setup", "training", "evaluation"):
            entry = measurements.get(phase)
            missing = [key for key in FEASIBILITY_PHASE_KEYS if not isinstance(entry, dict) or key not in entry]
            if missing:
                self.problem("feasibility.phases", f"measurements.{phase} lacks {', '.join(missing)}")
            elif not is_number(entry["seconds"]) or entry["seconds"] < 0:
                self.problem(
                    "feasibility.phases", f"measurements.{phase}.seconds must be a measured non-negative number"
                )
        recovery = record.get("recovery")
        if not isinstance(recovery, dict) or not is_number(recovery.get("seconds")) or recovery["seconds"] <= 0:
            self.problem("feasibility.recovery", "recovery.seconds must be a positive reserve")
        generation = record.get("generation")
        generated = self.plan_gate("generation_audit").get("applicable") is True
        if generated and not isinstance(generation, dict):
            self.problem("feasibility.generation", "training on generated tasks needs a generation record, not null")
        if isinstance(generation, dict):
            missing = [key for key in GENERATION_KEYS if key not in generation]
            if missing:
                self.problem("feasibility.generation", f"generation lacks {', '.join(missing)}")

    # ---- evidence (EVID-*) ----

    def check_evidence(self) -> None:
        if self.files.manifest is None:
            return
        entries = self.files.evidence_entries
        if len(entries) > MAX_EVIDENCE_FILES:
            self.problem("evidence.caps", f"{len(entries)} evidence files exceed the cap of {MAX_EVIDENCE_FILES}")
        total = 0
        evidence_dir = self.files.run_dir / EVIDENCE_DIR
        for entry in entries:
            name = entry.get("name")
            path = evidence_dir / str(name)
            if not isinstance(name, str) or "/" in name or not path.is_file():
                self.problem("evidence.missing_file", f"manifest lists {short(name)} but the file is not in evidence/")
                continue
            data = path.read_bytes()
            total += len(data)
            if len(data) > MAX_EVIDENCE_FILE_BYTES:
                self.problem("evidence.caps", f"{name} is {len(data)} bytes, over the 10 MiB cap")
            if hashlib.sha256(data).hexdigest() != entry.get("sha256"):
                self.problem(
                    "evidence.immutable", f"{name} no longer matches its manifest sha256 (evidence was changed)"
                )
        if total > MAX_EVIDENCE_TOTAL_BYTES:
            self.problem("evidence.caps", f"evidence totals {total} bytes, over the 40 MiB cap")
        listed = self.files.evidence_names | {MANIFEST_FILE}
        for path in sorted(evidence_dir.iterdir()) if evidence_dir.is_dir() else []:
            if path.is_file() and not path.name.startswith(".") and path.name not in listed:
                self.problem("evidence.unlisted", f"evidence/{path.name} is not in the manifest")
        if self.result.get("status") == "succeeded":
            kinds = {entry.get("kind") for entry in entries}
            required = list(REQUIRED_EVIDENCE_KINDS)
            if self.plan_gate("generation_audit").get("applicable") is True:
                required.append("generated_tasks")
            missing = [kind for kind in required if kind not in kinds]
            if missing:
                self.problem(
                    "evidence.required_kinds", f"a finished run retains no evidence of kind {', '.join(missing)}"
                )
        for checkpoint in as_list(as_dict(self.result.get("evidence")).get("checkpoints")):
            uri = as_dict(checkpoint).get("uri")
            if not (isinstance(uri, str) and uri.startswith("tinker://") and "?" not in uri):
                self.problem(
                    "evidence.checkpoints",
                    f"checkpoint {short(uri)} is not a tinker:// reference without a query string",
                )
        reported = (
            (self.result.get("evidence") or {}).get("files") if isinstance(self.result.get("evidence"), dict) else None
        )
        if isinstance(reported, list):
            manifest_hashes = {entry.get("name"): entry.get("sha256") for entry in entries}
            for item in reported:
                if isinstance(item, dict) and manifest_hashes.get(_text_key(item.get("name"))) != item.get("sha256"):
                    self.problem(
                        "evidence.result_files",
                        f"RESULT.evidence lists {short(item.get('name'))} with a sha256 the manifest does not have",
                    )

    # ---- credentials (SEC-1) ----

    def check_no_credentials(self) -> None:
        secrets = {name: os.environ.get(name, "") for name in CREDENTIAL_ENV_VARS}
        secrets = {name: value for name, value in secrets.items() if len(value) > 4}
        for path in sorted(self.files.run_dir.rglob("*")):
            if not path.is_file():
                continue
            relative = path.relative_to(self.files.run_dir)
            text = searchable_text(path.read_bytes())
            for name, value in secrets.items():
                if value in text:
                    self.problem("secrets.value", f"{relative} contains the value of {name}")
            url = SIGNED_URL.search(text)
            if url:
                self.problem(
                    "secrets.url", f"{relative} contains a credential-bearing URL (query parameter {url.group(1)})"
                )
            match = HEADER_WITH_VALUE.search(text)
            if match:
                self.problem(
                    "secrets.header", f"{relative} contains a credential header with a value ({match.group(1)}: ...)"
                )


def _same_code_parity(path: dict[str, Any]) -> bool:
    """The path reports its baseline check's two sides as the same code (its baseline_revision then names
    what ran, not the pin; the grader keeps the check unverified, CORR-3)."""
    return any(isinstance(entry, dict) and entry.get("same_code") is True
               for entry in as_dict(path.get("parity_sides")).values())


def _activation_in_range(value: Any, check: dict[str, Any]) -> bool:
    """min/max bound numbers; one_of lists strings (a measured 1 or 1.0 matches "1")."""
    if check.get("one_of") is not None:
        texts = {str(value)}
        if is_number(value) and float(value).is_integer():
            texts.add(str(int(value)))
        return bool(texts & {str(option) for option in check["one_of"]})
    if not is_number(value):
        return False
    if check.get("min") is not None and value < check["min"]:
        return False
    return not (check.get("max") is not None and value > check["max"])
