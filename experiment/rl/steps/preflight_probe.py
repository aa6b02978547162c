"""RL step of gate `preflight_probe` (RUN-2).

The spec's probe, exactly: for each arm, create the training client with the arm's optimizer,
rank and seed; one forward_backward with the arm's loss on one sampled example carrying that
arm's computed advantage; one optim_step with the arm's settings; both must succeed and the loss
must be finite. (Its follow-ons, the offline advantage tests and the 2-step activation pilot,
run in the correctness and activation gates.) A rejected optimizer means the arm needs a fork:
never swap it silently. Probe clients live in a setup session that is finished afterwards.
"""

from __future__ import annotations

import math
import time

from experiment.contract.run_layout import EVENTS_FILE
from experiment.contract.verdict import GateVerdict
from experiment.rl.advantages import KernelBaselineState
from experiment.rl.loop import train_one_step
from experiment.rl.recipe import renderer_for, requested_optimizers, rl_arm_settings, run_async, training_items
from experiment.rl.restoration import optimizer_check, requested_optimizer
from experiment.run.clients import open_session
from experiment.run.context import RunContext
from experiment.service.capacity import is_capacity_refusal

GATE = "preflight_probe"



def run(ctx: RunContext) -> GateVerdict:
    model = ctx.state.served_model
    arms = rl_arm_settings(ctx.spec, ctx.plan)
    optimizers = requested_optimizers(ctx.plan)
    order = training_items(ctx.spec)
    rank = int(ctx.spec.lora_rank)
    measured, reasons, failed, tokenizer_id = {}, [], False, None
    with open_session(ctx, "probe") as session:
        for name, arm in arms.items():
            requested = requested_optimizer(*optimizers.get(name, ("adam", {"lr": arm.learning_rate})))
            started = time.perf_counter()
            try:
                client = session.lora_client(model, rank, arm.seed, requested)
            except Exception as err:  # the service rejected the arm's optimizer or options
                if is_capacity_refusal(err):
                    raise  # a busy service is no rejection: the flow stops or waits per CAP-1
                failed = True
                reasons.append(f"{name}: create_model rejected ({type(err).__name__}: {err}); this arm needs a fork")
                continue
            info = client.get_info()
            tokenizer_id = info.model_data.tokenizer_id or model
            check = optimizer_check(info, requested, after_restore=0, evidence_ref=EVENTS_FILE)
            renderer = renderer_for(client, arm.renderer_name)
            # one example of the spec's dataset for every arm: never generated data, which is not
            # audited yet at this point (RUN-2, GA-9)
            record, _ = ctx.wait_for_service(lambda: run_async(_one_example_step(client, renderer, arm, order)))
            loss = record.loss_sum
            ok = math.isfinite(loss) and check["actual_family"] == requested["family"]
            failed |= not ok
            measured[name] = {
                "loss_sum": loss, "finite_loss": math.isfinite(loss), "reward": record.rewards[0],
                "advantage": record.advantages[0], "optim_seconds": record.optim_seconds,
                "actual_family": check["actual_family"], "seconds": round(time.perf_counter() - started, 3),
            }
            reasons.append(
                f"{name}: forward_backward(importance_sampling) loss {loss:.4g}, optim_step ok, "
                f"optimizer family {check['actual_family']}" + ("" if ok else " (NOT OK)")
            )
        released = session.close()
    measured["probe_clients_released"] = released
    ctx.store.append_event("probe", arms=measured)
    return GateVerdict(
        gate=GATE, status="failed" if failed else "passed", reasons=reasons, measured=measured,
        next_diagnostic=None if not failed else "rerun the probe for the failing arm alone and read the service's error",
        state={"tokenizer_id": tokenizer_id},
    )


async def _one_example_step(client, renderer, arm, order):
    """One sampled example carrying the arm's computed advantage, then one optim_step."""
    from dataclasses import replace

    one_example = replace(arm, groups_per_batch=1)
    window = KernelBaselineState(capacity=arm.kernel_window) if arm.advantage != "group_mean" else None
    return await train_one_step(client, renderer, one_example, order, step=0, kernel_state=window)

