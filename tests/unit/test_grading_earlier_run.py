"""The real earlier run's record (a finished run of the GS1 spec as written, by another pipeline, whose
grading the shared specification quotes): the record itself is not in the shared docs, so it is rebuilt
here from what they quote of it, defect by defect, and graded as the exchange graded it (issue 28 item 4):

evaluator invalid (a prose `items.ids` range, a prose `code_sha256`, an id that is not the hash of
its provenance: EVAL-2/3/4); decision unverified ("Observation file name/hash is not retained for
this run": DEC-3); restoration unverified, per arm ("missing or duplicate arm evidence": only an
`after_restore: 1` check, evidence_refs that are not retained files, `actual_config: {"type":
"adamw"}`); correctness unverified although all four checks passed, for the spec's UNRESOLVED
revisions (CORR-6); feasibility unknown with one "Re-projection required: <key> changed or was not
recorded" problem per key, ten keys, because `config` was `{"pilot": "<prose>"}` (FEAS-2);
generation_audit not_applicable (the spec opts out).

Issue 45 item 9 adds what the record held: its `decision` block was only `{"version": 1, "observations_file":
{"name", "sha256"}}` (no method, role mapping or criteria), its restoration `requested` optimizer used the key `lr`,
and every `evidence_ref` named a file that was not retained. Missing evidence takes precedence
(experiment.grading.precedence): the decision is unverified for the observations file alone, restoration
unverified with "<arm>: missing or duplicate arm evidence." per arm, feasibility unknown with the ten re-projection
problems, and no invalid finding restates an absence; in a run directory alike.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

from experiment.contract.spec import canonical_sha256
from experiment.grading import grade_record
from experiment.stats.feasibility import PROJECTION_KEYS
from suite import GS1_SPEC

ARMS = ("grpo_gs8", "gs1_kernel")
EXCHANGE = {"evaluator": "invalid", "decision": "unverified", "restoration": "unverified",
            "correctness": "unverified", "feasibility": "unknown", "generation_audit": "not_applicable"}


def _file(name: str, kind: str, text: str | None) -> dict:
    data = (text or name).encode()
    entry = {"name": name, "kind": kind, "sha256": hashlib.sha256(data).hexdigest()}
    if text is not None:
        entry["content"] = text
    return entry


def earlier_run_record() -> dict:
    spec_text = GS1_SPEC.read_text()
    spec = json.loads(spec_text)
    provenance = {"code_sha256": "the evaluator module of this run (math grader, boxed-answer parser)",
                  "prompt_template": "{question} Write your answer in \\boxed{} format.",
                  "decoding": {"temperature": 0.0, "max_tokens": 512, "stop": "renderer stop sequences (<|im_end|>)"},
                  "parser": "last \\boxed{} integer", "items": {"ids": "gsm8k test 0-1318"}}
    evaluator = "3180ae93" + "0" * 56  # the id it reported; its provenance hashes to something else
    scores = [{"arm": arm, "metric": "accuracy", "value": value, "evaluator_id": evaluator, "seed": 0,
               "predictions_ref": f"predictions-{arm}.jsonl"} for arm, value in zip(ARMS, (0.70, 0.66))]
    optimizer = {"family": "adamw", "lr": 4e-05, "beta1": 0.9, "beta2": 0.95, "eps": 1e-08, "lora_rank": 32,
                 "seed": 0}
    provenance_arms = {arm: {
        "initialization": {"base_checkpoint": spec["base_model"], "source": "server_response",
                           "adapter_sha256": "ab" * 32, "evidence_ref": f"full/{arm}/init.json",
                           "before_first_update": True},
        "restore_count": 1,
        "optimizer_checks": [{"after_restore": 1, "before_next_update": True, "requested": optimizer,
                              "actual_family": "adamw", "actual_config": {"type": "adamw"}, "source": "server_response",
                              "evidence_ref": f"full/{arm}/init.json get_info.optimizer_config"}],
        "initial_output": {"available": True, "batch_sha256": "cd" * 32, "output_sha256": "ef" * 32,
                           "evidence_ref": f"full/{arm}/init.json", "before_first_update": True}} for arm in ARMS}
    path = spec["correctness_preflight"]["paths"][0]
    errors = {key: {"max_abs_error": 0.0, "reference_max_abs": 0.5, "relative_l2_error": 0.0, "cosine_similarity": 1.0}
              for key in path["tolerances"]}
    fixed_input = json.dumps({"rollouts": "one GRPO batch and two GS1 batches"})
    phase = {"seconds": 120.0, "units": 2, "planned_units": 40, "samples": 64, "gpu_count": None,
             "allocation_source": None}
    effective = {"base_model": spec["base_model"], "lora_rank": 32, "dataset": spec["dataset"], "steps": 40,
                 "batch_size": 64, "max_seq_len": 1024, "max_tokens": 512, "arms": list(ARMS), "n_examples": 2560,
                 "n_eval": 1319}
    observations_sha = hashlib.sha256(b"scored rows the run did not retain").hexdigest()
    files = [_file("spec.json", "spec", spec_text), _file("correctness-fixed-input.json", "metrics", fixed_input),
             # "full script and prediction files too large to inline; hashes only"
             _file("run_gs1.py", "script", None), _file("effective-config.json", "effective_config", "{}"),
             _file("code-revision.json", "code_revision", json.dumps({"commit": "1" * 40})),
             *[_file(f"predictions-{arm}.jsonl", "predictions", None) for arm in ARMS],
             _file("decision-summary.json", "metrics", json.dumps({"effect": 0.04}))]
    return {
        "status": "succeeded", "verdict": "refuted", "confidence": "weak", "effect": 0.04, "margin": -0.03,
        "ci": [-0.01, 0.09], "seeds": 1, "grid_edge": False, "deviations": [], "original_hypothesis_tested": True,
        "summary": "Trained both arms for 40 steps and scored GSM8K test. The interval straddles the margin.",
        "reasoning": "The GS1 kernel arm scored 0.70 against 0.66. The interval straddles -0.03, so the verdict is "
                     "refuted with weak confidence.",
        "metrics": {"arms": {arm: {"accuracy": s["value"]} for arm, s in zip(ARMS, scores)}},
        "completed_arms": list(ARMS),
        "evaluation": {"version": 1, "evaluators": {evaluator: provenance}, "scores": scores,
                       "comparisons": [{"metric": "accuracy", "arms": list(ARMS)}]},
        "decision": {"version": 1, "observations_file": {"name": "scored-observations.jsonl", "sha256": observations_sha}},
        "initialization_provenance": {"version": 1, "arms": provenance_arms},
        "correctness_preflight": {"required": True, "paths": [{
            "id": path["id"], "fixed_input": {"sha256": canonical_sha256(json.loads(fixed_input)),
                                              "description": "rollouts sampled once from the initial weights"},
            "baseline_revision": "tinker-cookbook main (the rl loop's group-mean advantage)",
            "reference_revision": "a float64 numpy reference written for this run",
            "implementation_revision": "the run's GS1 advantage loop",
            "precision": "float64", "normalization": "advantages per rollout", "errors": errors}]},
        "feasibility": {"config": {"pilot": "2 steps per arm on the shared service, then the full run"},
                        "effective_config": effective, "primary_endpoint": spec["primary_endpoint"],
                        "source": "timing pilot", "measurements": {"setup": phase, "training": phase, "evaluation": phase},
                        "generation": None, "recovery": {"seconds": 600.0, "gpu_count": None, "allocation_source": None}},
        "evidence": {"version": 1, "files": files, "checkpoints": [],
                     "per_arm_metrics": {arm: {"accuracy": s["value"]} for arm, s in zip(ARMS, scores)}},
    }


def test_the_earlier_run_grades_as_the_exchange_graded_it():
    graded = grade_record(earlier_run_record())
    assert graded.spec_source == "specs/gs1_kernel_vs_grpo_gsm8k.json"  # the spec as written: no revision of ours
    assert {name: c.status for name, c in graded.categories.items()} == EXCHANGE, graded.to_dict()


def test_its_evaluator_is_invalid_for_the_three_defects_the_exchange_named():
    evaluator = grade_record(earlier_run_record()).categories["evaluator"]
    invalid = {issue.rule for issue in evaluator.issues if issue.status == "invalid"}
    assert {"EVAL-2", "EVAL-3", "EVAL-4"} <= invalid


def test_its_decision_is_unverified_because_the_observations_file_is_not_retained():
    """'missing/corrupt files stay unverified': never invalid for a file the record does not carry."""
    decision = grade_record(earlier_run_record()).categories["decision"]
    assert decision.status == "unverified"
    assert {issue.status for issue in decision.issues} == {"unverified"}
    assert any(issue.rule == "DEC-3" and "scored-observations.jsonl" in issue.message for issue in decision.issues)


def test_its_restoration_is_unverified_for_each_arm():
    restoration = grade_record(earlier_run_record()).categories["restoration"]
    assert {issue.status for issue in restoration.issues} == {"unverified"}
    for arm in ARMS:
        assert any(arm in issue.message for issue in restoration.issues)


def test_its_correctness_is_unverified_although_every_check_passed():
    correctness = grade_record(earlier_run_record()).categories["correctness"]
    assert {issue.status for issue in correctness.issues} == {"unverified"}
    assert {issue.rule for issue in correctness.issues} <= {"CORR-6", "CORR-8", "CORR-11"}
    assert sum("UNRESOLVED" in issue.message for issue in correctness.issues) == 2  # baseline and reference


def test_its_feasibility_lists_one_reprojection_problem_per_key():
    feasibility = grade_record(earlier_run_record()).categories["feasibility"]
    reprojection = [issue for issue in feasibility.issues if issue.rule == "FEAS-2"]
    assert len(reprojection) == len(PROJECTION_KEYS) == 10
    assert [issue.message for issue in reprojection] == [
        f"Re-projection required: {key} changed or was not recorded" for key in PROJECTION_KEYS]


def _statuses(graded) -> dict[str, str]:
    return {name: c.status for name, c in graded.categories.items()}


def _run_dir(record: dict, where: Path) -> Path:
    """The record as a run directory holds it: result.json, and evidence/ with the files it retained inline."""
    (where / "evidence").mkdir(parents=True)
    (where / "result.json").write_text(json.dumps(record))
    for entry in record["evidence"]["files"]:
        if "content" in entry:
            (where / "evidence" / entry["name"]).write_text(entry["content"])
    return where


def test_its_decision_says_only_that_the_observations_file_is_not_retained():
    """No method, role mapping or criteria were recorded: the exchange said only that the observations are not
    retained, and set outcome_reason insufficient_evidence; the absent role mapping adds no invalid finding."""
    decision = grade_record(earlier_run_record()).categories["decision"]
    assert [issue.rule for issue in decision.issues] == ["DEC-3"]
    assert any("insufficient_evidence" in note for note in decision.notes)


def test_its_restoration_says_missing_arm_evidence_per_arm():
    restoration = grade_record(earlier_run_record()).categories["restoration"]
    said = {issue.message for issue in restoration.issues if issue.rule == "REST-1"}
    assert said == {f"{arm}: missing or duplicate arm evidence" for arm in ARMS}


def test_its_feasibility_has_exactly_the_ten_problems_the_exchange_listed():
    feasibility = grade_record(earlier_run_record()).categories["feasibility"]
    assert feasibility.status == "unknown"
    assert [issue.rule for issue in feasibility.issues] == ["FEAS-2"] * 10


def test_its_run_directory_grades_as_the_bare_record(tmp_path):
    record = earlier_run_record()
    graded = grade_record(record, run_dir=_run_dir(record, tmp_path / "run"))
    assert _statuses(graded) == EXCHANGE, graded.to_dict()
    assert not [issue for issue in graded.categories["decision"].issues if issue.status == "invalid"]


def test_a_wrong_role_mapping_is_invalid_although_the_observations_are_missing():
    """Precedence leaves out findings that restate an absence, never one about what the record does say."""
    record = earlier_run_record()
    record["decision"]["role_to_arm"] = {"treatment": "grpo_gs8", "baseline": "gs1_kernel"}
    decision = grade_record(record).categories["decision"]
    assert decision.status == "invalid"
    assert any(issue.rule == "DEC-11" for issue in decision.issues)


def test_its_requested_lr_is_read_as_the_learning_rate_the_spec_plans():
    """The record's `requested` writes `lr`, as the spec's restoration groups do: no finding that it names none."""
    restoration = grade_record(earlier_run_record()).categories["restoration"]
    assert not [issue for issue in restoration.issues if issue.rule == "REST-5"]
    record = earlier_run_record()
    for arm in ARMS:
        check = record["initialization_provenance"]["arms"][arm]["optimizer_checks"][0]
        check["requested"] = {**check["requested"], "lr": 4e-04}
    wrong = grade_record(record).categories["restoration"]
    assert wrong.status == "invalid" and any(issue.rule == "REST-5" for issue in wrong.issues)


def test_only_the_arm_whose_evidence_is_not_retained_has_missing_arm_evidence():
    record = earlier_run_record()
    name = "full/grpo_gs8/init.json"
    record["evidence"]["files"].append(_file(name, "metrics", json.dumps({"get_info": {}})))
    entry = record["initialization_provenance"]["arms"]["grpo_gs8"]
    for part in (entry["initialization"], entry["initial_output"], *entry["optimizer_checks"]):
        part["evidence_ref"] = name
    said = {issue.message for issue in grade_record(record).categories["restoration"].issues if issue.rule == "REST-1"}
    assert said == {"gs1_kernel: missing or duplicate arm evidence"}
