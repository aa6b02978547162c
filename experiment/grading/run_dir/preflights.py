"""The preflights' records: correctness preflight (CORR-*) and initialization provenance (REST-*)."""

from __future__ import annotations

from typing import Any

from experiment.stats.correctness import accepts
from experiment.contract.spec import OPTIMIZER_CONFIG_ALIASES, OPTIMIZER_FAMILY_ALIASES
from experiment.grading.common import ABS_TOL, FLOAT_TOL, as_dict, as_list, equal_json, is_integer, is_number, short
from experiment.grading.registry import run_dir_checks
from experiment.grading.run_dir.files import text_key, is_hex64


class PreflightChecks:
    """The preflights' records: correctness preflight (CORR-*) and initialization provenance (REST-*)."""

    # ---- correctness preflight (CORR-*) ----

    @run_dir_checks(
        ("correctness.missing", "CORR-1", "a passed correctness gate left its record"),
        ("correctness.shape", "CORR-2", "correctness_preflight is {required, paths}; stock-only has no paths"),
        ("correctness.required", "CORR-1", "required is true when the plan says the preflight applies"),
        ("correctness.paths", "CORR-2", "one record per spec path and no other"),
        ("correctness.fixed_input", "CORR-9", "fixed_input.sha256 is a 64-hex hash"),
        ("correctness.revisions", "CORR-6", "revisions pinned and equal to the spec's"),
        ("correctness.lr_scaling", "CORR-5", "every LR probe has a numeric learning_rate and update_norm"),
        ("correctness.unresolved_note", "CORR-6", "UNRESOLVED spec revisions are named as unverified in reasoning"),
    )
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
        reported = {text_key(path.get("id")): path for path in record["paths"] if isinstance(path, dict)}
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
            if not is_hex64(fixed.get("sha256")):
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

    @run_dir_checks(
        ("correctness.errors", "CORR-3", "measured errors for every tolerance key"),
        ("correctness.acceptance", "CORR-4", "no run went on past a check that fails its tolerance"),
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

    @run_dir_checks(
        ("provenance.missing", "REST-1", "a passed restoration gate left initialization_provenance"),
        ("provenance.shape", "REST-1", "initialization_provenance is {version: 1, arms}"),
        ("provenance.arm_missing", "REST-1", "every restoration arm has an entry"),
    )
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

    @run_dir_checks(
        ("provenance.initialization", "REST-2", "initialization proof before the first update"),
        ("provenance.evidence_ref", "REST-8", "every evidence_ref names a retained evidence file"),
    )
    def _check_initialization(self, arm: str, init: Any) -> None:
        if not isinstance(init, dict):
            self.problem("provenance.initialization", f"arm {arm}: initialization is missing")
            return
        if not init.get("base_checkpoint"):
            self.problem("provenance.initialization", f"arm {arm}: initialization.base_checkpoint is missing")
        has_adapter = is_hex64(init.get("adapter_sha256")) and init.get("source") in ("server_response", "local_hash")
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
        self._check_retained_before_update(arm, "initialization", init)

    @run_dir_checks(
        ("provenance.restore_count", "REST-4", "restore_count is a non-negative integer, never a boolean"),
        ("provenance.optimizer_checks", "REST-4", "one optimizer check at creation and per restore, before updates"),
        ("provenance.unverified", "REST-6", "actual optimizer family and config come from a server response"),
        ("provenance.optimizer_mismatch", "REST-6", "actual family and config are the requested"),
    )
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
        if len(seen) != restore_count + 1 or seen != list(range(len(seen))):
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

    @run_dir_checks(
        ("provenance.requested", "REST-5", "the requested optimizer is the spec group's"),
    )
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

    @run_dir_checks(
        ("provenance.actual_config", "REST-6", "actual_config holds the requested values"),
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

    @run_dir_checks(
        ("provenance.initial_output", "REST-7", "initial_output with hashes before the first update, or a reason"),
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
            if not is_hex64(output.get(key)):
                self.problem("provenance.initial_output", f"arm {arm}: initial_output.{key} is not a 64-hex hash")
        self._check_retained_before_update(arm, "initial_output", output)

    def _check_retained_before_update(self, arm: str, field: str, entry: dict[str, Any]) -> None:
        """An initialization or initial output names a retained evidence file and was taken before the first update
        (its problems under provenance.evidence_ref and provenance.<field>)."""
        if not self.files.is_retained(entry.get("evidence_ref")):
            self.problem(
                "provenance.evidence_ref",
                f"arm {arm}: {field}.evidence_ref {short(entry.get('evidence_ref'))} names no retained evidence file",
            )
        if entry.get("before_first_update") is not True:
            self.problem(f"provenance.{field}", f"arm {arm}: {field}.before_first_update is not true")

    @run_dir_checks(
        ("provenance.group_mismatch", "REST-3", "a group's initialization and initial outputs are equal"),
    )
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
            present = {text_key(value) for value in values.values() if value is not None}
            if len(present) > 1:
                listed = ", ".join(f"{name}={short(value, 20)}" for name, value in values.items())
                self.problem("provenance.group_mismatch", f"{part}.{key} differs across the group ({listed})")


def _same_code_parity(path: dict[str, Any]) -> bool:
    """The path reports its baseline check's two sides as the same code (its baseline_revision then names
    what ran, not the pin; the grader keeps the check unverified, CORR-3)."""
    return any(isinstance(entry, dict) and entry.get("same_code") is True
               for entry in as_dict(path.get("parity_sides")).values())
