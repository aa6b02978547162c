"""The decision (DEC-*): the observations file, their cover and the recomputed decision."""

from __future__ import annotations

import hashlib
from typing import Any

from experiment.stats.decision import DecisionError, decision_summary, observation_from_row, read_observations_jsonl
from experiment.stats.selection import confirmation_only_problems, selection_problems, split_items
from experiment.contract.spec import DECISION_METHODS
from experiment.contract.run_layout import evidence_path
from experiment.grading.common import ABS_TOL, as_list, close, equal_json, is_number, short
from experiment.run.store import MAX_EVIDENCE_FILE_BYTES
from experiment.grading.registry import run_dir_checks
from experiment.grading.run_dir.files import text_key, explicit_item_ids, MAX_OBSERVATIONS


class DecisionChecks:
    """The decision (DEC-*): the observations file, their cover and the recomputed decision."""

    # ---- decision (DEC-*) ----

    @run_dir_checks(
        ("decision.missing", "DEC-1", "a decision object once the decision stage finished"),
        ("decision.shape", "DEC-2", "decision {version: 1} with exactly one of observations and observations_file"),
        ("decision.recompute", "DEC-8", "the decision recomputes from the observations to the recorded criteria"),
        ("decision.selection", "DEC-13", "the adaptive selection recomputes and holds confirmation items only"),
    )
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
        return explicit_item_ids(evaluators[identifier])

    @run_dir_checks(
        ("decision.observations_file", "DEC-3", "observations_file is {name, sha256} of a metrics file"),
        ("decision.observations_missing", "DEC-3", "the observations file is retained"),
        ("decision.observations_sha256", "DEC-3", "the observations file hashes to the recorded and manifest sha256"),
        ("decision.observations_cap", "DEC-4", "at most 10 MiB and 100 000 observations"),
        ("decision.observations_format", "DEC-5", "observations parse as the contract's rows"),
    )
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

    @run_dir_checks(
        ("decision.evaluator", "DEC-7", "observations name evaluators of RESULT.evaluation"),
        ("decision.observations_cover", "DEC-6", "observations cover the evaluator's items"),
    )
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
            ids = explicit_item_ids(provenance)
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

    @run_dir_checks(
        ("decision.effect", "DEC-8", "RESULT effect is the recomputed primary effect"),
        ("decision.ci", "DEC-8", "RESULT ci is the recomputed interval"),
        ("decision.margin", "DEC-8", "RESULT margin is the criterion's margin"),
        ("decision.verdict", "DEC-9", "the verdict is the recomputed one"),
        ("decision.confidence", "DEC-9", "no strong confidence when an interval straddles its margin"),
    )
    def _compare_decision(self, record: dict[str, Any], summary: dict[str, Any]) -> None:
        criteria = summary["criteria"]
        recorded = {text_key(c.get("id")): c for c in as_list(record.get("criteria")) if isinstance(c, dict)}
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

    @run_dir_checks(
        ("decision.arm_means", "DEC-10", "per-arm, per-seed observation means are the scores"),
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
                means = criterion["per_arm_seed_means"].get(text_key(score.get("arm")), {})
                mean = means.get(str(score.get("seed")))
                if criterion["metric"] == score.get("metric") and mean is not None and not close(mean, score["value"], abs_tol=ABS_TOL):
                    self.problem(
                        "decision.arm_means",
                        f"score of arm {score.get('arm')} seed {score.get('seed')} is {score['value']} but its observations average {mean}",
                    )
                    break
