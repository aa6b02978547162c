"""The RESULT object's own checks from the run directory: events and gates, shape, vocabulary, deviations and
the activation gate."""

from __future__ import annotations

from experiment.contract.verdict import GATE_ORDER
from experiment.grading.activation import ACT_1
from experiment.grading.general import GEN_2, GEN_3, GEN_4, GEN_5, GEN_6, GEN_6_hypothesis, GEN_7, GEN_8
from experiment.grading.registry import run_dir_checks


class RecordChecks:
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

    # ---- RESULT shape, vocabulary and deviations (GEN-*) ----

    @run_dir_checks(
        ("result.status", "GEN-2", "status is running, succeeded or failed", GEN_2),
        ("result.summary", "GEN-8", "summary at most two sentences, reasoning two to four", GEN_8),
        ("result.metrics", "GEN-5", "per-arm numbers under metrics.arms; completed_arms names each trained arm once", GEN_5),
        ("result.tested_instead", "GEN-6", "a changed experiment says original_hypothesis_tested false and what it tested instead", GEN_6_hypothesis),
        ("result.conditional", "GEN-7", "conditional fields (capacity_block, decision, loss_eval) only when they apply", GEN_7),
    )
    def check_result_shape(self) -> None:
        """GEN-2, 5, 6, 7, 8 by their one implementation (experiment.grading.general) on this run's RESULT and the
        plan of its retained spec."""
        self.restated("result.status")
        self.restated("result.summary")
        self.restated("result.metrics")
        self.restated("result.tested_instead")
        self.restated("result.conditional")

    @run_dir_checks(
        ("vocabulary.verdict", "GEN-3", "direction+confidence vocabulary: verdict only at the end, supported or refuted, with confidence", GEN_3),
        ("vocabulary.outcome_reason", "GEN-4", "three-way vocabulary: verdict and outcome_reason agree; none of the direction-only fields", GEN_4),
    )
    def check_vocabulary(self) -> None:
        """GEN-3 and GEN-4 by their one implementation, in the vocabulary of the plan of the retained spec."""
        self.restated("vocabulary.verdict")
        self.restated("vocabulary.outcome_reason")

    @run_dir_checks(
        ("deviations.shape", "GEN-6", "deviations recorded before use in running updates; a changed experiment says original_hypothesis_tested false", GEN_6),
    )
    def check_deviations(self) -> None:
        """GEN-6 by its one implementation, with this run's events.jsonl (every deviation posted in a running update)."""
        self.restated("deviations.shape")

    # ---- activation gate (ACT-1) ----

    @run_dir_checks(
        ("activation.range", "ACT-1", "every activation check measured, in range and only in activation_calibration", ACT_1),
    )
    def check_activation_calibration(self) -> None:
        """ACT-1 by its one implementation, once the run directory shows the activation gate passed."""
        if self.files.gate_passed("activation_gate"):
            self.restated("activation.range")
