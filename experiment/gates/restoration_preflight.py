"""Gate `restoration_preflight` (contract section 5; contract-details A-5.x).

1. A setup session creates the initialization client (seed, rank, each group's optimizer) and
   saves one immutable full initialization checkpoint.
2. Before any sweep: a create-save-restore fixed-gradient update is checked against an
   uninterrupted client (same checkpoint, same fixed batch, same AdamW step).
3. Each arm's training client is created in the arms session from the initialization
   checkpoint; the get_info the SDK fetches right after that load gives the optimizer check
   (after creation) and the adapter sha256, which must equal the checkpoint's own (weights_info).
   Its initial output is hashed on the fixed batch before any update.
4. Hashes and URIs must agree across the group; every optimizer check must be verified from a
   server response. The arms' clients are handed to arm training (`ctx.state["arm_clients"]`).
"""

from __future__ import annotations

import json
from typing import Any

from experiment import restoration as r
from experiment.clients import ClientSession, open_session, session_weights_info
from experiment import sft_gates
from experiment.gates import GateVerdict, RunContext, not_implemented
from experiment.rl_recipe import renderer_for, requested_optimizers, rl_arm_settings, training_items

GATE = "restoration_preflight"
FIXED_BATCH_SIZE = 8
RESTORE_UPDATE_ATOL = 1e-6  # fixed before measuring: a restored client must reproduce the update


def run(ctx: RunContext) -> GateVerdict:
    if ctx.plan.training_type == "sft":
        return sft_gates.restoration_preflight(ctx)
    if ctx.plan.training_type != "rl":
        return not_implemented(GATE, f"restoration for training_type {ctx.plan.training_type!r}")
    spec = ctx.spec.to_dict()
    model, rank = ctx.state["served_model"], int(spec["lora_rank"])
    arms = rl_arm_settings(ctx.spec, ctx.plan)
    optimizers = requested_optimizers(ctx.plan)
    requested = {name: r.requested_optimizer(*optimizers[name]) for name in arms if name in optimizers}
    missing = [name for name in arms if name not in requested]
    if missing:
        return _failed([f"arms {missing} are in no restoration group of the spec"], "add them to restoration_preflight.groups")
    first = next(iter(arms.values()))
    order = training_items(ctx.spec)

    with open_session(ctx, "restoration-setup") as setup:
        init_client = setup.lora_client(model, rank, first.seed, requested[first.name])
        renderer = renderer_for(init_client, first.renderer_name)
        batch = r.fixed_batch(order[:FIXED_BATCH_SIZE], renderer, first.few_shot)
        init_uri = init_client.save_state(f"init-full-{ctx.store.run_id}").result().path
        checkpoint_info = session_weights_info(setup, init_uri)
        restore_check = _restore_update_check(setup, init_uri, requested[first.name], batch, first.adam_params())
        setup_released = setup.close()
    ctx.store.add_evidence("restoration-fixed-batch.json", "metrics", json.dumps(r.batch_json(batch), sort_keys=True))
    ctx.store.add_evidence("restoration-update-check.json", "metrics", json.dumps(restore_check, indent=2))

    arms_session = open_session(ctx, "arms")
    entries, clients = {}, {}
    for name, arm in arms.items():
        entries[name], clients[name] = _restore_arm(ctx, arms_session, name, model, arm.seed,
                                                    requested[name], init_uri, checkpoint_info, batch)
    provenance = {"version": 1, "arms": entries}
    ctx.store.update_result(initialization_provenance=provenance)

    problems = r.group_consistency(entries)
    for name, entry in entries.items():
        for check in entry["optimizer_checks"]:
            problems += [f"{name} after_restore={check['after_restore']}: {m}" for m in check["mismatches"]]
            if check["not_exposed_keys"]:
                problems.append(f"{name} after_restore={check['after_restore']}: server does not expose "
                                f"{check['not_exposed_keys']} (unverified)")
        init = entry["initialization"]
        if init["adapter_sha256"] is None:
            problems.append(f"{name}: the service reports no adapter sha256 (initialization unverified)")
        elif init["adapter_sha256"] != init["checkpoint_adapter_sha256"]:
            problems.append(f"{name}: loaded adapter {init['adapter_sha256'][:12]} differs from the "
                            f"initialization checkpoint's {str(init['checkpoint_adapter_sha256'])[:12]}")
    if not restore_check["passed"]:
        problems.append(f"create-save-restore update differs from the uninterrupted client "
                        f"(max |diff| {restore_check['max_abs_difference']:.3g} > {RESTORE_UPDATE_ATOL})")
    if problems:
        arms_session.close("errored")
        return _failed(problems, "compare the per-arm get_info evidence files and the initial-output hashes")
    ctx.state["arm_clients"] = clients
    ctx.state["arms_session"] = arms_session
    ctx.state["init_checkpoint"] = init_uri
    ctx.state["fixed_batch"] = batch
    return GateVerdict(
        gate=GATE, status="passed",
        reasons=[f"{len(entries)} arms restored from {init_uri}: adapter, initial-output hashes and optimizer "
                 "checks agree; the create-save-restore update matches the uninterrupted client"],
        measured={"init_checkpoint": init_uri, "restore_update_max_abs_difference": restore_check["max_abs_difference"],
                  "setup_clients_released": setup_released,
                  "output_sha256": {n: e["initial_output"]["output_sha256"] for n, e in entries.items()}},
        state={"init_checkpoint": init_uri},
    )


def _failed(problems: list[str], next_diagnostic: str) -> GateVerdict:
    return GateVerdict(gate=GATE, status="failed", reasons=problems, next_diagnostic=next_diagnostic)


def _restore_arm(ctx, session, name, model, seed, requested, init_uri, checkpoint_info, batch):
    """The arm's training client, created from the initialization checkpoint.

    The SDK creates it with one load_weights request and then fetches get_info, so that response
    describes the loaded weights: its adapter sha256 must equal the checkpoint's (weights_info).
    """
    client = session.client_from_state(init_uri, requested)
    info = client.get_info()
    output = client.forward(batch, loss_fn="cross_entropy").result()
    evidence_name = f"restoration-{name}.json"
    evidence = {
        "get_info_after_creation_from_checkpoint": info.model_dump(mode="json"),
        "checkpoint_weights_info": checkpoint_info.model_dump(mode="json"),
        "initial_output_logprobs": [a.tolist() for a in r.logprobs_arrays(output)],
    }
    ctx.store.add_evidence(evidence_name, "metrics", json.dumps(evidence, sort_keys=True))
    adapter = r.adapter_sha256_from_info(info)
    entry = {
        "initialization": {
            "base_checkpoint": model,
            "source": "server_response",
            "adapter_sha256": adapter,
            "checkpoint_uri": init_uri,
            "checkpoint_adapter_sha256": r.adapter_sha256_from_info(checkpoint_info),
            "init_seed": seed,
            "evidence_ref": evidence_name,
            "before_first_update": True,
        },
        "restore_count": 0,
        "optimizer_checks": [
            r.optimizer_check(info, requested, after_restore=0, evidence_ref=evidence_name),
        ],
        "initial_output": {
            "available": True,
            "batch_sha256": r.batch_sha256(batch),
            "output_sha256": r.output_sha256(output),
            "evidence_ref": evidence_name,
            "before_first_update": True,
        },
    }
    return entry, client


def _restore_update_check(session: ClientSession, init_uri: str, requested: dict, batch, adam) -> dict[str, Any]:
    """Same fixed-gradient AdamW update on an uninterrupted client and on a saved+restored one."""
    uninterrupted = session.client_from_state(init_uri, requested)
    restored_source = session.client_from_state(init_uri, requested)
    saved = restored_source.save_state("restore-probe").result().path
    restored = session.client_from_state(saved, requested, with_optimizer=True)
    after = {}
    for label, client in (("uninterrupted", uninterrupted), ("restored", restored)):
        client.forward_backward(batch, loss_fn="cross_entropy").result()
        client.optim_step(adam).result()
        after[label] = r.logprobs_arrays(client.forward(batch, loss_fn="cross_entropy").result())
    difference = r.max_abs_difference(after["uninterrupted"], after["restored"])
    return {
        "checkpoint_uri": init_uri, "restored_from": saved, "update": adam.model_dump(),
        "max_abs_difference": difference, "atol": RESTORE_UPDATE_ATOL,
        "passed": difference <= RESTORE_UPDATE_ATOL,
        "output_sha256": {label: r.canonical_sha256([a.tolist() for a in arrays]) for label, arrays in after.items()},
    }
