"""RL step of gate `decision` (DEC-1..DEC-14; the verdict per GEN-3, GEN-4).

Item-level observations of every compared arm at every scheduled seed (failures as 0) are retained as
`scored-observations.jsonl` (kind metrics, referenced by name + sha256); the paired Hoeffding
rule of the spec is applied to them with the same code as `python -m flows.decide`; role
labels are mapped to arms from the plan and the mapping is recorded. The verdict follows the
spec's vocabulary; the step returns it, with the other final fields, to the gate, which grades the record and
posts them in the final RESULT update (experiment.gates.decision.decided).

Adaptive selection (plan.selection, DEC-13): the evaluator's items are split (experiment.stats.selection);
the candidate that goes forward is chosen from the retained predictions of the selection items only, and
the choice is frozen (evidence `adaptive-selection.json`, event `selection_frozen`) before the observations
file exists; the observations, and so the decision, hold the confirmation items only.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Callable

from experiment.stats import decision as d
from experiment.stats import selection as sel
from experiment.stats.evaluation import observations_from_predictions
from experiment.contract.verdict import GateVerdict
from experiment.run.context import RunContext
from experiment.rl.steps.evaluation import read_prediction_rows
from experiment.report.summary import effect_in_words, effect_line, subtraction
from experiment.contract.result import THREE_WAY_ABSENT_FIELDS, changed_experiment_limit

GATE = "decision"
# (run directory) -> RESULT.validation: the grader's run-dir checks (experiment.grading.run_dir), handed down by the gate
RunDirValidator = Callable[[Path], dict[str, Any]]


def run(ctx: RunContext, validate: RunDirValidator) -> tuple[GateVerdict, dict[str, Any] | None]:
    """The paired decision of the spec's decision_rule, validated by `validate`: the gate's verdict and the final
    RESULT fields (the run's verdict) that the decision gate grades and posts (experiment.gates.decision.decided);
    None where the step failed before a verdict."""
    rule = ctx.spec.section("decision_rule")  # the stats layer reads it as plain data
    role_to_arm = {role: entry["arm"] for role, entry in ctx.plan.role_to_arm.items()}
    files = ctx.state.prediction_files
    selection = None
    if ctx.plan.selection is not None:  # the choice, frozen before any confirmation observation is written
        weighted = {arm for c in ctx.plan.criteria for arm in c.arm_weights}
        missing = [r.label for arm in sorted(weighted) for r in ctx.plan.replicas_of(arm) if r.label not in files]
        if missing:
            return GateVerdict(gate=GATE, status="failed", reasons=[f"no retained predictions for {missing}"]), None
        selection = freeze_selection(ctx, rule, role_to_arm, _rows_of(ctx, sorted(weighted)))
        role_to_arm[selection["role"]] = selection["selected"]
    compared = sorted({role_to_arm.get(key, key) for criterion in rule["criteria"] for key in criterion["weights"]})
    # every compared arm at every scheduled seed (plan.replicas: the arm's name at the first seed)
    labels = [replica.label for arm in compared for replica in ctx.plan.replicas_of(arm)] or compared
    missing = [label for label in labels if label not in files]
    if missing:
        return GateVerdict(gate=GATE, status="failed", reasons=[f"no retained predictions for {missing}"]), None
    # the decision is computed from the retained prediction files, exactly as a reviewer would
    observations = observations_from_predictions(
        [row for label in labels for row in read_prediction_rows(ctx, files[label])])
    if selection is not None:  # confirmation items only
        confirmation = set(selection["split"]["confirmation_ids"])
        observations = [o for o in observations if o.item_id in confirmation]
    entry = ctx.store.add_evidence(d.OBSERVATIONS_FILE_NAME, "metrics", d.observations_jsonl_bytes(observations))
    limits = [note for note in (ctx.state.correctness_note,) if note]
    if ctx.plan.vocabulary == "direction_confidence":  # three-way: the exchange keeps the verdict for the changed experiment
        limits += changed_experiment_limit(ctx.store.read_result())
    if entry.get("inline") is False:  # past the evidence caps: the record cannot carry it (EVID-3, DEC-4)
        limits.append(f"the observations file {entry['name']} does not fit the evidence caps and is reported partial, "
                      "so the exchange cannot recompute the decision (unverified)")
    simultaneous = (ctx.plan.decision or {}).get("adjustment") == "bonferroni"

    def decide(extra_limits: list[str]) -> dict[str, Any]:
        return d.decision_summary(rule, observations, ctx.plan.vocabulary, role_to_arm=role_to_arm,
                                  simultaneous=simultaneous, limits=limits + extra_limits)

    summary = decide([])
    record = d.decision_record(summary, d.OBSERVATIONS_FILE_NAME, entry["sha256"], selection=selection)
    # Everything but the verdict, then the same validation `python -m flows.validate` runs:
    # a run whose records do not check out gets no definitive verdict.
    ctx.store.update_result(decision=record, **measured_fields(ctx, summary))
    validation = validate(ctx.store.run_dir)
    problem_count = validation["problem_count"]
    if problem_count:
        summary = decide([f"validation failed: {', '.join(validation['failed_checks'])}"])
    final = {"validation": validation, **final_fields(ctx, summary)}  # graded and posted by the gate
    chosen = ([f"adaptive selection: {selection['selected']} chosen of {', '.join(selection['candidates'])} on "
               f"{len(selection['split']['selection_ids'])} selection items, frozen before confirmation"]
              if selection else [])
    return GateVerdict(
        gate=GATE, status="passed",
        reasons=[f"verdict {summary['verdict']}"] + chosen
        + [f"{c['id']}: {effect_line(c)}" for c in summary["criteria"]]
        + [f"validation: {problem_count} problem(s)"  # and the first problem's check ("<check>: <message>")
           + (f": {validation['problems'][0].partition(': ')[0]}" if problem_count else "")],
        measured={"verdict": summary["verdict"], "validation_problems": problem_count,
                  **{c["id"]: c["effect"] for c in summary["criteria"]}},
    ), final


def _rows_of(ctx: RunContext, arms: list[str]) -> list[d.Observation]:
    """Every retained prediction row of these arms at every scheduled seed, as observations."""
    files = ctx.state.prediction_files
    return observations_from_predictions([row for arm in arms for replica in ctx.plan.replicas_of(arm)
                                          for row in read_prediction_rows(ctx, files[replica.label])])


def freeze_selection(ctx: RunContext, rule: dict[str, Any], role_to_arm: dict[str, str],
                     rows: list[d.Observation]) -> dict[str, Any]:
    """Split the frozen evaluator's items, choose the candidate on the selection items alone, and retain the
    choice (evidence file, then event) before any confirmation observation exists: decision.selection."""
    planned = ctx.plan.selection
    evaluator = ctx.state.evaluator_id
    item_ids = ctx.store.read_result()["evaluation"]["evaluators"][evaluator]["items"]["ids"]
    split = sel.split_items([str(item) for item in item_ids])
    criterion = next(c for c in rule["criteria"] if c.get("id") == planned["criterion"])
    selected, effects = sel.choose(rows, criterion, planned["role"], planned["candidates"], role_to_arm,
                                   rule.get("seeds") or ctx.plan.seeds, split.selection_ids)
    record = sel.selection_record(split, evaluator, planned["role"], planned["candidates"], planned["criterion"],
                                  selected, effects)
    entry = ctx.store.add_evidence(sel.SELECTION_FILE_NAME, "metrics", sel.selection_file_bytes(record))
    ctx.store.append_event("selection_frozen", selected=selected, record_sha256=record["record_sha256"],
                           file_sha256=entry["sha256"], selection_items=len(split.selection_ids),
                           confirmation_items=len(split.confirmation_ids))
    return {**record, "file": {"name": sel.SELECTION_FILE_NAME, "sha256": entry["sha256"]}}


def measured_fields(ctx: RunContext, summary: dict[str, Any]) -> dict[str, Any]:
    """Effect, margin and interval of the primary criterion (direction vocabulary only), no verdict yet."""
    if ctx.plan.vocabulary == "three_way":
        return {}
    primary = summary["criteria"][0]
    return {"effect": primary["effect"], "margin": primary["margin"], "ci": [primary["lower"], primary["upper"]],
            "seeds": len(summary["seeds"]), "grid_edge": False}


def _model_note(ctx: RunContext) -> str:
    """Which model the arms trained on, and why it is not the spec's: a rehearsal's rule or a service
    that does not serve the spec's model (the deviation's own reason says which)."""
    for deviation in ctx.store.read_result().get("deviations", []):
        if deviation.get("field") == "model" and deviation.get("original") == _spec_model(ctx):
            why = ("a rehearsal substitute for" if str(deviation.get("reason", "")).startswith("rehearsal:")
                   else "the service does not serve")
            return f" on {deviation['effective']} ({why} {deviation['original']})"
    return ""


def _spec_model(ctx: RunContext) -> str:
    return (ctx.plan.rehearsal or {}).get("spec_model") or ctx.plan.base_model




def final_fields(ctx: RunContext, summary: dict[str, Any]) -> dict[str, Any]:
    """The final RESULT update in the spec's vocabulary (the effect was measured: succeeded): the verdict and its
    words; the measured fields (`measured_fields`) were posted before the validation and are not restated."""
    criteria = summary["criteria"]
    primary = criteria[0]
    means = ", ".join(f"{arm} {mean:.4f}" for arm, mean in primary["per_arm_means"].items())
    seeds = summary["seeds"]
    at_seeds = f" at seeds {', '.join(map(str, seeds))}" if len(seeds) > 1 else ""
    chosen = (ctx.store.read_result().get("decision") or {}).get("selection")
    ran = (f"Trained every arm{at_seeds}{_model_note(ctx)} and scored the final checkpoints on {primary['n']} "
           "held-out items" if not chosen else
           f"Trained every arm{at_seeds}{_model_note(ctx)}, chose {chosen['selected']} on "
           f"{len(chosen['split']['selection_ids'])} selection items (frozen before confirmation) and decided on "
           f"{primary['n']} disjoint confirmation items")
    if ctx.plan.vocabulary == "three_way":
        bounds = "; ".join(f"{c['id']} {c['effect']:+.4f} [{c['lower']:.4f}, {c['upper']:.4f}] vs {c['margin']:g}"
                           for c in criteria)
        return {
            "status": "succeeded",
            "summary": f"{ran} ({means}). Verdict {summary['verdict']} ({summary['outcome_reason']}): {bounds}.",
            "verdict": summary["verdict"],
            "outcome_reason": summary["outcome_reason"],
            **{field: None for field in THREE_WAY_ABSENT_FIELDS},
        }
    limits = [limit.rstrip(". ") for limit in summary["limits"]]
    supported = "the claim is supported" if summary["verdict"] == "supported" else "the claim is not supported"
    reasoning = (
        f"The paired Hoeffding bound over {primary['n']} items gives an effect ({subtraction(primary)}) of "
        f"{primary['effect']:+.4f} with interval [{primary['lower']:.4f}, {primary['upper']:.4f}]: "
        f"{effect_in_words(primary)}. So {supported}: verdict {summary['verdict']} (accuracy {means}). "
        + (f"Confidence is weak because of: {'; '.join(limits)}." if limits else "Nothing else limits the result.")
    )
    return {
        "status": "succeeded",
        "summary": f"{ran}. The {primary['id']} effect is {primary['effect']:+.4f} "
                   f"(interval [{primary['lower']:.4f}, {primary['upper']:.4f}], margin {primary['margin']:g}).",
        "verdict": summary["verdict"],
        "confidence": summary["confidence"],
        "reasoning": reasoning,
        "outcome_reason": None,
    }

