"""Gate `decision` (contract section 7; contract-details A-7.x, A-2.4, A-2.5).

Item-level observations of every compared arm (failures as 0) are retained as
`scored-observations.jsonl` (kind metrics, referenced by name + sha256); the paired Hoeffding
rule of the spec is applied to them with the same code as `python -m flows.decide`; role
labels are mapped to arms from the plan and the mapping is recorded. The verdict follows the
spec's vocabulary and is written only now, in the final RESULT update.
"""

from __future__ import annotations

from typing import Any

from experiment import decision as d
from experiment.evaluation import observations_from_predictions
from experiment.gates import GateVerdict, RunContext
from experiment.result import THREE_WAY_ABSENT_FIELDS

GATE = "decision"


def run(ctx: RunContext) -> GateVerdict:
    rule = ctx.spec.to_dict()["decision_rule"]
    role_to_arm = {role: entry["arm"] for role, entry in ctx.plan.role_to_arm.items()}
    compared = sorted({role_to_arm.get(key, key) for criterion in rule["criteria"] for key in criterion["weights"]})
    rows = ctx.state.get("prediction_rows", {})
    missing = [arm for arm in compared if arm not in rows]
    if missing:
        return GateVerdict(gate=GATE, status="failed", reasons=[f"no predictions for {missing}"])
    observations = observations_from_predictions([row for arm in compared for row in rows[arm]])
    payload = d.observations_jsonl_bytes(observations)
    entry = ctx.store.add_evidence(d.OBSERVATIONS_FILE_NAME, "metrics", payload)
    limits = [note for note in (ctx.state.get("correctness_note"),) if note]
    summary = d.decision_summary(
        rule, observations, ctx.plan.vocabulary, role_to_arm=role_to_arm,
        simultaneous=(ctx.plan.decision or {}).get("adjustment") == "bonferroni", limits=limits,
    )
    record = d.decision_record(summary, d.OBSERVATIONS_FILE_NAME, entry["sha256"])
    ctx.store.update_result(decision=record, **final_fields(ctx, summary))
    return GateVerdict(
        gate=GATE, status="passed",
        reasons=[f"{c['id']}: effect {c['effect']:.4f}, interval [{c['lower']:.4f}, {c['upper']:.4f}] vs margin "
                 f"{c['margin']:g} ({c['status']})" for c in summary["criteria"]],
        measured={"verdict": summary["verdict"], **{c["id"]: c["effect"] for c in summary["criteria"]}},
    )


def final_fields(ctx: RunContext, summary: dict[str, Any]) -> dict[str, Any]:
    """The final RESULT update in the spec's vocabulary (the effect was measured: succeeded)."""
    criteria = summary["criteria"]
    primary = criteria[0]
    means = ", ".join(f"{arm} {mean:.4f}" for arm, mean in primary["per_arm_means"].items())
    headline = (f"{ctx.plan.spec_title}: {primary['id']} effect {primary['effect']:+.4f} "
                f"(interval [{primary['lower']:.4f}, {primary['upper']:.4f}], margin {primary['margin']:g}).")
    if ctx.plan.vocabulary == "three_way":
        return {
            "status": "succeeded",
            "summary": f"Both arms trained and every arm was evaluated on {primary['n']} items ({means}). "
                       f"Verdict {summary['verdict']} ({summary['outcome_reason']}).",
            "verdict": summary["verdict"],
            "outcome_reason": summary["outcome_reason"],
            **{field: None for field in THREE_WAY_ABSENT_FIELDS},
        }
    settled = "settles" if primary["status"] != "unsettled" else "straddles"
    limits = summary["limits"]
    reasoning = (
        f"The paired {summary['method']} bound over {primary['n']} items gives effect {primary['effect']:+.4f} "
        f"with interval [{primary['lower']:.4f}, {primary['upper']:.4f}], which {settled} the margin "
        f"{primary['margin']:g}, so the verdict is {summary['verdict']}. "
        f"Per-arm accuracy: {means}. "
        + (f"Confidence is weak: {'; '.join(limits)}" if limits else "Nothing else limits the result.")
    )
    return {
        "status": "succeeded",
        "summary": f"Trained both arms and scored their final checkpoints on {primary['n']} held-out items. {headline}",
        "verdict": summary["verdict"],
        "confidence": summary["confidence"],
        "effect": primary["effect"],
        "margin": primary["margin"],
        "ci": [primary["lower"], primary["upper"]],
        "seeds": len(summary["seeds"]),
        "grid_edge": False,
        "reasoning": reasoning,
        "outcome_reason": None,
    }
