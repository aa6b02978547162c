"""The training data's records: adaptation manifests (ADAPT-1), the generation audit (GA-*) and
feasibility (FEAS-*)."""

from __future__ import annotations

from typing import Any

from experiment.grading.decision import ADAPT_1_hash, ADAPT_1_missing, ADAPT_1_pairs, ADAPT_1_shape
from experiment.grading.feasibility import FEAS_1, FEAS_2, FEAS_3, FEAS_4, FEAS_5, FEAS_7, FEAS_8
from experiment.grading.common import equal_json, is_integer, short
from experiment.grading.registry import run_dir_checks
from experiment.grading.run_dir.files import jsonl_rows, audit_sample_ids


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
        ("generation_audit.missing", "GA-2", "a passed audit gate left its record"),
        ("generation_audit.shape", "GA-2", "generation_audit {version: 1, stage before_training, integer seed}"),
        ("generation_audit.files", "GA-3", "dataset, evaluation and audit files are retained and parse"),
        ("generation_audit.counts", "GA-4", "counts are integers (never booleans) that add up and match the dataset file"),
        ("generation_audit.sample", "GA-5", "the sample is the deterministic one, re-solved blind"),
        ("generation_audit.limits", "GA-9", "a passed audit is within the spec's label-error and overlap limits"),
    )
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
        rows, error = jsonl_rows(data, str(dataset_file))
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
