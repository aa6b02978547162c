"""The one flow: a spec in, gates in contract order, a RESULT out.

Each gate is a task returning a GateVerdict; the flow records it (event + `gates` table row) and
stops at the first failed gate, ending as `Failed(name="GateFailed")` after RESULT says which gate,
why, and the cheapest next diagnostic. A run that passes every gate ends `Completed`.

Capacity (CAP-1): service calls go through the run's capacity policy; refusals past
its limit end the run as `Failed(name="CapacityBlocked")` with a `capacity_block` record, this
run's clients released and, for a deployment run, a re-queued run scheduled. A service that broke while
the run waited on it (no answer within the answer deadline, or one the SDK cannot read: ServiceFailedMidRun)
stops it the same way but ends `Failed(name="ServiceFailed")`, one line and no traceback. Resume: a run of the
same spec content that is unfinished (killed, or capacity-blocked) is continued in place: passed
gates are reused with the state they handed on, and arms continue from their last saved step.
A run whose newest run of the same spec content finished is returned as is (no service call);
`fresh=True` starts a new replicate. The process that runs a run holds its lock (RunStore.claim):
a second invocation against a live run ends `Failed(name="RunInProgress")` and touches nothing.
`rehearse=True` runs the spec at rehearsal scale (experiment.contract.rehearsal), marked as such.
A `backend` parameter carrying credentials is refused before anything runs
(`Failed(name="CredentialsInParameter")`): they belong in the environment, never in a parameter.

The entry takes the run the CLI prepared (experiment.run.prepare.prepare_run: spec parsed, plan built, run
claimed, configuration composed: runs dir, service target and exposure profile, capacity policy, re-queue
chain); a deployment run, given its spec's path, prepares it here the same way. Everything below receives them.
"""

from __future__ import annotations


from prefect import flow, get_run_logger
from prefect.states import Completed, Failed, State
from prefect.utilities.annotations import quote

from experiment.contract.rehearsal import rehearsal_result_fields
from experiment.service.capacity import (AnswerWatch, CapacityBlocked, ServiceFailedMidRun, answer_bounded, as_capacity_block,
                                     capacity_block_record)
from experiment.run.config import RunConfig
from experiment.run.prepare import PreparedRun, prepare_run
from experiment.run.clients import release_sessions
from experiment.gates import GATE_ORDER, GateVerdict, RunContext
from flows.interrupts import stop_reason
from flows.artifacts import progress_reporter, publish_run_artifacts
from flows.backend_url import credentials_refusal, with_credentials
from flows.concurrency import (
    ServiceLimitMissing,
    capacity_guarded_caller,
    service_request_slots,
    service_requests_limited,
)
from flows.expected_outcomes import quiet_expected_outcomes
from flows.gate_schedule import GateStoppedBeside, ends_the_run, record_beside_stop, run_wave
from flows.labels import initial_flow_run_name, label_flow_run, run_tags
from flows.requeue import capacity_blocked_state, requeue_after_capacity_block
from experiment.contract.schedule import gate_waves
from experiment.report.summary import RESULT_MARKER, closing_lines, finished_message, gate_line, plan_lines
from experiment.contract.result import capacity_block_update, gate_failure_message, gate_failure_update, resumed_update
from experiment.contract.run_layout import result_path
from experiment.contract.spec import Spec, load_spec
from experiment.run.store import RunDirectoryGone, RunInProgress, RunStore, storage_failure, utc_now
from experiment.stats.feasibility import budget_use
from tasks import GATE_TASKS
from tasks.arms import run_arm_tasks


class GateFailedError(Exception):
    """Carried by the GateFailed state; the structured outcome is in the run's result.json."""

    def __init__(self, verdict: GateVerdict, run_dir: str):
        self.gate = verdict.gate
        self.reasons = list(verdict.reasons)
        self.next_diagnostic = verdict.next_diagnostic
        self.run_dir = run_dir
        super().__init__(f"{gate_failure_message(verdict)} (run {run_dir})")


# a deployment run refused (another process runs this spec) or stopped by a gate: the flow logs one
# line and RESULT says why; the engine's traceback of the state's exception is left out
quiet_expected_outcomes(RunInProgress, GateFailedError, ServiceFailedMidRun, RunDirectoryGone, GateStoppedBeside)


def _publish(store: RunStore, plan, logger) -> list:
    """UI artifacts and pictures; never the reason a run fails (the store is the record)."""
    try:
        return publish_run_artifacts(store, plan.to_dict())
    except Exception as err:  # noqa: BLE001 - a picture or artifact problem is reported, not raised
        logger.warning("could not publish artifacts for %s: %s: %s", store.run_id, type(err).__name__, err)
        return []


def _label(name: str | None, tags: list[str], logger) -> None:
    """Name and tags in the UI; never the reason a run fails."""
    try:
        label_flow_run(name, tags)
    except Exception as err:  # noqa: BLE001 - UI metadata only; the run goes on
        logger.warning("could not name or tag the flow run: %s: %s", type(err).__name__, err)


def _projected_seconds(store: RunStore) -> float | None:
    projection = (store.read_result().get("feasibility") or {}).get("projection") or {}
    seconds = projection.get("wall_seconds")
    return float(seconds) if isinstance(seconds, (int, float)) else None


@flow(name="run-experiment", flow_run_name=initial_flow_run_name)
def run_experiment(spec_path: str, backend: str = "local", runs_dir: str | None = None, requeue_count: int = 0,
                   chain_started_at: str | None = None, exposure: str = "embedded", rehearse: bool = False,
                   fresh: bool = False, rehearsal_scale: str = "standard", prepared: PreparedRun | None = None,
                   overlap_gates: bool = False) -> State:
    """Carry one spec to a verdict. A re-run of the same spec content resumes an unfinished run.

    `prepared`: the run the CLI prepared already (experiment.run.prepare.prepare_run: spec parsed with `rehearse`
    and `rehearsal_scale` applied, plan built, run claimed, configuration composed); None (a deployment run)
    parses `spec_path` and prepares the run here, the same way.

    `overlap_gates`: run independent gates side by side (experiment.contract.schedule.gate_waves; opt-in: it departs
    from the contract's listed order, a gate listed later may start before an earlier one is published)."""
    logger = get_run_logger()
    refusal = credentials_refusal(backend)  # e.g. a deployment run given --param backend=https://user:key@...
    if refusal:
        logger.error("%s", refusal)
        return Failed(name="CredentialsInParameter", message=refusal)
    spec = prepared.spec if prepared is not None else load_spec(spec_path, rehearse=rehearse,
                                                                rehearsal_scale=rehearsal_scale)
    tags = run_tags(spec.source.stem, spec.source.rehearsal, exposure)
    try:
        request_slots = service_request_slots()  # before the run is claimed: a refusal leaves nothing behind
    except ServiceLimitMissing as err:
        logger.error("%s", err)
        return Failed(name="ServiceLimitMissing", message=str(err))
    claimed_here = prepared is None  # a run the CLI prepared is the CLI's to release
    if prepared is None:
        config = RunConfig.compose(backend, with_credentials(backend), runs_dir, exposure,  # the parameter carries
                                   requeue_count=requeue_count, chain_started_at=chain_started_at)  # no credentials
        try:
            prepared = prepare_run(spec, config, fresh=fresh)
        except RunInProgress as err:
            _label(None, tags, logger)
            logger.error("%s", err)
            return Failed(name="RunInProgress", message=str(err), data=err)
    store, plan, config = prepared.store, prepared.plan, prepared.config
    _label(store.run_id, tags, logger)
    logger = get_run_logger()  # its lines now carry the run id as the flow run's name
    if prepared.how == "finished":
        message = finished_message(store.run_id, result_path(store.run_dir), store.read_result())
        logger.info("%s", message)
        return Completed(name="AlreadyFinished", message=message)
    try:
        reused = store.passed_gates() if prepared.how == "resumed" else {}
        if prepared.how == "resumed":  # a capacity block or an interruption ends here: the run is running again
            store.update_result(**resumed_update())
        with service_requests_limited(request_slots):
            return _run_claimed(spec, plan, store, config, reused, logger, overlap_gates)
    except BaseException as err:  # a crash outside any gate, a signal: the record never stays "running"
        store.settle_unfinished(plan, stop_reason(err))
        raise
    finally:
        if claimed_here:
            store.release()


def _run_claimed(spec: Spec, plan, store: RunStore, config: RunConfig, reused: dict, logger,
                 overlap_gates: bool = False) -> State:
    """The gates of a run this process holds (new, or resumed with `reused` gates), wave by wave: one gate a wave in
    contract order, or with `overlap_gates` the independent gates side by side (experiment.contract.schedule)."""
    rehearsal = spec.source.rehearsal
    if rehearsal and not store.read_result().get("rehearsal"):
        _mark_rehearsal(store, spec, rehearsal)
    service = config.service
    ctx = RunContext(spec=spec, plan=plan, store=store, service=service,
                     on_progress=progress_reporter(store.run_id), run_each=run_arm_tasks)
    watch = AnswerWatch()  # when the service last answered any call of this run: one answer deadline for all
    steps_completed = lambda: ctx.state.comparison_steps_completed  # noqa: E731
    ctx.call_service = capacity_guarded_caller(store, steps_completed, config.capacity, watch=watch)
    ctx.wait_for_service = answer_bounded(config.capacity, watch, steps_completed)
    if reused:
        store.append_event("run_resumed", reused_gates=sorted(reused), requeue_count=config.requeue_count)
        logger.info("resuming run %s: reusing passed gates %s", store.run_id, ", ".join(sorted(reused)))
    store.append_event("run_config", backend=service.describe(), exposure=config.exposure)  # the service profile asked for
    logger.info("run %s in %s (%s backend)", store.run_id, store.run_dir, service.kind)
    for line in plan_lines(plan.to_dict(), sorted(reused), _projected_seconds(store)):
        logger.info(line)
    pictures: list = []
    for name in GATE_ORDER:
        if name in reused:
            ctx.state.receive(reused[name])  # what the gate handed on when it passed
    to_run = [name for name in GATE_ORDER if name not in reused]
    waves = gate_waves(to_run, overlap=overlap_gates, without_work=[n for n in to_run if not plan.gate(n).blocks])
    if overlap_gates:
        store.append_event("gate_schedule", overlap_gates=True, waves=[list(wave) for wave in waves])
        logger.info("gates side by side (--overlap-gates): %s", " -> ".join("+".join(wave) for wave in waves))
    previous = None  # each wave waits on the previous wave's gates: the UI draws one chain
    try:
        for wave in waves:
            if len(wave) == 1:
                try:
                    gate_state = GATE_TASKS[wave[0]](quote(ctx), wait_for=previous, return_state=True)
                    previous = [gate_state]
                    outcomes = {wave[0]: gate_state.result()}
                except Exception as err:  # noqa: BLE001 - settled below, as a gate of a wave is
                    outcomes = {wave[0]: err}
            else:
                outcomes, previous = run_wave(GATE_TASKS, wave, ctx, previous)
            ending = [name for name, outcome in outcomes.items() if ends_the_run(outcome)]
            ended_by = next((name for name in ending if not isinstance(outcomes[name], GateStoppedBeside)),
                            ending[0] if ending else None)
            for name, outcome in outcomes.items():
                if ended_by and name != ended_by and (isinstance(outcome, GateStoppedBeside)
                                                      or wave.index(name) > wave.index(ended_by)):
                    record_beside_stop(ctx, name, outcome, ended_by)
            for name in wave[:wave.index(ended_by) + 1] if ended_by else wave:
                if name == ended_by or not isinstance(outcomes[name], GateStoppedBeside):
                    end = _settle_gate(ctx, name, outcomes[name], config, logger)
                    if end is not None:
                        return end
    finally:
        release_sessions(ctx)
        service.stop()
        _record_budget_use(store, plan, logger)
        pictures = _publish(store, plan, logger)
    closing = closing_lines(store.read_result(), store.run_dir, pictures)
    return Completed(message=f"{closing[0]}; {RESULT_MARKER}{result_path(store.run_dir)}")


def _settle_gate(ctx: RunContext, name: str, outcome, config: RunConfig, logger) -> State | None:
    """Record one gate's outcome (its verdict, a capacity refusal, or the exception its task raised): None when
    the run goes on, else the state the run ends in (a crash is recorded, then raised)."""
    store, plan = ctx.store, ctx.plan
    if isinstance(outcome, Exception):
        if storage_failure(outcome) or isinstance(outcome, RunDirectoryGone):  # a full disk or a deleted run
            raise outcome  # directory is no verdict on the gate (flows.run_guard ends a CLI run before this)
        blocked = as_capacity_block(outcome, ctx.state.comparison_steps_completed)
        if blocked is None:  # a bug: RESULT still says where the run stopped, then the flow fails
            crash = GateVerdict(gate=name, status="failed", reasons=[f"crashed: {type(outcome).__name__}: {outcome}"],
                                next_diagnostic="read the traceback in the flow log and fix the gate")
            store.record_gate(crash)
            _post_gate_failure(store, plan, crash)
            raise outcome
        return _capacity_stop(ctx, name, blocked, config, logger)
    verdict = outcome
    if not isinstance(verdict, GateVerdict):  # a capacity refusal, handed back as the gate task's value
        return _capacity_stop(ctx, name, as_capacity_block(verdict, ctx.state.comparison_steps_completed),
                              config, logger)
    ctx.state.receive(verdict.state)
    store.record_gate(verdict)
    logger.info(gate_line(verdict))
    if name == "feasibility_pilot" and verdict.status == "passed":
        for line in plan_lines(plan.to_dict(), list(GATE_ORDER[:GATE_ORDER.index(name) + 1]),
                               _projected_seconds(store))[-1:]:
            logger.info(line)
    if verdict.failed:
        _post_gate_failure(store, plan, verdict)
        error = GateFailedError(verdict, str(store.run_dir))
        return Failed(name="GateFailed", message=str(error), data=error)
    return None


def _post_gate_failure(store: RunStore, plan, verdict: GateVerdict) -> None:
    """RESULT's outcome of a run stopped by a gate (failed, or crashed): failed, no verdict, which gate and why
    (gate_failure_update), naming a substituted model; the one place that outcome is written."""
    store.update_result(**gate_failure_update(plan, verdict, store.read_result().get("deviations", [])))


def _record_budget_use(store: RunStore, plan, logger) -> None:
    """RESULT.budget_use: the run's wall time against its budget; a run that overran it says so (a note)."""
    use = budget_use(plan.budget, store.run_meta()["started"], utc_now())
    if use is None:
        return
    store.update_result(budget_use=use)
    if "note" in use:
        logger.warning(use["note"])


def _mark_rehearsal(store: RunStore, spec, rehearsal: dict) -> None:
    """RESULT says it is a rehearsal and lists every substitution before anything runs; from here on the store
    leads every summary of the record with the rehearsal mark (RunStore.update_result)."""
    import json

    store.add_evidence("rehearsal-spec.json", "spec", json.dumps(spec.to_dict(), indent=2, sort_keys=True),
                       source=rehearsal["rules"])
    store.update_result(**rehearsal_result_fields(rehearsal))


def _capacity_stop(ctx: RunContext, gate: str, blocked: CapacityBlocked, config: RunConfig, logger) -> State:
    """CAP-1: release this run's clients, report capacity_block, re-queue when deployed."""
    store, plan, policy = ctx.store, ctx.plan, config.capacity
    released = release_sessions(ctx)
    store.append_event("capacity_block", gate=gate, **capacity_block_record(blocked, released))
    update = capacity_block_update(plan, gate, capacity_block_record(blocked, released),
                                   blocked.waited_seconds, blocked.comparison_steps_completed)
    if isinstance(blocked, ServiceFailedMidRun):  # no capacity refusal: the service broke while the run waited
        update["summary"] = (f"The service failed during {gate}: {blocked}. The run stopped without a verdict; "
                             "running the same command again resumes it.")
    store.update_result(**update)
    started = config.chain_started_at or store.run_meta()["started"]
    decision = requeue_after_capacity_block(
        ctx.spec.source.path, {"backend": config.backend, "runs_dir": config.runs_dir, "chain_started_at": started,
                               "exposure": config.exposure,
                               **({"rehearse": True, "rehearsal_scale": ctx.spec.source.rehearsal.get("scale", "standard")}
                                  if ctx.spec.source.rehearsal else {})},
        config.requeue_count,
        policy.max_requeues, policy.requeue_delay_seconds(), float(plan.budget.get("max_wall_minutes") or 0), started)
    store.append_event("requeue", **decision.to_dict())
    logger.warning("%s; %s", blocked, decision.reason)
    if isinstance(blocked, ServiceFailedMidRun):  # Failed, named: the CLI exits 2 (the backend), one line
        return Failed(name="ServiceFailed", message=f"{blocked}; {decision.reason}", data=blocked)
    return capacity_blocked_state(blocked, decision)
