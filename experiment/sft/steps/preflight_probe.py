"""SFT step of gate `preflight_probe`: every arm's exact optimizer accepted, one finite step each.

Where every arm runs is decided first (`service_routing`, evidence service-routing.json). Then, per
arm, one client with the arm's optimizer and config (the run at the spec's LR, else the arm's first),
one forward_backward(cross_entropy) and one optim_step on the first training example; the loss must
be finite and the optimizer family and config verified from get_info. A rejected optimizer means the
arm needs a fork (and then every arm runs on it): never a swapped optimizer. Probe clients live in a
setup session that is finished afterwards.
"""

from __future__ import annotations

import json
import math

from experiment.contract.verdict import GateVerdict
from experiment.rl import restoration as r
from experiment.rl.recipe import renderer_for
from experiment.run.context import RunContext
from experiment.service.capacity import is_capacity_refusal
from experiment.sft.loop import (FIXED_BATCH_SIZE, batch_id, sft_settings, to_datum, train_step, training_examples,
                                 untrained_examples)
from experiment.sft.runs import SFTRun, open_sft_session, served_model_and_rank, service_routing, sft_runs
from experiment.contract.run_layout import EVENTS_FILE


def run(ctx: RunContext) -> GateVerdict:
    routing = service_routing(ctx)
    ctx.store.append_event("service_routing", **routing)
    ctx.store.add_evidence("service-routing.json", "effective_config", json.dumps(routing, indent=2, sort_keys=True))
    model, rank = served_model_and_rank(ctx)
    settings = sft_settings(ctx.spec)
    example = training_examples(ctx.spec)[0]
    spec_lr = ctx.spec.section("optimizer").get("lr")
    runs_by_arm: dict[str, list[SFTRun]] = {}
    for run in sft_runs(ctx):
        runs_by_arm.setdefault(run.arm, []).append(run)
    measured, reasons, failed = {"routing": routing}, [routing["reason"]], False
    with open_sft_session(ctx, "probe") as session:
        for arm, runs in runs_by_arm.items():
            run = next((x for x in runs if spec_lr is not None and math.isclose(x.learning_rate, spec_lr)), runs[0])
            try:
                client = session.lora_client(model, rank, run.seed, run.requested)
            except Exception as err:  # the service rejected the arm's optimizer or options
                if is_capacity_refusal(err):
                    raise  # a busy service is no rejection: the flow stops or waits per CAP-1
                failed = True
                reasons.append(f"{arm}: create_model with {run.family} rejected ({type(err).__name__}: {err}); "
                               "this arm needs a fork, and then every arm runs on it (never a swapped optimizer)")
                continue
            check = r.optimizer_check(client.get_info(), run.requested, after_restore=0, evidence_ref=EVENTS_FILE)
            renderer = renderer_for(client, settings.renderer_name)
            empty = untrained_examples(training_examples(ctx.spec)[:FIXED_BATCH_SIZE], renderer, settings.max_seq_len)
            if empty:  # every preflight would measure an update of nothing (and the tolerances divide by it)
                return GateVerdict(
                    gate="preflight_probe", status="failed", measured=measured,
                    reasons=[f"max_seq_len {settings.max_seq_len} leaves training examples {', '.join(empty)} (of the "
                             f"first {FIXED_BATCH_SIZE}, the preflights' fixed batch) no assistant token to train on"],
                    next_diagnostic="raise max_seq_len in a revised spec so each example keeps its answer, then rerun",
                    state={"service_routing": routing})
            datum = to_datum(example, renderer, settings.max_seq_len)
            record = train_step(client, [datum], run.params(), run.name, 0, batch_id(0, [example]), call=ctx.call_service)
            ok = math.isfinite(record.loss_sum) and check["matches"]
            failed |= not ok
            measured[arm] = {"run": run.name, "loss_sum": record.loss_sum, "finite_loss": math.isfinite(record.loss_sum),
                             "optim_seconds": record.optim_seconds, "actual_family": check["actual_family"],
                             "verified_keys": check["verified_keys"], "mismatches": check["mismatches"]}
            reasons.append(f"{arm}: forward_backward(cross_entropy) loss {record.loss_sum:.4g}, optim_step ok, "
                           f"optimizer {check['actual_family']} verified {check['verified_keys']}"
                           + ("" if ok else f" (NOT OK: {check['mismatches']})"))
        released = session.close()
    measured["probe_clients_released"] = released
    ctx.store.append_event("probe", arms=measured)
    return GateVerdict(
        gate="preflight_probe", status="failed" if failed else "passed", reasons=reasons, measured=measured,
        next_diagnostic="run the failing arm on the fork URL (--backend <fork>) with RUNS_PROXY_TOKEN_* set" if failed else None,
        state={"service_routing": routing},
    )
