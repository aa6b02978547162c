"""Run-directory helpers for the run-dir layer's tests (experiment/grading/run_dir.py): a spec with its
decision rule edited, a decision recorded into a built run (tests/records.py), and the validator's findings
over an in-memory run."""

from __future__ import annotations

import json

from records import OBSERVATIONS, PLAN, SPEC, edit_result, read_result
from suite import GS1_SPEC

from experiment.grading.run_dir import Validator
from experiment.stats.decision import decision_record, decision_summary, read_observations_jsonl


def spec_with_rule(tmp, name, edit):
    """An edited copy of the GS1 spec with its revision file beside it (the revision pins the correctness revisions
    the spec leaves UNRESOLVED; intake refuses the spec without them)."""
    spec = json.loads(GS1_SPEC.read_text())
    edit(spec)
    path = tmp / f"{name}.json"
    path.write_text(json.dumps(spec))
    revision = GS1_SPEC.with_name(GS1_SPEC.name.removesuffix(".json") + ".plan.json")
    path.with_name(f"{name}.plan.json").write_text(revision.read_text())
    return path


def two_criteria(spec):
    spec["decision_rule"]["criteria"].append(
        {"id": "secondary", "metric": "accuracy", "weights": {"treatment": 1, "baseline": -1}, "margin": -0.5,
         "bounds": [0, 1]})


def record_decision(run_dir, simultaneous):
    """Rewrite RESULT's decision and the fields that follow from it as the run code records them, with the
    bonferroni adjustment or without (build_gs1_run records every decision unadjusted)."""
    spec = json.loads((run_dir / "evidence" / SPEC).read_text())
    plan = json.loads((run_dir / "evidence" / PLAN).read_text())
    observations = read_observations_jsonl(run_dir / "evidence" / OBSERVATIONS)
    role_to_arm = {role: entry["arm"] for role, entry in plan["role_to_arm"].items()}
    summary = decision_summary(spec["decision_rule"], observations, plan["vocabulary"], role_to_arm=role_to_arm,
                               simultaneous=simultaneous, limits=["one seed"])
    primary = summary["criteria"][0]
    sha = read_result(run_dir)["decision"]["observations_file"]["sha256"]
    edit_result(run_dir, lambda result: result.update(
        decision=decision_record(summary, OBSERVATIONS, sha), verdict=summary["verdict"],
        confidence=summary["confidence"], effect=primary["effect"], margin=primary["margin"],
        ci=[primary["lower"], primary["upper"]]))


def found(validator: Validator) -> list[tuple[str, str]]:
    return [(problem.check, problem.message) for problem in validator.report.problems]


def checks(validator: Validator) -> list[str]:
    return [problem.check for problem in validator.report.problems]
