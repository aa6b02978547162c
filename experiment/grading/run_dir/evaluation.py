"""The evaluation record (EVAL-*) and the loss evaluation (LOSS-1, LOSS-2)."""

from __future__ import annotations

from typing import Any

from experiment.grading.evaluator import EVAL_2, EVAL_3, EVAL_4, EVAL_5, EVAL_6
from experiment.grading.common import ABS_TOL, close, equal_json, is_number, short
from experiment.grading.registry import run_dir_checks
from experiment.grading.run_dir.files import _text_key, _explicit_item_ids, _jsonl_rows, LOSS_ARM_KEYS


class _EvaluationChecks:
    """The evaluation record (EVAL-*) and the loss evaluation (LOSS-1, LOSS-2)."""

    # ---- evaluation (EVAL-*) ----

    @run_dir_checks(
        ("evaluation.missing", "EVAL-1", "a passed evaluation gate left its record"),
        ("evaluation.shape", "EVAL-1", "evaluation is {version: 1, evaluators, scores, comparisons}"),
        ("evaluation.scores", "EVAL-7", "every score names a known evaluator and a finite value"),
        ("evaluation.predictions_missing", "EVAL-8", "prediction files are retained for the scored arms"),
    )
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
            if not isinstance(provenance, dict):
                self.problem("evaluation.shape", f"evaluator {identifier[:12]}: provenance must be an object")
        self._check_evaluators()
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

    def _scheduled_seeds(self, scores: list[Any]) -> list[int]:
        seeds = (self.plan.get("decision") or {}).get("seeds")
        if isinstance(seeds, list) and seeds:
            return seeds
        return sorted(
            {score.get("seed") for score in scores if isinstance(score, dict) and isinstance(score.get("seed"), int)}
        )

    @run_dir_checks(
        ("evaluation.predictions_format", "EVAL-9", "prediction files are JSONL rows with the required fields"),
        ("evaluation.predictions_cover", "EVAL-9", "a prediction row for every item, arm and seed"),
        ("evaluation.score_reproduces", "EVAL-9", "every score is the mean of its prediction rows"),
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

    # ---- loss evaluation (LOSS-1, LOSS-2) ----

    @run_dir_checks(
        ("loss_eval.missing", "LOSS-1", "a loss endpoint's passed evaluation left loss_eval"),
        ("loss_eval.shape", "LOSS-1", "loss_eval is {aggregation, arms} with every arm key"),
        ("loss_eval.aggregation", "LOSS-2", "one aggregation, token_mean or example_mean, the spec's"),
        ("loss_eval.values", "LOSS-2", "value, nll_sum and n_tokens finite with n_tokens > 0"),
        ("loss_eval.value", "LOSS-2", "value is nll_sum / n_tokens (token_mean) or example_mean"),
        ("loss_eval.same_tokens", "LOSS-2", "every arm scored on the same (n_tokens, n_examples)"),
    )
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
