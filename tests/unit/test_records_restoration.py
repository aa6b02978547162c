"""Restore counts are true and the create-save-restore update is graded (issue 28 item 5; REST-4, REST-10).

- Every arm's client is created from the saved initialization checkpoint: that load is a restore, so
  `restore_count` counts it, and each restore is recorded with its client, checkpoint, method, time and
  evidence (`restores`). The grader recomputes the count from those records and rejects an arm created
  from saved state that says restore_count 0 (what every record said before).
- REST-10: the create-save-restore check retains both clients' full-precision outputs after the same
  second step; the grader recomputes their difference and checks it against the tolerance fixed
  before measuring. A record that keeps only the claimed difference (as before) is unverified.
Each rule is shown passing the old record when weakened (removed from the grader's checks) first."""

from __future__ import annotations

import copy
import json

import pytest

from experiment.contract.result_models import evidence_file
from experiment.grading import grade_record
from experiment.grading import restoration as grading
from experiment.rl import restoration as r


def _restoration(result) -> tuple[str, list[str]]:
    graded = grade_record(result).categories["restoration"]
    return graded.status, [issue.sentence() for issue in graded.issues]


def _without(monkeypatch, check) -> None:
    monkeypatch.setattr(grading, "CHECKS", [c for c in grading.CHECKS if c is not check])


def _put_evidence(result, name: str, content: dict) -> None:
    files = [f for f in result["evidence"]["files"] if f["name"] != name]
    result["evidence"]["files"] = files + [evidence_file(name, "metrics", json.dumps(content).encode())]


def _created_from_checkpoint(result, with_restores: bool):
    """Every arm created from the initialization checkpoint (the pipeline's arms are); with or without
    the restore records the pipeline now writes (graded_record's arms have them: without, restore_count 0
    and the creation check only, what every record said before)."""
    for arm, entry in result["initialization_provenance"]["arms"].items():
        entry["initialization"]["checkpoint_uri"] = "tinker://run/weights/init-full"
        entry.pop("restores", None)
        entry.update(restore_count=0, optimizer_checks=[c for c in entry["optimizer_checks"] if c["after_restore"] == 0])
        if with_restores:
            ref = entry["initialization"]["evidence_ref"]
            check = {**entry["optimizer_checks"][0], "after_restore": 1}
            entry.update(restore_count=1, optimizer_checks=entry["optimizer_checks"] + [check],
                         restores=[r.restore_record(1, f"s:train:{arm}", r.CREATE_FROM_STATE,
                                                    "tinker://run/weights/init-full", False, ref, "2026-12-02T12:00:00Z")])
    return result


def test_an_arm_created_from_saved_state_counts_its_restore(graded_record, monkeypatch):
    result, _ = graded_record("paired")
    old = _created_from_checkpoint(copy.deepcopy(result), with_restores=False)
    _without(monkeypatch, grading.REST_4_restores)
    assert _restoration(old) == ("verified", [])  # weakened: restore_count 0 passes
    monkeypatch.undo()
    status, issues = _restoration(old)
    assert status == "invalid" and all("records no restore (restore_count 0" in i for i in issues) and len(issues) == 2
    assert _restoration(_created_from_checkpoint(copy.deepcopy(result), with_restores=True)) == ("verified", [])


@pytest.mark.parametrize("tamper, message", [
    (lambda e: e.update(restore_count=2), "restore_count 2 but 1 restores"),
    (lambda e: e["restores"][0].update(loaded_from="tinker://run/weights/other"), "no restore loads it"),
    (lambda e: e["restores"][0].pop("at"), "needs its number, the client"),
    (lambda e: e["restores"][0].update(evidence_ref="restoration-missing.json"), "evidence_ref 'restoration-missing.json'"),
])
def test_restore_records_are_checked(graded_record, tamper, message):
    result = _created_from_checkpoint(graded_record("paired")[0], with_restores=True)
    tamper(result["initialization_provenance"]["arms"]["rl_gsm8k"])
    status, issues = _restoration(result)
    assert status in ("invalid", "unverified") and any(message in issue for issue in issues), issues


def test_a_restore_names_the_client_and_checkpoint_its_evidence_names(graded_record):
    result = _created_from_checkpoint(graded_record("paired")[0], with_restores=True)
    entry = result["initialization_provenance"]["arms"]["rl_gsm8k"]
    _put_evidence(result, entry["restores"][0]["evidence_ref"],
                  {"get_info_after_creation": {"model_id": "s:train:somebody-else"},
                   "loaded_from": "tinker://run/weights/another-checkpoint"})
    status, issues = _restoration(result)
    assert status == "invalid" and any("the evidence's get_info names client" in i for i in issues)
    assert any("the evidence loaded 'tinker://run/weights/another-checkpoint'" in i for i in issues)


def _update_check(result) -> dict:
    return json.loads(next(f for f in result["evidence"]["files"]
                           if f["name"] == grading.REST10_EVIDENCE)["content"])


def test_the_create_save_restore_update_is_recomputed_from_both_outputs(graded_record, monkeypatch):
    result, _ = graded_record("paired")
    assert _restoration(result) == ("verified", [])
    # the old evidence: the claimed difference and output hashes only
    old = copy.deepcopy(result)
    checks = _update_check(old)
    for check in checks.values():
        check.pop("logprobs_after_second_step")
        check.pop("clients")
    _put_evidence(old, grading.REST10_EVIDENCE, checks)
    _without(monkeypatch, grading.REST_10)
    _without(monkeypatch, grading.REST_10_check)
    assert _restoration(old) == ("verified", [])  # weakened: nothing checks REST-10
    monkeypatch.undo()
    status, issues = _restoration(old)
    assert status == "unverified" and any("outputs are not retained" in i for i in issues)
    # a restored client that lost its moments, the difference still claimed 0
    lost = copy.deepcopy(result)
    checks = _update_check(lost)
    for check in checks.values():
        check["logprobs_after_second_step"]["restored"] = [[v + 1e-3 for v in row]
                                                           for row in check["logprobs_after_second_step"]["restored"]]
    _put_evidence(lost, grading.REST10_EVIDENCE, checks)
    status, issues = _restoration(lost)
    assert status == "invalid"
    assert any("is not the recomputed" in i for i in issues) and any("differs from the uninterrupted" in i for i in issues)
    # no check retained at all
    missing = copy.deepcopy(result)
    missing["evidence"]["files"] = [f for f in missing["evidence"]["files"] if f["name"] != grading.REST10_EVIDENCE]
    assert _restoration(missing)[0] == "unverified"


def test_the_grader_tolerance_is_the_one_the_run_fixed_before_measuring():
    assert grading.REST10_ATOL == r.RESTORE_UPDATE_ATOL
