"""REST-11: a spec that declares `experiment_features.checkpoint_restore: true` (a designed mid-run save and restore,
run for RL at each arm's midpoint step) grades green only when every trained arm records that restore and its
evidence proves it.

On the parent grader a record that declared the feature and trained without any mid-run restore, or with one that
did not carry the optimizer state, graded restoration verified (shown by running the first two record-level tests
there: both found nothing). The run-shaped records of tests/unit/test_grading_replicas.py carry the designed restore
the run makes, and the planned checkpoint_restore variants grade there as --plan predicts (verified).

training_type sft: every training run (each LR of each arm's grid, at every seed) records its own designed restore
in its entry under the arm's `runs`. On the parent grader (which read the arm's entry, restating all its runs'
restores) a record whose second run was never restored mid-run, or whose further-seed run was restored without the
optimizer state, graded restoration verified: the first run's restore stood for the arm (shown by running the two
SFT tamper tests there with this file: both found nothing).
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


# ---------------------------------------------------------------- training_type sft: every run of every arm's grid

SFT_RUNS = [SimpleNamespace(name=f"T@lr={label}", arm="T", lr=float(label.split("-")[0]), label=label)
            for label in ("0.02", "0.04", "0.02-seed1")]


def _sft_ctx(designed, steps=None):
    """An SFT arm T trained at two LRs and a second seed: each run created from the initialization (restore 1) and
    restored mid-run as `designed(label)` says (None: never), the arm restating its runs' restores in plan order
    (experiment.sft.provenance)."""
    runs, files = {}, {}
    for run in SFT_RUNS:
        slug = run.name.replace("@lr=", "-lr")
        restores = [_restore(1, INIT, with_optimizer=False, evidence=f"restoration-{slug}.json")]
        restore = designed(run.label, slug)
        if restore is not None:
            restores.append(restore)
            files[restore["evidence_ref"]] = {"restored_from": restore["loaded_from"], "with_optimizer_state": True}
        runs[run.label] = _entry(*restores)
    arm = {**_entry(), "runs": runs}
    for run in SFT_RUNS:
        for restore, check in zip(runs[run.label]["restores"], runs[run.label]["optimizer_checks"]):
            number = len(arm["restores"]) + 1
            arm["restores"].append({**restore, "restore": number, "run": run.name})
            arm["optimizer_checks"].append({**check, "after_restore": number, "run": run.name})
    arm["restore_count"] = len(arm["restores"])
    plan = SimpleNamespace(training_type="sft", training_runs=SFT_RUNS, replicas=[],
                           trained_arms=[SimpleNamespace(name="T", optimizer={})],
                           arms=[SimpleNamespace(name="T", trained=True)])
    if steps is not None:
        files["sft-steps.jsonl"] = steps
    return SimpleNamespace(result={"initialization_provenance": {"version": 1, "arms": {"T": arm}}}, plan=plan,
                           spec={"experiment_features": {"checkpoint_restore": True}}, trained=True,
                           evidence=EvidenceFiles(files))


def _mid_run(label, slug, with_optimizer=True):
    return _restore(2, f"tinker://arms/weights/{slug}-step-0001", with_optimizer=with_optimizer,
                    evidence=f"restoration-{slug}-load-2.json")


def test_every_sft_run_restored_mid_run_with_its_evidence_is_green():
    assert _found(_sft_ctx(_mid_run)) == []


def test_an_sft_run_never_restored_mid_run_is_not_green_though_its_arm_has_other_runs_restores():
    ctx = _sft_ctx(lambda label, slug: None if label == "0.04" else _mid_run(label, slug))
    assert _found(ctx) == [("REST-11", "unverified", "arm T run 0.04: checkpoint_restore is declared, but no mid-run "
                                                     "restore from a state the arm saved is recorded")]


def test_an_sft_run_at_a_further_seed_restored_without_the_optimizer_state_is_invalid():
    ctx = _sft_ctx(lambda label, slug: _mid_run(label, slug, with_optimizer=label != "0.02-seed1"))
    assert _found(ctx) == [("REST-11", "invalid", "arm T run 0.02-seed1: the mid-run restore 2 (checkpoint_restore) "
                                                  "lacks the optimizer state")]


def _steps(clients):
    """sft-steps.jsonl: each run's two steps, the first on its created client, the second on `clients(run)`."""
    return [{"run": run.name, "step": step, "model_id": "c1" if step == 0 else clients(run)}
            for run in SFT_RUNS for step in (0, 1)]


def test_an_sft_run_whose_training_did_not_continue_on_the_restored_client_is_invalid():
    """The training log says which client each step ran on: a run restored mid-run whose last step still ran on
    the client it was created with did not continue from the restored state."""
    assert _found(_sft_ctx(_mid_run, steps=_steps(lambda run: "c2"))) == []
    ctx = _sft_ctx(_mid_run, steps=_steps(lambda run: "c1" if run.label == "0.04" else "c2"))
    assert _found(ctx) == [("REST-11", "invalid", "arm T run 0.04: the mid-run restore 2 (checkpoint_restore) lacks "
                                                  "its run's last step on the restored client (sft-steps.jsonl)")]
