"""The one flow: a spec in, gates in contract order, a RESULT out.

Each gate is a task returning a GateVerdict; the flow records it (event + `gates` table row) and
stops at the first failed gate, ending as `Failed(name="GateFailed")` after RESULT says which gate,
why, and the cheapest next diagnostic. A run that passes every gate ends `Completed`.
"""

from __future__ import annotations

import json

from prefect import flow, get_run_logger
from prefect.states import Completed, Failed, State

from flows.artifacts import progress_reporter, publish_run_artifacts
from experiment.gates import GATE_ORDER, GateVerdict, RunContext
from experiment.plan import build_plan
from experiment.result import gate_failure_message, gate_failure_update
from experiment.service import ServiceTarget
from experiment.spec import load_spec
from experiment.store import RunStore
from tasks import GATE_TASKS


class GateFailedError(Exception):
    """Carried by the GateFailed state; the structured outcome is in the run's result.json."""

    def __init__(self, verdict: GateVerdict, run_dir: str):
        self.gate = verdict.gate
        self.reasons = list(verdict.reasons)
        self.next_diagnostic = verdict.next_diagnostic
        self.run_dir = run_dir
        super().__init__(f"{gate_failure_message(verdict)} (run {run_dir})")


def record_verdict(store: RunStore, verdict: GateVerdict) -> None:
    store.append_event("gate", **verdict.to_dict())
    row = verdict.to_dict()
    row["reasons"] = json.dumps(row["reasons"])
    row["measured"] = json.dumps(row["measured"], default=str, sort_keys=True)
    store.append_rows("gates", [row])


def _publish(store: RunStore, plan, logger) -> None:
    """UI artifacts and pictures; never the reason a run fails (the store is the record)."""
    try:
        publish_run_artifacts(store, plan.to_dict())
    except Exception as err:  # noqa: BLE001 - a picture or artifact problem is reported, not raised
        logger.warning("could not publish artifacts for %s: %s: %s", store.run_id, type(err).__name__, err)


@flow(name="run-experiment")
def run_experiment(spec_path: str, backend: str = "local", runs_dir: str | None = None, requeue_count: int = 0) -> State:
    logger = get_run_logger()
    spec = load_spec(spec_path)
    plan = build_plan(spec)
    service = ServiceTarget.from_backend(backend)
    store = RunStore.create(runs_dir, spec, plan)
    ctx = RunContext(spec=spec, plan=plan, store=store, service=service, requeue_count=requeue_count,
                     on_progress=progress_reporter())
    logger.info("run %s started in %s (%s backend)", store.run_id, store.run_dir, service.kind)
    try:
        for name in GATE_ORDER:
            try:
                verdict = GATE_TASKS[name](ctx)
            except Exception as err:  # a bug: RESULT still says where the run stopped, then the flow fails
                crash = GateVerdict(gate=name, status="failed", reasons=[f"crashed: {type(err).__name__}: {err}"],
                                    next_diagnostic="read the traceback in the flow log and fix the gate")
                record_verdict(store, crash)
                store.update_result(**gate_failure_update(plan, crash, store.read_result().get("deviations", [])))
                raise
            record_verdict(store, verdict)
            logger.info("gate %s: %s (%s)", name, verdict.status, "; ".join(verdict.reasons))
            if verdict.failed:
                store.update_result(**gate_failure_update(plan, verdict, store.read_result().get("deviations", [])))
                error = GateFailedError(verdict, str(store.run_dir))
                return Failed(name="GateFailed", message=str(error), data=error)
    finally:
        service.stop()
        _publish(store, plan, logger)
    return Completed(message=f"run {store.run_id}: every gate passed; RESULT in {store.run_dir / 'result.json'}")
