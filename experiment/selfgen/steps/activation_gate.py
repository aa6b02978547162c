"""Self-generated-tasks step of gate `activation_gate`: each arm on its intended data, generated groups alive.

Two treatment steps (on the audited generated tasks) and one baseline step (on the spec's dataset)
in the full-run regime, on throwaway clients from the initialization checkpoint, only after the
generation audit passed (the gate order guarantees it). Measured: each arm trained on its intended
data, non-degenerate reward groups on the generated tasks, no overlap with the evaluation set. No
calibration is planned in this spec; ranges are never changed. A run resumed inside this gate after the pilot's
log was kept reuses that pilot (experiment.rl.pilot.kept_pilot).
"""

from __future__ import annotations

from experiment.contract.verdict import GateVerdict, not_implemented
from experiment.rl.pilot import keep_pilot_log, kept_pilot, pilot, pilot_client
from experiment.rl.recipe import eval_items, rl_arm_settings, run_async, training_items
from experiment.run.clients import open_session
from experiment.run.context import RunContext
from experiment.stats.generation_audit import evaluation_overlap
from experiment.stats.activation import PILOT_STEPS, evaluate_checks, json_safe, selfgen_activation_values

GATE = "activation_gate"


def run(ctx: RunContext) -> GateVerdict:
    arms = rl_arm_settings(ctx.spec, ctx.plan)
    treatment = arms.get(ctx.plan.role_to_arm.get("treatment", {}).get("arm", ""))
    baseline = arms.get(ctx.plan.role_to_arm.get("baseline", {}).get("arm", ""))
    if treatment is None or baseline is None:
        return not_implemented(GATE, "activation pilot for this spec's arms (GS1 kernel baseline, self-generated data)")
    checks = ctx.plan.gate(GATE).details.get("checks", [])

    def pilot_steps(client, arm, steps: int) -> list:  # one pilot: a wait on the service under the answer deadline
        return ctx.wait_for_service(lambda: run_async(pilot(ctx, client, arm, steps=steps)))["steps"]

    kept = kept_pilot(ctx, "selfgen", (treatment.name, baseline.name))  # a resumed run's kept pilot
    if kept is not None:
        trained, base = kept["steps"][treatment.name], kept["steps"][baseline.name]
    else:
        with open_session(ctx, "activation-pilot") as session:
            trained = pilot_steps(pilot_client(ctx, session, treatment), treatment, PILOT_STEPS)
            base = pilot_steps(pilot_client(ctx, session, baseline), baseline, 1)
    generated = ctx.state.generated_tasks()
    overlaps = evaluation_overlap(
        [{"item_id": t.id, "prompt": t.question, "disposition": "accepted"} for t in generated],
        [{"item_id": i.id, "prompt": i.question} for i in eval_items(ctx.spec)])
    values = selfgen_activation_values(trained, base, {t.id for t in generated},
                                       {t.id for t in training_items(ctx.spec)}, len(overlaps))
    outcomes = evaluate_checks(checks, values)
    keep_pilot_log(ctx, "selfgen", trained + base, {})
    passed = all(o.passed for o in outcomes)
    note = "all checks passed on the pilot" if passed else "activation checks failed on the pilot; ranges unchanged"
    ctx.store.update_result(activation_calibration={"values": json_safe(values), "note": note + "; no calibration planned"})
    return GateVerdict(
        gate=GATE, status="passed" if passed else "failed", reasons=[o.reason for o in outcomes],
        measured=json_safe(values),
        next_diagnostic=None if passed else "inspect evidence activation-pilot-bwselfgen.jsonl (rewards per group)",
    )


