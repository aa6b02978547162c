"""EVID-11 on a resumed SFT run (experiment/grading/attempts.py): the stopped attempt's steps stay in sft-steps.jsonl
and events.jsonl, marked with their `attempt`; the run's steps are its last attempt's, once each, where the record
accounts for the earlier attempts (issue 45: an honest resumed record grades as a fresh one).

The record here is a TriMuon wiring rehearsal's steps, as a sweep stopped in its second run's last step and resumed
logs them (tests/integration/test_sft_arm_training_resume.py produces one through the real pipeline and grades it
whole). The tamper cases were shown passing EVID-11 against a weakened `_accounted` (always true), and the honest resumed
record graded "step(s) 0 twice" by the EVID-11 before attempts.py.
"""

from __future__ import annotations

import json

import pytest

from experiment.contract.plan import build_plan
from experiment.contract.result_models import evidence_file
from experiment.contract.spec import load_spec
from experiment.grading import attempts, spec_anchor
from experiment.grading.common import UNVERIFIED, GradeContext, run_label
from experiment.grading.evidence import EvidenceAccess
from suite import TRIMUON_SPEC

SPEC = load_spec(TRIMUON_SPEC, rehearse=True, rehearsal_scale="wiring")
PLAN = build_plan(SPEC)
STOPPED = PLAN.training_runs[1]


def _rows(run, attempt: int, steps: int, client: str) -> list[dict]:
    return [{"run": run.name, "step": step, "attempt": attempt, "model_id": client} for step in range(steps)]


def _resumed(superseded_clients: list[str] | None = ("stopped-client",)) -> tuple[list[dict], dict]:
    """Every run's steps once, and the stopped run's first step logged by its superseded attempt (client
    stopped-client) before its second attempt logged them all; the provenance keeps that attempt's restore."""
    rows = []
    for run in PLAN.training_runs:
        if run is STOPPED:
            rows += _rows(run, 1, run.steps - 1, "stopped-client") + _rows(run, 2, run.steps, "resumed-client")
        else:
            rows += _rows(run, 1, run.steps, f"{run.name}-client")
    arms: dict = {}
    for run in PLAN.training_runs:
        entry = {"restore_count": 1, "restores": [{"restore": 1, "client": f"{run.name}-client"}]}
        if run is STOPPED and superseded_clients is not None:
            entry["superseded_attempts"] = [{"restores": [{"restore": 1, "client": c} for c in superseded_clients]}]
        arms.setdefault(run.arm, {"runs": {}})["runs"][run_label(run)] = entry
    return rows, {"version": 1, "arms": arms}


def _ctx(rows: list[dict], provenance: dict) -> GradeContext:
    steps = evidence_file("sft-steps.jsonl", "metrics", "".join(json.dumps(r) + "\n" for r in rows).encode())
    record = {"status": "succeeded", "rehearsal": {"scale": "wiring"}, "evidence": {"version": 1, "files": [steps]},
              "completed_arms": [arm.name for arm in PLAN.trained_arms], "initialization_provenance": provenance}
    ctx = GradeContext(result=record, evidence=EvidenceAccess(record), spec=SPEC.to_dict(), spec_model=SPEC, plan=PLAN)
    ctx.events = [{"event": "training_step", **{k: v for k, v in row.items() if k != "model_id"}} for row in rows]
    return ctx


def test_a_resumed_runs_superseded_attempt_is_set_aside_in_the_steps_file_and_the_events():
    rows, provenance = _resumed()
    assert spec_anchor.EVID_11(_ctx(rows, provenance)) == []


def _named(issues, where: str, words: str) -> bool:
    """Every issue is EVID-11 unverified, and one about `where` names the stopped run with `words`."""
    return {(i.rule, i.status) for i in issues} == {("EVID-11", UNVERIFIED)} and any(
        i.message.startswith(where) and f"{STOPPED.name}{words}" in i.message for i in issues)


@pytest.mark.parametrize("tamper", ["no superseded attempt kept", "another client", "a step twice in an attempt"])
def test_rows_marked_as_an_earlier_attempt_the_record_does_not_account_for_are_a_step_logged_twice(tamper):
    rows, provenance = _resumed(None if tamper == "no superseded attempt kept" else
                                ["some-other-client"] if tamper == "another client" else ["stopped-client"])
    if tamper == "a step twice in an attempt":
        rows += _rows(STOPPED, 1, 1, "stopped-client")
    issues = spec_anchor.EVID_11(_ctx(rows, provenance))
    assert _named(issues, "sft-steps.jsonl does not hold", ": step(s) 0 twice")
    assert _named(issues, "sft-steps.jsonl marks steps as attempts", " (attempt marks 1, 2")


def test_a_fresh_runs_step_marked_as_a_later_attempt_is_named():
    rows, provenance = _resumed(None)
    rows = [r for r in rows if r["run"] != STOPPED.name] + _rows(STOPPED, 1, STOPPED.steps, "stopped-client")  # fresh
    assert spec_anchor.EVID_11(_ctx(rows, provenance)) == []
    rows[-1] = {**rows[-1], "attempt": 2}
    assert _named(spec_anchor.EVID_11(_ctx(rows, provenance)), "sft-steps.jsonl marks steps as attempts",
                  " (attempt marks 1, 2, 0 superseded attempt(s) kept)")


def test_the_last_attempt_holds_every_step_itself():
    rows, provenance = _resumed()
    rows = [r for r in rows if not (r["run"] == STOPPED.name and r["attempt"] == 2 and r["step"] == 0)]
    issues = spec_anchor.EVID_11(_ctx(rows, provenance))
    assert _named(issues, "sft-steps.jsonl does not hold", ": step(s) 0 missing")
    assert _named(issues, "events.jsonl does not hold", ": step(s) 0 missing")


def _unmarked(rows: list[dict], attempt: int | None = None) -> list[dict]:
    """The rows without their `attempt` mark (all, or those of one attempt of the stopped run): a run logged before
    attempts were marked, whose rows are its first attempt's."""
    return [{k: v for k, v in r.items() if k != "attempt"}
            if attempt is None or (r["run"] == STOPPED.name and r["attempt"] == attempt) else r for r in rows]


def _stopped_run(rows: list[dict]) -> list[dict]:
    return [r for r in rows if r["run"] == STOPPED.name]


def test_rows_without_an_attempt_mark_are_the_first_attempts():
    fresh, provenance = _resumed(None)
    fresh = _unmarked([r for r in fresh if r["run"] != STOPPED.name] + _rows(STOPPED, 1, STOPPED.steps, "stopped-client"))
    assert attempts.last_attempts(_ctx(fresh, provenance), fresh) == (fresh, [])
    rows, provenance = _resumed()
    rows = _unmarked(rows, attempt=1)  # the stopped attempt's rows unmarked, the resumed attempt's marked 2
    kept, unaccounted = attempts.last_attempts(_ctx(rows, provenance), rows)
    assert unaccounted == [] and _stopped_run(kept) == _rows(STOPPED, 2, STOPPED.steps, "resumed-client")
    twice = rows + _unmarked(_rows(STOPPED, 1, 1, "stopped-client"))  # the unmarked attempt logged step 0 twice
    assert attempts.last_attempts(_ctx(twice, provenance), twice)[1] != []
    elsewhere = [{**r, "model_id": "some-other-client"} if r["run"] == STOPPED.name and "attempt" not in r else r
                 for r in rows]
    assert attempts.last_attempts(_ctx(elsewhere, provenance), elsewhere)[1] != []


@pytest.mark.parametrize("mark", [0, -1, "2", True, 1.5, None])
def test_an_attempt_mark_that_is_no_count_from_one_is_named(mark):
    rows, provenance = _resumed(None)
    rows = [r for r in rows if r["run"] != STOPPED.name] + _rows(STOPPED, 1, STOPPED.steps, "stopped-client")
    rows[-1] = {**rows[-1], "attempt": mark}
    kept, unaccounted = attempts.last_attempts(_ctx(rows, provenance), rows)
    assert [u.split(" ")[0] for u in unaccounted] == [STOPPED.name]
    assert _stopped_run(kept) == _stopped_run(rows)  # counted together, as a fresh run's


def test_the_unaccounted_attempts_name_how_many_superseded_attempts_the_record_keeps():
    rows, provenance = _resumed(["some-other-client"])
    assert attempts.last_attempts(_ctx(rows, provenance), rows)[1] == [
        f"{STOPPED.name} (attempt marks 1, 2, 1 superseded attempt(s) kept)"]
    rows, provenance = _resumed(None)
    assert attempts.last_attempts(_ctx(rows, provenance), rows)[1] == [
        f"{STOPPED.name} (attempt marks 1, 2, 0 superseded attempt(s) kept)"]


def test_an_empty_list_of_superseded_attempts_accounts_for_no_earlier_attempt():
    """Rows that name no client (training_step events) are not accounted for by a `superseded_attempts` that is an
    empty list: the record keeps fewer attempts than the marks show."""
    rows, provenance = _resumed()
    provenance["arms"][STOPPED.arm]["runs"][run_label(STOPPED)]["superseded_attempts"] = []
    events = [{k: v for k, v in r.items() if k != "model_id"} for r in rows]
    kept, unaccounted = attempts.last_attempts(_ctx(rows, provenance), events)
    assert [u.split(" ")[0] for u in unaccounted] == [STOPPED.name] and len(_stopped_run(kept)) == 2 * STOPPED.steps - 1


def test_a_run_resumed_twice_keeps_its_third_attempts_steps():
    """Attempts 1 and 2 each stopped after logging step 0 (attempt 2 also step 1), attempt 3 logged every step; the
    record keeps both superseded attempts, so the steps logged by two earlier attempts are not a step logged twice."""
    rows, provenance = _resumed()
    rows = [r for r in rows if r["run"] != STOPPED.name] + _rows(STOPPED, 1, 1, "first-client") \
        + _rows(STOPPED, 2, 2, "second-client") + _rows(STOPPED, 3, STOPPED.steps, "third-client")
    provenance["arms"][STOPPED.arm]["runs"][run_label(STOPPED)]["superseded_attempts"] = [
        {"restores": [{"restore": 1, "client": "first-client"}]}, {"restores": [{"restore": 1, "client": "second-client"}]}]
    kept, unaccounted = attempts.last_attempts(_ctx(rows, provenance), rows)
    assert unaccounted == [] and _stopped_run(kept) == _rows(STOPPED, 3, STOPPED.steps, "third-client")
    assert spec_anchor.EVID_11(_ctx(rows, provenance)) == []


def test_superseded_attempts_beyond_the_logged_ones_leave_the_last_attempts_steps_unaccounted():
    """The record keeps two superseded attempts, so the run's own steps are a third attempt's, but the log holds only
    attempts 1 and 2: attempt 2's rows are a superseded attempt's, not the run's, and the marks are named. (Before,
    `at least last - 1 kept` counted attempt 2's complete rows as the run's own and EVID-11 found nothing.)"""
    rows, provenance = _resumed(["stopped-client", "resumed-client"])
    provenance["arms"][STOPPED.arm]["runs"][run_label(STOPPED)]["superseded_attempts"] = [
        {"restores": [{"restore": 1, "client": "stopped-client"}]}, {"restores": [{"restore": 1, "client": "resumed-client"}]}]
    kept, unaccounted = attempts.last_attempts(_ctx(rows, provenance), rows)
    assert unaccounted == [f"{STOPPED.name} (attempt marks 1, 2, 2 superseded attempt(s) kept)"]
    assert _named(spec_anchor.EVID_11(_ctx(rows, provenance)), "sft-steps.jsonl marks steps as attempts",
                  " (attempt marks 1, 2, 2 superseded attempt(s) kept)")


def test_the_finding_names_at_most_four_runs_with_unaccounted_attempt_marks():
    """Every run's last row marked as a second attempt the record does not account for: EVID-11's finding names the
    first four of the six runs (in the log's order), not all of them."""
    rows, provenance = _resumed(None)
    rows = [r for r in rows if r["run"] != STOPPED.name] + _rows(STOPPED, 1, STOPPED.steps, "stopped-client")
    last = {r["run"]: i for i, r in enumerate(rows)}
    rows = [{**r, "attempt": 2} if i in last.values() else r for i, r in enumerate(rows)]
    (finding,) = [i.message for i in spec_anchor.EVID_11(_ctx(rows, provenance))
                  if i.message.startswith("sft-steps.jsonl marks steps as attempts")]
    named = [run for run in last if f"{run} (attempt marks" in finding]
    assert len(last) == 6 and named == list(last)[:4]
