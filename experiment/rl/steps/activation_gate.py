"""RL (GS1) step of gate `activation_gate` (ACT-1, ACT-2).

Every check of the spec's `activation_gate.checks`, measured on a short pilot in the exact
full-run regime (model, loss path, batch, updates per batch, dtype) on throwaway clients
restored from the initialization checkpoint: two treatment steps, one baseline step (the baseline
pilot runs beside the first treatment pilot), and a held-out 8-sample mean reward per pilot prompt
(never trained on) for the b_i correlation. The held-out means are sampled once, by the first
treatment pilot: a calibration candidate starts from the same weights on the same prompts with the
same seeds (only the kernel's bandwidth differs, which sampling does not use), so its own 512
samples would measure the same thing again (they came out identical on the embedded backend).
Ranges come from the spec and are never changed. The only calibration is the one the spec
pre-registers in its `command` (GS1: bandwidth in {0.5, 1.0}, chosen on pilot training
prompts only, at most 2 pilot steps and 10 wall minutes); every pilot's log is kept. A run resumed inside
this gate reuses every pilot whose log the stopped attempt kept (experiment.rl.pilot.kept_pilot).
"""

from __future__ import annotations

import asyncio
import time
from dataclasses import replace

from experiment.contract.verdict import GateVerdict, not_implemented
from experiment.rl.loop import KERNEL_BASELINE
from experiment.rl.pilot import keep_pilot_log, kept_pilot, pilot, pilot_client
from experiment.rl.recipe import rl_arm_settings, run_async
from experiment.run.clients import open_session
from experiment.run.context import RunContext
from experiment.stats.activation import PILOT_STEPS, evaluate_checks, gs1_activation_values, json_safe

GATE = "activation_gate"
# Spec gs1 `command`, activation-failure plan (c): the single pre-registered calibration.
CALIBRATION_SENTENCE = "the single pre-registered calibration is bandwidth in {0.5, 1.0}"
CALIBRATION_BANDWIDTHS = (0.5, 1.0)
CALIBRATION_WALL_SECONDS = 600


def run(ctx: RunContext) -> GateVerdict:
    arms = rl_arm_settings(ctx.spec, ctx.plan)
    treatment = arms.get(ctx.plan.role_to_arm.get("treatment", {}).get("arm", ""))
    baseline = arms.get(ctx.plan.role_to_arm.get("baseline", {}).get("arm", ""))
    checks = ctx.plan.gate(GATE).details.get("checks", [])
    if treatment is None or baseline is None or treatment.advantage != KERNEL_BASELINE:
        return not_implemented(GATE, "activation pilot for this spec's arms (GS1 kernel baseline, self-generated data)")
    calibration_planned = CALIBRATION_SENTENCE in ctx.spec.to_dict().get("command", "")
    candidates = CALIBRATION_BANDWIDTHS if calibration_planned else (treatment.kernel_bandwidth,)

    pilots, chosen, started = [], None, time.monotonic()
    with open_session(ctx, "activation-pilot") as session:
        # the baseline pilot and the first treatment pilot are independent: they run side by side
        first = replace(treatment, kernel_bandwidth=candidates[0])
        kept = kept_pilot(ctx, candidates[0], (treatment.name, baseline.name))  # a resumed run's kept pilot
        if kept is not None:
            baseline_steps = kept["steps"][baseline.name]
            measured = {"steps": kept["steps"][treatment.name], "heldout": kept["heldout"]}
        else:
            baseline_client, first_client = pilot_client(ctx, session, baseline), pilot_client(ctx, session, first)
            baseline_run, measured = ctx.wait_for_service(lambda: run_async(_side_by_side(
                pilot(ctx, baseline_client, baseline, steps=1),
                pilot(ctx, first_client, first, steps=PILOT_STEPS, heldout=True))))
            baseline_steps = baseline_run["steps"]
        for bandwidth in candidates:
            if pilots:  # a further calibration candidate, after the first failed
                if time.monotonic() - started > CALIBRATION_WALL_SECONDS:
                    break  # the calibration's wall cap
                heldout = measured["heldout"]  # the first pilot's: same weights, prompts and seeds
                kept = kept_pilot(ctx, bandwidth, (treatment.name,))
                if kept is not None:
                    measured = {"steps": kept["steps"][treatment.name]}
                else:
                    arm = replace(treatment, kernel_bandwidth=bandwidth)
                    client = pilot_client(ctx, session, arm)
                    measured = ctx.wait_for_service(lambda: run_async(pilot(ctx, client, arm, steps=PILOT_STEPS)))
                measured["heldout"] = heldout
            values = gs1_activation_values(measured["steps"], baseline_steps, measured["heldout"], measured["steps"][0])
            outcomes = evaluate_checks(checks, values)
            pilots.append({"bandwidth": bandwidth, "values": json_safe(values), "outcomes": [o.to_dict() for o in outcomes]})
            keep_pilot_log(ctx, bandwidth, measured["steps"] + baseline_steps, measured["heldout"])
            if all(o.passed for o in outcomes):
                chosen = bandwidth
                break
            if not calibration_planned or not _only_calibratable_failure(outcomes):
                break

    final = pilots[-1]
    note = _note(pilots, chosen, calibration_planned)
    ctx.store.update_result(activation_calibration={"values": final["values"], "note": note})
    ctx.store.append_event("activation_pilots", pilots=pilots)
    if chosen is None:
        failed = [o["reason"] for o in final["outcomes"] if not o["passed"]]
        return GateVerdict(
            gate=GATE, status="failed", reasons=failed + [note], measured=final["values"],
            next_diagnostic="inspect the kept pilot logs (evidence activation-pilot-*.jsonl): rewards per prompt, "
                            "kernel weights and b_i; decide between a code defect and an inactive treatment regime",
        )
    ctx.state.kernel_bandwidth = chosen
    return GateVerdict(gate=GATE, status="passed", reasons=[note] + [o["reason"] for o in final["outcomes"]],
                       measured=final["values"], state={"kernel_bandwidth": chosen})


async def _side_by_side(*pilots):
    return await asyncio.gather(*pilots)


def _only_calibratable_failure(outcomes) -> bool:
    """The calibration is pre-registered for kernel_effective_neighbors failing; other failures stop."""
    failed = {o.metric for o in outcomes if not o.passed}
    return failed == {"kernel_effective_neighbors_p10"}


def _note(pilots, chosen, calibration_planned) -> str:
    tried = ", ".join(f"bandwidth {p['bandwidth']}" for p in pilots)
    if chosen is None:
        return f"activation checks failed on the pilot ({tried}); ranges unchanged, pilot logs kept"
    extra = " (the spec's pre-registered calibration chose it on pilot training prompts)" if len(pilots) > 1 else ""
    plan = "calibration plan from the spec's command" if calibration_planned else "no calibration planned"
    return f"all checks passed with bandwidth {chosen}{extra}; tried {tried}; {plan}"
