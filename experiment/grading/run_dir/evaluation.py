"""The evaluation record (EVAL-*) and the loss evaluation (LOSS-1, LOSS-2)."""

from __future__ import annotations

from experiment.grading.evaluator import (
    EVAL_1, EVAL_2, EVAL_3, EVAL_4, EVAL_5, EVAL_6, EVAL_7, EVAL_7_metrics, EVAL_8, EVAL_9, EVAL_9_cover, EVAL_9_values, LOSS_1,
    LOSS_2, LOSS_3, LOSS_4,
)
from experiment.grading.registry import run_dir_checks


class EvaluationChecks:
    """The evaluation record (EVAL-*) and the loss evaluation (LOSS-1, LOSS-2)."""

    # ---- evaluation (EVAL-*) ----

    @run_dir_checks(
        ("evaluation.missing", "EVAL-1", "a passed evaluation gate left its record", EVAL_1),
        ("evaluation.shape", "EVAL-1", "evaluation is {version: 1, evaluators, scores, comparisons}", EVAL_1),
        ("evaluation.scores", "EVAL-7", "every score names a known evaluator and a finite value", EVAL_7, EVAL_7_metrics),
        ("evaluation.predictions_missing", "EVAL-8", "prediction files are retained for the scored arms", EVAL_8),
    )
    def check_evaluation(self) -> None:
        """EVAL-1, 7, 8, 9 by their one implementation (experiment.grading.evaluator) on this run's RESULT and
        evidence/; the run directory supplies whether the evaluation gate passed (a missing record is a problem only
        then)."""
        record = self.result.get("evaluation")
        if record is None or record == {}:
            if self.section_required("evaluation"):
                self.restated("evaluation.missing")
            return
        self.restated("evaluation.shape")
        if not isinstance(record, dict) or not isinstance(record.get("evaluators"), dict):
            return
        self._check_evaluators()
        self.restated("evaluation.scores")
        self.restated("evaluation.predictions_missing")
        self._check_predictions()

    @run_dir_checks(
        ("evaluation.evaluator_id", "EVAL-2", "the evaluator id is the hash of its provenance", EVAL_2),
        ("evaluation.code_sha256", "EVAL-3", "code_sha256 is a 64-hex hash", EVAL_3),
        ("evaluation.item_ids", "EVAL-4", "items.ids is an explicit list of unique id strings", EVAL_4),
        ("evaluation.decoding", "EVAL-5", "decoding gives temperature, max_tokens and stop as a list of strings", EVAL_5),
        ("evaluation.provenance", "EVAL-6", "the provenance names no scored arm or checkpoint", EVAL_6),
    )
    def _check_evaluators(self) -> None:
        """EVAL-2..6 by their one implementation (experiment.grading.evaluator), on this run's RESULT and evidence/."""
        self.restated("evaluation.evaluator_id")
        self.restated("evaluation.code_sha256")
        self.restated("evaluation.item_ids")
        self.restated("evaluation.decoding")
        self.restated("evaluation.provenance")

    @run_dir_checks(
        ("evaluation.predictions_format", "EVAL-9", "prediction rows: one per item with the required fields, one evaluator, seed and run", EVAL_9),
        ("evaluation.predictions_cover", "EVAL-9", "a prediction row for every item, planned arm and scheduled seed", EVAL_9_cover),
        ("evaluation.score_reproduces", "EVAL-9", "every score is the mean of its prediction rows", EVAL_9_values),
    )
    def _check_predictions(self) -> None:
        """EVAL-9 by its one implementation: each score's rows (predictions_format), every planned arm and scheduled
        seed scored (predictions_cover), every score their mean (score_reproduces)."""
        self.restated("evaluation.predictions_format")
        self.restated("evaluation.predictions_cover")
        self.restated("evaluation.score_reproduces")

    # ---- loss evaluation (LOSS-1, LOSS-2) ----

    @run_dir_checks(
        ("loss_eval.missing", "LOSS-1", "a loss endpoint's passed evaluation left loss_eval", LOSS_1),
        ("loss_eval.values", "LOSS-2", "one aggregation; value, nll_sum and n_tokens finite, value recomputes from its totals, every arm on the same tokens", LOSS_2),
        ("loss_eval.value", "LOSS-3", "loss_eval recomputes from the retained per-example prediction rows", LOSS_3),
        ("loss_eval.aggregation", "LOSS-4", "loss_eval's aggregation is the spec's", LOSS_4),
    )
    def check_loss_eval(self) -> None:
        """LOSS-1..4 by their one implementation (experiment.grading.evaluator) on this run's RESULT, typed plan and
        evidence/; the run directory supplies whether the evaluation gate passed (a missing loss_eval is a problem
        only then)."""
        if self.result.get("loss_eval") is None:
            if self.section_required("loss_eval"):
                self.restated("loss_eval.missing")
            return
        self.restated("loss_eval.values")
        self.restated("loss_eval.value")
        self.restated("loss_eval.aggregation")
