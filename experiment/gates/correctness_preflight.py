"""Gate `correctness_preflight` (contract section 4; contract-details A-1.3, A-1.4, A-4.x).

Loss paths (spec GS1): `experiment.gs1_preflight` compares, on one fixed input, the new loop
with the treatment disabled against the stock cookbook GRPO path and the GS1 implementation
against the independent float64 reference (loss and full per-token gradient from server
forward logprobs). Acceptance uses only the spec's tolerances, fixed before measuring. The
spec's revisions are UNRESOLVED, so the run pins them itself and says so in RESULT. The probe
scripts and the fixed input are kept as evidence. Any failed or missing check stops the run.
"""

from __future__ import annotations

import json
from pathlib import Path

from experiment import gs1_preflight
from experiment.clients import open_session
from experiment import sft_gates
from experiment.gates import GateVerdict, RunContext, not_implemented
from experiment.restoration import requested_optimizer
from experiment.rl_loop import GROUP_MEAN, KERNEL_BASELINE
from experiment.rl_recipe import renderer_for, requested_optimizers, rl_arm_settings, run_async, training_items

GATE = "correctness_preflight"
UNRESOLVED_NOTE = (
    "The spec's correctness revisions are UNRESOLVED, so this run pinned them itself (cookbook version and "
    "file hashes of the implementation and the independent reference); the exchange may still grade the "
    "check unverified until the spec carries them."
)


def run(ctx: RunContext) -> GateVerdict:
    if ctx.plan.training_type == "sft":
        return sft_gates.correctness_preflight(ctx)
    details = ctx.plan.gate(GATE).details
    paths = details.get("paths") or []
    if ctx.plan.training_type != "rl" or not paths:
        return not_implemented(GATE, "correctness check for this path (no plan in the spec or not an RL loss path)",
                               next_diagnostic="add an accepted correctness plan (pinned reference, tolerances) to the spec")
    arms = rl_arm_settings(ctx.spec, ctx.plan)
    grpo = next((a for a in arms.values() if a.advantage == GROUP_MEAN), None)
    gs1 = next((a for a in arms.values() if a.advantage == KERNEL_BASELINE), None)
    if grpo is None or gs1 is None:
        return not_implemented(GATE, "a loss-path check for arms other than group-mean vs kernel baseline")
    spec_path = paths[0]
    requested = requested_optimizer(*requested_optimizers(ctx.plan).get(gs1.name, ("adam", {"lr": gs1.learning_rate})))
    with open_session(ctx, "correctness") as session:
        client = session.lora_client(ctx.state["served_model"], int(ctx.spec.to_dict()["lora_rank"]), gs1.seed, requested)
        renderer = renderer_for(client, gs1.renderer_name)
        outcome = run_async(gs1_preflight.run_gs1_loss_path_preflight(
            client, renderer, training_items(ctx.spec), grpo, gs1, spec_path))
    _keep_evidence(ctx, outcome)
    record = {"required": True, "paths": [outcome.record]}
    unresolved = bool(details.get("revisions_unresolved"))
    ctx.store.update_result(correctness_preflight=record)
    ctx.state["correctness_note"] = UNRESOLVED_NOTE if unresolved else ""
    reasons = outcome.reasons + ([UNRESOLVED_NOTE] if unresolved else [])
    return GateVerdict(
        gate=GATE,
        status="passed" if outcome.passed else "failed",
        reasons=reasons,
        measured={key: value["max_abs_error"] for key, value in outcome.record["errors"].items()},
        state={"correctness_note": ctx.state["correctness_note"]},
        next_diagnostic=None if outcome.passed else (
            "diff the advantages in evidence correctness-fixed-input.json (implementation vs reference) "
            "item by item; check the window exclusion of item i and the feature standardization"
        ),
    )


def _keep_evidence(ctx: RunContext, outcome) -> None:
    ctx.store.add_evidence("correctness-fixed-input.json", "metrics", json.dumps(outcome.fixed_input, sort_keys=True))
    ctx.store.add_evidence("correctness-preflight.json", "metrics", json.dumps(outcome.record, indent=2, sort_keys=True))
    package = Path(gs1_preflight.__file__).parent
    for name in ("gs1_preflight.py", "advantages.py", "gs1_reference.py"):
        ctx.store.add_evidence(f"script-{name}", "script", (package / name).read_bytes(), source=f"experiment/{name}")
