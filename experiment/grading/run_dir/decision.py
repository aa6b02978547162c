"""The decision (DEC-*): the observations file, their cover and the recomputed decision, by the contract rules' one
implementation (experiment.grading.decision) on the run directory's RESULT, typed spec and plan, and evidence/."""

from __future__ import annotations

from experiment.grading.decision import (
    DEC_1, DEC_2, DEC_3_file, DEC_3_retained, DEC_3_sha256, DEC_4, DEC_5, DEC_6, DEC_7, DEC_8_ci, DEC_8_criteria,
    DEC_8_effect, DEC_8_margin, DEC_9_confidence, DEC_9_verdict, DEC_10, DEC_13,
)
from experiment.grading.registry import run_dir_checks


class DecisionChecks:
    """The decision (DEC-*): the observations file, their cover and the recomputed decision."""

    # ---- decision (DEC-*) ----

    @run_dir_checks(
        ("decision.missing", "DEC-1", "a decision object once the decision stage finished", DEC_1),
        ("decision.shape", "DEC-2", "decision {version: 1} with exactly one of observations and observations_file", DEC_2),
        ("decision.observations_file", "DEC-3", "observations_file names JSONL observations retained as metrics", DEC_3_file),
        ("decision.observations_missing", "DEC-3", "the observations file is retained", DEC_3_retained),
        ("decision.observations_sha256", "DEC-3", "the observations file hashes to the recorded and manifest sha256", DEC_3_sha256),
        ("decision.observations_cap", "DEC-4", "at most 10 MiB and 100 000 observations", DEC_4),
        ("decision.observations_format", "DEC-5", "observations parse as the contract's rows", DEC_5),
        ("decision.evaluator", "DEC-7", "observations name evaluators of RESULT.evaluation and agree with its predictions", DEC_7),
        ("decision.observations_cover", "DEC-6", "observations cover every compared arm, item and scheduled seed", DEC_6),
        ("decision.selection", "DEC-13", "the adaptive selection recomputes and holds confirmation items only", DEC_13),
        ("decision.recompute", "DEC-8", "the decision recomputes from the observations to the recorded criteria", DEC_8_criteria),
        ("decision.effect", "DEC-8", "RESULT effect is the recomputed primary effect", DEC_8_effect),
        ("decision.ci", "DEC-8", "RESULT ci is the recomputed interval", DEC_8_ci),
        ("decision.margin", "DEC-8", "RESULT margin is the criterion's margin", DEC_8_margin),
        ("decision.verdict", "DEC-9", "the verdict is the recomputed one", DEC_9_verdict),
        ("decision.confidence", "DEC-9", "no strong confidence when an interval straddles its margin", DEC_9_confidence),
        ("decision.arm_means", "DEC-10", "per-arm, per-seed observation means are the scores", DEC_10),
    )
    def check_decision(self) -> None:
        """DEC-1..10 and 13 by their one implementation; the run directory supplies whether the decision stage
        finished (a missing decision is a problem only then) and the observations file from evidence/ on disk."""
        if self.result.get("decision") is None:
            if self.spec.get("decision_rule") is not None and (
                    self.section_required("decision") or self.result.get("status") == "succeeded"):
                self.restated("decision.missing")
            return
        if self.restated("decision.shape") or self.typed[1] is None:
            return  # the other rules recompute under the plan of the retained spec: run.spec says why there is none
        self.restated("decision.observations_file")
        self.restated("decision.observations_missing")
        self.restated("decision.observations_sha256")
        self.restated("decision.observations_cap")
        self.restated("decision.observations_format")
        self.restated("decision.evaluator")
        self.restated("decision.observations_cover")
        self.restated("decision.selection")
        self.restated("decision.recompute")
        self.restated("decision.effect")
        self.restated("decision.ci")
        self.restated("decision.margin")
        self.restated("decision.verdict")
        self.restated("decision.confidence")
        self.restated("decision.arm_means")
