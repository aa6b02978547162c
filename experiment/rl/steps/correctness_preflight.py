"""RL step of gate `correctness_preflight` (CORR-1..CORR-9).

Loss paths (spec GS1): `experiment.rl.gs1_preflight` compares, on one fixed input, the new loop
with the treatment disabled against the stock cookbook GRPO path and the GS1 implementation
against the independent float64 reference (loss and full per-token gradient from server
forward logprobs). Acceptance uses only the spec's tolerances, fixed before measuring. The
probe scripts and the fixed input are kept as evidence. Any failed or missing check stops the run.

Revisions: the revisions the run measured against must match the ones pinned in the spec or in
its recorded revision file (`specs/<name>.plan.json`, key `correctness_revisions`). The run
never pins them itself. While one is UNRESOLVED the path is reported required and unverified,
a spec-revision request (evidence `spec-revision-request.json` and RESULT `spec_revision_request`)
names what to pin with the values this pipeline would pin, and the gate stops the run before any
full-run spending. A revision that differs from its pin fails the gate.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from experiment.rl import gs1_preflight
from experiment.run.clients import open_session
from experiment.stats.correctness import REVISION_FILE_KEY, revision_status
from experiment.contract.verdict import GateVerdict, not_implemented
from experiment.run.context import RunContext
from experiment.rl.restoration import requested_optimizer
from experiment.rl.loop import GROUP_MEAN, KERNEL_BASELINE
from experiment.rl.recipe import renderer_for, requested_optimizers, rl_arm_settings, run_async, training_items
from experiment.contract.spec import plan_file_path

GATE = "correctness_preflight"
REQUEST_EVIDENCE = "spec-revision-request.json"
UNVERIFIED_NOTE = (
    "The spec's correctness revisions are UNRESOLVED and no recorded spec revision pins them, so the check is "
    "required and unverified (the exchange grades it unverified); the run does not pin them itself and stops before "
    "any full-run spending, with a spec-revision request naming the values to pin."
)
REVISION_FILE_NOTE = (
    "The correctness revisions are pinned by the recorded spec revision {path}, not by the spec itself; the exchange "
    "may grade the check unverified until its own spec carries the pins."
)



def run(ctx: RunContext) -> GateVerdict:
    details = ctx.plan.gate(GATE).details
    paths = details.get("paths") or []
    if not paths:
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
        client = session.lora_client(ctx.state.served_model, int(ctx.spec.lora_rank), gs1.seed, requested)
        renderer = renderer_for(client, gs1.renderer_name)
        outcome = ctx.wait_for_service(lambda: run_async(gs1_preflight.run_gs1_loss_path_preflight(
            client, renderer, training_items(ctx.spec), grpo, gs1, spec_path)))
    _keep_evidence(ctx, outcome)
    pins = (details.get("revision_pins") or {}).get(str(outcome.record["id"]), {})
    revisions = revision_status(pins, outcome.record)
    path_record = {**outcome.record, "revision_check": revisions}
    unresolved = [key for key, entry in revisions.items() if entry["status"] == "unresolved"]
    differs = [key for key, entry in revisions.items() if entry["status"] == "differs"]
    record: dict[str, Any] = {"required": True, "paths": [path_record]}
    reasons = list(outcome.reasons)
    if unresolved:
        record.update(status="unverified", unverified_reason=(
            f"path {path_record['id']}: {', '.join(unresolved)} pinned neither in the spec nor in a recorded spec "
            "revision; a spec revision is requested"))
        request = spec_revision_request(ctx, path_record, unresolved, outcome.passed)
        entry = ctx.store.add_evidence(REQUEST_EVIDENCE, "spec_revision_request", json.dumps(request, indent=2))
        ctx.store.update_result(correctness_preflight=record, spec_revision_request={
            **{key: request[key] for key in ("reason", "spec", "revision_file", "pins", "revision_file_fragment")},
            "evidence_ref": entry["name"]})
        note = UNVERIFIED_NOTE
        # the stop cause first; the measurements (made with the proposed revisions) stay in the record
        reasons = [note, "measured with the proposed revisions: " + (
            "every check within the spec's tolerances" if outcome.passed else "a check FAILED: " + "; ".join(
                r for r in outcome.reasons if "FAILED" in r or "exceeds" in r or "below" in r or "no measurement" in r))]
    else:
        ctx.store.update_result(correctness_preflight=record)
        sources = {entry["source"] for entry in revisions.values()}
        revision_file = (ctx.plan.spec_revision or {}).get("path") or str(plan_file_path(Path(ctx.plan.spec_path)))
        note = REVISION_FILE_NOTE.format(path=revision_file) if any("revision file" in s for s in sources) else ""
        reasons += [f"{key} {entry['status']} the pin in the {entry['source']}" for key, entry in revisions.items()]
        if note:
            reasons.append(note)
    ctx.state.correctness_note = note
    passed = outcome.passed and not unresolved and not differs
    return GateVerdict(
        gate=GATE,
        status="passed" if passed else "failed",
        reasons=reasons,
        measured={**{key: value["max_abs_error"] for key, value in outcome.record["errors"].items()},
                  "revisions": {key: entry["status"] for key, entry in revisions.items()}},
        state={"correctness_note": note},
        next_diagnostic=_next_diagnostic(ctx, outcome.passed, unresolved, differs),
    )


def spec_revision_request(ctx: RunContext, path_record: dict[str, Any], unresolved: list[str],
                          measured_ok: bool) -> dict[str, Any]:
    """What to pin, where, with the values this pipeline would pin (the revisions it measured against)."""
    revision_file = str(plan_file_path(Path(ctx.plan.spec_path)))
    path_id = str(path_record["id"])
    spec_paths = {str(p.get("id")): p for p in (ctx.plan.gate(GATE).details.get("paths") or [])}
    pins = [{"path_id": path_id, "field": f"correctness_preflight.paths[id={path_id}].{key}",
             "spec_value": spec_paths.get(path_id, {}).get(key), "proposed": path_record[key]} for key in unresolved]
    return {
        "version": 1,
        "reason": ("The spec's correctness revisions are UNRESOLVED; no full run happens until they are pinned "
                   "(CORR-6, CORR-8). The run does not pin them itself."),
        "spec": ctx.plan.spec_path,
        "spec_sha256": ctx.plan.spec_sha256,
        "revision_file": revision_file,
        "pins": pins,
        "revision_file_fragment": {REVISION_FILE_KEY: {path_id: {p["field"].rsplit(".", 1)[1]: p["proposed"]
                                                                 for p in pins}}},
        "implementation_revision": path_record.get("implementation_revision"),
        "measured_with_proposed_revisions": {
            "errors": path_record.get("errors"),
            "within_spec_tolerances": measured_ok,
            "fixed_input_sha256": (path_record.get("fixed_input") or {}).get("sha256"),
            "evidence": ["correctness-preflight.json", "correctness-fixed-input.json"],
        },
    }


def _next_diagnostic(ctx: RunContext, measured_ok: bool, unresolved: list[str], differs: list[str]) -> str | None:
    if unresolved:
        return (f"pin {', '.join(unresolved)} in {plan_file_path(Path(ctx.plan.spec_path))} (key {REVISION_FILE_KEY}; "
                f"values in evidence {REQUEST_EVIDENCE}) or in the spec, then re-run")
    if differs:
        return ("the code differs from the pinned revision: check out the pinned revision or record a new spec "
                "revision, then re-run")
    if not measured_ok:
        return ("diff the advantages in evidence correctness-fixed-input.json (implementation vs reference) "
                "item by item; check the window exclusion of item i and the feature standardization")
    return None


def _keep_evidence(ctx: RunContext, outcome) -> None:
    ctx.store.add_evidence("correctness-fixed-input.json", "metrics", json.dumps(outcome.fixed_input, sort_keys=True))
    ctx.store.add_evidence("correctness-preflight.json", "metrics", json.dumps(outcome.record, indent=2, sort_keys=True))
    package = Path(gs1_preflight.__file__).parent
    for name in ("gs1_preflight.py", "advantages.py", "gs1_reference.py"):
        ctx.store.add_evidence(f"script-{name}", "script", (package / name).read_bytes(), source=f"experiment/rl/{name}")

