"""The RESULT object's own checks from the run directory: events and gates, shape, vocabulary, deviations and
the activation gate."""

from __future__ import annotations

import json
from typing import Any

from experiment.contract.verdict import GATE_ORDER
from experiment.contract.result import (
    DEVIATION_FIELDS, DIRECTION_VERDICTS, THREE_WAY_ABSENT_FIELDS, THREE_WAY_REASONS, THREE_WAY_VERDICTS,
)
from experiment.grading.general import GEN_2
from experiment.grading.common import as_dict, as_list, is_integer, is_number, short
from experiment.grading.registry import run_dir_checks


class _RecordChecks:
    """The RESULT object's own checks from the run directory: events and gates, shape, vocabulary, deviations and."""

    # ---- events and gates ----

    @run_dir_checks(
        ("events.format", "EVID-8", "every events.jsonl line is a JSON object"),
        ("events.gate_order", "RUN-1", "gates were recorded in the contract's order"),
        ("events.stop_on_failure", "RUN-1", "no gate ran after a failed one; a failed gate is no succeeded run"),
    )
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

    @run_dir_checks(
        ("result.status", "GEN-2", "status is running, succeeded or failed", GEN_2),
        ("result.summary", "GEN-8", "summary is present"),
        ("result.metrics", "GEN-5", "metrics and metrics.arms are objects"),
        ("result.flat_arm_keys", "GEN-5", "no flat <arm>_<metric> keys in metrics"),
        ("result.completed_arms", "GEN-5", "completed_arms are plan arms with metrics"),
        ("result.tested_instead", "GEN-6", "original_hypothesis_tested false comes with tested_instead"),
        ("result.conditional", "GEN-7", "decision and loss_eval only when the spec asks for them"),
        ("result.capacity_block", "GEN-7", "capacity_block has its shape and appears only in a failed run"),
    )
    def check_result_shape(self) -> None:
        result = self.result
        status = result.get("status")
        self.restated("result.status")
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

    @run_dir_checks(
        ("vocabulary.every_arm_ran", "GEN-5", "a supported/refuted verdict only when every trained arm completed"),
        ("vocabulary.unknown", "GEN-3", "the plan's vocabulary is a known one"),
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

    @run_dir_checks(
        ("vocabulary.verdict_timing", "GEN-3", "a verdict only in the final update"),
        ("vocabulary.verdict", "GEN-3", "the verdict is one of the vocabulary's"),
        ("vocabulary.confidence", "GEN-3", "confidence strong or weak, only with a verdict, weak at a grid edge"),
        ("vocabulary.reasoning", "GEN-8", "a verdict comes with reasoning"),
        ("vocabulary.outcome_reason", "GEN-4", "outcome_reason is one the vocabulary allows, agreeing with the verdict"),
    )
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

    @run_dir_checks(
        ("vocabulary.three_way_fields", "GEN-4", "the three-way shape has none of the direction-only fields"),
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

    @run_dir_checks(
        ("deviations.shape", "GEN-6", "deviations is a list of {field, original, effective, reason}"),
        ("deviations.model_in_summary", "GEN-6", "a substituted spec model is named in summary"),
        ("deviations.hypothesis", "GEN-6", "a changed objective or endpoint sets original_hypothesis_tested false"),
    )
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

    @run_dir_checks(
        ("deviations.unrecorded", "GEN-6", "every deviation was posted in a running update before use"),
    )
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

    @run_dir_checks(
        ("activation.missing", "ACT-1", "a passed activation gate posted a value for every check"),
        ("activation.separate", "ACT-1", "activation values live only in activation_calibration"),
        ("activation.range", "ACT-1", "every activation value of a passed gate is in its range"),
    )
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
