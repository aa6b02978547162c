"""Re-queue a deployment run that ended in a capacity block (CAP-1, CAP-2).

A run started from a deployment schedules a new run of the same deployment `delay_seconds` later
(`run_deployment(..., scheduled_time=..., timeout=0, as_subflow=False, idempotency_key=...)`) and
then ends as `Failed(name="CapacityBlocked")` (no decision: not green in the UI); the serve process or worker picks the new run up
at that time. It does so only while the re-queue counter is under its maximum and the new start
still lies inside the spec's wall budget. An ad-hoc run (`python -m flows.run`) has no deployment to
re-queue into and says so. Returning Scheduled/AwaitingRetry from the flow would make it Crashed
under serve/worker (prefect-notes.md), hence run_deployment.

In the flow, after a CapacityBlocked was caught and RESULT got its `capacity_block` record:

    decision = requeue_after_capacity_block(spec_path, {"backend": backend, "runs_dir": runs_dir},
                                            requeue_count, policy.max_requeues,
                                            policy.requeue_delay_seconds(),
                                            spec.budget.max_wall_minutes, started_at)
    store.append_event("requeue", **decision.to_dict())
    return capacity_blocked_state(blocked, decision)
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from typing import Any

from prefect.states import Failed, State

AD_HOC_REASON = "not re-queued: ad-hoc run (python -m flows.run); re-run the same command to resume"


@dataclass(frozen=True)
class RequeueDecision:
    requeued: bool
    reason: str  # one line for RESULT, the log and the final state's message
    requeue_count: int  # the new run's counter when re-queued, else this run's
    flow_run_id: str | None = None  # the scheduled run
    scheduled_time: dt.datetime | None = None

    def to_dict(self) -> dict[str, Any]:
        return {
            "requeued": self.requeued,
            "reason": self.reason,
            "requeue_count": self.requeue_count,
            "flow_run_id": self.flow_run_id,
            "scheduled_time": self.scheduled_time.isoformat(timespec="seconds") if self.scheduled_time else None,
        }


def _as_utc(moment: dt.datetime | str) -> dt.datetime:
    if isinstance(moment, str):
        moment = dt.datetime.fromisoformat(moment)
    return moment if moment.tzinfo else moment.replace(tzinfo=dt.UTC)


def requeue_refusal(
    requeue_count: int,
    max_requeues: int,
    scheduled_start: dt.datetime,
    wall_budget_minutes: float,
    started_at: dt.datetime | str,
) -> str | None:
    """Why a blocked run must not be re-queued, or None when it may be."""
    if requeue_count >= max_requeues:
        return f"not re-queued: already re-queued {requeue_count} times (maximum {max_requeues})"
    budget_ends = _as_utc(started_at) + dt.timedelta(minutes=wall_budget_minutes)
    if _as_utc(scheduled_start) >= budget_ends:
        return (
            f"not re-queued: a start at {_as_utc(scheduled_start):%Y-%m-%dT%H:%M:%SZ} would lie past the spec's wall "
            f"budget ({wall_budget_minutes:g} min from {_as_utc(started_at):%Y-%m-%dT%H:%M:%SZ})"
        )
    return None


def requeue_after_capacity_block(
    spec_path: str,
    params: dict[str, Any],
    requeue_count: int,
    max_requeues: int,
    delay_seconds: float,
    wall_budget_minutes: float,
    started_at: dt.datetime | str,
    now: dt.datetime | None = None,
) -> RequeueDecision:
    """Schedule a new run of this run's deployment, or say why not.

    `params` are the flow parameters to pass on besides spec_path and requeue_count (backend,
    runs_dir, ...). `started_at` is when the first run of this re-queue chain started: the wall
    budget covers the whole chain."""
    from prefect.runtime import deployment, flow_run

    deployment_id = deployment.id
    if not deployment_id:
        return RequeueDecision(False, AD_HOC_REASON, requeue_count)
    scheduled_time = (now or dt.datetime.now(dt.UTC)) + dt.timedelta(seconds=delay_seconds)
    refusal = requeue_refusal(requeue_count, max_requeues, scheduled_time, wall_budget_minutes, started_at)
    if refusal:
        return RequeueDecision(False, refusal, requeue_count)

    from prefect.deployments import run_deployment

    next_count = requeue_count + 1
    scheduled_run = run_deployment(
        deployment_id,
        parameters={**params, "spec_path": spec_path, "requeue_count": next_count},
        scheduled_time=scheduled_time,
        timeout=0,
        as_subflow=False,
        idempotency_key=f"{flow_run.id}:requeue",
    )
    reason = (
        f"re-queued as flow run {scheduled_run.name} ({scheduled_run.id}), scheduled for "
        f"{scheduled_time:%Y-%m-%dT%H:%M:%SZ} (re-queue {next_count} of at most {max_requeues})"
    )
    return RequeueDecision(True, reason, next_count, str(scheduled_run.id), scheduled_time)


def capacity_blocked_state(blocked: Exception, decision: RequeueDecision) -> State:
    """The flow's final state after a capacity block: Failed(name="CapacityBlocked"). No decision was reached, so the
    UI must not show the run green (Completed); the name says it is no failure of the code or a gate, and the
    message says whether it was re-queued. The CLI exits 4 on it (flows.run.exit_code_for)."""
    return Failed(name="CapacityBlocked", message=f"{blocked}; {decision.reason}", data=blocked)
