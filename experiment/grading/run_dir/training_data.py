"""The training data's records: adaptation manifests (ADAPT-1), the generation audit (GA-*) and
feasibility (FEAS-*)."""

from __future__ import annotations

from experiment.grading.decision import ADAPT_1_hash, ADAPT_1_missing, ADAPT_1_pairs, ADAPT_1_shape
from experiment.grading.feasibility import FEAS_1, FEAS_2, FEAS_3, FEAS_4, FEAS_5, FEAS_7, FEAS_8
from experiment.grading.generation_audit import (
    GA_2, GA_3, GA_3_evaluation_set, GA_4, GA_4_filter, GA_5, GA_6, GA_6_independent_resolver, GA_8, GA_9,
)
from experiment.grading.registry import run_dir_checks


class TrainingDataChecks:
    """The training data's records: adaptation manifests (ADAPT-1), the generation audit (GA-*) and."""

    # ---- adaptation manifests (ADAPT-1) ----

    @run_dir_checks(
        ("adaptation.missing", "ADAPT-1", "warmup adaptation left adaptation_manifests once the arms trained", ADAPT_1_missing),
        ("adaptation.shape", "ADAPT-1", "adaptation_manifests is a list of manifests with counts and ids", ADAPT_1_shape),
        ("adaptation.hash", "ADAPT-1", "adaptation_batch_hash is sha256(json.dumps(ids))", ADAPT_1_hash),
        ("adaptation.pair_mismatch", "ADAPT-1", "a pair on different batches limits the result", ADAPT_1_pairs),
    )
    def check_adaptation(self) -> None:
        """ADAPT-1 by its one implementation (experiment.grading.decision) on this run's RESULT and spec; the run
        directory supplies its events (a missing manifest is owed once the arm_training gate passed)."""
        self.restated("adaptation.missing")
        self.restated("adaptation.shape")
        self.restated("adaptation.hash")
        self.restated("adaptation.pair_mismatch")

    # ---- generation audit (GA-*) ----

    @run_dir_checks(
        ("generation_audit.missing", "GA-2", "a passed audit gate left its record", GA_2),
        ("generation_audit.shape", "GA-2", "generation_audit has the contract's shape (version 1, stage before_training, integer seed and counts)", GA_2),
        ("generation_audit.files", "GA-3", "dataset, evaluation and audit files are retained, the candidates complete and the evaluation set the spec's held-out set", GA_3, GA_3_evaluation_set),
        ("generation_audit.counts", "GA-4", "counts and dispositions recompute from the candidates", GA_4, GA_4_filter),
        ("generation_audit.labels", "GA-8", "label errors and overlaps recompute from the samples and the evaluation set", GA_8),
        ("generation_audit.sample", "GA-5", "the sample is the deterministic one", GA_5),
        ("generation_audit.resolver", "GA-6", "the sample is re-solved blind by a re-solver independent of generator, filter and base", GA_6, GA_6_independent_resolver),
        ("generation_audit.limits", "GA-9", "a passed audit is within the spec's label-error and overlap limits", GA_9),
    )
    def check_generation_audit(self) -> None:
        """GA-2..6, 8 and 9 by their one implementation (experiment.grading.generation_audit) on this run's RESULT,
        spec and evidence/; the run directory supplies whether the audit gate passed (a missing record, and a count
        over the spec's limit, is a problem only then)."""
        record = self.result.get("generation_audit")
        if record is None or record == {}:
            if self.section_required("generation_audit"):
                self.restated("generation_audit.missing")
            return
        if self.restated("generation_audit.shape") and not isinstance(record, dict):
            return  # as the contract grade: a record that is no object is only that
        self.restated("generation_audit.files")
        self.restated("generation_audit.counts")
        self.restated("generation_audit.labels")
        self.restated("generation_audit.sample")
        self.restated("generation_audit.resolver")
        if self.files.gate_passed("generation_audit"):
            self.restated("generation_audit.limits")

    # ---- feasibility (FEAS-*) ----

    @run_dir_checks(
        ("feasibility.missing", "FEAS-1", "a passed feasibility pilot left its record", FEAS_1),
        ("feasibility.shape", "FEAS-1", "a measured feasibility record with the contract's shape", FEAS_1),
        ("feasibility.config", "FEAS-2", "config and effective_config record the ten projection keys identically", FEAS_2),
        ("feasibility.source", "FEAS-3", "source names the pilot evidence", FEAS_3),
        ("feasibility.primary_endpoint", "FEAS-8", "primary_endpoint is the spec's", FEAS_8),
        ("feasibility.phases", "FEAS-4", "every measured phase has its keys and measured seconds", FEAS_4),
        ("feasibility.recovery", "FEAS-5", "recovery.seconds is a positive reserve", FEAS_5),
        ("feasibility.generation", "FEAS-7", "generated tasks: a generation record whose yield and settings are the audit's and the spec's", FEAS_7),
    )
    def check_feasibility(self) -> None:
        """FEAS-1..5, 7, 8 by their one implementation (experiment.grading.feasibility) on this run's RESULT and the
        plan of its retained spec; the run directory supplies whether the pilot passed (a missing record is a problem
        only then)."""
        record = self.result.get("feasibility")
        if record is None or record == {}:
            if self.section_required("feasibility"):
                self.restated("feasibility.missing")
            return
        self.restated("feasibility.shape")
        self.restated("feasibility.config")
        self.restated("feasibility.source")
        self.restated("feasibility.primary_endpoint")
        self.restated("feasibility.phases")
        self.restated("feasibility.recovery")
        self.restated("feasibility.generation")
