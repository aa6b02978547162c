"""The record held to what it cannot choose (experiment/grading/spec_anchor.py, issue 45): the spec's eval set, the
evaluator the spec fixes, the retained evaluator code, the plan's steps/LRs/seeds, the evidence the spec requires,
and prose that says what the record says.

The honest evaluator of each test is built by the pipeline's own code (its eval-item selection, its code files and
provenance); the grader re-derives each value independently and must accept it, and must refuse each edit a
tamperer would make consistently (the evaluator id re-derived: these checks read the values, not the id). The same
edits on whole wiring records, graded by the parent commit and by this one, are tests/tampering_spec.py (run by
tests/e2e/test_grader_trust.py).
"""

from __future__ import annotations

import hashlib
import json

import pytest

from experiment.contract.evaluators import RL_EVALUATOR_FORMER_NAMES, RL_QUESTION_SUFFIX, rl_prompt_template
from experiment.contract.plan import build_plan
from experiment.contract.result_models import evidence_file
from experiment.contract.spec import load_spec
from experiment.grading import spec_anchor
from experiment.grading.common import INVALID, UNVERIFIED, GradeContext
from experiment.grading.evidence import EvidenceAccess
from experiment.report.code_revision import code_revision, pipeline_code_bundle
from experiment.stats import evaluation as ev
from suite import GS1_SPEC, SELFGEN_SPEC, TRIMUON_SPEC

SPECS = {"gs1": GS1_SPEC, "selfgen": SELFGEN_SPEC, "trimuon": TRIMUON_SPEC}


def _spec(family: str, scale: str | None = "wiring"):
    spec = load_spec(SPECS[family], rehearse=scale is not None, rehearsal_scale=scale or "standard")
    return spec, build_plan(spec)


def _pipeline_items(spec) -> list[str]:
    """The eval items the pipeline's own evaluation step takes."""
    if spec.training_type == "sft":
        from experiment.sft.loop import heldout_examples

        return [example.id for example in heldout_examples(spec)]
    from experiment.rl.recipe import eval_items

    return [item.id for item in eval_items(spec)]


@pytest.fixture(scope="module")
def retained_code() -> list[dict]:
    """This checkout's pipeline code and code revision, as a run retains them (evidence files)."""
    return [evidence_file("pipeline-code.json", "script", pipeline_code_bundle(include_backend=True).encode()),
            evidence_file("code-revision.json", "code_revision", json.dumps(code_revision()).encode())]


def _with_pipeline_code(files: list[dict], edit) -> list[dict]:
    """The retained evidence `files` with their pipeline-code bundle edited in place by `edit(bundle)`."""
    bundle = json.loads(next(f for f in files if f["name"] == "pipeline-code.json")["content"])
    edit(bundle)
    return [f for f in files if f["name"] != "pipeline-code.json"] + [
        evidence_file("pipeline-code.json", "script", json.dumps(bundle).encode())]


def _provenance(spec, plan) -> dict:
    """The evaluator the pipeline's evaluation step freezes for this spec (no service: stop strings are the
    renderer's, which the anchor does not hold)."""
    items = _pipeline_items(spec)
    if spec.training_type == "sft":
        from experiment import PROJECT_ROOT
        from experiment.contract.evaluators import SFT_EVALUATOR_CODE, TEACHER_FORCED, sft_parser, sft_prompt_template
        from experiment.sft.loop import sft_settings

        settings = sft_settings(spec)
        return ev.evaluator_provenance([PROJECT_ROOT / f for f in SFT_EVALUATOR_CODE],
                                       sft_prompt_template(settings.renderer_name, settings.max_seq_len),
                                       dict(TEACHER_FORCED), sft_parser(plan.eval.get("aggregation") or "token_mean"),
                                       items)
    from experiment.rl.math_eval import PARSER_DESCRIPTION, evaluator_code_files, prompt_template
    from experiment.contract.rollout import rollout_settings

    rollout = rollout_settings(spec)
    files = evaluator_code_files()
    provenance = ev.evaluator_provenance(files, prompt_template(rollout.few_shot),
                                         {"temperature": 0.0, "max_tokens": rollout.max_tokens, "stop": ["<|im_end|>"]},
                                         PARSER_DESCRIPTION, items)
    provenance["code_files"] = ev.code_files_manifest(files)
    return provenance


def _ctx(spec, plan, provenance: dict, files: list[dict], **result) -> GradeContext:
    record = {"status": "succeeded", "evidence": {"version": 1, "files": files},
              "evaluation": {"version": 1, "evaluators": {ev.evaluator_id(provenance): provenance}, "scores": []},
              **result}
    return GradeContext(result=record, evidence=EvidenceAccess(record), spec=spec.to_dict(), spec_model=spec, plan=plan)


def _evaluator_issues(ctx: GradeContext) -> list[tuple[str, str]]:
    found = spec_anchor.eval_set_issues(ctx) + spec_anchor.provenance_issues(ctx) + spec_anchor.code_hash_issues(ctx)
    return [(issue.rule, issue.status) for issue in found]


# ---------------------------------------------------------------------------- the eval set


@pytest.mark.parametrize("family,scale", [("gs1", "wiring"), ("gs1", "standard"), ("gs1", None), ("selfgen", "wiring"),
                                          ("selfgen", None), ("trimuon", "wiring"), ("trimuon", "standard")])
def test_the_graders_eval_set_is_the_one_the_pipeline_selects(family, scale):
    spec, _ = _spec(family, scale)
    ids, _ = spec_anchor.spec_eval_ids(spec.to_dict())
    n = spec.to_dict()["eval"]["n_examples"]
    assert ids is not None and len(ids) >= n
    assert ids[:n] == _pipeline_items(spec)


def test_an_sft_eval_set_on_the_hub_is_held_to_its_count_only():
    spec, _ = _spec("trimuon", None)
    assert spec_anchor.spec_eval_ids(spec.to_dict())[0] is None


# ---------------------------------------------------------------------------- the evaluator


def _edited(provenance: dict, edit) -> dict:
    copy = json.loads(json.dumps(provenance))
    edit(copy)
    return copy


def _cut(p: dict) -> None:
    p["items"]["ids"] = [i for n, i in enumerate(p["items"]["ids"]) if n % 3]


def _reordered(p: dict) -> None:
    p["items"]["ids"] = list(reversed(p["items"]["ids"]))


def _swapped(p: dict) -> None:
    p["items"]["ids"] = p["items"]["ids"][:-1] + ["train-item-that-is-no-eval-item"]


EDITS = {
    "cut eval set": (_cut, ("EVAL-13", INVALID)),
    "reordered eval set": (_reordered, ("EVAL-13", INVALID)),
    "one item swapped": (_swapped, ("EVAL-13", INVALID)),
    "reworded template": (lambda p: p.update(prompt_template="Think step by step. " + p["prompt_template"]),
                          ("EVAL-14", INVALID)),
    "sampled at temperature 1": (lambda p: p["decoding"].update(temperature=1.0), ("EVAL-14", INVALID)),
    "another parser": (lambda p: p.update(parser="the last integer"), ("EVAL-14", INVALID)),
    "a sampling setting the spec does not fix": (lambda p: p["decoding"].update(top_p=0.9), ("EVAL-14", INVALID)),
    "a code hash of other code": (lambda p: p.update(code_sha256=hashlib.sha256(b"other").hexdigest()),
                                  ("EVAL-15", INVALID)),
}


@pytest.mark.parametrize("family", list(SPECS))
def test_the_pipelines_own_evaluator_is_the_one_the_spec_fixes(family, retained_code):
    spec, plan = _spec(family)
    assert _evaluator_issues(_ctx(spec, plan, _provenance(spec, plan), retained_code)) == []


@pytest.mark.parametrize("family", list(SPECS))
@pytest.mark.parametrize("edit", list(EDITS))
def test_an_evaluator_edited_consistently_is_refused(family, edit, retained_code):
    spec, plan = _spec(family)
    change, expected = EDITS[edit]
    provenance = _edited(_provenance(spec, plan), change)
    assert expected in _evaluator_issues(_ctx(spec, plan, provenance, retained_code))


@pytest.mark.parametrize("family", ["gs1", "selfgen"])
def test_an_rl_answer_length_other_than_the_rollouts_is_refused(family, retained_code):
    spec, plan = _spec(family)
    provenance = _edited(_provenance(spec, plan), lambda p: p["decoding"].update(max_tokens=512))
    assert ("EVAL-14", INVALID) in _evaluator_issues(_ctx(spec, plan, provenance, retained_code))


def test_an_rl_code_manifest_rewritten_with_its_hash_is_held_to_the_retained_code(retained_code):
    """A tamperer who edits the manifest's entry for a project file and recomputes code_sha256 from it."""
    spec, plan = _spec("gs1")

    def forge(p: dict) -> None:
        p["code_files"]["experiment/rl/math_eval.py"] = hashlib.sha256(b"an edited grader").hexdigest()
        p["code_sha256"] = ev.manifest_sha256(p["code_files"])

    forged = _edited(_provenance(spec, plan), forge)
    assert ("EVAL-15", INVALID) in _evaluator_issues(_ctx(spec, plan, forged, retained_code))
    cookbook = _edited(_provenance(spec, plan), lambda p: p["code_files"].update(
        {"tinker_cookbook/recipes/math_rl/math_grading.py": "0" * 64}))
    cookbook["code_sha256"] = ev.manifest_sha256(cookbook["code_files"])
    assert ("EVAL-15", INVALID) in _evaluator_issues(_ctx(spec, plan, cookbook, retained_code))
    left_out = _edited(_provenance(spec, plan), lambda p: p["code_files"].pop("tinker_cookbook/rl/problem_env.py"))
    left_out["code_sha256"] = ev.manifest_sha256(left_out["code_files"])
    assert ("EVAL-15", INVALID) in _evaluator_issues(_ctx(spec, plan, left_out, retained_code))


@pytest.mark.parametrize("family", list(SPECS))
def test_an_evaluator_whose_code_is_not_retained_is_unverified(family, retained_code):
    spec, plan = _spec(family)
    revision_only = [f for f in retained_code if f["name"] == "code-revision.json"]
    assert _evaluator_issues(_ctx(spec, plan, _provenance(spec, plan), revision_only,
                                  rehearsal={"scale": "wiring"})) == [("EVAL-15", UNVERIFIED)]


def test_an_rl_evaluator_without_its_code_manifest_is_unverified(retained_code):
    spec, plan = _spec("gs1")
    provenance = _edited(_provenance(spec, plan), lambda p: p.pop("code_files"))
    assert _evaluator_issues(_ctx(spec, plan, provenance, retained_code)) == [("EVAL-15", UNVERIFIED)]


def test_a_record_of_another_pipeline_is_held_to_greedy_decoding_only():
    """No pipeline code, no rehearsal, a code revision that lists none of this pipeline's files: its item ids,
    template and parser are its own pipeline's; greedy decoding is still the spec's."""
    spec, plan = _spec("gs1", None)
    other = [evidence_file("code-revision.json", "code_revision", json.dumps({"commit": "0" * 40}).encode())]
    provenance = {"code_sha256": "ab" * 32, "prompt_template": "{question}", "parser": "last number",
                  "decoding": {"temperature": 0.0, "max_tokens": 16, "stop": []}, "items": {"ids": ["a", "b"]}}
    assert _evaluator_issues(_ctx(spec, plan, provenance, other)) == []
    hot = _edited(provenance, lambda p: p["decoding"].update(temperature=0.7))
    assert _evaluator_issues(_ctx(spec, plan, hot, other)) == [("EVAL-14", INVALID)]
    sft, sft_plan = _spec("trimuon", None)  # a held-out loss samples nothing, whoever scores it
    assert _evaluator_issues(_ctx(sft, sft_plan, provenance, other)) == []
    assert _evaluator_issues(_ctx(sft, sft_plan, hot, other)) == [("EVAL-14", INVALID)]


def test_the_contracts_rl_evaluator_is_the_math_envs():
    from tinker_cookbook.recipes.math_rl.math_env import MathEnv

    from experiment.rl.math_eval import prompt_template

    assert RL_QUESTION_SUFFIX == MathEnv.question_suffix()
    assert [rl_prompt_template(f) for f in (False, True)] == [prompt_template(f) for f in (False, True)]
    from experiment.contract.evaluators import RL_EVALUATOR_COOKBOOK_CODE, RL_EVALUATOR_PROJECT_CODE
    from experiment.rl.math_eval import evaluator_code_files

    assert set(RL_EVALUATOR_PROJECT_CODE + RL_EVALUATOR_COOKBOOK_CODE) <= set(evaluator_code_files())


# ---------------------------------------------------------------------------- events: frozen first, every step


def _with_events(family: str, events: list[dict], **result) -> GradeContext:
    spec, plan = _spec(family)
    provenance = {"code_sha256": "ab" * 32, "items": {"ids": ["x"]}}
    ctx = _ctx(spec, plan, provenance, [], completed_arms=[arm.name for arm in plan.trained_arms], **result)
    ctx.events = events
    return ctx


def _frozen(eid: str = "") -> dict:
    return {"event": "evaluator_frozen", "evaluator_id": eid}


def test_the_evaluator_is_frozen_before_the_evaluation_begins():
    ctx = _with_events("gs1", [])
    eid = next(iter(ctx.result["evaluation"]["evaluators"]))
    began = [{"event": "evidence_added", "kind": "predictions", "name": "predictions-base.jsonl"},
             {"event": "gate", "gate": "evaluation", "status": "passed"}]
    ctx.events = [_frozen(eid), *began]
    assert spec_anchor.frozen_order_issues(ctx) == []
    ctx.events = [began[0], _frozen(eid), began[1]]
    assert [i.status for i in spec_anchor.frozen_order_issues(ctx)] == [INVALID]
    ctx.events = began
    assert [i.status for i in spec_anchor.frozen_order_issues(ctx)] == [UNVERIFIED]
    ctx.events = [_frozen("another evaluator"), *began]
    assert [i.status for i in spec_anchor.frozen_order_issues(ctx)] == [INVALID]


@pytest.mark.parametrize("family,key", [("gs1", "arm"), ("trimuon", "run")])
def test_every_planned_training_step_has_its_event(family, key):
    spec, plan = _spec(family)
    names = ([run.name for run in plan.training_runs] if key == "run" else [arm.name for arm in plan.trained_arms])
    steps = {run.name: run.steps for run in plan.training_runs}
    every = [{"event": "training_step", key: name, "step": step} for name in names for step in range(steps[name])]
    assert spec_anchor.EVID_11(_with_events(family, every)) == []
    dropped = [e for e in every if not (e[key] == names[0] and e["step"] == steps[names[0]] - 1)]
    assert [i.status for i in spec_anchor.EVID_11(_with_events(family, dropped))] == [UNVERIFIED]
    assert [i.status for i in spec_anchor.EVID_11(_with_events(family, every + every[:1]))] == [UNVERIFIED]
    assert spec_anchor.EVID_11(_with_events(family, dropped, status="failed")) == []  # a stopped run trained less


def test_every_sft_step_has_its_row_in_the_retained_steps_file(retained_code):
    spec, plan = _spec("trimuon")
    rows = [{"run": run.name, "step": step} for run in plan.training_runs for step in range(run.steps)]

    def ctx(kept: list[dict]) -> GradeContext:
        steps = evidence_file("sft-steps.jsonl", "metrics", "".join(json.dumps(r) + "\n" for r in kept).encode())
        return _ctx(spec, plan, {"items": {"ids": []}}, [*retained_code, steps],
                    completed_arms=[run.name for run in plan.training_runs])

    assert spec_anchor.EVID_11(ctx(rows)) == []
    assert [i.status for i in spec_anchor.EVID_11(ctx(rows[:-1]))] == [UNVERIFIED]
    gone = _ctx(spec, plan, {"items": {"ids": []}}, retained_code, completed_arms=["trimuon@lr=0.02"])
    assert [i.status for i in spec_anchor.EVID_11(gone)] == [UNVERIFIED]


def test_each_rl_step_ran_at_the_plans_group_size():
    spec, plan = _spec("gs1")
    events = [{"event": "training_step", "arm": arm.name, "step": step, "executed_group_size": float(arm.group_size),
               "n_rollouts": arm.group_size * arm.groups_per_batch} for arm in plan.trained_arms
              for step in range(arm.steps)]
    ctx = _with_events("gs1", events)
    assert spec_anchor.PLAN_1(ctx) == []
    events[0]["executed_group_size"] = 1.0 if events[0]["executed_group_size"] != 1.0 else 8.0
    assert [i.rule for i in spec_anchor.PLAN_1(ctx)] == ["PLAN-1"]


# ---------------------------------------------------------------------------- the failed pilot's log


def test_a_calibration_keeps_the_failed_candidates_log():
    spec, plan = _spec("gs1")

    def ctx(logs: list[str], bandwidth: float) -> GradeContext:
        files = [evidence_file(f"activation-pilot-bw{b}.jsonl", "metrics", b"{}\n") for b in logs]
        return _ctx(spec, plan, {"items": {"ids": []}}, files, completed_arms=["gs1_kernel"],
                    metrics={"arms": {"gs1_kernel": {"kernel_bandwidth": bandwidth}}})

    assert spec_anchor.ACT_4(ctx(["0.5", "1.0"], 1.0)) == []
    assert spec_anchor.ACT_4(ctx(["0.5"], 0.5)) == []  # the first candidate passed: nothing failed
    assert [i.status for i in spec_anchor.ACT_4(ctx(["1.0"], 1.0))] == [UNVERIFIED]
    assert [i.status for i in spec_anchor.ACT_4(ctx([], 1.0))] == [UNVERIFIED]  # the arm trained at the second


# ---------------------------------------------------------------------------- steps, LRs, seeds


@pytest.mark.parametrize("family", ["gs1", "trimuon"])
def test_the_steps_learning_rates_and_seeds_stated_are_the_plans(family):
    spec, plan = _spec(family)
    arms: dict = {}
    for run in plan.training_runs:
        entry = {"steps_completed": run.steps, "learning_rate": run.lr}
        if run.name == run.arm:
            arms[run.arm] = entry
        else:
            arms.setdefault(run.arm, {"runs": {}})["runs"][f"{run.lr:g}"] = entry
    ctx = _ctx(spec, plan, {"items": {"ids": []}}, [], metrics={"arms": arms})
    assert spec_anchor.PLAN_1(ctx) == []
    first = next(iter(arms.values()))
    target = next(iter(first["runs"].values())) if "runs" in first else first
    for key, value in (("steps_completed", 40), ("learning_rate", target["learning_rate"] * 10)):
        saved, target[key] = target[key], value
        assert [i.rule for i in spec_anchor.PLAN_1(ctx)] == ["PLAN-1"], key
        target[key] = saved
    ctx.result["evaluation"]["scores"] = [{"arm": "x", "seed": 3}]
    assert [i.rule for i in spec_anchor.PLAN_1(ctx)] == ["PLAN-1"]
    ctx.result["evaluation"]["scores"] = []
    ctx.result["evidence"]["checkpoints"] = [{"arm": "x", "seed": 5, "uri": "tinker://x"}]
    assert [i.rule for i in spec_anchor.PLAN_1(ctx)] == ["PLAN-1"]


# ---------------------------------------------------------------------------- prose


def _prose(family: str, **result) -> GradeContext:
    spec, plan = _spec(family)
    return _ctx(spec, plan, {"items": {"ids": [f"i{n}" for n in range(48)]}}, [], **result)


def test_the_prose_states_the_records_verdict():
    honest = _prose("gs1", verdict="refuted", summary="Scored on 48 held-out items. The effect is +0.0000.",
                    reasoning="The bound misses. So the claim is not supported: verdict refuted (accuracy a 0.5).")
    assert spec_anchor.PROSE_1(honest) == [] and spec_anchor.PROSE_4(honest) == []
    for text in ("So the claim is supported.", "Overall the verdict is supported.", "The hypothesis is supported.",
                 "So the result is not refuted."):
        honest.result["reasoning"] = text
        assert [i.rule for i in spec_anchor.PROSE_1(honest)] == ["PROSE-1"], text
    three_way = _prose("selfgen", verdict="inconclusive", outcome_reason="insufficient_evidence",
                       summary="Verdict inconclusive (insufficient_evidence): a +0.02 [-0.3, 0.4].")
    assert spec_anchor.PROSE_1(three_way) == []
    three_way.result["summary"] = "Verdict inconclusive (tie): a +0.02."
    assert [i.rule for i in spec_anchor.PROSE_1(three_way)] == ["PROSE-1"]


def test_the_prose_states_the_evaluators_item_count():
    ctx = _prose("gs1", verdict="refuted", summary="Scored the final checkpoints on 1319 held-out items.")
    assert [i.rule for i in spec_anchor.PROSE_4(ctx)] == ["PROSE-4"]


@pytest.mark.parametrize("family", list(SPECS))
def test_a_rehearsal_says_what_the_rules_derive(family):
    from experiment.contract.rehearsal import rehearsal_summary

    spec, plan = _spec(family)
    derived = spec.source.rehearsal
    summary = rehearsal_summary("Trained every arm. The effect is recorded.", derived)
    ctx = _prose(family, rehearsal=derived, summary=summary, tested_instead=derived["tested_instead"])
    assert spec_anchor.PROSE_2(ctx) == [] and spec_anchor.PROSE_3(ctx) == []
    ctx.result["summary"] = summary.split("): ", 1)[1]
    ctx.result["tested_instead"] = derived["tested_instead"].replace(" instead of ", " as in ", 1)
    assert [i.rule for i in spec_anchor.PROSE_2(ctx) + spec_anchor.PROSE_3(ctx)] == ["PROSE-2", "PROSE-3"]


def test_the_prose_states_the_records_effects_and_intervals():
    ctx = _prose("gs1", verdict="refuted", effect=0.0, ci=[-0.3533018, 0.3533018],
                 summary="Scored. The primary effect is +0.0000 (interval [-0.3533, 0.3533], margin -0.03).",
                 reasoning="The bound gives an effect (a \u2212 b) of +0.0000 with interval [\u22120.3533, 0.3533]. Done.")
    assert spec_anchor.PROSE_5(ctx) == []
    ctx.result["summary"] = ctx.result["summary"].replace("+0.0000", "+0.2700")
    assert [i.rule for i in spec_anchor.PROSE_5(ctx)] == ["PROSE-5"]
    ctx.result["summary"] = "Scored. The primary effect is +0.0000 (interval [0.0250, 0.5150], margin -0.03)."
    assert [i.rule for i in spec_anchor.PROSE_5(ctx)] == ["PROSE-5"]
    three_way = _prose("selfgen", verdict="inconclusive", decision={"criteria": [
        {"id": "gain", "effect": 0.0208333, "lower": -0.3712, "upper": 0.41287}]},
        summary="Verdict inconclusive (insufficient_evidence): gain +0.0208 [-0.3712, 0.4129] vs 0.")
    assert spec_anchor.PROSE_5(three_way) == []
    three_way.result["summary"] = three_way.result["summary"].replace("+0.0208", "+0.2708")
    assert [i.rule for i in spec_anchor.PROSE_5(three_way)] == ["PROSE-5"]


def test_a_named_criterions_effect_stated_with_its_contrast_is_the_records():
    """The SFT summary names its criterion with the contrast it measures ("Best-LR nll_gap (dimuon_lite minus
    trimuon) -0.0048; verdict refuted."): that number is the criterion's effect, and one moved by a tamperer is not."""
    criteria = [{"id": "nll_gap", "effect": -0.004810597}, {"id": "step_time_not_higher", "effect": -0.01373}]
    summary = "Trained 6 runs. Best-LR nll_gap (dimuon_lite minus trimuon) -0.0048; verdict refuted."
    ctx = _prose("trimuon", verdict="refuted", effect=-0.004810597, decision={"criteria": criteria}, summary=summary)
    assert spec_anchor.PROSE_5(ctx) == []
    ctx.result["summary"] = summary.replace("-0.0048", "+0.2452")
    assert [i.rule for i in spec_anchor.PROSE_5(ctx)] == ["PROSE-5"]


def test_a_number_stated_for_an_arm_is_one_the_record_holds_for_it():
    ctx = _prose("gs1", verdict="refuted", metrics={"arms": {"gs1_kernel": {"accuracy": 0.375},
                                                             "grpo_gs8": {"accuracy": 0.4375}}},
                 reasoning="So the claim is not supported: verdict refuted (accuracy gs1_kernel 0.3750, grpo_gs8 0.4375).")
    assert spec_anchor.PROSE_5(ctx) == []
    ctx.result["reasoning"] = ctx.result["reasoning"].replace("gs1_kernel 0.3750", "gs1_kernel 0.6250")
    assert [i.rule for i in spec_anchor.PROSE_5(ctx)] == ["PROSE-5"]
    ctx.result["reasoning"] = ctx.result["reasoning"].replace("gs1_kernel 0.6250", "gs1_kernel 0.4375")  # another arm's
    assert [i.rule for i in spec_anchor.PROSE_5(ctx)] == ["PROSE-5"]


def test_an_lr_grid_runs_score_and_rows_name_the_planned_run_and_rate():
    spec, plan = _spec("trimuon")
    run = plan.training_runs[1]
    rows = [{"item_id": f"i{n}", "arm": run.arm, "run": run.name, "learning_rate": run.lr, "seed": 0} for n in range(3)]

    def ctx(score_lr: float, kept: list[dict]) -> GradeContext:
        name = "predictions-x.jsonl"
        files = [evidence_file(name, "predictions", "".join(json.dumps(r) + "\n" for r in kept).encode())]
        made = _ctx(spec, plan, {"items": {"ids": []}}, files)
        made.result["evaluation"]["scores"] = [{"arm": run.arm, "run": run.name, "learning_rate": score_lr, "seed": 0,
                                                "predictions_ref": name}]
        return made

    assert spec_anchor.PLAN_1(ctx(run.lr, rows)) == []
    assert [i.rule for i in spec_anchor.PLAN_1(ctx(run.lr * 10, rows))] == ["PLAN-1"]
    unnamed = [dict(rows[0]), *rows[1:]]
    del unnamed[0]["run"]
    assert [i.rule for i in spec_anchor.PLAN_1(ctx(run.lr, unnamed))] == ["PLAN-1"]


def test_a_record_says_it_is_this_pipelines_by_its_code_its_rehearsal_or_its_code_revision():
    spec, plan = _spec("gs1")
    bundle = evidence_file("pipeline-code.json", "script", b'{"files": {}}')
    ours = evidence_file("code-revision.json", "code_revision", json.dumps(
        {"files_sha256": {"experiment/rl/loop.py": "ab" * 32}}).encode())
    other = evidence_file("code-revision.json", "code_revision", json.dumps(
        {"files_sha256": {"rx_gs1.py": "ab" * 32}}).encode())
    assert spec_anchor.is_this_pipeline(_ctx(spec, plan, {}, [bundle]))
    assert spec_anchor.is_this_pipeline(_ctx(spec, plan, {}, [], rehearsal={"scale": "wiring"}))
    assert spec_anchor.is_this_pipeline(_ctx(spec, plan, {}, [ours]))
    assert not spec_anchor.is_this_pipeline(_ctx(spec, plan, {}, [other]))
    assert not spec_anchor.is_this_pipeline(_ctx(spec, plan, {}, []))


def test_eval_data_that_cannot_be_read_here_fixes_no_ids():
    for path in ("/etc/passwd", "data/no-such-file.jsonl", "embedded_tinker/tasks/data/missing.parquet"):
        assert spec_anchor.spec_eval_ids({"training_type": "rl", "eval": {"path": path, "n_examples": 2}})[0] is None


def test_an_eval_set_finding_says_what_differs(retained_code):
    spec, plan = _spec("gs1")
    provenance = _provenance(spec, plan)
    n = len(provenance["items"]["ids"])

    def message(edit) -> str:
        (issue,) = spec_anchor.eval_set_issues(_ctx(spec, plan, _edited(provenance, edit), retained_code))
        return issue.message

    assert f"scores {n - 1} items, the spec's eval set is {n}" in message(lambda p: p["items"]["ids"].pop())
    assert "in another order" in message(_reordered)
    assert "1 of its items are not in it (first" in message(_swapped)
    assert "are not the spec's eval set, the first 48 rows of embedded_tinker/tasks/data/test.jsonl" in message(_swapped)


def test_only_the_evaluations_own_events_start_it_and_the_finding_names_the_lines():
    ctx = _with_events("gs1", [])
    eid = next(iter(ctx.result["evaluation"]["evaluators"]))
    before = [{"event": "gate", "gate": "arm_training"}, {"event": "evidence_added", "kind": "metrics", "name": "m"},
              {"event": "training_step", "arm": "a", "step": 0}, {"event": "result_updated"}]
    ctx.events = [*before, _frozen(eid), {"event": "evaluation_progress", "arm": "base"}]
    assert spec_anchor.frozen_order_issues(ctx) == []
    ctx.events = [*before, {"event": "evaluation_progress", "arm": "base"}, _frozen(eid), _frozen(eid)]
    (issue,) = spec_anchor.frozen_order_issues(ctx)
    assert (issue.status, issue.message) == (INVALID, "the evaluator_frozen event (line 6) comes after the evaluation "
                                                      "began (line 5)")
    ctx.events = [_frozen(eid), {"event": "evaluation_progress"}, _frozen(eid)]  # frozen again on a resume
    assert spec_anchor.frozen_order_issues(ctx) == []


def test_an_evaluator_finding_names_what_differs_from_the_spec(retained_code):
    spec, plan = _spec("trimuon")
    hot = _edited(_provenance(spec, plan), lambda p: p["decoding"].update(temperature=1.0))
    (issue,) = spec_anchor.provenance_issues(_ctx(spec, plan, hot, retained_code))
    assert "decoding {'temperature': 1.0, 'max_tokens': 0, 'stop': []} (the spec's: {'temperature': 0.0" in issue.message
    other = _edited(_provenance(spec, plan), lambda p: p.update(code_sha256="ab" * 32))
    (issue,) = spec_anchor.code_hash_issues(_ctx(spec, plan, other, retained_code))
    expected = _provenance(spec, plan)["code_sha256"]
    assert issue.message.endswith(f"is not the hash of the retained evaluator code ({expected[:12]}...)")


def test_a_run_that_did_not_succeed_is_not_held_to_its_planned_steps():
    spec, plan = _spec("gs1")
    arm = plan.trained_arms[0]
    stopped = _ctx(spec, plan, {"items": {"ids": []}}, [], status="failed",
                   metrics={"arms": {arm.name: {"steps_completed": 1}}})
    assert spec_anchor.PLAN_1(stopped) == []


def test_a_record_made_before_a_file_moved_names_it_where_it_was(retained_code):
    """The data readers moved (experiment/run/data.py -> experiment/data.py): a record made before names the file
    at its former place in its code manifest and retained code, and grades as it did; the former name does not
    excuse a manifest that leaves the file out, or one whose hash is not the retained file's."""
    spec, plan = _spec("gs1")
    moved, former = next(iter(RL_EVALUATOR_FORMER_NAMES.items()))

    def renamed(files: list[dict], manifest_edit=None) -> tuple[dict, list[dict]]:
        provenance = _provenance(spec, plan)
        provenance["code_files"][former] = provenance["code_files"].pop(moved)
        if manifest_edit:
            manifest_edit(provenance["code_files"])
        provenance["code_sha256"] = ev.manifest_sha256(provenance["code_files"])
        return provenance, _with_pipeline_code(
            files, lambda bundle: bundle["files"].update({former: bundle["files"].pop(moved)}))

    provenance, files = renamed(retained_code)
    assert _evaluator_issues(_ctx(spec, plan, provenance, files)) == []
    provenance, files = renamed(retained_code, lambda m: m.pop(former))
    assert ("EVAL-15", INVALID) in _evaluator_issues(_ctx(spec, plan, provenance, files))
    provenance, files = renamed(retained_code, lambda m: m.update({former: "0" * 64}))
    assert ("EVAL-15", INVALID) in _evaluator_issues(_ctx(spec, plan, provenance, files))


@pytest.mark.parametrize("name", ["eval.csv", "eval.json", "eval.parquet", "eval.txt"])
def test_an_eval_file_that_is_no_jsonl_fixes_no_ids(tmp_path, monkeypatch, name):
    """Only a JSON-lines file is read here; a file of another kind (sorting before or after .jsonl) fixes no ids."""
    monkeypatch.setenv("RX_DATA_DIRS", str(tmp_path))
    path = tmp_path / name
    path.write_text('{"id": "a"}\n{"id": "b"}\n')
    assert spec_anchor.spec_eval_ids({"training_type": "rl", "eval": {"path": str(path)}}) == (None, str(path))
    jsonl = tmp_path / "eval.jsonl"
    jsonl.write_text('{"id": "a"}\n\n{"id": "b"}\n[1]\n')
    assert spec_anchor.spec_eval_ids({"training_type": "rl", "eval": {"path": str(jsonl)}}) == (
        ["a", "b", "None"], str(jsonl))


def test_an_evaluator_scoring_more_items_than_the_eval_set_is_named_by_its_id(retained_code):
    spec, plan = _spec("gs1")
    provenance = _edited(_provenance(spec, plan), lambda p: p["items"]["ids"].append("one-more-item"))
    n = len(provenance["items"]["ids"]) - 1
    eid = ev.evaluator_id(provenance)
    assert [(i.status, i.message) for i in spec_anchor.eval_set_issues(_ctx(spec, plan, provenance, retained_code))] == [
        (INVALID, f"evaluator {eid[:12]} scores {n + 1} items, the spec's eval set is {n} (eval.n_examples)")]


def test_an_evaluator_without_an_item_list_leaves_the_next_one_checked(retained_code):
    """A provenance without items.ids is EVAL-4's; the other evaluators of the record are still held to the set."""
    spec, plan = _spec("gs1")
    honest = _provenance(spec, plan)
    short_one = _edited(honest, lambda p: p["items"]["ids"].pop())
    ctx = _ctx(spec, plan, short_one, retained_code)
    ctx.result["evaluation"]["evaluators"] = {"0" * 64: {"items": {}}, ev.evaluator_id(short_one): short_one}
    assert [i.rule for i in spec_anchor.eval_set_issues(ctx)] == ["EVAL-13"]


def test_an_eval_set_with_items_sorting_before_the_spec_s_is_named_with_its_first_missing_item(retained_code):
    spec, plan = _spec("gs1")
    honest = _provenance(spec, plan)
    expected = list(honest["items"]["ids"])
    provenance = _edited(honest, lambda p: p["items"].update(ids=expected[:-2] + ["0-early-a", "0-early-b"]))
    eid = ev.evaluator_id(provenance)
    (issue,) = spec_anchor.eval_set_issues(_ctx(spec, plan, provenance, retained_code))
    assert issue.message == (f"evaluator {eid[:12]}'s items are not the spec's eval set, the first {len(expected)} rows "
                             f"of embedded_tinker/tasks/data/test.jsonl: 2 of its items are not in it "
                             f"(first {expected[-2]!r})")


def _other_pipelines(spec_dict: dict, plan_eval: dict, provenance: dict) -> GradeContext:
    """A record of another pipeline (no pipeline code, no rehearsal): only the decoding the spec or plan fixes
    applies to it."""
    from types import SimpleNamespace

    record = {"status": "succeeded", "evidence": {"version": 1, "files": []},
              "evaluation": {"version": 1, "evaluators": {ev.evaluator_id(provenance): provenance}, "scores": []}}
    return GradeContext(result=record, evidence=EvidenceAccess(record), spec=spec_dict,
                        plan=SimpleNamespace(eval=plan_eval))


@pytest.mark.parametrize("plan_decoding,metric,fixed", [
    ("greedy", "exact-match accuracy", True),  # the plan says greedy, the metric does not
    ("sampling", "exact-match accuracy, greedy", True),  # the metric says greedy, the plan another decoding
    ("beam", "exact-match accuracy, greedy", True),
    ("sampling", "exact-match accuracy", False),  # neither: nothing fixes the temperature
    ("beam", "exact-match accuracy", False),
    (None, "accuracy", False)])
def test_greedy_decoding_is_fixed_by_the_plan_or_by_the_metric_alone(plan_decoding, metric, fixed):
    hot = {"decoding": {"temperature": 1.0}, "items": {"ids": ["a"]}}
    ctx = _other_pipelines({"training_type": "rl", "eval": {"metric": metric}}, {"decoding": plan_decoding}, hot)
    assert [i.rule for i in spec_anchor.provenance_issues(ctx)] == (["EVAL-14"] if fixed else [])
    cold = {"decoding": {"temperature": 0.0}, "items": {"ids": ["a"]}}
    assert spec_anchor.provenance_issues(
        _other_pipelines({"training_type": "rl", "eval": {"metric": metric}}, {"decoding": plan_decoding}, cold)) == []


def test_an_sft_evaluators_template_is_the_spec_renderers_and_sequence_length(retained_code):
    from experiment.contract.evaluators import sft_prompt_template

    spec, plan = _spec("trimuon")
    honest = _provenance(spec, plan)
    ctx = _ctx(spec, plan, honest, retained_code)
    ctx.spec = {**ctx.spec, "rollout": {**(ctx.spec.get("rollout") or {}), "renderer": "llama3"}}
    assert [i.rule for i in spec_anchor.provenance_issues(ctx)] == ["EVAL-14"]  # the default renderer's template
    length = int(ctx.spec.get("max_seq_len") or 0)
    ctx.result["evaluation"]["evaluators"] = {"e": {**honest, "prompt_template": sft_prompt_template("llama3", length)}}
    assert spec_anchor.provenance_issues(ctx) == []
    ctx.spec = {key: value for key, value in ctx.spec.items() if key != "max_seq_len"}  # no length: 0
    assert [i.rule for i in spec_anchor.provenance_issues(ctx)] == ["EVAL-14"]
    ctx.result["evaluation"]["evaluators"] = {"e": {**honest, "prompt_template": sft_prompt_template("llama3", 0)}}
    assert spec_anchor.provenance_issues(ctx) == []


def test_an_evaluator_finding_quotes_each_value_cut_to_fifty_characters(retained_code):
    spec, plan = _spec("gs1")
    honest = _provenance(spec, plan)
    reworded = _edited(honest, lambda p: p.update(prompt_template="Think step by step. " + p["prompt_template"]))
    eid = ev.evaluator_id(reworded)
    (issue,) = spec_anchor.provenance_issues(_ctx(spec, plan, reworded, retained_code))
    given, fixed = repr(reworded["prompt_template"]), repr(honest["prompt_template"])
    assert len(given) > 50 and len(fixed) > 50
    assert issue.message == (f"evaluator {eid[:12]} is not the evaluator the spec fixes: prompt_template "
                             f"{given[:47]}... (the spec's: {fixed[:47]}...)")


def test_an_sft_evaluators_extra_sampling_setting_is_one_decoding_difference(retained_code):
    spec, plan = _spec("trimuon")
    provenance = _edited(_provenance(spec, plan), lambda p: p["decoding"].update(top_p=0.9))
    (issue,) = spec_anchor.provenance_issues(_ctx(spec, plan, provenance, retained_code))
    assert issue.message.count("decoding") == 1 and "decoding sets" not in issue.message


def _cookbook_forged(spec, plan) -> dict:
    """An RL evaluator whose manifest names another hash for a cookbook file, code_sha256 recomputed from it."""
    forged = _edited(_provenance(spec, plan), lambda p: p["code_files"].update(
        {"tinker_cookbook/recipes/math_rl/math_grading.py": "0" * 64}))
    forged["code_sha256"] = ev.manifest_sha256(forged["code_files"])
    return forged


def _with_cookbook_version(retained_code: list[dict], version: str) -> list[dict]:
    """The retained code with a code revision that records `version` of the cookbook."""
    revision = code_revision()
    revision.setdefault("packages", {})["tinker-cookbook"] = version
    return [*(f for f in retained_code if f["name"] != "code-revision.json"),
            evidence_file("code-revision.json", "code_revision", json.dumps(revision).encode())]


@pytest.mark.parametrize("version", ["0.0.1", "99.0.0"])
def test_cookbook_files_are_compared_only_at_the_recorded_cookbook_version(retained_code, version):
    """The installed cookbook is the reference only when it is the version the run recorded: at another version (one
    sorting before the installed one, one after) its files cannot be compared, so a cookbook hash is not refused."""
    import importlib.metadata

    spec, plan = _spec("gs1")
    forged = _cookbook_forged(spec, plan)
    installed = importlib.metadata.version("tinker-cookbook")
    assert ("EVAL-15", INVALID) in _evaluator_issues(
        _ctx(spec, plan, forged, _with_cookbook_version(retained_code, installed)))
    assert _evaluator_issues(_ctx(spec, plan, forged, _with_cookbook_version(retained_code, version))) == []


def test_without_an_installed_cookbook_its_files_are_not_compared(retained_code, monkeypatch):
    import importlib.metadata
    import importlib.util

    real_version = importlib.metadata.version

    def not_installed(name):  # FAKE: a grader's machine without the cookbook (it is installed in this one)
        if name == "tinker-cookbook":
            raise importlib.metadata.PackageNotFoundError(name)
        return real_version(name)

    spec, plan = _spec("gs1")
    with monkeypatch.context() as absent:
        absent.setattr(importlib.metadata, "version", not_installed)
        assert _evaluator_issues(_ctx(spec, plan, _cookbook_forged(spec, plan), retained_code)) == []
    with monkeypatch.context() as absent:  # FAKE: its metadata left behind, its package gone
        absent.setattr(importlib.util, "find_spec", lambda name: None)
        assert _evaluator_issues(_ctx(spec, plan, _cookbook_forged(spec, plan), retained_code)) == []


def test_an_sft_evaluators_code_hash_sorting_before_the_retained_codes_is_refused_by_name(retained_code):
    spec, plan = _spec("trimuon")
    expected = _provenance(spec, plan)["code_sha256"]
    low = _edited(_provenance(spec, plan), lambda p: p.update(code_sha256="0" * 64))
    eid = ev.evaluator_id(low)
    assert [(i.status, i.message) for i in spec_anchor.code_hash_issues(_ctx(spec, plan, low, retained_code))] == [
        (INVALID, f"evaluator {eid[:12]}'s code_sha256 {repr('0' * 64)[:17]}... is not the hash of the retained "
                  f"evaluator code ({expected[:12]}...)")]


def test_each_sft_evaluator_whose_code_is_not_in_the_bundle_is_unverified(retained_code):
    from experiment.contract.evaluators import SFT_EVALUATOR_CODE

    files = _with_pipeline_code(retained_code, lambda bundle: bundle["files"].pop(SFT_EVALUATOR_CODE[0]))
    spec, plan = _spec("trimuon")
    provenance = _provenance(spec, plan)
    ctx = _ctx(spec, plan, provenance, files)
    ctx.result["evaluation"]["evaluators"] = {"a" * 64: provenance, "b" * 64: dict(provenance)}
    assert [(i.status, i.message) for i in spec_anchor.code_hash_issues(ctx)] == [
        (UNVERIFIED, f"evaluator code {SFT_EVALUATOR_CODE[0]} is not retained")] * 2


def test_every_sft_evaluator_is_held_to_the_retained_code_after_an_honest_one(retained_code):
    spec, plan = _spec("trimuon")
    honest = _provenance(spec, plan)
    low = _edited(honest, lambda p: p.update(code_sha256="0" * 64))
    ctx = _ctx(spec, plan, honest, retained_code)
    ctx.result["evaluation"]["evaluators"] = {ev.evaluator_id(honest): honest, ev.evaluator_id(low): low}
    assert [(i.rule, i.status) for i in spec_anchor.code_hash_issues(ctx)] == [("EVAL-15", INVALID)]


@pytest.mark.parametrize("manifest", [None, {}], ids=["absent", "empty"])
def test_an_rl_evaluator_with_an_absent_or_empty_code_manifest_is_unverified_by_name(retained_code, manifest):
    spec, plan = _spec("gs1")
    provenance = _edited(_provenance(spec, plan), lambda p: p.update(code_files=manifest))
    eid = ev.evaluator_id(provenance)
    assert [(i.status, i.message) for i in spec_anchor.code_hash_issues(_ctx(spec, plan, provenance, retained_code))] \
        == [(UNVERIFIED, f"evaluator {eid[:12]} lists no code_files, so its code_sha256 cannot be recomputed from the "
                         "retained code")]


@pytest.mark.parametrize("claimed", ["0" * 64, "f" * 64], ids=["sorting before", "sorting after"])
def test_an_rl_code_hash_that_is_not_its_manifests_is_refused_by_name(retained_code, claimed):
    spec, plan = _spec("gs1")
    provenance = _edited(_provenance(spec, plan), lambda p: p.update(code_sha256=claimed))
    eid = ev.evaluator_id(provenance)
    assert [(i.status, i.message) for i in spec_anchor.code_hash_issues(_ctx(spec, plan, provenance, retained_code))] \
        == [(INVALID, f"evaluator {eid[:12]}'s code_sha256 is not the hash of its code_files")]


def _manifest_edited(spec, plan, edit) -> dict:
    """The RL evaluator with its code manifest edited and code_sha256 recomputed from it (a consistent forgery)."""
    provenance = _edited(_provenance(spec, plan), lambda p: edit(p["code_files"]))
    provenance["code_sha256"] = ev.manifest_sha256(provenance["code_files"])
    return provenance


def test_a_manifest_leaving_out_code_the_evaluator_runs_names_the_first_three(retained_code):
    from experiment.contract.evaluators import RL_EVALUATOR_COOKBOOK_CODE, RL_EVALUATOR_PROJECT_CODE

    spec, plan = _spec("gs1")
    every = list(RL_EVALUATOR_PROJECT_CODE + RL_EVALUATOR_COOKBOOK_CODE)
    left_out = every[-4:]
    provenance = _manifest_edited(spec, plan, lambda files: [files.pop(path) for path in left_out])
    eid = ev.evaluator_id(provenance)
    assert [(i.status, i.message) for i in spec_anchor.code_hash_issues(_ctx(spec, plan, provenance, retained_code))] \
        == [(INVALID, f"evaluator {eid[:12]}'s code_files leave out code it runs: {', '.join(left_out[:3])}")]


@pytest.mark.parametrize("digest", ["0" * 64, "f" * 64], ids=["sorting before", "sorting after"])
def test_manifest_hashes_of_project_and_cookbook_files_are_compared_either_way(retained_code, digest):
    from experiment.contract.evaluators import RL_EVALUATOR_COOKBOOK_CODE, RL_EVALUATOR_PROJECT_CODE

    spec, plan = _spec("gs1")
    wrong = [RL_EVALUATOR_PROJECT_CODE[0], RL_EVALUATOR_COOKBOOK_CODE[0], RL_EVALUATOR_COOKBOOK_CODE[1],
             RL_EVALUATOR_COOKBOOK_CODE[2]]
    provenance = _manifest_edited(spec, plan, lambda files: files.update({path: digest for path in wrong}))
    eid = ev.evaluator_id(provenance)
    assert [(i.status, i.message) for i in spec_anchor.code_hash_issues(_ctx(spec, plan, provenance, retained_code))] \
        == [(INVALID, f"evaluator {eid[:12]}'s code_files are not the retained (installed) code: "
                      f"{', '.join(wrong[:3])}")]


def test_a_manifest_naming_a_cookbook_file_that_is_not_installed_is_refused(retained_code):
    spec, plan = _spec("gs1")
    provenance = _manifest_edited(spec, plan, lambda files: files.update(
        {"tinker_cookbook/no_such_module.py": "ab" * 32}))
    assert [(i.rule, i.status) for i in spec_anchor.code_hash_issues(_ctx(spec, plan, provenance, retained_code))] == [
        ("EVAL-15", INVALID)]


def test_project_evaluator_code_not_in_the_bundle_is_unverified_by_name(retained_code):
    from experiment.contract.evaluators import RL_EVALUATOR_PROJECT_CODE

    files = _with_pipeline_code(retained_code, lambda bundle: bundle["files"].pop(RL_EVALUATOR_PROJECT_CODE[0]))
    spec, plan = _spec("gs1")
    assert [(i.status, i.message) for i in spec_anchor.code_hash_issues(_ctx(spec, plan, _provenance(spec, plan), files))] \
        == [(UNVERIFIED, f"evaluator code {RL_EVALUATOR_PROJECT_CODE[0]} is not retained")]


def _plan_ctx(family: str = "gs1", **result) -> GradeContext:
    spec, plan = _spec(family)
    return _ctx(spec, plan, {"items": {"ids": []}}, [], **result)


def test_stray_seeds_in_a_predictions_file_are_named():
    rows = [{"item_id": "i0", "seed": 0}, {"item_id": "i1", "seed": 7}, {"item_id": "i2", "seed": 3}]
    name = "predictions-grpo_gs8.jsonl"
    ctx = _plan_ctx(evaluation={"scores": [{"arm": "grpo_gs8", "seed": 0, "predictions_ref": name}]})
    ctx.result["evidence"]["files"] = [evidence_file(name, "predictions",
                                                     "".join(json.dumps(r) + "\n" for r in rows).encode())]
    ctx.evidence = EvidenceAccess(ctx.result)
    assert [i.message for i in spec_anchor.PLAN_1(ctx)] == [
        f"the record's steps, learning rates or seeds are not the plan's: {name}: seed 3, 7 (scheduled [0])"]


def test_more_than_four_plan_differences_are_cut_after_four():
    arms = {"grpo_gs8": {"steps_completed": 3, "learning_rate": 0.002},
            "gs1_kernel": {"steps_completed": 4, "learning_rate": 0.003}}
    ctx = _plan_ctx(metrics={"arms": arms}, evidence={"version": 1, "files": [],
                                                      "checkpoints": [{"arm": "grpo_gs8", "seed": 9}]})
    assert [i.message for i in spec_anchor.PLAN_1(ctx)] == [
        "the record's steps, learning rates or seeds are not the plan's: grpo_gs8: steps_completed 3 (planned 2); "
        "grpo_gs8: learning_rate 0.002 (planned 0.001); gs1_kernel: steps_completed 4 (planned 2); "
        "gs1_kernel: learning_rate 0.003 (planned 0.001) ..."]
    arms["gs1_kernel"] = {"steps_completed": 2, "learning_rate": 0.001}
    assert [i.message for i in spec_anchor.PLAN_1(ctx)] == [
        "the record's steps, learning rates or seeds are not the plan's: grpo_gs8: steps_completed 3 (planned 2); "
        "grpo_gs8: learning_rate 0.002 (planned 0.001); checkpoint of 'grpo_gs8': seed 9"]
    ctx.result["evaluation"]["scores"] = [{"arm": "grpo_gs8", "seed": 4}]  # exactly four: none cut
    assert [i.message for i in spec_anchor.PLAN_1(ctx)] == [
        "the record's steps, learning rates or seeds are not the plan's: grpo_gs8: steps_completed 3 (planned 2); "
        "grpo_gs8: learning_rate 0.002 (planned 0.001); score of 'grpo_gs8': seed 4 (scheduled [0]); "
        "checkpoint of 'grpo_gs8': seed 9"]


@pytest.mark.parametrize("change", [{"executed_group_size": 4}, {"n_rollouts": 63}, {"n_rollouts": 65}])
def test_each_rl_step_ran_at_the_plans_group_size_and_rollout_count_after_other_events(change):
    spec, plan = _spec("gs1")
    events = [{"event": "run_created"}]
    events += [{"event": "training_step", "arm": arm.name, "step": step, "executed_group_size": arm.group_size,
                "n_rollouts": arm.group_size * arm.groups_per_batch} for arm in plan.trained_arms
               for step in range(arm.steps)]
    ctx = _with_events("gs1", events)
    assert spec_anchor.PLAN_1(ctx) == []
    events[-1].update(change)
    assert [i.rule for i in spec_anchor.PLAN_1(ctx)] == ["PLAN-1"]


def test_a_bare_record_and_a_record_without_evaluators_have_no_frozen_order_to_check():
    ctx = _with_events("gs1", [{"event": "evaluation_progress"}])
    ctx.events = None
    assert spec_anchor.frozen_order_issues(ctx) == []
    ctx = _with_events("gs1", [{"event": "evaluation_progress"}])
    ctx.result["evaluation"]["evaluators"] = {}
    assert spec_anchor.frozen_order_issues(ctx) == []


def test_a_frozen_event_of_another_evaluator_is_named_cut_to_twenty_characters():
    ctx = _with_events("gs1", [])
    other = "another-evaluator-" + "9" * 40
    ctx.events = [_frozen(other), {"event": "evaluation_progress"}]
    assert [(i.status, i.message) for i in spec_anchor.frozen_order_issues(ctx)] == [
        (INVALID, f"the evaluator_frozen event names {repr(other)[:17]}..., not the record's evaluator")]


def _calibrated(candidates: str, logs: list[str], bandwidth, completed=("gs1_kernel",)) -> GradeContext:
    spec, plan = _spec("gs1")
    files = [evidence_file(f"activation-pilot-bw{b}.jsonl", "metrics", b"{}\n") for b in logs]
    ctx = _ctx(spec, plan, {"items": {"ids": []}}, files, completed_arms=list(completed),
               metrics={"arms": {"gs1_kernel": {"kernel_bandwidth": bandwidth}, "grpo_gs8": {}}})
    ctx.spec = {**ctx.spec, "command": f"Pre-registered: calibration is bandwidth in {{{candidates}}}. Keep logs."}
    return ctx


def test_every_failed_candidate_before_the_chosen_one_has_its_log_named():
    (issue,) = spec_anchor.ACT_4(_calibrated("0.25, 0.5, 1.0", ["1.0"], 1.0))
    assert (issue.status, issue.message) == (
        UNVERIFIED, "the spec keeps failed pilot logs, but activation-pilot-bw0.25.jsonl, activation-pilot-bw0.5.jsonl "
                    "(a calibration candidate tried before the chosen one) is not retained")
    assert spec_anchor.ACT_4(_calibrated("0.25, 0.5, 1.0", ["0.25", "0.5"], 0.5)) == []


def test_no_calibration_no_training_or_no_chosen_candidate_requires_no_log():
    ctx = _calibrated("0.5, 1.0", [], 1.0)
    ctx.spec = {**ctx.spec, "command": "Train both arms."}
    assert spec_anchor.ACT_4(ctx) == []
    assert spec_anchor.ACT_4(_calibrated("0.5, 1.0", [], 1.0, completed=())) == []
    assert spec_anchor.ACT_4(_calibrated("0.5, 1.0", [], 2.0)) == []  # trained at no candidate: nothing was chosen
    assert spec_anchor.ACT_4(_calibrated("0.5, 1.0", [], None)) == []


def test_the_prose_finding_names_each_contradiction_and_an_outcome_reason_other_than_the_records():
    ctx = _prose("selfgen", verdict="inconclusive", outcome_reason="insufficient_evidence",
                 summary="Verdict supported (tie). The claim is refuted.",
                 reasoning="Verdict inconclusive (tie). The outcome stands inconclusive.")
    assert [(i.status, i.message) for i in spec_anchor.PROSE_1(ctx)] == [
        (INVALID, "the prose contradicts the verdict inconclusive: summary says verdict supported; summary says "
                  "'claim is refuted'; reasoning says outcome tie")]
    ctx.result["outcome_reason"] = None  # no reason recorded: a stated one contradicts nothing
    ctx.result["summary"] = "Verdict inconclusive (tie)."
    assert spec_anchor.PROSE_1(ctx) == []
    ctx.result["verdict"] = "undecided"  # no verdict of the contract's: nothing to hold the prose to
    assert spec_anchor.PROSE_1(ctx) == []


def test_a_negated_claim_contradicts_the_verdict_it_names():
    ctx = _prose("gs1", verdict="supported", summary="The hypothesis is not supported.")
    assert [i.rule for i in spec_anchor.PROSE_1(ctx)] == ["PROSE-1"]
    ctx.result["summary"] = "The hypothesis is not refuted. The claim is supported."
    assert spec_anchor.PROSE_1(ctx) == []


def test_a_rehearsal_summary_without_its_mark_is_named_and_a_run_that_is_no_rehearsal_has_none():
    from experiment.contract.rehearsal import NOT_FOR_SUBMISSION

    ctx = _prose("gs1", rehearsal={"scale": "wiring"}, summary="Trained every arm.")
    ctx.spec_model = None  # the rules' mark cannot be derived: the generic one is required
    assert [(i.status, i.message) for i in spec_anchor.PROSE_2(ctx)] == [
        (INVALID, f"a rehearsal's summary does not begin with its mark {NOT_FOR_SUBMISSION!r}")]
    ctx.result["summary"] = NOT_FOR_SUBMISSION + " Trained every arm."
    assert spec_anchor.PROSE_2(ctx) == []
    assert spec_anchor.PROSE_2(_prose("gs1", summary="Trained every arm.")) == []
    assert spec_anchor.PROSE_3(_prose("gs1", tested_instead="anything")) == []


def test_a_rewritten_tested_instead_is_named_with_the_derived_one():
    spec, plan = _spec("gs1")
    derived = spec.source.rehearsal
    ctx = _prose("gs1", rehearsal=derived, tested_instead="something else")
    assert [(i.status, i.message) for i in spec_anchor.PROSE_3(ctx)] == [
        (INVALID, "tested_instead is not what the rehearsal rules derive from the spec "
                  f"({spec_anchor.short(derived['tested_instead'], 80)})")]


def test_an_item_count_is_the_evaluators_or_a_selection_splits():
    ctx = _prose("gs1", summary="Selected on 20 items, confirmed on 28 items, scored on 48 items.",
                 decision={"selection": {"split": {"selection_ids": list(range(20)), "confirmation_ids": list(range(28))}}})
    assert spec_anchor.PROSE_4(ctx) == []
    ctx.result["reasoning"] = "Scored on 47 items and on 49 held-out items."
    assert [(i.status, i.message) for i in spec_anchor.PROSE_4(ctx)] == [
        (INVALID, "the prose states another item count than the evaluator's 48: reasoning says 47; reasoning says 49")]
    ctx.result["evaluation"]["evaluators"]["other"] = {"items": {"ids": ["a"]}}  # two counts: none to hold it to
    assert spec_anchor.PROSE_4(ctx) == []


def test_steps_missing_or_logged_twice_are_named_by_arm():
    spec, plan = _spec("gs1")
    steps = {arm.name: arm.steps for arm in plan.trained_arms}
    events = [{"event": "training_step", "arm": "grpo_gs8", "step": 0}, {"event": "training_step", "arm": "grpo_gs8",
                                                                          "step": 0},
              {"event": "training_step", "arm": "grpo_gs8", "step": 1}, {"event": "gate", "gate": "arm_training"}]
    (issue,) = spec_anchor.EVID_11(_with_events("gs1", events))
    missing = ", ".join(map(str, range(steps["gs1_kernel"])))
    assert (issue.status, issue.message) == (
        UNVERIFIED, f"events.jsonl does not hold every planned training step once: grpo_gs8: step(s) 0 twice; "
                    f"gs1_kernel: step(s) {missing} missing")
    untrained = _with_events("gs1", events)
    untrained.result["completed_arms"] = []  # nothing trained: no step is owed
    assert spec_anchor.EVID_11(untrained) == []


def test_an_sft_record_without_its_steps_file_is_named_unverified(retained_code):
    spec, plan = _spec("trimuon")
    ctx = _ctx(spec, plan, {"items": {"ids": []}}, retained_code, completed_arms=[run.name for run in plan.training_runs])
    assert [(i.status, i.message) for i in spec_anchor.EVID_11(ctx)] == [
        (UNVERIFIED, "sft-steps.jsonl (every SFT step's row) is not retained inline")]


def test_stated_effects_intervals_and_criterion_effects_are_held_to_the_stated_decimals():
    ctx = _prose("selfgen", verdict="inconclusive", effect=0.02083, ci=[-0.37124, 0.41287],
                 decision={"criteria": [{"id": "gain", "effect": 0.0208333, "lower": -0.3712, "upper": 0.41287}]},
                 summary="The effect is +0.021 (interval [\u22120.371, 0.413]); gain +0.02 [-0.37, 0.41] vs 0.")
    assert spec_anchor.PROSE_5(ctx) == []
    ctx.result["summary"] = ("The effect is +0.023 (interval [-0.371, 0.415]); gain +0.03 [-0.38, 0.41] vs 0. "
                             "The effect is +0.025.")
    assert [(i.status, i.message) for i in spec_anchor.PROSE_5(ctx)] == [
        (INVALID, "the prose states numbers the record does not hold: summary states an effect of +0.023; summary "
                  "states an effect of +0.025; summary states an effect of +0.03; summary states an interval "
                  "[-0.371, 0.415]")]


def test_an_arm_number_is_any_the_record_holds_for_that_arm():
    ctx = _prose("gs1", verdict="refuted",
                 metrics={"arms": {"gs1_kernel": {"accuracy": 0.375, "runs": {"a": {"nll": [1.25]}}}, "grpo_gs8": {}}},
                 loss_eval={"arms": {"gs1_kernel": {"token_mean": 2.5}}},
                 decision={"criteria": [{"per_arm_means": {"gs1_kernel": 0.6, "grpo_gs8": 0.7}}]},
                 summary="gs1_kernel 0.375, gs1_kernel 1.25, gs1_kernel held-out NLL 2.50, gs1_kernel 0.60, "
                         "grpo_gs8 0.70.")
    assert spec_anchor.PROSE_5(ctx) == []
    ctx.result["summary"] = "gs1_kernel 0.38, grpo_gs8 0.71, x-gs1_kernel 0.99."
    assert [i.message for i in spec_anchor.PROSE_5(ctx)] == [
        "the prose states numbers the record does not hold: summary states grpo_gs8 0.71"]


def test_only_the_evaluations_own_events_start_it_whatever_sorts_around_them():
    """Events named or kinded next to the evaluation's own, on either side, do not start it."""
    ctx = _with_events("gs1", [])
    eid = next(iter(ctx.result["evaluation"]["evaluators"]))
    others = [{"event": "checkpoint", "kind": "predictions", "gate": "evaluation"},
              {"event": "training_step", "kind": "predictions", "gate": "evaluation"},
              {"event": "evidence_added", "kind": "metrics"}, {"event": "evidence_added", "kind": "script"},
              {"event": "gate", "gate": "arm_training"}, {"event": "gate", "gate": "restoration_preflight"},
              {"event": "evaluation_done"}, {"event": "evaluator_frozen_not"}]
    ctx.events = [*others, _frozen(eid), {"event": "evaluation_progress"}]
    assert spec_anchor.frozen_order_issues(ctx) == []


@pytest.mark.parametrize("status", ["running", "failed", None])
def test_a_run_that_has_not_succeeded_is_held_to_no_planned_step_count(status):
    spec, plan = _spec("gs1")
    events = [{"event": "training_step", "arm": "grpo_gs8", "step": 0}]
    ctx = _with_events("gs1", events, metrics={"arms": {"grpo_gs8": {"steps_completed": 1}}})
    ctx.result["status"] = status
    assert spec_anchor.PLAN_1(ctx) == [] and spec_anchor.EVID_11(ctx) == []
    ctx.result["status"] = "succeeded"
    assert [i.rule for i in spec_anchor.PLAN_1(ctx) + spec_anchor.EVID_11(ctx)] == ["PLAN-1", "EVID-11"]


def test_an_lr_grid_run_is_found_by_its_learning_rate_label_and_held_to_the_plan():
    spec, plan = _spec("trimuon")
    run = next(r for r in plan.training_runs if r.name != r.arm)
    label = f"{run.lr:.3e}"  # the same rate written another way
    ctx = _ctx(spec, plan, {"items": {"ids": []}}, [],
               metrics={"arms": {run.arm: {"runs": {"not-a-rate": {"steps_completed": 999},
                                                    label: {"steps_completed": run.steps + 1, "learning_rate": run.lr}}}}})
    assert [i.message for i in spec_anchor.PLAN_1(ctx)] == [
        f"the record's steps, learning rates or seeds are not the plan's: {run.name}: steps_completed {run.steps + 1} "
        f"(planned {run.steps})"]


@pytest.mark.parametrize("aggregation", ["example_mean", "token_mean", None])
def test_an_sft_evaluators_parser_is_the_plans_aggregation_token_mean_by_default(retained_code, aggregation):
    from types import SimpleNamespace

    from experiment.contract.evaluators import sft_parser

    spec, plan = _spec("trimuon")
    honest = _provenance(spec, plan)
    ctx = _ctx(spec, plan, honest, retained_code)
    ctx.plan = SimpleNamespace(eval={**(plan.eval or {}), "aggregation": aggregation})
    expected = sft_parser(aggregation or "token_mean")
    other = sft_parser("token_mean" if aggregation == "example_mean" else "example_mean")
    ctx.result["evaluation"]["evaluators"] = {"e": {**honest, "parser": expected}}
    assert spec_anchor.provenance_issues(ctx) == []
    ctx.result["evaluation"]["evaluators"] = {"e": {**honest, "parser": other}}
    assert [i.rule for i in spec_anchor.provenance_issues(ctx)] == ["EVAL-14"]


def test_a_late_freeze_names_the_first_start_and_another_evaluators_freeze_the_first_named():
    ctx = _with_events("gs1", [])
    eid = next(iter(ctx.result["evaluation"]["evaluators"]))
    ctx.events = [{"event": "evaluation_progress"}, {"event": "evaluation_progress"}, _frozen(eid)]
    assert [i.message for i in spec_anchor.frozen_order_issues(ctx)] == [
        "the evaluator_frozen event (line 3) comes after the evaluation began (line 1)"]
    ctx.events = [_frozen("first-other"), _frozen("second-other"), {"event": "evaluation_progress"}]
    assert [i.message for i in spec_anchor.frozen_order_issues(ctx)] == [
        "the evaluator_frozen event names 'first-other', not the record's evaluator"]


def test_every_arm_is_held_to_the_plan_after_one_without_metrics():
    ctx = _plan_ctx(metrics={"arms": {"gs1_kernel": {"steps_completed": 5}}})
    assert [i.message for i in spec_anchor.PLAN_1(ctx)] == [
        "the record's steps, learning rates or seeds are not the plan's: gs1_kernel: steps_completed 5 (planned 2)"]


def test_a_score_naming_an_arm_as_its_run_is_held_to_the_arms_planned_learning_rate():
    """An arm of one learning rate is its own run (an SFT paired decision's scores name it so): at the planned
    learning rate it is a planned run, at any other it is no planned run's."""
    spec, plan = _spec("gs1")
    planned = next(run.lr for run in plan.training_runs if run.name == "gs1_kernel")
    ctx = _plan_ctx(evaluation={"scores": [{"arm": "gs1_kernel", "run": "gs1_kernel", "learning_rate": planned,
                                            "seed": 0}]})
    assert spec_anchor.PLAN_1(ctx) == []
    ctx = _plan_ctx(evaluation={"scores": [{"arm": "gs1_kernel", "run": "gs1_kernel", "learning_rate": planned * 10,
                                            "seed": 0}]})
    assert [i.message for i in spec_anchor.PLAN_1(ctx)] == [
        "the record's steps, learning rates or seeds are not the plan's: score of run 'gs1_kernel': learning_rate "
        f"{planned * 10:g} is no planned run's"]


def test_a_checkpoint_or_score_without_a_seed_is_held_to_no_seed():
    ctx = _plan_ctx(evaluation={"scores": [{"arm": "gs1_kernel"}]},
                    evidence={"version": 1, "files": [], "checkpoints": [{"arm": "gs1_kernel", "uri": "tinker://x"}]})
    assert spec_anchor.PLAN_1(ctx) == []


def test_only_training_step_events_are_held_to_the_group_size():
    events = [{"event": name, "arm": "grpo_gs8", "step": 0, "executed_group_size": 3, "n_rollouts": 5}
              for name in ("checkpoint", "training_started", "training_stepped", "validation")]
    assert spec_anchor.PLAN_1(_with_events("gs1", events)) == []


def test_only_training_step_events_count_as_steps():
    spec, plan = _spec("gs1")
    every = [{"event": "training_step", "arm": arm.name, "step": step} for arm in plan.trained_arms
             for step in range(arm.steps)]
    lookalikes = [{"event": name, "arm": "grpo_gs8", "step": 0} for name in ("checkpoint", "training_stepped")]
    assert spec_anchor.EVID_11(_with_events("gs1", [*lookalikes, ["not", "an", "event"], *every])) == []


def _stub_plan(steps: dict[str, int]):
    """A plan of RL arms with these step counts, in this order (each arm one trained replica of its own name)."""
    from types import SimpleNamespace

    return SimpleNamespace(trained_arms=[SimpleNamespace(name=n, steps=s) for n, s in steps.items()],
                           replicas=[SimpleNamespace(label=n, arm=n, trained=True) for n in steps],
                           training_runs=[SimpleNamespace(name=n, arm=n, steps=s, lr=None) for n, s in steps.items()])


def _step_events(steps: dict[str, int], repeat: int = 1) -> list[dict]:
    return [{"event": "training_step", "arm": n, "step": s} for n, count in steps.items() for s in range(count)
            for _ in range(repeat)]


def test_each_arm_is_held_to_its_own_step_count():
    steps = {"m": 3, "a": 2, "z": 8}
    ctx = _with_events("gs1", _step_events(steps))
    ctx.plan = _stub_plan(steps)
    assert spec_anchor.EVID_11(ctx) == []


def test_steps_missing_or_twice_are_named_six_at_most_for_four_arms_at_most():
    steps = {"a": 8, "b": 8, "c": 1, "d": 1, "e": 1}
    ctx = _with_events("gs1", _step_events({"b": 8}, repeat=2))
    ctx.plan = _stub_plan(steps)
    (issue,) = spec_anchor.EVID_11(ctx)
    assert issue.message == ("events.jsonl does not hold every planned training step once: a: step(s) 0, 1, 2, 3, 4, 5 "
                             "missing; b: step(s) 0, 1, 2, 3, 4, 5 twice; c: step(s) 0 missing; d: step(s) 0 missing")


@pytest.mark.parametrize("verdict,stated", [("supported", "refuted"), ("supported", "inconclusive"),
                                            ("refuted", "inconclusive"), ("inconclusive", "supported")])
def test_a_stated_verdict_other_than_the_records_contradicts_it_whichever_sorts_first(verdict, stated):
    ctx = _prose("gs1", verdict=verdict, summary=f"Overall the verdict is {stated}.")
    assert [(i.rule, i.message) for i in spec_anchor.PROSE_1(ctx)] == [
        ("PROSE-1", f"the prose contradicts the verdict {verdict}: summary says verdict {stated}")]


def test_a_stated_outcome_reason_other_than_the_records_contradicts_it_whichever_sorts_first():
    ctx = _prose("selfgen", verdict="inconclusive", outcome_reason="tie",
                 summary="Verdict inconclusive (insufficient_evidence).")
    assert [i.message for i in spec_anchor.PROSE_1(ctx)] == [
        "the prose contradicts the verdict inconclusive: summary says outcome insufficient_evidence"]


def test_a_typed_spec_without_a_rehearsal_source_requires_the_generic_mark():
    from experiment.contract.rehearsal import NOT_FOR_SUBMISSION

    ctx = _prose("gs1", rehearsal={"scale": "wiring"}, summary="Trained every arm.")
    ctx.spec_model = object()  # no .source to derive the rules' rehearsal from
    assert [i.rule for i in spec_anchor.PROSE_2(ctx)] == ["PROSE-2"]
    ctx.result["summary"] = NOT_FOR_SUBMISSION + ": trained every arm."
    assert spec_anchor.PROSE_2(ctx) == [] and spec_anchor.PROSE_3(ctx) == []


def test_a_rehearsal_derived_without_what_it_tested_instead_requires_the_generic_mark():
    from types import SimpleNamespace

    from experiment.contract.rehearsal import NOT_FOR_SUBMISSION

    ctx = _prose("gs1", rehearsal={"scale": "wiring"}, summary="Trained every arm.", tested_instead="x")
    ctx.spec_model = SimpleNamespace(source=SimpleNamespace(rehearsal={"scale": "wiring"}))
    assert [i.message for i in spec_anchor.PROSE_2(ctx)] == [
        f"a rehearsal's summary does not begin with its mark {NOT_FOR_SUBMISSION!r}"]
    assert spec_anchor.PROSE_3(ctx) == []


def test_a_missing_rehearsal_mark_is_quoted_cut_to_seventy_characters():
    from experiment.contract.rehearsal import rehearsal_summary

    spec, _ = _spec("gs1")
    mark = rehearsal_summary("", spec.source.rehearsal)
    assert len(repr(mark)) > 70
    ctx = _prose("gs1", rehearsal=spec.source.rehearsal, summary="Trained every arm.")
    assert [i.message for i in spec_anchor.PROSE_2(ctx)] == [
        f"a rehearsal's summary does not begin with its mark {repr(mark)[:67]}..."]


def test_without_an_evaluator_no_item_count_is_held():
    ctx = _prose("gs1", summary="Scored on 48 items.")
    ctx.result["evaluation"]["evaluators"] = {}
    assert spec_anchor.PROSE_4(ctx) == []


def test_a_stated_effect_is_the_records_within_half_a_unit_of_its_last_decimal():
    ctx = _prose("gs1", verdict="refuted", effect=0.02124, summary="The effect is +0.0212.")
    assert spec_anchor.PROSE_5(ctx) == []  # 0.00004 off: within half of 0.0001
    ctx.result["effect"] = 0.02083
    ctx.result["summary"] = "The effect is +0.022."  # 0.00117 off: more than half of 0.001
    assert [i.message for i in spec_anchor.PROSE_5(ctx)] == [
        "the prose states numbers the record does not hold: summary states an effect of +0.022"]


def test_effects_of_the_retained_verdict_criteria_count_as_the_records():
    files = [evidence_file("verdict-criteria.json", "metrics", json.dumps(
        {"criteria": [{"id": "gain", "effect": 0.125, "lower": -0.25, "upper": 0.5}]}).encode())]
    spec, plan = _spec("gs1")
    ctx = _ctx(spec, plan, {"items": {"ids": []}}, files, verdict="refuted",
               summary="The effect is +0.125 (interval [-0.250, 0.500]); gain +0.125 [-0.25, 0.50] vs 0.")
    assert spec_anchor.PROSE_5(ctx) == []


@pytest.mark.parametrize("ci", [[0.1, 0.2, 0.3], [None, 0.2], ["0.1", "0.2"]])
def test_an_interval_that_is_no_pair_of_numbers_holds_no_stated_interval(ci):
    ctx = _prose("gs1", verdict="refuted", ci=ci, summary="The interval [0.100, 0.200] holds.")
    assert [i.message for i in spec_anchor.PROSE_5(ctx)] == [
        "the prose states numbers the record does not hold: summary states an interval [0.100, 0.200]"]


def test_a_criterion_without_a_numeric_effect_names_no_effect_to_hold_the_prose_to():
    ctx = _prose("selfgen", verdict="inconclusive", decision={"criteria": [{"id": "gain", "effect": None}]},
                 summary="Verdict inconclusive: gain +0.5000 [-0.1, 0.2] vs 0.")
    assert [i.message for i in spec_anchor.PROSE_5(ctx)] == [
        "the prose states numbers the record does not hold: summary states an interval [-0.1, 0.2]"]  # no effect


@pytest.mark.parametrize("stated", ["[-0.300, 0.500]", "[-0.250, 0.550]"], ids=["low end off", "high end off"])
def test_a_stated_interval_is_the_records_at_both_ends(stated):
    ctx = _prose("gs1", verdict="refuted", ci=[-0.25, 0.5], summary=f"The interval {stated} holds.")
    assert [i.message for i in spec_anchor.PROSE_5(ctx)] == [
        f"the prose states numbers the record does not hold: summary states an interval {stated}"]


def test_an_arm_number_that_is_a_multiple_of_the_records_is_not_the_records():
    ctx = _prose("gs1", verdict="refuted", metrics={"arms": {"gs1_kernel": {"accuracy": 0.375}, "grpo_gs8": {}}},
                 summary="Accuracy gs1_kernel 0.7500.")
    assert [i.message for i in spec_anchor.PROSE_5(ctx)] == [
        "the prose states numbers the record does not hold: summary states gs1_kernel 0.7500"]


def test_an_arm_without_a_step_count_leaves_the_next_arms_held_to_theirs():
    ctx = _with_events("gs1", _step_events({"b": 1}))
    ctx.plan = _stub_plan({"a": None, "b": 2})
    assert [i.message for i in spec_anchor.EVID_11(ctx)] == [
        "events.jsonl does not hold every planned training step once: b: step(s) 1 missing"]


def test_an_rl_arm_trained_at_a_second_seed_owes_that_replicas_steps_too():
    from types import SimpleNamespace

    ctx = _with_events("gs1", _step_events({"a": 2}))
    ctx.plan = _stub_plan({"a": 2})
    ctx.plan.replicas.append(SimpleNamespace(label="a-seed1", arm="a", trained=True))
    assert [i.message for i in spec_anchor.EVID_11(ctx)] == [
        "events.jsonl does not hold every planned training step once: a-seed1: step(s) 0, 1 missing"]


def test_an_arm_with_half_a_rollout_shape_is_not_held_to_one():
    from types import SimpleNamespace

    arm = SimpleNamespace(name="a", group_size=8, groups_per_batch=None)
    ctx = _with_events("gs1", [{"event": "training_step", "arm": "a", "step": 0, "executed_group_size": 3,
                                "n_rollouts": 5}])
    ctx.plan = SimpleNamespace(training_runs=[], seeds=[0], trained_arms=[arm],
                               replicas_of=lambda name: [SimpleNamespace(label=name)])
    assert spec_anchor.PLAN_1(ctx) == []


def test_a_verdict_stated_without_an_outcome_reason_contradicts_no_reason():
    ctx = _prose("selfgen", verdict="inconclusive", outcome_reason="tie", summary="Verdict inconclusive.")
    assert spec_anchor.PROSE_1(ctx) == []


def test_a_one_decimal_effect_is_held_to_half_a_tenth():
    ctx = _prose("gs1", verdict="refuted", effect=0.553, summary="The effect is +0.5.")
    assert [i.message for i in spec_anchor.PROSE_5(ctx)] == [
        "the prose states numbers the record does not hold: summary states an effect of +0.5"]
    ctx.result["effect"] = 0.549
    assert spec_anchor.PROSE_5(ctx) == []


EDGE = 0.5 * 10 ** -4 + 1e-12  # half a unit of a four-decimal number, plus the float allowance: the most it may be off


def test_a_stated_zero_is_the_records_at_exactly_half_a_unit_off():
    """0.0000 stated for a value EDGE away: abs(0 - EDGE) is EDGE exactly, the edge of what rounding allows."""
    ctx = _prose("gs1", verdict="refuted", effect=EDGE, ci=[EDGE, 0.0],
                 metrics={"arms": {"gs1_kernel": {"accuracy": EDGE}, "grpo_gs8": {}}},
                 summary="The effect is +0.0000 (interval [0.0000, 0.0000]); accuracy gs1_kernel 0.0000.")
    assert spec_anchor.PROSE_5(ctx) == []
    ctx.result["ci"] = [0.0, EDGE]
    assert spec_anchor.PROSE_5(ctx) == []
