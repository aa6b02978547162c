"""A resumed run refreshes its record (issue 45 item 11, deliverable 9).

An interrupted (or capacity-stopped) self-generated run posts `verdict: inconclusive`, the three-way spelling of
"no verdict". Resumed, the flow set the record running again but left that verdict, so the run's own check at the
decision (the run-dir layer, RESULT.validation) failed with the running-verdict check (GEN-4, run-dir id
vocabulary.outcome_reason) and the finished record kept
validation.status "failed" from its crashed attempt: a selfgen wiring rehearsal killed after arm training and
re-run graded every category green yet said validation failed. `resumed_update` clears what the stop posted.
"""

from __future__ import annotations

import json

import pytest

from experiment.contract.plan import build_plan
from experiment.contract.result import resumed_update
from experiment.contract.spec import load_spec, plan_file_path
from experiment.grading.run_dir import validate_run
from experiment.run.store import RunStore
from suite import GS1_SPEC, SELFGEN_SPEC

# What the flow posted on resume before (flows/experiment_flow.py): the stop's verdict stayed.
PARENT_RESUME = {"status": "running", "capacity_block": None, "capacity_wait": None, "interruption": None,
                 "outcome_reason": None}


def _stopped_then(tmp_path, spec_path, resume: dict) -> list[str]:
    spec = load_spec(spec_path, rehearse=True, rehearsal_scale="wiring")
    plan = build_plan(spec)
    store = RunStore.create(tmp_path / "runs", spec, plan)
    try:  # what spec intake retains first, so the run-dir layer reads the plan's vocabulary
        store.add_evidence("spec.json", "spec", spec_path.read_bytes())
        store.add_evidence("spec-revision.plan.json", "spec_revision", plan_file_path(spec_path).read_bytes())
        store.add_evidence("execution-plan.json", "effective_config", json.dumps(plan.to_dict(), sort_keys=True))
        assert store.settle_unfinished(plan, "stopped by SIGTERM")
        store.update_result(**resume)
        return [str(p) for p in validate_run(store.run_dir) if p.check == "vocabulary.outcome_reason"]
    finally:
        store.release()


@pytest.mark.parametrize("spec_path", [SELFGEN_SPEC, GS1_SPEC], ids=["three-way", "direction"])
def test_a_resumed_record_carries_nothing_its_stop_posted_as_final(tmp_path, spec_path):
    assert _stopped_then(tmp_path, spec_path, resumed_update()) == []
    record = RunStore.latest(tmp_path / "runs", build_plan(load_spec(spec_path, rehearse=True,
                                                                     rehearsal_scale="wiring")).spec_sha256).read_result()
    assert record["status"] == "running"
    assert not {"verdict", "outcome_reason", "reasoning", "interruption", "capacity_block"} & set(record)


def test_the_earlier_resume_left_the_stops_verdict_and_failed_the_self_check(tmp_path):
    assert _stopped_then(tmp_path, SELFGEN_SPEC, PARENT_RESUME) == [
        "vocabulary.outcome_reason: a running result carries a verdict (left out until the final update)"]
