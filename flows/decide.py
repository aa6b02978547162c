"""python -m flows.decide SPEC OBSERVATIONS.jsonl

Recomputes a run's decision from its observations file with the code the flow uses
(``experiment.stats.decision.decision_summary``) and prints it as JSON: per criterion the
effect, lower and upper bound, per-arm means and status, then the verdict with its
confidence (direction+confidence) or outcome_reason (three-way).

The decision rule comes from the spec; the role -> arm mapping and the vocabulary
come from ``experiment.contract.plan.draft_plan`` (the plan as the spec gives it).  Bad input exits with status 2 and one
line on stderr.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from flows.lifetime import exit_process, survive_closed_console


class _OneLineArgumentParser(argparse.ArgumentParser):
    def error(self, message):
        print(f"decide: {message}", file=sys.stderr)
        raise SystemExit(2)


def role_to_arm_names(role_to_arm: dict) -> dict[str, str]:
    """{role: arm name} from the plan's mapping ({role: {"arm": name, "reason": ...}})."""
    return {role: (entry["arm"] if isinstance(entry, dict) else entry) for role, entry in role_to_arm.items()}


def refuse_unknown_arms(observations, spec, role_to_arm: dict[str, str], selection: dict | None,
                        observations_path) -> None:
    """ValueError (one line) when a row names an arm the spec does not have: such rows were dropped silently
    (no criterion reads them), so a file for another spec, or with a mistyped arm, gave a decision as if whole."""
    known = {arm.name for arm in spec.arms or []} | set(role_to_arm.values()) | set((selection or {}).get("candidates") or ())
    unknown = sorted({observation.arm for observation in observations} - known)
    if unknown:
        rows = sum(observation.arm in unknown for observation in observations)
        raise ValueError(f"{observations_path}: {rows} rows name arms the spec does not have "
                         f"({', '.join(map(repr, unknown[:5]))}{', ...' if len(unknown) > 5 else ''}; "
                         f"its arms: {', '.join(sorted(known))})")


def decide(spec_path, observations_path) -> dict:
    """The decision JSON for one spec and one observations file."""
    from experiment.stats.decision import bytes_sha256, decision_summary, read_observations_jsonl
    from experiment.contract.plan import draft_plan
    from experiment.contract.spec import load_spec
    from experiment.contract.support import check_criteria_weights

    spec = load_spec(spec_path)
    decision_rule = spec.section("decision_rule")
    if not decision_rule:
        raise ValueError(f"{spec_path}: the spec has no decision_rule")
    check_criteria_weights(spec)  # a vector the contract does not define decides nothing (as at intake)
    plan = draft_plan(spec)
    observations = read_observations_jsonl(observations_path)
    # The plan fixes the interval adjustment (Bonferroni over several criteria).
    simultaneous = (plan.decision or {}).get("adjustment") == "bonferroni"
    role_to_arm = role_to_arm_names(plan.role_to_arm)
    refuse_unknown_arms(observations, spec, role_to_arm, plan.selection, observations_path)
    if plan.selection is not None:  # adaptive selection: the one candidate the confirmation observations hold
        observed = sorted({o.arm for o in observations} & set(plan.selection["candidates"]))
        if len(observed) != 1:
            raise ValueError(f"adaptive selection: the observations must hold exactly one of the candidates "
                             f"{', '.join(plan.selection['candidates'])} (the one selected); they hold {observed}")
        role_to_arm[plan.selection["role"]] = observed[0]
    summary = decision_summary(
        decision_rule, observations, vocabulary=plan.vocabulary,
        role_to_arm=role_to_arm, simultaneous=simultaneous,
    )
    return {
        "spec": str(spec_path),
        "observations_file": {
            "name": Path(observations_path).name,
            "sha256": bytes_sha256(Path(observations_path).read_bytes()),
            "rows": len(observations),
        },
        **summary,
    }


def main(argv=None) -> int:
    parser = _OneLineArgumentParser(prog="python -m flows.decide",
                                    description="Recompute the decision from an observations file.")
    parser.add_argument("spec", help="experiment spec JSON")
    parser.add_argument("observations", help="observations JSONL (item_id, arm, seed, metric, value[, evaluator_id])")
    arguments = parser.parse_args(argv)
    for path in (arguments.spec, arguments.observations):
        if not Path(path).is_file():
            print(f"decide: no such file: {path}", file=sys.stderr)
            return 2
    try:
        output = decide(arguments.spec, arguments.observations)
    except (ValueError, KeyError, TypeError, OSError) as error:
        # SpecError and DecisionError are ValueErrors; one line, no traceback.
        message = str(error).splitlines()[0] if str(error) else type(error).__name__
        print(f"decide: {message}", file=sys.stderr)
        return 2
    print(json.dumps(output, indent=2, sort_keys=True, allow_nan=False))
    return 0


if __name__ == "__main__":
    survive_closed_console()  # `... | head`: the rest of the output goes nowhere, no traceback
    exit_process(main())
