"""RL step of gate `decision` (DEC-1..DEC-14; the verdict per GEN-3, GEN-4).

Item-level observations of every compared arm at every scheduled seed (failures as 0) are retained as
`scored-observations.jsonl` (kind metrics, referenced by name + sha256); the paired Hoeffding
rule of the spec is applied to them with the same code as `python -m flows.decide`; role
labels are mapped to arms from the plan and the mapping is recorded. The verdict follows the
spec's vocabulary and is written only now, in the final RESULT update.
"""

from __future__ import annotations

from typing import Any, Callable

from experiment.stats import decision as d
from experiment.stats.evaluation import observations_from_predictions
from experiment.contract.verdict import GateVerdict
from experiment.run.context import RunContext
from experiment.rl.steps.evaluation import read_prediction_rows
from experiment.report.summary import effect_in_words, effect_line, subtraction
from experiment.contract.result import THREE_WAY_ABSENT_FIELDS, changed_experiment_limit
from experiment.report.validation import validate_run, validation_summary

GATE = "decision"
# (ctx, the final fields about to be posted) -> RESULT.grade: the grader, handed down by the gate
Grader = Callable[[RunContext, dict[str, Any]], dict[str, Any]]


def run(ctx: RunContext, grade: Grader) -> GateVerdict:
    """The paired decision of the spec's decision_rule, validated, graded by `grade` and posted with the verdict."""
    rule = ctx.spec.section("decision_rule")  # the stats layer reads it as plain data
    role_to_arm = {role: entry["arm"] for role, entry in ctx.plan.role_to_arm.items()}
    compared = sorted({role_to_arm.get(key, key) for criterion in rule["criteria"] for key in criterion["weights"]})
    files = ctx.state.prediction_files
    # every compared arm at every scheduled seed (plan.replicas: the arm's name at the first seed)
    labels = [replica.label for arm in compared for replica in ctx.plan.replicas_of(arm)] or compared
    missing = [label for label in labels if label not in files]
    if missing:
        return GateVerdict(gate=GATE, status="failed", reasons=[f"no retained predictions for {missing}"])
    # the decision is computed from the retained prediction files, exactly as a reviewer would
    observations = observations_from_predictions(
        [row for label in labels for row in read_prediction_rows(ctx, files[label])])
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
    record = d.decision_record(summary, d.OBSERVATIONS_FILE_NAME, entry["sha256"])
    # Everything but the verdict, then the same validation `python -m flows.validate` runs:
    # a run whose records do not check out gets no definitive verdict.
    ctx.store.update_result(decision=record, **measured_fields(ctx, summary))
    problems = validate_run(ctx.store.run_dir)
    if problems:
        summary = decide([f"validation failed: {', '.join(sorted({p.check for p in problems}))}"])
    # the grader (python -m flows.validate) grades the record before the verdict is posted; stored in RESULT.grade
    final = {"validation": validation_summary(problems), **final_fields(ctx, summary)}
    ctx.store.update_result(grade=grade(ctx, final), **final)
    return GateVerdict(
        gate=GATE, status="passed",
        reasons=[f"verdict {summary['verdict']}"]
        + [f"{c['id']}: {effect_line(c)}" for c in summary["criteria"]]
        + [f"validation: {len(problems)} problem(s)" + (f": {problems[0].check}" if problems else "")],
        measured={"verdict": summary["verdict"], "validation_problems": len(problems),
                  **{c["id"]: c["effect"] for c in summary["criteria"]}},
    )


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
    """The final RESULT update in the spec's vocabulary (the effect was measured: succeeded)."""
    criteria = summary["criteria"]
    primary = criteria[0]
    means = ", ".join(f"{arm} {mean:.4f}" for arm, mean in primary["per_arm_means"].items())
    seeds = summary["seeds"]
    at_seeds = f" at seeds {', '.join(map(str, seeds))}" if len(seeds) > 1 else ""
    ran = (f"Trained every arm{at_seeds}{_model_note(ctx)} and scored the final checkpoints on {primary['n']} "
           "held-out items")
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
        **measured_fields(ctx, summary),
        "reasoning": reasoning,
        "outcome_reason": None,
    }

