"""One road into a run (experiment.run.prepare.prepare_run): the plan built once, the run claimed once, and the
prepared run handed on explicitly, as the CLI's flow parameter, which Prefect records without its credentials."""

from __future__ import annotations

import pytest
from suite import GS1_SPEC

import experiment.run.prepare as prepare_module
from experiment.contract.plan import build_plan
from experiment.contract.spec import load_spec
from experiment.run.config import RunConfig, embedded_checkpoint_dir
from experiment.run.prepare import prepare_run
from experiment.run.store import RunStore

SECRET = "tml-password-do-not-record-5d1e"


@pytest.fixture
def spec():
    return load_spec(GS1_SPEC)


def _config(runs_dir, backend: str = "local", full_backend: str = "local") -> RunConfig:
    return RunConfig.compose(backend, full_backend, str(runs_dir), "embedded")


def test_a_run_is_planned_once_claimed_once_and_resumed_by_the_next_preparation(tmp_path, spec, monkeypatch):
    plans, claims = [], []
    real_claim = RunStore.claim.__func__
    monkeypatch.setattr(prepare_module, "build_plan", lambda given: plans.append(given) or build_plan(given))
    monkeypatch.setattr(RunStore, "claim", classmethod(lambda cls, *args, **kwargs: claims.append(args)
                                                       or real_claim(cls, *args, **kwargs)))
    plan = build_plan(spec)
    runs = tmp_path / "runs"
    first = prepare_run(spec, _config(runs), plan=plan)  # the CLI built the plan for its preconditions
    assert (plans, len(claims), first.how, first.plan) == ([], 1, "new", plan)
    assert first.store.is_live() and first.store.run_dir.parent == runs
    assert first.config.service.checkpoint_dir == embedded_checkpoint_dir(runs)  # beside the runs: resumable
    first.store.release()

    again = prepare_run(spec, _config(runs))  # a deployment run: the plan is built here, once
    assert (len(plans), len(claims), again.how, again.store.run_dir) == (1, 2, "resumed", first.store.run_dir)
    again.store.release()


def test_a_finished_run_is_returned_unclaimed(tmp_path, spec):
    runs = tmp_path / "runs"
    prepared = prepare_run(spec, _config(runs))
    prepared.store.update_result(status="succeeded", verdict="supported")
    prepared.store.release()
    answered = prepare_run(spec, _config(runs))
    assert answered.how == "finished" and answered.store.run_dir == prepared.store.run_dir
    assert not answered.store.is_live()


def test_a_prepared_run_is_recorded_as_a_flow_parameter_without_its_credentials(tmp_path, spec):
    """Prefect stores a flow's parameters: the prepared run's configuration holds the service target built from the
    backend URL with the credentials the CLI was given. Attack first: handed over as its parts (the configuration
    a parameter of its own, encoded field by field), the credentials are recorded."""
    from flows.experiment_flow import run_experiment

    full = f"http://probe:{SECRET}@127.0.0.1:9/?token={SECRET}"
    prepared = prepare_run(spec, _config(tmp_path / "runs", "http://127.0.0.1:9/", full))
    try:
        assert SECRET in prepared.config.service.base_url  # the run needs them: its service target has them
        as_parts = run_experiment.serialize_parameters({"spec": prepared.spec, "config": prepared.config})
        assert SECRET in str(as_parts["config"])

        recorded = run_experiment.serialize_parameters({"spec_path": str(GS1_SPEC), "prepared": prepared})
        assert recorded["prepared"] == {"run_id": prepared.store.run_id, "run_dir": str(prepared.store.run_dir),
                                        "how": "new"}
        assert SECRET not in str(recorded) and SECRET not in repr(prepared)
    finally:
        prepared.store.release()
