"""RL step of gate `restoration_preflight` (REST-1..REST-10).

1. A setup session creates the initialization client (seed, rank, each group's optimizer) and
   saves one immutable full initialization checkpoint.
2. Before any sweep: a create-save-restore fixed-gradient update is checked against an
   uninterrupted client (same checkpoint, same fixed batch, one AdamW step BEFORE the save so the
   restored optimizer moments matter, then the same second step on both).
3. Each arm's training client starts from the initialization checkpoint (one per scheduled seed:
   every arm trains at every seed of `decision_rule.seeds`, each seed's arms form one group). Where the service exposes
   adapter hashes (embedded), the get_info the SDK fetches right after the load gives the adapter
   sha256, which must equal the checkpoint's own (weights_info); where it does not (production),
   the client loads the immutable checkpoint and the load response names it. The optimizer check
   after creation comes from get_info; a configuration no response exposes stays unverified (the
   gate passes on a proven initialization and says so; the verdict's confidence names it). Its
   initial output is hashed on the fixed batch before any update.
4. Hashes and URIs must agree across the group; every optimizer check must be verified from a
   server response. The arms' clients are handed to arm training (`ctx.state.arm_clients`).
"""

from __future__ import annotations

import json
from experiment.rl import restoration as r
from experiment.run.clients import open_session, session_weights_info
from experiment.contract.plan import at_replica_seed
from experiment.contract.verdict import GateVerdict
from experiment.run.context import RunContext
from experiment.rl.recipe import renderer_for, requested_optimizers, rl_arm_settings, rl_replica_settings, training_items

GATE = "restoration_preflight"
FIXED_BATCH_SIZE = 8



def run(ctx: RunContext) -> GateVerdict:
    """Long because: a gate step reads top to bottom as the restoration protocol (save, create every arm from it,
    compare, restore check); its parts share the arms' clients.
    """
    model, rank = ctx.state.served_model, int(ctx.spec.lora_rank)
    arms = rl_arm_settings(ctx.spec, ctx.plan)
    replicas = rl_replica_settings(ctx.spec, ctx.plan)
    optimizers = requested_optimizers(ctx.plan)
    requested = {name: r.requested_optimizer(*optimizers[name]) for name in arms if name in optimizers}
    missing = [name for name in arms if name not in requested]
    if missing:
        return _failed([f"arms {missing} are in no restoration group of the spec"], "add them to restoration_preflight.groups")
    first = next(iter(arms.values()))
    order = training_items(ctx.spec)
    seeds = ctx.plan.seeds

    with open_session(ctx, "restoration-setup") as setup:
        # one initialization per scheduled seed: that seed's group of arms all start from it
        init_uris, checkpoint_infos = {}, {}
        for seed in seeds:
            init_client = setup.lora_client(model, rank, seed, at_replica_seed(requested[first.name], seed))
            if seed == seeds[0]:
                exposure = r.record_exposure(ctx, init_client.get_info())
                renderer = renderer_for(init_client, first.renderer_name)
                batch = r.fixed_batch(order[:FIXED_BATCH_SIZE], renderer, first.few_shot)
            suffix = "" if seed == seeds[0] else f"-seed{seed}"
            checkpoint = f"init-full-{ctx.store.run_id}{suffix}"
            init_uris[seed] = setup.call(lambda: init_client.save_state(checkpoint).result().path)
            checkpoint_infos[seed] = session_weights_info(setup, init_uris[seed])
        init_uri = init_uris[seeds[0]]
        # one fixed-batch step before saving, so the restore carries optimizer moments to check
        restore_check = r.restore_update_check(setup, init_uri, at_replica_seed(requested[first.name], seeds[0]),
                                               batch, first.adam_params(),
                                               first.name, r.RESTORE_UPDATE_ATOL)
        setup_released = setup.close()
    ctx.store.add_evidence("restoration-fixed-batch.json", "metrics", json.dumps(r.batch_json(batch), sort_keys=True))
    ctx.store.add_evidence("restoration-update-check.json", "metrics", json.dumps(restore_check, indent=2))

    arms_session = open_session(ctx, "arms")
    entries, clients = {}, {}
    for label, replica in replicas.items():  # entries keyed by replica label: the arm's name at the first seed
        entries[label], clients[label] = r.restore_member(
            ctx.store, arms_session, label, model, rank, replica.seed,
            at_replica_seed(requested[replica.spec_arm], replica.seed),
            init_uris[replica.seed], checkpoint_infos[replica.seed], batch, adapter_proof=exposure["adapter_sha256"])
    provenance = {"version": 1, "arms": entries}
    if len(seeds) > 1:
        provenance["seed_groups"] = {str(seed): {"init_checkpoint": init_uris[seed],
                                                 "arms": [lab for lab, rep in replicas.items() if rep.seed == seed]}
                                     for seed in seeds}
    ctx.store.update_result(initialization_provenance=provenance)

    problems, unverified = [], []
    for seed in seeds:  # hashes and URIs must agree within each seed's group
        group = {label: entry for label, entry in entries.items() if replicas[label].seed == seed}
        found, open_checks = r.provenance_findings(group)
        problems += [f"seed {seed}: {p}" if len(seeds) > 1 else p for p in found]
        unverified += open_checks
    if restore_check["config_unverified"]:
        unverified.append(f"create-save-restore: {restore_check['optimizer_check_after_restore']['unverified_reason']}")
    if not restore_check["passed"]:
        problems.append(f"create-save-restore update differs from the uninterrupted client "
                        f"(max |diff| {restore_check['max_abs_difference']:.3g} > {r.RESTORE_UPDATE_ATOL}; "
                        f"{restore_check['problems']})")
    if problems:
        arms_session.close("errored")
        return _failed(problems, "compare the per-arm get_info evidence files and the initial-output hashes")
    ctx.state.arm_clients = clients
    ctx.state.arms_session = arms_session
    ctx.state.init_checkpoint = init_uri
    seed_inits = {str(seed): uri for seed, uri in init_uris.items()}
    ctx.state.seed_init_checkpoints = seed_inits
    note = r.restoration_note(unverified)
    proof = ("adapter hashes equal the checkpoint's" if exposure["adapter_sha256"]
             else "every client loaded the immutable initialization checkpoint (load responses name it)")
    restored_from = init_uri if len(seeds) == 1 else f"one initialization per seed ({', '.join(seed_inits.values())})"
    return GateVerdict(
        gate=GATE, status="passed",
        reasons=[f"{len(entries)} arms restored from {restored_from}: {proof}; initial-output hashes and optimizer "
                 "families agree; the create-save-restore update (optimizer state saved after one step) matches "
                 "the uninterrupted client"] + ([note] if note else []),
        measured={"init_checkpoint": init_uri, "restore_update_max_abs_difference": restore_check["max_abs_difference"],
                  "setup_clients_released": setup_released, "exposure": exposure, "unverified": unverified,
                  "seed_init_checkpoints": seed_inits,
                  "output_sha256": {n: e["initial_output"]["output_sha256"] for n, e in entries.items()}},
        state={"init_checkpoint": init_uri, "seed_init_checkpoints": seed_inits,
               **({"restoration_note": note} if note else {})},
    )


def _failed(problems: list[str], next_diagnostic: str) -> GateVerdict:
    return GateVerdict(gate=GATE, status="failed", reasons=problems, next_diagnostic=next_diagnostic)

