"""Validation of run directories: the grader's run-dir layer (experiment/grading/run_dir.py, flows/validate.py).

The run directories are built with tests/records.py (small but real, with RunStore):
`build_gs1_run(runs_dir)` writes a finished GS1 run whose every record is consistent: spec and
plan evidence, gate events, a pinned correctness record, restoration provenance with retained
evidence, a frozen evaluator with prediction files, a retained observations file and the decision
recomputed from it, and a feasibility record. Tests then break one thing at a time.
"""

from __future__ import annotations

import hashlib
import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from records import BASELINE, TREATMENT, build_gs1_run, edit_json_evidence, optimizer_check, record_gate, rewrite_result
from suite import GS1_SPEC, REPO_ROOT, SELFGEN_SPEC

from experiment.stats.decision import OBSERVATIONS_FILE_NAME
from experiment.stats.evaluation import evaluator_id
from experiment.contract.plan import build_plan
from experiment.contract.result import adaptation_batch_hash
from experiment.contract.spec import load_spec, plan_file_path
from experiment.run.store import RunStore
from experiment.grading.run_dir import (
    run_validation,
    validate_run,
    validation_summary,
)


# ---------------------------------------------------------------------------------------------
# tests


@pytest.fixture(scope="module")
def built_gs1_run(tmp_path_factory) -> RunStore:
    """One consistent GS1 run, built once for this module (build_gs1_run, about 0.25 s)."""
    return build_gs1_run(tmp_path_factory.mktemp("validation-template") / "runs")


@pytest.fixture
def run(built_gs1_run, tmp_path) -> RunStore:
    """A test's own copy of the consistent run (the files hold no path of their own), to break."""
    runs_dir = shutil.copytree(built_gs1_run.run_dir.parent, tmp_path / "runs")
    return RunStore.open(runs_dir / built_gs1_run.run_dir.name)


def checks(store: RunStore) -> set[str]:
    return {problem.check for problem in validate_run(store.run_dir)}


def test_a_consistent_run_has_no_problem(run):
    report = run_validation(run.run_dir)
    assert report.problems == []
    assert "decision" in report.checks and "secrets" in report.checks


def test_evaluator_id_that_is_not_the_hash_of_its_provenance(run):
    evaluation = run.read_result()["evaluation"]
    ((old_id, provenance),) = evaluation["evaluators"].items()
    provenance["parser"] = "changed after the id was computed"
    rewrite_result(run, evaluation=evaluation)
    problems = [p for p in validate_run(run.run_dir) if p.check == "evaluation.evaluator_id"]
    assert len(problems) == 1 and old_id[:12] in problems[0].message


def test_item_ids_given_as_a_prose_range(run):
    evaluation = run.read_result()["evaluation"]
    (provenance,) = evaluation["evaluators"].values()
    provenance["items"] = {"ids": "gsm8k-test-0000 .. gsm8k-test-0023"}
    new_id = evaluator_id(provenance)  # a self-consistent id: the item list itself is the defect
    evaluation["evaluators"] = {new_id: provenance}
    for score in evaluation["scores"]:
        score["evaluator_id"] = new_id
    rewrite_result(run, evaluation=evaluation)
    assert "evaluation.item_ids" in checks(run)
    assert "evaluation.evaluator_id" not in checks(run)


def test_prose_code_sha256_is_reported(run):
    evaluation = run.read_result()["evaluation"]
    ((_, provenance),) = evaluation["evaluators"].items()
    provenance["code_sha256"] = "hash of the grader module"
    evaluation["evaluators"] = {evaluator_id(provenance): provenance}
    rewrite_result(run, evaluation=evaluation)
    assert "evaluation.code_sha256" in checks(run)


def test_observations_file_not_retained_in_evidence(run):
    (run.run_dir / "evidence" / OBSERVATIONS_FILE_NAME).unlink()
    found = checks(run)
    assert "decision.observations_missing" in found
    assert "evidence.missing_file" in found


def test_observations_file_changed_after_the_decision(run):
    path = run.run_dir / "evidence" / OBSERVATIONS_FILE_NAME
    rows = [json.loads(line) for line in path.read_text().splitlines()]
    for row in rows:
        if row["arm"] == TREATMENT:
            row["value"] = 0.0
    path.write_text("".join(json.dumps(row) + "\n" for row in rows))
    found = checks(run)
    # caught on the file's hash (DEC-3, EVID-7); nothing is recomputed from bytes that do not hash to the manifest's
    # sha256 (missing or unusable evidence makes the decision unverified, never a second, invalid finding)
    assert {"decision.observations_sha256", "evidence.immutable"} <= found
    assert not {"decision.effect", "decision.ci"} & found


def test_result_effect_that_does_not_follow_from_the_observations(run):
    result = run.read_result()
    rewrite_result(run, effect=result["effect"] + 0.05)
    assert checks(run) == {"decision.effect"}


def test_restoration_evidence_missing_per_arm(run):
    provenance = run.read_result()["initialization_provenance"]
    entry = provenance["arms"][BASELINE]
    entry["initialization"]["evidence_ref"] = f"full/{BASELINE}/init.json"
    entry["optimizer_checks"] = [optimizer_check(1)]  # no creation check (after_restore 0)
    entry["optimizer_checks"][0]["actual_config"] = {"type": "adamw"}
    rewrite_result(run, initialization_provenance=provenance)
    problems = validate_run(run.run_dir)
    found = {p.check for p in problems}
    assert {"provenance.evidence_ref", "provenance.optimizer_checks", "provenance.optimizer_mismatch"} <= found
    assert all(BASELINE in p.message for p in problems if p.check.startswith("provenance."))


def test_restoration_entry_missing_for_an_arm(run):
    provenance = run.read_result()["initialization_provenance"]
    del provenance["arms"][TREATMENT]
    rewrite_result(run, initialization_provenance=provenance)
    assert checks(run) == {"provenance.shape"}


def test_restoration_group_loading_different_checkpoints(run):
    provenance = run.read_result()["initialization_provenance"]
    provenance["arms"][TREATMENT]["initialization"]["loaded_checkpoint_uri"] = "tinker://run/other/state-0000"
    rewrite_result(run, initialization_provenance=provenance)
    assert "provenance.group_mismatch" in checks(run)  # REST-2 and REST-4 also find the checkpoint it never loaded


def test_secret_value_written_into_a_file(run, monkeypatch):
    monkeypatch.setenv("MODAL_PROXY_TOKEN_SECRET", "ws-abcdef123456")
    assert "secrets.value" not in checks(run)
    (run.run_dir / "notes.txt").write_text("debug: token ws-abcdef123456\n")
    problems = [p for p in validate_run(run.run_dir) if p.check == "secrets.value"]
    assert len(problems) == 1
    assert "notes.txt" in problems[0].message and "MODAL_PROXY_TOKEN_SECRET" in problems[0].message
    assert "ws-abcdef123456" not in problems[0].message


def test_header_shaped_credential_is_found_and_placeholders_are_not(run, monkeypatch):
    for name in ("TINKER_API_KEY", "MODAL_PROXY_TOKEN_ID", "MODAL_PROXY_TOKEN_SECRET"):
        monkeypatch.delenv(name, raising=False)
    run.append_event("note", text="headers Modal-Key: $MODAL_PROXY_TOKEN_ID and Modal-Secret: <redacted>")
    assert "secrets.header" not in checks(run)
    run.append_event("note", text="Authorization: Bearer $TOKEN; authorization: required")
    assert "secrets.header" not in checks(run)
    run.append_event("note", headers={"Modal-Secret": "as-9f8e7d6c5b4a"})
    problems = [p for p in validate_run(run.run_dir) if p.check == "secrets.header"]
    assert len(problems) == 1 and "events.jsonl" in problems[0].message and "as-9f8e7d6c5b4a" not in problems[0].message


def test_plan_falls_back_to_the_spec_file_named_by_run_created(tmp_path):
    spec = load_spec(GS1_SPEC)
    store = RunStore.create(tmp_path / "runs", spec, build_plan(spec))  # no spec or plan evidence retained
    assert validate_run(store.run_dir) == []
    store.update_result(verdict="supported", confidence="strong")  # a verdict while running
    assert "vocabulary.verdict" in checks(store)


def test_run_without_any_readable_spec_says_plan_checks_were_skipped(tmp_path):
    spec = load_spec(GS1_SPEC)
    store = RunStore.create(tmp_path / "runs", spec, build_plan(spec))
    events = store.run_dir / "events.jsonl"
    events.write_text(events.read_text().replace(str(spec.source.path), str(tmp_path / "gone.json")))
    assert checks(store) == {"run.plan"}


def test_flat_per_arm_metric_keys(run):
    run.update_result(metrics={f"{TREATMENT}_accuracy": 0.7})
    assert checks(run) == {"result.metrics"}


def test_verdict_on_a_failed_direction_confidence_run(run):
    rewrite_result(run, status="failed")
    found = checks(run)
    assert "vocabulary.verdict" in found


def test_deviation_first_reported_in_the_final_update(run):
    deviation = {"field": "steps", "original": "40", "effective": "20", "reason": "budget"}
    run.update_result(deviations=[deviation])
    problems = [p for p in validate_run(run.run_dir) if p.check == "deviations.shape"]
    assert len(problems) == 1 and "unrecorded" in problems[0].message


def test_deviation_recorded_in_a_running_update_event(run):
    deviation = {"field": "steps", "original": "40", "effective": "20", "reason": "budget"}
    run.append_event("result_updated", status="running", deviations=[deviation])
    run.update_result(deviations=[deviation])
    assert checks(run) == set()


def test_correctness_errors_outside_the_spec_tolerance(run):
    record = run.read_result()["correctness_preflight"]
    record["paths"][0]["errors"]["reference_gradient"]["max_abs_error"] = 0.5
    rewrite_result(run, correctness_preflight=record)
    problems = [p for p in validate_run(run.run_dir) if p.check == "correctness.acceptance"]
    assert len(problems) == 1 and "reference_gradient" in problems[0].message


def test_unpinned_correctness_revisions(run):
    record = run.read_result()["correctness_preflight"]
    record["paths"][0]["baseline_revision"] = "UNRESOLVED: pin the cookbook commit"
    rewrite_result(run, correctness_preflight=record)
    assert checks(run) == {"correctness.revisions"}


def test_reasoning_must_note_unresolved_spec_revisions(run):
    edit_json_evidence(run.run_dir, "spec-revision.plan.json", lambda revision: revision.pop("correctness_preflight"))
    rewrite_result(run, reasoning="The effect was measured. One seed limits confidence.")
    assert checks(run) == {"correctness.unresolved_note"}


def test_prediction_rows_missing_for_some_items(run):
    name = f"predictions-{TREATMENT}.jsonl"
    path = run.run_dir / "evidence" / name
    lines = path.read_text().splitlines()[:-3]
    path.write_text("\n".join(lines) + "\n")
    found = checks(run)
    # caught on the file's hash (EVID-7) and as predictions not retained under it (EVAL-8); rows that cannot be read are
    # not held against the cover
    assert "evaluation.predictions_missing" in found and "evidence.immutable" in found


def test_feasibility_record_shape(run):
    record = run.read_result()["feasibility"]
    record["config"] = {"pilot": "2 steps per arm"}
    record["recovery"]["seconds"] = 0
    del record["measurements"]["evaluation"]["samples"]
    rewrite_result(run, feasibility=record)
    assert checks(run) == {"feasibility.shape", "feasibility.config", "feasibility.recovery", "feasibility.phases"}  # FEAS-1: its model


def test_evidence_file_not_in_the_manifest(run):
    (run.run_dir / "evidence" / "extra.json").write_text("{}")
    assert checks(run) == {"evidence.unlisted"}


def test_run_stopped_at_an_early_gate_is_not_blamed_for_later_sections(tmp_path):
    spec = load_spec(GS1_SPEC)
    plan = build_plan(spec)
    store = RunStore.create(tmp_path / "runs", spec, plan)
    store.add_evidence("spec.json", "spec", GS1_SPEC.read_bytes())
    store.add_evidence("execution-plan.json", "effective_config", json.dumps(plan.to_dict(), sort_keys=True))
    record_gate(store, "spec_intake", "passed", deviations=0)
    record_gate(store, "preflight_probe", "failed")
    store.update_result(
        status="failed",
        summary="The preflight probe failed.",
        outcome_reason="incomplete_execution",
        reasoning="Gate preflight_probe failed. No verdict.",
    )
    assert validate_run(store.run_dir) == []


def test_missing_section_after_its_gate_passed(run):
    result = run.read_result()
    del result["feasibility"]
    (run.run_dir / "result.json").write_text(json.dumps(result))
    assert checks(run) == {"feasibility.missing"}


def test_three_way_run_rules(tmp_path):
    spec = load_spec(SELFGEN_SPEC)
    plan = build_plan(spec)
    store = RunStore.create(tmp_path / "runs", spec, plan)
    store.add_evidence("spec.json", "spec", SELFGEN_SPEC.read_bytes())
    store.add_evidence("spec-revision.plan.json", "spec_revision", plan_file_path(SELFGEN_SPEC).read_bytes())
    store.add_evidence("execution-plan.json", "effective_config", json.dumps(plan.to_dict(), sort_keys=True))
    record_gate(store, "spec_intake", "passed", deviations=0)
    record_gate(store, "preflight_probe", "failed")
    store.update_result(
        status="failed", summary="The probe failed.", verdict="inconclusive", outcome_reason="incomplete_execution"
    )
    assert validate_run(store.run_dir) == []
    store.update_result(verdict="refuted", confidence="weak", effect=0.1)
    found = checks(store)
    assert "vocabulary.outcome_reason" in found


def test_loss_eval_consistency(run):
    entry = {
        "aggregation": "token_mean",
        "value": 2.0,
        "token_mean": 2.0,
        "example_mean": 2.1,
        "nll_sum": 200.0,
        "n_tokens": 100,
        "n_examples": 10,
        "n_empty": 0,
    }
    rewrite_result(
        run,
        loss_eval={
            "aggregation": "token_mean",
            "arms": {BASELINE: entry, TREATMENT: dict(entry, value=1.9, n_tokens=99)},
        },
    )
    found = checks(run)
    # GS1's endpoint is accuracy, so loss_eval should not appear at all; the numbers are wrong too
    assert {"result.conditional", "loss_eval.values"} <= found


def test_adaptation_hashes_per_pair(run):
    ids = [["b0", "b1"], ["b2", "b3"]]
    manifests = [
        {
            "arm": BASELINE,
            "pair": "p",
            "warmup_batches": 0,
            "adaptation_batch_ids": ids,
            "adaptation_batch_hash": adaptation_batch_hash(ids),
        },
        {
            "arm": TREATMENT,
            "pair": "p",
            "warmup_batches": 2,
            "adaptation_batch_ids": ids,
            "adaptation_batch_hash": adaptation_batch_hash(ids),
        },
    ]
    rewrite_result(run, adaptation_manifests=manifests)
    assert checks(run) == set()
    assert adaptation_batch_hash(ids) == hashlib.sha256(json.dumps(ids).encode()).hexdigest()
    manifests[1]["adaptation_batch_ids"] = [["b2", "b3"], ["b0", "b1"]]
    rewrite_result(run, adaptation_manifests=manifests, confidence="strong")
    assert {"adaptation.hash", "adaptation.pair_mismatch"} <= checks(run)


def test_validation_summary_lists_failed_checks(run):
    rewrite_result(run, effect=9.0, summary="")
    summary = validation_summary(validate_run(run.run_dir))
    assert summary["status"] == "failed"
    assert summary["failed_checks"] == ["decision.effect", "result.summary"]
    assert summary["problem_count"] == len(summary["problems"]) == 2
    assert validation_summary([])["status"] == "passed"


def run_cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "flows.validate", *args],
        check=False,
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_cli_clean_run_problem_run_and_bad_input(run, tmp_path):
    """flows.validate is the grader; these self-consistency checks feed its `problems` list."""
    clean = run_cli(str(run.run_dir), "--json")
    assert clean.returncode in (0, 1, 3), clean.stderr
    assert not [p for p in json.loads(clean.stdout)["problems"] if p.startswith("decision.")]
    (run.run_dir / "evidence" / OBSERVATIONS_FILE_NAME).unlink()
    broken = run_cli(str(run.run_dir))
    assert broken.returncode == 1
    assert any(line.strip().startswith("decision.observations_missing: ") for line in broken.stdout.splitlines())
    for bad in (tmp_path / "nowhere", tmp_path):
        result = run_cli(str(bad))
        assert result.returncode == 2
        assert len(result.stderr.strip().splitlines()) == 1 and "Traceback" not in result.stderr


def test_activation_value_outside_its_range_after_the_gate_passed(run):
    calibration = run.read_result()["activation_calibration"]
    calibration["values"]["pilot_mean_reward"] = 0.95
    calibration["values"]["executed_group_size_treatment"] = 2
    rewrite_result(run, activation_calibration=calibration)
    problems = [p for p in validate_run(run.run_dir) if p.check == "activation.range"]
    assert len(problems) == 2
    assert [any(metric in p.message for p in problems) for metric in ("executed_group_size_treatment",
                                                                       "pilot_mean_reward")] == [True, True]


def test_model_deviation_must_be_said_in_summary(run):
    deviation = {
        "field": "model",
        "original": "Qwen/Qwen3.5-2B",
        "effective": "embedded/tiny-arith",
        "reason": "not served",
    }
    run.append_event("result_updated", status="running", deviations=[deviation])
    run.update_result(deviations=[deviation])
    assert checks(run) == {"deviations.shape"}
    run.update_result(summary="Ran on embedded/tiny-arith instead of Qwen/Qwen3.5-2B, which is not served.")
    assert checks(run) == set()


def test_verdict_needs_every_trained_arm_completed(run):
    rewrite_result(run, completed_arms=[BASELINE])
    assert checks(run) == {"result.metrics"}


def test_finished_run_without_required_evidence_kinds(tmp_path):
    store = build_gs1_run(tmp_path / "runs")
    manifest_path = store.run_dir / "evidence" / "manifest.json"
    manifest = json.loads(manifest_path.read_text())
    scripts = {entry["name"] for entry in manifest["files"] if entry["kind"] == "script"}  # rl-loop.py, the reference
    for name in scripts:
        (store.run_dir / "evidence" / name).unlink()
    manifest["files"] = [entry for entry in manifest["files"] if entry["name"] not in scripts]
    manifest_path.write_text(json.dumps(manifest))
    result = store.read_result()
    result["evidence"]["files"] = [entry for entry in result["evidence"]["files"] if entry["name"] not in scripts]
    (store.run_dir / "result.json").write_text(json.dumps(result))
    problems = [p for p in validate_run(store.run_dir) if p.check == "evidence.required_kinds"]
    assert len(problems) == 1 and "script" in problems[0].message


def test_signed_url_is_a_credential(run):
    run.append_event("note", source_url="https://example.org/attachments/x.jsonl")
    assert "secrets.url" not in checks(run)
    run.append_event("note", source_url="https://example.org/attachments/x.jsonl?sig=ab12cd34ef")
    assert "secrets.url" in checks(run)


def test_score_that_its_predictions_and_observations_do_not_reproduce(run):
    evaluation = run.read_result()["evaluation"]
    evaluation["scores"][0]["value"] = round(evaluation["scores"][0]["value"], 2)
    rewrite_result(run, evaluation=evaluation)
    assert checks(run) == {"evaluation.scores", "evaluation.score_reproduces", "decision.arm_means"}  # EVAL-7: metrics post the score


def test_requested_optimizer_that_is_not_the_spec_groups(run):
    provenance = run.read_result()["initialization_provenance"]
    for check in provenance["arms"][TREATMENT]["optimizer_checks"]:
        check["requested"]["learning_rate"] = 1e-4
        check["actual_config"]["learning_rate"] = 1e-4
    rewrite_result(run, initialization_provenance=provenance)
    problems = [p for p in validate_run(run.run_dir) if p.check == "provenance.requested"]
    assert len(problems) == 1 and all(TREATMENT in p.message and "learning_rate" in p.message for p in problems)


SECTIONS = [
    "metrics",
    "completed_arms",
    "deviations",
    "correctness_preflight",
    "initialization_provenance",
    "evaluation",
    "decision",
    "feasibility",
    "activation_calibration",
    "capacity_block",
    "generation_audit",
    "adaptation_manifests",
]


@pytest.mark.parametrize("section", SECTIONS)
@pytest.mark.parametrize("garbage", ["prose instead of a record", [1, {"id": ["x"]}], {"version": 1, "arms": {"a": 1}}])
def test_malformed_sections_are_problems_not_exceptions(run, section, garbage):
    rewrite_result(run, **{section: garbage})
    problems = validate_run(run.run_dir)
    assert problems, f"{section} = {garbage!r} was accepted"
    assert all("\n" not in str(problem) for problem in problems)


def test_checkpoint_references_are_service_uris(run):
    run.add_checkpoint(TREATMENT, 40, "tinker://run/gs1_kernel/step-40")
    assert checks(run) == set()
    run.add_checkpoint(BASELINE, 40, "/home/user/checkpoints/grpo.safetensors")
    problems = [p for p in validate_run(run.run_dir) if p.check == "evidence.checkpoints"]
    assert len(problems) == 1 and "grpo.safetensors" in problems[0].message


# ---------------------------------------------------------------------------------------------
# mutation-testing survivors (issue 17): a wrong verdict or optimizer must not pass the validator


def test_direction_verdict_that_the_observations_do_not_give(run):
    # 24 items, effect 1/12, Hoeffding half-width 2*sqrt(ln(20)/48) ~ 0.50: the interval straddles the
    # margin -0.03, so the observations give "refuted" (weak); "supported" must be flagged.
    assert run.read_result()["verdict"] == "refuted" and "decision.verdict" not in checks(run)
    rewrite_result(run, verdict="supported")
    assert "decision.verdict" in checks(run)


def _three_way_gs1_spec(tmp_path: Path, margin: float) -> Path:
    spec = json.loads(GS1_SPEC.read_text())
    spec["verdict_vocabulary"] = "three_way"
    spec["decision_rule"]["criteria"][0]["margin"] = margin
    path = tmp_path / "gs1_three_way.json"
    path.write_text(json.dumps(spec))
    # with its revision file, which pins the correctness revisions (intake refuses the spec alone for them)
    path.with_name("gs1_three_way.plan.json").write_text(GS1_SPEC.with_name(GS1_SPEC.stem + ".plan.json").read_text())
    return path


@pytest.mark.parametrize("margin, given, wrong", [
    # margin 0.99 (intake refuses a margin at the effect's range, [-1, 1]): upper bound 1/12 + 0.50 < 0.99 -> every
    # criterion fails -> refuted
    (0.99, "refuted", "supported"),
    # margin -0.99: lower bound 1/12 - 0.50 > -0.99 -> every criterion passes -> supported
    (-0.99, "supported", "refuted"),
])
def test_three_way_verdict_that_the_observations_do_not_give(tmp_path, margin, given, wrong):
    store = build_gs1_run(tmp_path / "runs", _three_way_gs1_spec(tmp_path, margin))
    result = store.read_result()
    result.pop("confidence", None)
    result.update(verdict=given, outcome_reason=given)
    (store.run_dir / "result.json").write_text(json.dumps(result, indent=2))
    assert "decision.verdict" not in checks(store)
    rewrite_result(store, verdict=wrong, outcome_reason=wrong)
    problems = [p for p in validate_run(store.run_dir) if p.check == "decision.verdict"]
    assert len(problems) == 1 and f"verdict {wrong} is not the recomputed {given}" in problems[0].message


def test_actual_learning_rate_different_from_the_requested_one(run):
    """requested (the spec's 4e-05) != actual (what the server reports): a wrong optimizer."""
    provenance = run.read_result()["initialization_provenance"]
    for check in provenance["arms"][TREATMENT]["optimizer_checks"]:
        check["actual_config"]["learning_rate"] = 4e-04
    rewrite_result(run, initialization_provenance=provenance)
    problems = [p for p in validate_run(run.run_dir) if p.check == "provenance.optimizer_mismatch"]
    assert all(TREATMENT in p.message and "learning_rate" in p.message for p in problems)
    assert {f"after_restore {n}" for n in (0, 1)} <= {p.message.split(": ")[0].split(", ")[1] for p in problems}
    assert "provenance.requested" not in checks(run)


def test_actual_family_different_from_the_requested_one(run):
    provenance = run.read_result()["initialization_provenance"]
    provenance["arms"][BASELINE]["optimizer_checks"][0]["actual_family"] = "dimuon"
    rewrite_result(run, initialization_provenance=provenance)
    problems = [p for p in validate_run(run.run_dir) if p.check == "provenance.optimizer_mismatch"]
    assert len(problems) == 1 and BASELINE in problems[0].message and "dimuon" in problems[0].message
