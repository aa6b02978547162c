"""Tamperings that hold the record against what it cannot choose (issue 45, items 1, 2, 4 and 5 of "What was
measured"): the spec as written (or its rehearsal by the rules), the data the spec names, the retained code,
the evidence the spec requires, and prose that must say what the record says.

Each RECORD tampering takes a green record of its family (a wiring rehearsal: tests/e2e, or
`RX_WIRING_RECORDS=<dir>` with `<family>.json`) and edits it consistently: every evidence file it edits is
re-hashed with every mention of the old hash (`leaves.rewrite_evidence`), an evaluator whose provenance
changes gets its id re-derived and every mention of the old id follows, and a cut evaluation has its scores,
metrics, observations and decision recomputed by the pipeline's own decision code. Each RUN_DIR tampering
edits a copy of the run directory (result.json, evidence/ and its manifest, events.jsonl, tables/) alike.
"""

from __future__ import annotations

import copy
import hashlib
import json
from pathlib import Path
from types import SimpleNamespace
from typing import Any, Callable

from experiment.stats.evaluation import evaluator_id
from leaves import replace_value_everywhere, rewrite_evidence
from tampering import _edit_jsonl_file, _files

ROOT = Path(__file__).resolve().parents[1]


# ---------------------------------------------------------------------------- helpers


def _edit_evaluator(result: dict[str, Any], edit: Callable[[dict[str, Any]], None]) -> None:
    """Each evaluator's provenance edited, its id re-derived, every mention of the old id following it."""
    evaluators = result["evaluation"]["evaluators"]
    for old in list(evaluators):
        provenance = evaluators.pop(old)
        edit(provenance)
        new = evaluator_id(provenance)
        evaluators[new] = provenance
        replace_value_everywhere(result, old, new)


def _plan_of(result: dict[str, Any]):
    from experiment.contract.plan import build_plan
    from experiment.contract.spec import load_spec

    rehearsal = result["rehearsal"]
    spec = load_spec(ROOT / "specs" / f"{rehearsal['spec']}.json", rehearse=True, rehearsal_scale=rehearsal["scale"])
    return spec, build_plan(spec)


def _rows(result: dict[str, Any], name: str) -> list[dict[str, Any]]:
    return [json.loads(line) for line in _files(result)[name]["content"].splitlines() if line.strip()]


def _observations(result: dict[str, Any]):
    from experiment.stats.decision import observation_from_row

    return [observation_from_row(row) for row in _rows(result, result["decision"]["observations_file"]["name"])]


def redecide(result: dict[str, Any], edit_rule: Callable[[dict[str, Any]], None] | None = None,
              simultaneous: bool | None = None, observations: list | None = None) -> None:
    """The decision, effect, interval, verdict and prose recomputed by the pipeline's own decision code from the
    retained observations (or `observations`, written back re-hashed), with the spec's decision_rule edited by
    `edit_rule` (what the tamperer says the rule was). Returns the decision summary written."""
    from experiment.rl.steps import decision as rl_decision
    from experiment.stats import decision as d

    spec, plan = _plan_of(result)
    role_to_arm = {role: entry["arm"] for role, entry in plan.role_to_arm.items()}
    rule = copy.deepcopy(spec.section("decision_rule"))
    if edit_rule:
        edit_rule(rule)
    if observations is not None:
        rewrite_evidence(result, d.OBSERVATIONS_FILE_NAME, d.observations_jsonl_bytes(observations).decode())
    observations = _observations(result)
    if simultaneous is None:
        simultaneous = (result["decision"] or {}).get("adjustment") == "bonferroni"
    limits = ["the run tested a changed experiment, not the spec's hypothesis"]
    summary = d.decision_summary(rule, observations, plan.vocabulary, role_to_arm=role_to_arm,
                                 simultaneous=simultaneous, limits=limits)
    sha = _files(result)[d.OBSERVATIONS_FILE_NAME]["sha256"]
    result["decision"] = d.decision_record(summary, d.OBSERVATIONS_FILE_NAME, sha)
    ctx = SimpleNamespace(plan=plan, store=SimpleNamespace(read_result=lambda: result))
    final = {**rl_decision.measured_fields(ctx, summary), **rl_decision.final_fields(ctx, summary)}
    text = result["summary"]
    mark = text[: text.index("): ") + 3] if text.startswith("REHEARSAL") else ""
    final["summary"] = mark + final["summary"]
    for key, value in final.items():
        if value is None:
            result.pop(key, None)
        else:
            result[key] = value
    return summary


# ---------------------------------------------------------------------------- the evaluation set


def cherry_picked_evaluation(result: dict[str, Any]) -> None:
    """Only the items where the treatment won or tied are kept (issue 45 item 1): the evaluator's ids cut and its
    id re-derived, every predictions file cut, scores and metrics recomputed, the observations file rewritten and
    the decision, effect, interval, verdict and prose recomputed by the pipeline's own decision code."""
    from experiment.stats.evaluation import observations_from_predictions

    spec, plan = _plan_of(result)
    role_to_arm = {role: entry["arm"] for role, entry in plan.role_to_arm.items()}
    treatment, baseline = role_to_arm["treatment"], role_to_arm["baseline"]
    rows = {score["predictions_ref"]: [json.loads(line) for line in _files(result)[score["predictions_ref"]]["content"]
                                       .splitlines() if line.strip()] for score in result["evaluation"]["scores"]}
    by_arm = {rows_[0]["arm"]: {row["item_id"]: row["value"] for row in rows_} for rows_ in rows.values()}
    kept = [item for item in by_arm[treatment] if by_arm[treatment][item] >= by_arm[baseline][item]]
    if len(kept) == len(by_arm[treatment]):  # the arms tie everywhere (a wiring rehearsal): keep the treatment's hits
        kept = [item for index, item in enumerate(by_arm[treatment]) if by_arm[treatment][item] or index % 2]
    assert 0 < len(kept) < len(by_arm[treatment]), "no item to cut"
    _edit_evaluator(result, lambda p: p["items"].update(ids=[i for i in p["items"]["ids"] if i in set(kept)]))
    new_id = next(iter(result["evaluation"]["evaluators"]))
    for name in rows:
        _edit_jsonl_file(result, name, lambda rs: rs.__setitem__(slice(None), [r for r in rs if r["item_id"] in kept]))
    cut = {score["predictions_ref"]: [json.loads(line) for line in _files(result)[score["predictions_ref"]]["content"]
                                      .splitlines() if line.strip()] for score in result["evaluation"]["scores"]}
    for score in result["evaluation"]["scores"]:
        score["value"] = sum(row["value"] for row in cut[score["predictions_ref"]]) / len(kept)
        arms = result["metrics"]["arms"]
        if score["arm"] in arms:
            arms[score["arm"]]["accuracy"] = score["value"]
        elif "base_model_accuracy" in result["metrics"]:
            result["metrics"]["base_model_accuracy"] = score["value"]
    result["evidence"]["per_arm_metrics"] = {arm: result["metrics"]["arms"][arm] for arm in result["completed_arms"]}
    compared = sorted({role_to_arm.get(k, k) for c in spec.section("decision_rule")["criteria"] for k in c["weights"]})
    observations = observations_from_predictions([row for rows_ in cut.values() for row in rows_
                                                  if rows_[0]["arm"] in compared])
    summary = redecide(result, observations=observations)
    assert summary["criteria"][0]["evaluator_ids"] == [new_id]


# ---------------------------------------------------------------------------- the evaluator's provenance


def reworded_prompt_template(result: dict[str, Any]) -> None:
    def reword(provenance: dict[str, Any]) -> None:
        provenance["prompt_template"] = provenance["prompt_template"].replace("{question}", "Solve carefully: {question}")
        if "{question}" not in provenance["prompt_template"]:
            provenance["prompt_template"] = "system: be brief; " + provenance["prompt_template"]

    _edit_evaluator(result, reword)


def hot_decoding(result: dict[str, Any]) -> None:
    """Sampled at temperature 1.0 where the spec says greedy (teacher forcing for a loss endpoint)."""
    _edit_evaluator(result, lambda p: p["decoding"].update(temperature=1.0))


def longer_answers(result: dict[str, Any]) -> None:
    """max_tokens 512 where the (rehearsed) spec's rollout allows fewer."""
    _edit_evaluator(result, lambda p: p["decoding"].update(max_tokens=p["decoding"]["max_tokens"] * 4 + 7))


def decoding_with_top_p(result: dict[str, Any]) -> None:
    """A sampling setting the spec does not fix (top_p 0.9) added to the decoding."""
    _edit_evaluator(result, lambda p: p["decoding"].update(top_p=0.9))


def cookbook_left_out_of_code_files(result: dict[str, Any]) -> None:
    """The cookbook's grader left out of the code manifest, code_sha256 recomputed from what is left (a tamperer who
    changed the grader and so cannot list its true hash)."""
    def drop(provenance: dict[str, Any]) -> None:
        files = provenance["code_files"]
        files.pop("tinker_cookbook/recipes/math_rl/math_grading.py")
        manifest = "".join(f"{files[name]}  {name}\n" for name in sorted(files))  # the contract's code hash (EVAL-3)
        provenance["code_sha256"] = hashlib.sha256(manifest.encode()).hexdigest()

    _edit_evaluator(result, drop)


def reworded_parser(result: dict[str, Any]) -> None:
    _edit_evaluator(result, lambda p: p.update(parser="the first integer in the answer, else the last number"))


def wrong_code_hash(result: dict[str, Any]) -> None:
    """A code_sha256 that is no hash of the retained evaluator code (a well-formed 64-hex hash)."""
    _edit_evaluator(result, lambda p: p.update(code_sha256=hashlib.sha256(b"another evaluator").hexdigest()))


# ---------------------------------------------------------------------------- steps, groups, LRs, seeds


def _plan_file_edit(result: dict[str, Any], edit: Callable[[dict[str, Any]], None]) -> None:
    def apply(plan: Any) -> None:
        edit(plan)

    from tampering import _edit_json_file

    _edit_json_file(result, "execution-plan.json", apply)


def more_steps_claimed(result: dict[str, Any]) -> None:
    """Every arm (run) says it completed 40 steps: the spec as written, not the rehearsal's 2 (issue 45 item 3's
    steps_completed 12 -> 40, here without the rewards)."""
    for entry in result["metrics"]["arms"].values():
        for target in [entry, *(entry.get("runs") or {}).values()]:
            if "steps_completed" in target:
                target["steps_completed"] = 40
    result["evidence"]["per_arm_metrics"] = {arm: result["metrics"]["arms"][arm] for arm in result["completed_arms"]
                                             if arm in result["metrics"]["arms"]}


def learning_rate_in_metrics(result: dict[str, Any]) -> None:
    """metrics.arms.*.learning_rate x10 (every run's for an LR grid), what the arm says it trained at."""
    for entry in result["metrics"]["arms"].values():
        for target in [entry, *(entry.get("runs") or {}).values()]:
            if "learning_rate" in target:
                target["learning_rate"] = target["learning_rate"] * 10
    result["evidence"]["per_arm_metrics"] = {arm: result["metrics"]["arms"][arm] for arm in result["completed_arms"]
                                             if arm in result["metrics"]["arms"]}


def seeds_in_predictions(result: dict[str, Any]) -> None:
    """Every prediction row, score and checkpoint says seed 3 where the spec schedules seed 0 (an SFT record: no
    observations file to hold them to)."""
    for score in result["evaluation"]["scores"]:
        score["seed"] = 3

        def reseed(rows: list[dict[str, Any]]) -> None:
            for row in rows:
                row["seed"] = 3

        _edit_jsonl_file(result, score["predictions_ref"], reseed)
    for checkpoint in result["evidence"]["checkpoints"]:
        if "seed" in checkpoint:
            checkpoint["seed"] = 3


# ---------------------------------------------------------------------------- required evidence




def dropped_failed_pilot_log(result: dict[str, Any]) -> None:
    """The failed activation pilot's log (the first bandwidth tried) dropped; the spec says failed pilot logs are kept."""
    logs = [e["name"] for e in result["evidence"]["files"] if e["name"].startswith("activation-pilot-bw")]
    assert len(logs) > 1, "no failed pilot in this record"
    result["evidence"]["files"] = [e for e in result["evidence"]["files"] if e["name"] != logs[0]]


# ---------------------------------------------------------------------------- prose


def summary_claims_supported(result: dict[str, Any]) -> None:
    """The summary's last sentence says the claim is supported while the verdict is not."""
    verdict = result.get("verdict")
    claimed = "supported" if verdict != "supported" else "refuted"
    text = result["summary"].rstrip()
    result["summary"] = text[: text.rindex(". ", 0, len(text) - 1) + 2] + f"The claim is {claimed}." \
        if ". " in text[:-1] else text + f" The claim is {claimed}."


def reasoning_claims_supported(result: dict[str, Any]) -> None:
    verdict = result.get("verdict")
    claimed = "supported" if verdict != "supported" else "refuted"
    text = (result.get("reasoning") or "The comparison ran.").rstrip().rstrip(".")
    result["reasoning"] = text + f"; so the verdict is {claimed}."  # no sentence added (GEN-8 counts them)


def rehearsal_prefix_removed(result: dict[str, Any]) -> None:
    text = result["summary"]
    assert text.startswith("REHEARSAL")
    result["summary"] = text[text.index("): ") + 3:]


def tested_instead_rewritten(result: dict[str, Any]) -> None:
    """Rewritten as a run of the spec's hypothesis on the rehearsal's model (which GEN-6 asks it to name)."""
    result["tested_instead"] = (f"The spec's hypothesis itself, with its data, steps and eval set, on "
                                f"{result['rehearsal']['model']} in place of {result['rehearsal']['spec_model']}.")


def effect_in_summary_changed(result: dict[str, Any]) -> None:
    """The effect the summary states moved by 0.25 (RESULT.effect and the decision left as they are)."""
    import re

    match = (re.search(r"effect (?:is |of )?([+-]\d+\.\d+)", result["summary"])
             or re.search(r"(?:rl|gain) ([+-]\d+\.\d+) \[", result["summary"])
             or re.search(r"\) ([+-]?\d+\.\d+) nats", result["summary"])
             or re.search(r"gap \([^)]*\) ([+-]?\d+\.\d+);", result["summary"]))
    assert match, "no effect in the summary"
    old = match.group(1)
    new = f"{float(old) + 0.25:+.4f}"
    result["summary"] = result["summary"][: match.start(1)] + new + result["summary"][match.end(1):]
    if result.get("reasoning"):
        result["reasoning"] = result["reasoning"].replace("effect -0.004811", f"effect {float(old) + 0.25:.6f}")


def arm_number_in_prose(result: dict[str, Any]) -> None:
    """The first per-arm number the summary or reasoning states ("rl_selfgen 0.3958", "trimuon held-out NLL 12.9069")
    moved by 0.25, the record left as it is."""
    import re

    for field in ("summary", "reasoning"):
        text = result.get(field) or ""
        for arm in result["metrics"]["arms"]:
            match = re.search(rf"{re.escape(arm)}(?: held-out NLL)? (\d+\.\d+)", text)
            if match:
                new = f"{float(match.group(1)) + 0.25:.4f}"
                result[field] = text[: match.start(1)] + new + text[match.end(1):]
                return
    raise AssertionError("no per-arm number in the prose")


def hypothesis_phrase_claims_supported(result: dict[str, Any]) -> None:
    """The summary's last sentence ends ", so the hypothesis is supported" while the verdict is not."""
    text = result["summary"].rstrip()
    result["summary"] = text.rstrip(".") + ", so the hypothesis is supported."


def summary_item_count_changed(result: dict[str, Any]) -> None:
    """The summary says the checkpoints were scored on the spec's 1319 (500) items, not the 48 that were."""
    written = json.loads(_files(result)["spec.json"]["content"])["eval"]["n_examples"]
    n = len(next(iter(result["evaluation"]["evaluators"].values()))["items"]["ids"])
    assert f" {n} " in result["summary"]
    result["summary"] = result["summary"].replace(f" {n} held-out", f" {written} held-out").replace(
        f"on {n} conversations", f"on {written} conversations")


# family -> tampering name -> function (bare RESULT). GS1 and self-generated are RL (greedy exact match), TriMuon
# SFT (held-out NLL, teacher-forced).
SPEC_CORPUS: dict[str, dict[str, Callable[[dict[str, Any]], None]]] = {
    "gs1": {
        "eval: cherry-picked items, decision recomputed": cherry_picked_evaluation,
        "evaluator: prompt template reworded": reworded_prompt_template,
        "evaluator: temperature 1.0": hot_decoding,
        "evaluator: max_tokens raised": longer_answers,
        "evaluator: parser reworded": reworded_parser,
        "evaluator: top_p added to the decoding": decoding_with_top_p,
        "evaluator: code hash of other code": wrong_code_hash,
        "evaluator: cookbook grader left out of code_files": cookbook_left_out_of_code_files,
        "plan: 40 steps claimed": more_steps_claimed,
        "plan: learning rate x10 in metrics": learning_rate_in_metrics,
        "required: failed pilot log dropped": dropped_failed_pilot_log,
        "prose: summary claims the other verdict": summary_claims_supported,
        "prose: reasoning claims the other verdict": reasoning_claims_supported,
        "prose: REHEARSAL prefix removed": rehearsal_prefix_removed,
        "prose: tested_instead rewritten": tested_instead_rewritten,
        "prose: summary's item count": summary_item_count_changed,
        "prose: the effect the summary states": effect_in_summary_changed,
        "prose: a per-arm number": arm_number_in_prose,
        "prose: 'the hypothesis is supported'": hypothesis_phrase_claims_supported,
    },
    "selfgen": {
        "eval: cherry-picked items, decision recomputed": cherry_picked_evaluation,
        "evaluator: prompt template reworded": reworded_prompt_template,
        "evaluator: temperature 1.0": hot_decoding,
        "evaluator: max_tokens raised": longer_answers,
        "evaluator: parser reworded": reworded_parser,
        "evaluator: top_p added to the decoding": decoding_with_top_p,
        "evaluator: code hash of other code": wrong_code_hash,
        "evaluator: cookbook grader left out of code_files": cookbook_left_out_of_code_files,
        "plan: 40 steps claimed": more_steps_claimed,
        "plan: learning rate x10 in metrics": learning_rate_in_metrics,
        "prose: summary claims the other verdict": summary_claims_supported,
        "prose: REHEARSAL prefix removed": rehearsal_prefix_removed,
        "prose: tested_instead rewritten": tested_instead_rewritten,
        "prose: summary's item count": summary_item_count_changed,
        "prose: the effect the summary states": effect_in_summary_changed,
        "prose: a per-arm number": arm_number_in_prose,
        "prose: 'the hypothesis is supported'": hypothesis_phrase_claims_supported,
    },
    "trimuon": {
        "evaluator: prompt template reworded": reworded_prompt_template,
        "evaluator: temperature 1.0": hot_decoding,
        "evaluator: parser reworded": reworded_parser,
        "evaluator: code hash of other code": wrong_code_hash,
        "plan: 40 steps claimed": more_steps_claimed,
        "plan: learning rate x10 in metrics": learning_rate_in_metrics,
        "plan: seed 3 in predictions": seeds_in_predictions,
        "prose: summary claims the other verdict": summary_claims_supported,
        "prose: reasoning claims the other verdict": reasoning_claims_supported,
        "prose: REHEARSAL prefix removed": rehearsal_prefix_removed,
        "prose: tested_instead rewritten": tested_instead_rewritten,
        "prose: summary's item count": summary_item_count_changed,
        "prose: the effect the summary states": effect_in_summary_changed,
        "prose: a per-arm number": arm_number_in_prose,
        "prose: 'the hypothesis is supported'": hypothesis_phrase_claims_supported,
    },
}


# ---------------------------------------------------------------------------- run directories


def _read_events(run_dir: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in (run_dir / "events.jsonl").read_text().splitlines() if line.strip()]


def _write_events(run_dir: Path, events: list[dict[str, Any]]) -> None:
    (run_dir / "events.jsonl").write_text("".join(json.dumps(event) + "\n" for event in events))


def _drop_table_rows(run_dir: Path, table: str, keep: Callable[[dict[str, Any]], bool]) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    path = run_dir / "tables" / f"{table}.parquet"
    if path.is_file():
        read = pq.read_table(path)
        pq.write_table(pa.Table.from_pylist([row for row in read.to_pylist() if keep(row)], schema=read.schema), path)


def dropped_step_events(run_dir: Path) -> None:
    """The first arm's (run's) last training step: its training_step event and its training_steps row dropped
    (issue 45: steps 10 and 11 of a standard rehearsal; a wiring rehearsal trains two steps per arm)."""
    events = _read_events(run_dir)
    steps = [e for e in events if e.get("event") == "training_step"]
    key = "run" if "run" in steps[0] else "arm"
    first = steps[0][key]
    last = max(e["step"] for e in steps if e[key] == first)
    _write_events(run_dir, [e for e in events if not (e.get("event") == "training_step" and e[key] == first
                                                      and e["step"] == last)])
    _drop_table_rows(run_dir, "training_steps", lambda row: not (row.get(key) == first and row.get("step") == last))


def group_size_in_step_events(run_dir: Path) -> None:
    """The baseline's training steps say group size 1 x 64 rollouts (the treatment's shape), in events.jsonl and in
    the training_steps table alike: the arms did not differ in what the spec makes them differ in."""
    events = _read_events(run_dir)
    # the baseline: the arm whose steps do not already run at group size 1 (arms train side by side, so the first
    # step event may be either arm's)
    first = next(e for e in events if e.get("event") == "training_step" and e.get("executed_group_size") != 1)["arm"]
    for event in events:
        if event.get("event") == "training_step" and event["arm"] == first:
            event["executed_group_size"] = 1.0
    _write_events(run_dir, events)

    import pyarrow as pa
    import pyarrow.parquet as pq

    path = run_dir / "tables" / "training_steps.parquet"
    read = pq.read_table(path)
    rows = [{**row, "executed_group_size": 1.0} if row["arm"] == first else row for row in read.to_pylist()]
    pq.write_table(pa.Table.from_pylist(rows, schema=read.schema), path)


def evaluator_frozen_after_evaluation(run_dir: Path) -> None:
    """The evaluator_frozen event moved after the evaluation's gate event (its time the gate's)."""
    events = _read_events(run_dir)
    frozen = next(e for e in events if e.get("event") == "evaluator_frozen")
    events.remove(frozen)
    gate = next(i for i, e in enumerate(events) if e.get("event") == "gate" and e.get("gate") == "evaluation")
    frozen["ts"] = events[gate]["ts"]
    events.insert(gate + 1, frozen)
    _write_events(run_dir, events)


def dropped_failed_pilot_log_in_run_dir(run_dir: Path) -> None:
    """The failed pilot's log gone from the run directory: evidence/, its manifest, RESULT's evidence and its
    evidence_added event."""
    result = json.loads((run_dir / "result.json").read_text())
    logs = sorted(e["name"] for e in result["evidence"]["files"] if e["name"].startswith("activation-pilot-bw"))
    assert len(logs) > 1, "no failed pilot in this record"
    name = logs[0]
    result["evidence"]["files"] = [e for e in result["evidence"]["files"] if e["name"] != name]
    (run_dir / "result.json").write_text(json.dumps(result, indent=2))
    manifest = json.loads((run_dir / "evidence" / "manifest.json").read_text())
    manifest["files"] = [e for e in manifest["files"] if e["name"] != name]
    (run_dir / "evidence" / "manifest.json").write_text(json.dumps(manifest, indent=2))
    (run_dir / "evidence" / name).unlink()
    _write_events(run_dir, [e for e in _read_events(run_dir)
                            if not (e.get("event") == "evidence_added" and e.get("name") == name)])


# family -> tampering name -> function on a copy of the run directory
RUN_DIR_CORPUS: dict[str, dict[str, Callable[[Path], None]]] = {
    "gs1": {
        "required (run dir): a training step's event dropped": dropped_step_events,
        "required (run dir): evaluator_frozen after the evaluation": evaluator_frozen_after_evaluation,
        "required (run dir): failed pilot log dropped": dropped_failed_pilot_log_in_run_dir,
        "plan (run dir): the baseline's steps at group size 1": group_size_in_step_events,
    },
    "selfgen": {
        "required (run dir): a training step's event dropped": dropped_step_events,
        "required (run dir): evaluator_frozen after the evaluation": evaluator_frozen_after_evaluation,
        "plan (run dir): the baseline's steps at group size 1": group_size_in_step_events,
    },
    "trimuon": {
        "required (run dir): a training step's event dropped": dropped_step_events,
        "required (run dir): evaluator_frozen after the evaluation": evaluator_frozen_after_evaluation,
    },
}
