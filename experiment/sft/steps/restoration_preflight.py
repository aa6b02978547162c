"""SFT step of gate `restoration_preflight`: every training run starts from one proven state.

A setup session creates one initialization client, saves one immutable full initialization state and
checks, per arm, a create-save-restore update (optimizer state saved after one step) against the
uninterrupted client. Then every training run (arm x LR) gets its client from that state in the
arms session, with its adapter hash (where exposed), optimizer check and initial output compared.
The clients and the session are handed to arm training (`RunState.arm_clients`, `arms_session`).
"""

from __future__ import annotations

import json

from experiment.contract.verdict import GateVerdict
from experiment.rl import restoration as r
from experiment.rl.recipe import renderer_for
from experiment.run.clients import session_weights_info
from experiment.run.context import RunContext
from experiment.sft.loop import FIXED_BATCH_SIZE, sft_settings, training_examples
from experiment.sft.provenance import provenance_by_arm
from experiment.sft.runs import to_datums, open_sft_session, served_model_and_rank, sft_runs



def run(ctx: RunContext) -> GateVerdict:
    runs = sft_runs(ctx)
    model, rank = served_model_and_rank(ctx)
    settings = sft_settings(ctx.spec)
    examples = training_examples(ctx.spec)
    with open_sft_session(ctx, "restoration-setup") as setup:
        init_client = setup.lora_client(model, rank, runs[0].seed, runs[0].requested)
        exposure = r.record_exposure(ctx, init_client.get_info())
        renderer = renderer_for(init_client, settings.renderer_name)
        batch = to_datums(examples[:FIXED_BATCH_SIZE], renderer, settings)
        init_uri = setup.call(lambda: init_client.save_state(f"init-full-{ctx.store.run_id}").result().path)
        checkpoint_info = session_weights_info(setup, init_uri)
        first_run_per_arm = {run.arm: run for run in reversed(runs)}
        restore_checks = {arm: r.restore_update_check(setup, init_uri, run.requested, batch, run.params(),
                                                      run.arm, r.RESTORE_UPDATE_ATOL)
                          for arm, run in first_run_per_arm.items()}
        setup.close()
    ctx.store.add_evidence("restoration-fixed-batch.json", "metrics", json.dumps(r.batch_json(batch), sort_keys=True))
    ctx.store.add_evidence("restoration-update-check.json", "metrics", json.dumps(restore_checks, indent=2))

    arms_session = open_sft_session(ctx, "arms")
    entries, clients = {}, {}
    for run in runs:
        entries[run.name], clients[run.name] = r.restore_member(
            ctx.store, arms_session, run.name, model, rank, run.seed, run.requested, init_uri, checkpoint_info,
            batch, adapter_proof=exposure["adapter_sha256"])
    ctx.store.update_result(initialization_provenance=provenance_by_arm(runs, entries))

    problems, unverified = r.provenance_findings(entries)
    for arm, check in restore_checks.items():
        if check["config_unverified"]:
            unverified.append(f"{arm} create-save-restore: {check['optimizer_check_after_restore']['unverified_reason']}")
        if not check["passed"]:
            problems.append(f"{arm}: create-save-restore update differs from the uninterrupted client "
                            f"(max |diff| {check['max_abs_difference']:.3g} > {r.RESTORE_UPDATE_ATOL}; {check['problems']})")
    if problems:
        arms_session.close("errored")
        return GateVerdict(gate="restoration_preflight", status="failed", reasons=problems,
                           next_diagnostic="compare the per-run restoration-*.json evidence and initial-output hashes")
    ctx.state.arm_clients = clients
    ctx.state.arms_session = arms_session
    differences = {arm: check["max_abs_difference"] for arm, check in restore_checks.items()}
    proof = ("adapter hashes equal the checkpoint's" if exposure["adapter_sha256"]
             else "every client loaded the immutable initialization checkpoint (load responses name it)")
    note = r.restoration_note(unverified)
    return GateVerdict(
        gate="restoration_preflight", status="passed",
        reasons=[f"{len(entries)} runs created from {init_uri}: {proof}; initial-output hashes and optimizer "
                 f"families agree; create-save-restore updates (optimizer state saved after one step) match the "
                 f"uninterrupted clients ({', '.join(f'{arm} {value:.3g}' for arm, value in differences.items())})"]
        + ([note] if note else []),
        measured={"init_checkpoint": init_uri, "exposure": exposure,
                  "restore_update_max_abs_difference": differences, "unverified": unverified},
        state={"init_checkpoint": init_uri, **({"restoration_note": note} if note else {})},
    )

