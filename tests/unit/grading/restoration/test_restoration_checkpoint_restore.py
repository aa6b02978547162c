"""REST-11: a spec that declares `experiment_features.checkpoint_restore: true` (a designed mid-run save and restore,
run for RL at each arm's midpoint step) grades green only when every trained arm records that restore and its
evidence proves it.

On the parent grader a record that declared the feature and trained without any mid-run restore, or with one that
did not carry the optimizer state, graded restoration verified (shown by running the first two record-level tests
there: both found nothing). The run-shaped records of tests/unit/test_grading_replicas.py carry the designed restore
the run makes, and the planned checkpoint_restore variants grade there as --plan predicts (verified).
"""

from __future__ import annotations

from types import SimpleNamespace

import pytest
from grading_contexts.restoration import EvidenceFiles, restoration_plan

from experiment.grading import restoration as rules
from experiment.grading.common import CategoryGrade, run_checks

INIT = "tinker://setup/weights/init-full"
SAVED = "tinker://arms/weights/T-step-0001"


def _entry(*restores, checks=None):
    return {"initialization": {"checkpoint_uri": INIT},
            "restore_count": len(restores), "restores": list(restores),
            "optimizer_checks": checks if checks is not None else [
                {"after_restore": r["restore"], "before_next_update": True, "mismatches": [], "source": "server_response"}
                for r in restores]}


def _restore(number, loaded_from, with_optimizer=True, evidence="restoration-T-restore-2.json"):
    method = ("create_training_client_from_state_with_optimizer" if with_optimizer
              else "create_training_client_from_state")
    return {"restore": number, "client": f"c{number}", "method": method, "loaded_from": loaded_from,
            "with_optimizer_state": with_optimizer, "at": "2026-12-07T00:00:00Z", "evidence_ref": evidence}


def _ctx(arms, declared=True, files=None, trained=True):
    spec = {"experiment_features": {"checkpoint_restore": declared}}
    return SimpleNamespace(result={"initialization_provenance": {"version": 1, "arms": arms}}, plan=restoration_plan(("T",)),
                           spec=spec, trained=trained,
                           evidence=EvidenceFiles(files if files is not None else {
                               "restoration-T-restore-2.json": {"restored_from": SAVED, "with_optimizer_state": True}}))


def _found(ctx):
    return [(issue.rule, issue.status, issue.message) for issue in rules.REST_11(ctx)]


FIRST = _restore(1, INIT, with_optimizer=False, evidence="restoration-T.json")


def test_a_declared_restore_the_record_never_made_is_not_green():
    ctx = _ctx({"T": _entry(FIRST)})
    assert _found(ctx) == [("REST-11", "unverified", "arm T: checkpoint_restore is declared, but no mid-run restore "
                                                     "from a state the arm saved is recorded")]
    grade = run_checks("restoration", [rules.REST_11], ctx)
    assert isinstance(grade, CategoryGrade) and grade.status == "unverified"


def test_a_mid_run_restore_without_the_optimizer_state_is_invalid():
    ctx = _ctx({"T": _entry(FIRST, _restore(2, SAVED, with_optimizer=False))})
    assert _found(ctx) == [("REST-11", "invalid", "arm T: the mid-run restore 2 (checkpoint_restore) lacks the "
                                                  "optimizer state")]


def test_the_designed_restore_with_its_evidence_is_green():
    assert _found(_ctx({"T": _entry(FIRST, _restore(2, SAVED))})) == []


@pytest.mark.parametrize("check, evidence, expected", [
    ({"after_restore": 2, "before_next_update": True, "mismatches": ["family: requested 'adamw', server reports 'sgd'"],
      "source": "server_response"}, None,
     ("invalid", "lacks an optimizer check after it, before the next update, without mismatches")),
    (None, None, ("invalid", "lacks an optimizer check after it, before the next update, without mismatches")),
    ({"after_restore": 2, "before_next_update": True, "mismatches": [], "source": "server_response"},
     {"restored_from": "tinker://arms/weights/T-step-0003", "with_optimizer_state": True},
     ("invalid", "lacks retained evidence naming the same state")),
    ({"after_restore": 2, "before_next_update": True, "mismatches": [], "source": "declared"}, None,
     ("unverified", "is not proven by a retained server response")),
    ({"after_restore": 2, "before_next_update": True, "mismatches": [], "source": "server_response"}, {},
     ("unverified", "is not proven by a retained server response")),
], ids=["mismatch", "no check", "other state", "declared", "not retained"])
def test_a_restore_whose_evidence_does_not_prove_it_is_not_green(check, evidence, expected):
    checks = [{"after_restore": 1, "before_next_update": True, "mismatches": [], "source": "server_response"}]
    checks += [check] if check is not None else []
    files = {"restoration-T-restore-2.json": evidence} if evidence else (
        {} if evidence == {} else {"restoration-T-restore-2.json": {"restored_from": SAVED, "with_optimizer_state": True}})
    found = _found(_ctx({"T": _entry(FIRST, _restore(2, SAVED), checks=checks)}, files=files))
    assert len(found) == 1 and found[0][:2] == ("REST-11", expected[0]) and expected[1] in found[0][2], found


def test_nothing_is_asked_of_a_spec_that_does_not_declare_it_or_of_a_run_before_training():
    assert _found(_ctx({"T": _entry(FIRST)}, declared=False)) == []
    assert _found(_ctx({"T": _entry(FIRST)}, trained=False)) == []
