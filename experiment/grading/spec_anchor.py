"""Checked against what the record cannot choose (issue 45): the spec as written (or its rehearsal, re-derived by the
rules in experiment/contract/rehearsal.py), the data the spec names, the retained code, and the evidence the spec
requires. The other checks hold a record to itself; a consistent forgery passes those. These hold it to the outside.

Evaluator category (experiment/grading/evaluator.py calls these under its rule ids):
- EVAL-13 the evaluator's items are the spec's eval set: `eval.n_examples` items, and, where the data can be read
  here, exactly the first `eval.n_examples` rows of the spec's eval file (`eval.path`; an RL spec without one: the
  local GSM8K test split) in file order, as the pipeline takes them. Re-derived here from the file, not by the
  pipeline's loaders (a shared bug would pass its own check).
- EVAL-14 the evaluator's prompt template, decoding and parser are the ones the spec fixes
  (experiment/contract/evaluators.py): greedy where the plan's eval says greedy, the rollout's answer length, the math
  env's prompt and grader for RL; teacher-forced scoring at the spec's sequence length for SFT.
- EVAL-15 `code_sha256` is the hash of the evaluator code retained in the pipeline-code evidence
  (`pipeline-code.json`): recomputed from the retained files (SFT), or from the provenance's `code_files` manifest
  whose project files are the retained ones and whose cookbook files are the installed ones at the recorded version
  (RL). Code not retained, or no manifest to recompute from: **unverified**.
- EVAL-16 (run directory) the `evaluator_frozen` event comes before the evaluation's first prediction file, progress
  event or gate event; missing: **unverified**.

Record level (experiment/grading/general.py runs RECORD_CHECKS; findings go to `problems`):
- PLAN-1 the steps completed, learning rates and seeds the record states are the plan's (and, in a run directory,
  every RL training step's executed group size and rollout count).
- ACT-4 the spec keeps failed pilot logs: every calibration candidate tried before the chosen one has its log.
- EVID-11 every planned training step of every arm (run) has its `training_step` event (run directory), and every
  SFT run's step its row of the retained sft-steps.jsonl, once: for a resumed SFT run, once in its last attempt, the
  superseded attempts' marked rows set aside where the record accounts for them (experiment/grading/attempts.py).
- PROSE-1 summary and reasoning state the record's verdict (and outcome reason), never another.
- PROSE-2 a rehearsal's summary carries the rehearsal mark the rules derive.
- PROSE-3 a rehearsal's `tested_instead` is the one the rules derive from the spec and its rehearsal.
- PROSE-4 the item count the summary or reasoning states is the evaluator's.
- PROSE-5 the effects, intervals and per-arm numbers the summary or reasoning states are the record's, to the
  decimals stated.

Only a record of this pipeline (it carries `pipeline-code.json` or a rehearsal, or its code revision lists the
pipeline's files) is held to this pipeline's evaluator (item count and ids, template, parser, answer length, code); a
record of another pipeline is held to greedy decoding only. A known gap: its item count is the spec's too, but the
grading tests' in-process records (tests/conftest.py graded_record, test_validation.build_gs1_run) score 6 items of the
production specs, so holding every record to the count waits for those builders to score the spec's eval set.
"""

from __future__ import annotations

import hashlib
import importlib.metadata
import importlib.util
import json
import re
from pathlib import Path
from typing import Any

from experiment.contract.evaluators import (RL_DECODING_KEYS, RL_EVALUATOR_COOKBOOK_CODE, RL_EVALUATOR_FORMER_NAMES,
                                            RL_EVALUATOR_PROJECT_CODE, RL_PARSER, SFT_EVALUATOR_CODE, TEACHER_FORCED,
                                            rl_prompt_template, sft_parser, sft_prompt_template)
from experiment.contract.rehearsal import NOT_FOR_SUBMISSION, rehearsal_summary
from experiment.contract.rollout import DEFAULT_RENDERER, rollout_settings
from experiment.grading.common import (INVALID, UNVERIFIED, GradeContext, Issue, as_dict, as_list, close, equal_json,
                                       float_of, is_integer, is_number, short)
from experiment.contract.run_layout import EVENTS_FILE
from experiment.data import DEFAULT_GSM8K_DIR, DataError, resolve_data_path
from experiment.grading.attempts import last_attempts
from experiment.grading.registry import rule
from experiment.stats.evaluation import manifest_sha256

PIPELINE_CODE, CODE_REVISION = "pipeline-code.json", "code-revision.json"
COOKBOOK = "tinker-cookbook"


# ---------------------------------------------------------------------------- whose record


def is_this_pipeline(ctx: GradeContext) -> bool:
    """The record says this pipeline made it: it carries the pipeline's code or a rehearsal (only this pipeline
    rehearses), or its code revision lists the pipeline's files."""
    if PIPELINE_CODE in ctx.evidence.by_name or isinstance(ctx.result.get("rehearsal"), dict):
        return True
    revision = ctx.evidence.json(CODE_REVISION) if CODE_REVISION in ctx.evidence.by_name else None
    return any(str(path).startswith("experiment/") for path in as_dict(as_dict(revision).get("files_sha256")))


def _retained_code(ctx: GradeContext) -> dict[str, str] | None:
    """path -> content of every file of the retained pipeline code, None when it is not retained inline."""
    bundle = ctx.evidence.json(PIPELINE_CODE) if PIPELINE_CODE in ctx.evidence.by_name else None
    if not isinstance(bundle, dict):
        return None
    return {str(path): entry["content"] for path, entry in as_dict(bundle.get("files")).items()
            if isinstance(as_dict(entry).get("content"), str)}


def _training_type(ctx: GradeContext) -> str:
    return str((ctx.spec or {}).get("training_type") or "")


def _scoring_evaluators(ctx: GradeContext) -> dict[str, dict[str, Any]]:
    evaluation = as_dict(ctx.result.get("evaluation"))
    return {str(eid): provenance for eid, provenance in as_dict(evaluation.get("evaluators")).items()
            if isinstance(provenance, dict)}


# ---------------------------------------------------------------------------- EVAL-13: the eval set


def _rows(path: Path) -> list[dict[str, Any]]:
    rows = []
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.strip():
            row = json.loads(line)
            rows.append(row if isinstance(row, dict) else {})
    return rows


def spec_eval_ids(spec: dict[str, Any]) -> tuple[list[str] | None, str]:
    """(the ids of every row of the spec's eval data in file order, where it is read from), ids None where the data
    cannot be read here (a Hub split, a Parquet file)."""
    evaluation = as_dict(spec.get("eval"))
    sft = spec.get("training_type") == "sft"
    if evaluation.get("path"):
        try:
            path = resolve_data_path(str(evaluation["path"]))
        except DataError as err:
            return None, str(err)
        if path.suffix != ".jsonl":
            return None, str(evaluation["path"])
        rows = _rows(path)
        # the RL task files' `id`; the chat files' `prompt_id`, else "<file>#<row>" (the no_robots schema)
        ids = [str(row.get("prompt_id") or f"{path.name}#{index}") if sft else str(row.get("id"))
               for index, row in enumerate(rows)]
        return ids, str(evaluation["path"])
    if sft:
        return None, "the Hub's test split"
    test = Path(DEFAULT_GSM8K_DIR) / "test.jsonl"
    if not test.is_file():
        return None, str(test)
    return [f"gsm8k-test-{index}" for index in range(len(_rows(test)))], "the GSM8K test split"


def eval_set_issues(ctx: GradeContext) -> list[Issue]:
    """EVAL-13."""
    if ctx.spec is None or not is_this_pipeline(ctx):
        return []
    n = as_dict(ctx.spec.get("eval")).get("n_examples")
    expected, source = spec_eval_ids(ctx.spec)
    if expected is not None:
        n = len(expected) if n is None else n
        expected = expected[: int(n)] if is_integer(n) else None
    issues = []
    for eid, provenance in _scoring_evaluators(ctx).items():
        ids = as_dict(provenance.get("items")).get("ids")
        if not isinstance(ids, list):
            continue  # EVAL-4
        if is_integer(n) and len(ids) != n:
            issues.append(Issue("EVAL-13", INVALID, f"evaluator {eid[:12]} scores {len(ids)} items, the spec's eval set "
                                                    f"is {n} (eval.n_examples)"))
        elif expected is not None and [str(i) for i in ids] != expected:
            missing = [i for i in expected if i not in set(map(str, ids))]
            what = (f"{len(missing)} of its items are not in it (first {short(missing[0])})" if missing
                    else "its items are in another order")
            issues.append(Issue("EVAL-13", INVALID, f"evaluator {eid[:12]}'s items are not the spec's eval set, the first "
                                                    f"{n} rows of {source}: {what}"))
    return issues


# ---------------------------------------------------------------------------- EVAL-14: template, decoding, parser


def _fixed_evaluator(ctx: GradeContext) -> dict[str, Any]:
    """What the spec fixes of the evaluator: key -> value (decoding keys under `decoding.`)."""
    spec, sft = ctx.spec or {}, _training_type(ctx) == "sft"
    fixed: dict[str, Any] = {}
    if sft:  # a held-out loss samples nothing
        fixed["decoding.temperature"] = 0.0
    elif as_dict(getattr(ctx.plan, "eval", None)).get("decoding") == "greedy" or "greedy" in str(
            as_dict(spec.get("eval")).get("metric", "")):
        fixed["decoding.temperature"] = 0.0
    if not is_this_pipeline(ctx):
        return fixed
    if sft:
        renderer = as_dict(spec.get("rollout")).get("renderer") or DEFAULT_RENDERER
        aggregation = as_dict(getattr(ctx.plan, "eval", None)).get("aggregation") or "token_mean"
        fixed.update(prompt_template=sft_prompt_template(str(renderer), int(spec.get("max_seq_len") or 0)),
                     parser=sft_parser(str(aggregation)), decoding=dict(TEACHER_FORCED))
    elif _training_type(ctx) == "rl" and ctx.spec_model is not None:
        rollout = rollout_settings(ctx.spec_model)
        fixed.update({"prompt_template": rl_prompt_template(rollout.few_shot), "parser": RL_PARSER,
                      "decoding.max_tokens": rollout.max_tokens})
    return fixed


def provenance_issues(ctx: GradeContext) -> list[Issue]:
    """EVAL-14."""
    if ctx.spec is None:
        return []
    fixed = _fixed_evaluator(ctx)
    issues = []
    for eid, provenance in _scoring_evaluators(ctx).items():
        wrong = []
        for key, value in fixed.items():
            head, _, leaf = key.partition(".")
            given = as_dict(provenance.get(head)).get(leaf) if leaf else provenance.get(head)
            if not equal_json(given, value):
                wrong.append(f"{key} {short(given, 50)} (the spec's: {short(value, 50)})")
        extra = sorted(set(as_dict(provenance.get("decoding"))) - set(RL_DECODING_KEYS))
        if extra and _training_type(ctx) == "rl" and is_this_pipeline(ctx):
            wrong.append(f"decoding sets {', '.join(extra)}, which the spec does not")
        if wrong:
            issues.append(Issue("EVAL-14", INVALID, f"evaluator {eid[:12]} is not the evaluator the spec fixes: "
                                                    + "; ".join(wrong)))
    return issues


# ---------------------------------------------------------------------------- EVAL-15: the code hash


def _sha(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def _installed_cookbook(ctx: GradeContext) -> Path | None:
    """The installed cookbook's package directory, when it is the version the record's code revision names."""
    revision = ctx.evidence.json(CODE_REVISION) if CODE_REVISION in ctx.evidence.by_name else None
    recorded = as_dict(as_dict(revision).get("packages")).get(COOKBOOK)
    try:
        installed = importlib.metadata.version(COOKBOOK)
        found = importlib.util.find_spec("tinker_cookbook")
    except (importlib.metadata.PackageNotFoundError, ImportError, ValueError):
        return None
    if recorded != installed or found is None or not found.submodule_search_locations:
        return None
    return Path(list(found.submodule_search_locations)[0])


def code_hash_issues(ctx: GradeContext) -> list[Issue]:
    """EVAL-15."""
    if ctx.spec is None or not is_this_pipeline(ctx) or not _scoring_evaluators(ctx):
        return []
    code = _retained_code(ctx)
    if code is None:
        return [Issue("EVAL-15", UNVERIFIED, f"the pipeline code ({PIPELINE_CODE}) is not retained inline, so the "
                                             "evaluator's code_sha256 cannot be recomputed")]
    issues = []
    for eid, provenance in _scoring_evaluators(ctx).items():
        claimed = provenance.get("code_sha256")
        if _training_type(ctx) == "sft":
            missing = [path for path in SFT_EVALUATOR_CODE if path not in code]
            if missing:
                issues.append(Issue("EVAL-15", UNVERIFIED, f"evaluator code {', '.join(missing)} is not retained"))
                continue
            expected = manifest_sha256({Path(path).name: _sha(code[path]) for path in SFT_EVALUATOR_CODE})
            if claimed != expected:
                issues.append(Issue("EVAL-15", INVALID, f"evaluator {eid[:12]}'s code_sha256 {short(claimed, 20)} is "
                                                        f"not the hash of the retained evaluator code ({expected[:12]}...)"))
            continue
        issues += _manifest_issues(ctx, eid, provenance, code)
    return issues


def _manifest_issues(ctx: GradeContext, eid: str, provenance: dict[str, Any], code: dict[str, str]) -> list[Issue]:
    """An RL evaluator's code hash: its manifest hashes to it, the project's files in it are the retained ones, and its
    cookbook files the installed cookbook's (at the recorded version; tokenizer files are not retained)."""
    manifest = provenance.get("code_files")
    if not isinstance(manifest, dict) or not manifest:
        return [Issue("EVAL-15", UNVERIFIED, f"evaluator {eid[:12]} lists no code_files, so its code_sha256 cannot be "
                                             "recomputed from the retained code")]
    if manifest_sha256({str(k): str(v) for k, v in manifest.items()}) != provenance.get("code_sha256"):
        return [Issue("EVAL-15", INVALID, f"evaluator {eid[:12]}'s code_sha256 is not the hash of its code_files")]
    project = [path if path in manifest else RL_EVALUATOR_FORMER_NAMES.get(path, path)
               for path in RL_EVALUATOR_PROJECT_CODE]  # a record made before a file moved names it where it was
    unnamed = [path for path in project + list(RL_EVALUATOR_COOKBOOK_CODE) if path not in manifest]
    if unnamed:
        return [Issue("EVAL-15", INVALID, f"evaluator {eid[:12]}'s code_files leave out code it runs: "
                                          f"{', '.join(unnamed[:3])}")]
    wrong = [path for path in project if path in code and manifest.get(path) != _sha(code[path])]
    absent = [path for path in project if path not in code]
    cookbook = _installed_cookbook(ctx)
    if cookbook is not None:
        for name, digest in manifest.items():
            if str(name).startswith("tinker_cookbook/"):
                local = cookbook / str(name).split("/", 1)[1]
                if not local.is_file() or hashlib.sha256(local.read_bytes()).hexdigest() != digest:
                    wrong.append(str(name))
    if wrong:
        return [Issue("EVAL-15", INVALID, f"evaluator {eid[:12]}'s code_files are not the retained (installed) code: "
                                          f"{', '.join(wrong[:3])}")]
    return [Issue("EVAL-15", UNVERIFIED, f"evaluator code {', '.join(absent)} is not retained")] if absent else []


# ---------------------------------------------------------------------------- EVAL-16: frozen before evaluation


def frozen_order_issues(ctx: GradeContext) -> list[Issue]:
    """EVAL-16 (run directory)."""
    if ctx.events is None or not _scoring_evaluators(ctx):
        return []
    events = [e for e in ctx.events if isinstance(e, dict)]
    frozen = [i for i, e in enumerate(events) if e.get("event") == "evaluator_frozen"]
    started = [i for i, e in enumerate(events)
               if e.get("event") == "evaluation_progress"
               or (e.get("event") == "evidence_added" and e.get("kind") == "predictions")
               or (e.get("event") == "gate" and e.get("gate") == "evaluation")]
    if not frozen:
        return [Issue("EVAL-16", UNVERIFIED, "events.jsonl has no evaluator_frozen event, so the evaluator cannot be "
                                             "shown frozen before the evaluation")]
    if started and frozen[0] > started[0]:
        return [Issue("EVAL-16", INVALID, f"the evaluator_frozen event (line {frozen[0] + 1}) comes after the evaluation "
                                          f"began (line {started[0] + 1})")]
    ids = set(_scoring_evaluators(ctx))
    named = [str(events[i].get("evaluator_id")) for i in frozen]
    if not set(named) & ids:
        return [Issue("EVAL-16", INVALID, f"the evaluator_frozen event names {short(named[0], 20)}, not the record's "
                                          "evaluator")]
    return []


# ---------------------------------------------------------------------------- PLAN-1: steps, LRs, seeds


def _stated(entry: Any, key: str) -> Any:
    return as_dict(entry).get(key)


@rule("PLAN-1", "record", "invalid", "the steps completed, learning rates and seeds the record states are the plan's")
def PLAN_1(ctx: GradeContext) -> list[Issue]:
    """The steps completed, learning rates and seeds the record states are the plan's (a succeeded run)."""
    if ctx.plan is None or ctx.result.get("status") != "succeeded":
        return []
    arms = as_dict(as_dict(ctx.result.get("metrics")).get("arms"))
    wrong = []
    for run in ctx.plan.training_runs:
        if run.name == run.arm:
            entry = arms.get(run.arm)
        else:  # an LR grid's run: metrics.arms.<arm>.runs.<lr>
            entry = next((v for k, v in as_dict(_stated(arms.get(run.arm), "runs")).items()
                          if run.lr is not None and close(float_of(k), float(run.lr))), None)
        if not isinstance(entry, dict):
            continue
        steps, lr = entry.get("steps_completed"), entry.get("learning_rate")
        if steps is not None and run.steps is not None and not equal_json(steps, run.steps):
            wrong.append(f"{run.name}: steps_completed {short(steps)} (planned {run.steps})")
        if lr is not None and run.lr is not None and not close(lr, float(run.lr)):
            wrong.append(f"{run.name}: learning_rate {short(lr)} (planned {run.lr:g})")
    seeds = set(ctx.plan.seeds)
    evaluation = as_dict(ctx.result.get("evaluation"))
    runs = {run.name: run for run in ctx.plan.training_runs if run.lr is not None}  # the runs a score may name
    for score in map(as_dict, as_list(evaluation.get("scores"))):
        seed = score.get("seed")
        if seed is not None and seed not in seeds:
            wrong.append(f"score of {short(score.get('arm'))}: seed {short(seed)} (scheduled {sorted(seeds)})")
        rows = ctx.evidence.jsonl(score.get("predictions_ref")) if score.get("predictions_ref") else None
        stray = sorted({str(as_dict(row).get("seed")) for row in rows or [] if as_dict(row).get("seed") not in seeds})
        if stray:
            wrong.append(f"{score.get('predictions_ref')}: seed {', '.join(stray)} (scheduled {sorted(seeds)})")
        if "run" in score:  # an SFT run: the score and every row name the run and its planned learning rate
            run = runs.get(str(score["run"]))
            if run is None or not close(score.get("learning_rate"), float(run.lr)):
                wrong.append(f"score of run {short(score['run'])}: learning_rate {short(score.get('learning_rate'))} "
                             "is no planned run's")
            elif any(as_dict(row).get("run") != run.name or not close(as_dict(row).get("learning_rate"), float(run.lr))
                     for row in rows or []):
                wrong.append(f"{score.get('predictions_ref')}: a row does not name run {run.name} at its learning rate")
    for checkpoint in as_list(as_dict(ctx.result.get("evidence")).get("checkpoints")):
        seed = as_dict(checkpoint).get("seed")
        if seed is not None and seed not in seeds:
            wrong.append(f"checkpoint of {short(as_dict(checkpoint).get('arm'))}: seed {short(seed)}")
    wrong += _rollout_shape(ctx)
    return [Issue("PLAN-1", INVALID, "the record's steps, learning rates or seeds are not the plan's: "
                                     + "; ".join(wrong[:4]) + (" ..." if len(wrong) > 4 else ""))] if wrong else []


def _rollout_shape(ctx: GradeContext) -> list[str]:
    """(run directory, RL) Each training step's executed group size and rollout count are the plan's for its arm."""
    if ctx.events is None or _training_type(ctx) != "rl":
        return []
    shapes = {replica.label: arm for arm in ctx.plan.trained_arms for replica in ctx.plan.replicas_of(arm.name)}
    wrong = []
    for event in ctx.events:
        arm = shapes.get(str(as_dict(event).get("arm"))) if as_dict(event).get("event") == "training_step" else None
        if arm is None or not (is_integer(arm.group_size) and is_integer(arm.groups_per_batch)):
            continue
        group, rollouts = event.get("executed_group_size"), event.get("n_rollouts")
        if (group is not None and not equal_json(group, arm.group_size)) or (
                rollouts is not None and not equal_json(rollouts, arm.group_size * arm.groups_per_batch)):
            wrong.append(f"{event.get('arm')} step {short(event.get('step'))}: group size {short(group)}, "
                         f"{short(rollouts)} rollouts (planned {arm.group_size} x {arm.groups_per_batch})")
    return wrong


# ---------------------------------------------------------------------------- ACT-4: failed pilot logs kept


_CALIBRATION = re.compile(r"calibration is bandwidth in \{([^}]*)\}")
PILOT_LOG = "activation-pilot-bw{}.jsonl"


@rule("ACT-4", "record", "unverified", "the spec keeps failed pilot logs: every calibration candidate tried before the chosen one")
def ACT_4(ctx: GradeContext) -> list[Issue]:
    """The spec keeps its failed pilot logs ("Keep the original failed pilot logs"): with a pre-registered calibration,
    every candidate tried before the chosen one (the last retained log's, or the bandwidth an arm trained at) failed,
    and its log is required."""
    match = _CALIBRATION.search(str((ctx.spec or {}).get("command") or ""))
    if match is None or not ctx.trained:
        return []
    candidates = [float_of(part.strip()) for part in match.group(1).split(",")]
    logs = {name for name in ctx.evidence.by_name if str(name).startswith("activation-pilot-bw")}
    used = [as_dict(entry).get("kernel_bandwidth") for entry in
            as_dict(as_dict(ctx.result.get("metrics")).get("arms")).values()]
    chosen = [i for i, c in enumerate(candidates) if c is not None and (
        PILOT_LOG.format(c) in logs or any(close(c, b) for b in used if b is not None))]
    if not chosen:
        return []
    missing = [PILOT_LOG.format(c) for c in candidates[: max(chosen)] if PILOT_LOG.format(c) not in logs]
    return [Issue("ACT-4", UNVERIFIED, f"the spec keeps failed pilot logs, but {', '.join(missing)} (a calibration "
                                       "candidate tried before the chosen one) is not retained")] if missing else []


# ---------------------------------------------------------------------------- EVID-11: every step's event


SFT_STEPS = "sft-steps.jsonl"


@rule("EVID-11", "record", "unverified", "every planned training step has its event (run dir) and its sft-steps.jsonl row, once")
def EVID_11(ctx: GradeContext) -> list[Issue]:
    """Every planned step of every trained arm (SFT: run) has its training_step event (run directory), and every SFT
    run's step its row of the retained sft-steps.jsonl (bare record too), once."""
    if ctx.plan is None or ctx.result.get("status") != "succeeded" or not ctx.trained:
        return []
    sft = _training_type(ctx) == "sft"
    issues = []
    if sft and is_this_pipeline(ctx):
        rows = ctx.evidence.jsonl(SFT_STEPS) if SFT_STEPS in ctx.evidence.by_name else None
        if rows is None:
            issues.append(Issue("EVID-11", UNVERIFIED, f"{SFT_STEPS} (every SFT step's row) is not retained inline"))
        else:
            issues += _attempt_issues(ctx, [as_dict(r) for r in rows], SFT_STEPS)
    if ctx.events is not None:
        events = [e for e in ctx.events if isinstance(e, dict) and e.get("event") == "training_step"]
        issues += _attempt_issues(ctx, events, EVENTS_FILE) if sft else \
            _step_issues(ctx, [(str(e.get("arm")), e.get("step")) for e in events], EVENTS_FILE)
    return issues


def _attempt_issues(ctx: GradeContext, logged: list[dict[str, Any]], where: str) -> list[Issue]:
    """An SFT log's steps, each run's last attempt's where the record accounts for the earlier ones (attempts.py)."""
    kept, unaccounted = last_attempts(ctx, logged)
    return _step_issues(ctx, [(str(row.get("run")), row.get("step")) for row in kept], where) + [
        Issue("EVID-11", UNVERIFIED, f"{where} marks steps as attempts the record does not account for: "
                                     + "; ".join(unaccounted[:4]))] * bool(unaccounted)


def _step_issues(ctx: GradeContext, steps: list[tuple[str, Any]], where: str) -> list[Issue]:
    sft = _training_type(ctx) == "sft"
    seen: dict[str, list[Any]] = {}
    for name, step in steps:
        seen.setdefault(name, []).append(step)
    planned = ([(run.name, run.steps) for run in ctx.plan.training_runs] if sft else
               [(replica.label, next((a.steps for a in ctx.plan.trained_arms if a.name == replica.arm), None))
                for replica in ctx.plan.replicas if replica.trained])
    wrong = []
    for name, steps in planned:
        if not is_integer(steps):
            continue
        got = seen.get(name, [])
        missing = [step for step in range(steps) if step not in got]
        twice = sorted({step for step in got if got.count(step) > 1}, key=str)
        if missing or twice:
            wrong.append(f"{name}: " + ", ".join(
                ([f"step(s) {', '.join(map(str, missing[:6]))} missing"] if missing else [])
                + ([f"step(s) {', '.join(map(str, twice[:6]))} twice"] if twice else [])))
    return [Issue("EVID-11", UNVERIFIED, f"{where} does not hold every planned training step once: "
                                         + "; ".join(wrong[:4]))] if wrong else []


# ---------------------------------------------------------------------------- PROSE: the record's words


VERDICTS = ("supported", "refuted", "inconclusive")
_VERDICT_WORD = re.compile(r"\bverdict (?:is |was )?(supported|refuted|inconclusive)\b(?: \((\w+)\))?", re.I)
_CLAIM = re.compile(r"\b(?:claim|hypothesis|result|outcome|conclusion)\b[^.;:]{0,40}?\b(?:is|was|are|were|stands) "
                    r"(not )?(supported|refuted|inconclusive)\b", re.I)
_ITEMS = re.compile(r"\b(?:on|over|across) (?:all |the )?(\d{1,3}(?:,\d{3})+|\d+) (?:[\w-]+ ){0,2}"
                    r"(?:items|conversations|questions|examples)\b")


def _texts(ctx: GradeContext) -> list[tuple[str, str]]:
    return [(field, ctx.result[field]) for field in ("summary", "reasoning") if isinstance(ctx.result.get(field), str)]


@rule("PROSE-1", "record", "invalid", "summary and reasoning state the record's verdict and outcome reason, never another")
def PROSE_1(ctx: GradeContext) -> list[Issue]:
    """Summary and reasoning state the record's verdict and outcome reason, never another."""
    verdict, reason = ctx.result.get("verdict"), ctx.result.get("outcome_reason")
    if verdict not in VERDICTS:
        return []
    wrong = []
    for field, text in _texts(ctx):
        for match in _VERDICT_WORD.finditer(text):
            if match.group(1).lower() != verdict:
                wrong.append(f"{field} says verdict {match.group(1)}")
            elif match.group(2) and reason is not None and match.group(2) != reason:
                wrong.append(f"{field} says outcome {match.group(2)}")
        for match in _CLAIM.finditer(text):
            if (match.group(1) is None) != (verdict == match.group(2).lower()):
                wrong.append(f"{field} says {match.group(0).lower()!r}")
    return [Issue("PROSE-1", INVALID, f"the prose contradicts the verdict {verdict}: {'; '.join(wrong)}")] if wrong else []


def _derived_rehearsal(ctx: GradeContext) -> dict[str, Any] | None:
    if not isinstance(ctx.result.get("rehearsal"), dict) or ctx.spec_model is None:
        return None
    try:
        derived = ctx.spec_model.source.rehearsal
    except (AttributeError, RuntimeError):
        return None
    return derived if isinstance(derived, dict) and derived.get("tested_instead") else None


@rule("PROSE-2", "record", "invalid", "a rehearsal's summary begins with the rehearsal mark the rules derive")
def PROSE_2(ctx: GradeContext) -> list[Issue]:
    """A rehearsal's summary starts with the rehearsal mark the rules derive (what ran, not a result to submit)."""
    if not isinstance(ctx.result.get("rehearsal"), dict) or not isinstance(ctx.result.get("summary"), str):
        return []
    derived = _derived_rehearsal(ctx)
    mark = rehearsal_summary("", derived) if derived is not None else NOT_FOR_SUBMISSION
    if not ctx.result["summary"].startswith(mark):
        return [Issue("PROSE-2", INVALID, f"a rehearsal's summary does not begin with its mark {short(mark, 70)}")]
    return []


@rule("PROSE-3", "record", "invalid", "a rehearsal's tested_instead is the one the rules derive")
def PROSE_3(ctx: GradeContext) -> list[Issue]:
    """A rehearsal's tested_instead is the one the rules derive from the spec and its rehearsal."""
    derived = _derived_rehearsal(ctx)
    if derived is None or "tested_instead" not in ctx.result:
        return []
    if ctx.result.get("tested_instead") != derived["tested_instead"]:
        return [Issue("PROSE-3", INVALID, "tested_instead is not what the rehearsal rules derive from the spec "
                                          f"({short(derived['tested_instead'], 80)})")]
    return []


@rule("PROSE-4", "record", "invalid", "the item count the prose states is the evaluator's")
def PROSE_4(ctx: GradeContext) -> list[Issue]:
    """The item count the summary or reasoning states ("on 48 held-out items", "over 48 items", "on all 1,319 GSM8K
    test items") is the evaluator's."""
    counts = {len(as_dict(p.get("items")).get("ids") or []) for p in _scoring_evaluators(ctx).values()}
    if len(counts) != 1:
        return []
    n = counts.pop()
    stated = [(field, int(m.group(1).replace(",", ""))) for field, text in _texts(ctx) for m in _ITEMS.finditer(text)]
    selection = as_dict(as_dict(ctx.result.get("decision")).get("selection"))
    allowed = {n} | {len(as_list(as_dict(selection.get("split")).get(k))) for k in ("selection_ids", "confirmation_ids")}
    wrong = [f"{field} says {count}" for field, count in stated if count not in allowed]
    return [Issue("PROSE-4", INVALID, f"the prose states another item count than the evaluator's {n}: "
                                      f"{'; '.join(wrong)}")] if wrong else []


_NUMBER = r"([+\-\u2212]?\d+\.\d+)"
_EFFECT = re.compile(r"\b(?:effect|gap)(?: \([^)]*\))?(?: is| of)? " + _NUMBER)
_INTERVAL = re.compile(r"(?:\binterval |\d )\[" + _NUMBER + ", " + _NUMBER + r"\]")
VERDICT_CRITERIA = "verdict-criteria.json"


def _value(text: str) -> tuple[float, float]:
    """A stated number and half a unit of its last decimal (what rounding it to its decimals allows)."""
    text = text.replace("\u2212", "-")
    return float(text), 0.5 * 10 ** -len(text.split(".")[1]) + 1e-12


@rule("PROSE-5", "record", "invalid", "the effects and intervals the prose states are the record's")
def PROSE_5(ctx: GradeContext) -> list[Issue]:
    """The effects and intervals the prose states ("effect is +0.0000 (interval [-0.3533, 0.3533] ...",
    "<criterion> +0.0208 [-0.3712, 0.4129] vs") are the record's, to the decimals stated."""
    decision = as_dict(ctx.result.get("decision"))
    verdict_file = ctx.evidence.json(VERDICT_CRITERIA) if VERDICT_CRITERIA in ctx.evidence.by_name else None
    criteria = [as_dict(c) for c in as_list(decision.get("criteria")) + as_list(as_dict(verdict_file).get("criteria"))]
    effects = [v for v in [ctx.result.get("effect"), *(c.get("effect") for c in criteria)] if is_number(v)]
    intervals = [tuple(pair) for pair in [as_list(ctx.result.get("ci")), *([c.get("lower"), c.get("upper")]
                                                                           for c in criteria)]
                 if len(pair) == 2 and all(is_number(v) for v in pair)]
    named = {str(c.get("id")): c.get("effect") for c in criteria if c.get("id") and is_number(c.get("effect"))}
    wrong = []
    for field, text in _texts(ctx):
        stated = [m.group(1) for m in _EFFECT.finditer(text)]
        stated += [m.group(1) or m.group(2) for name in named  # "<criterion> +0.0208 [", "<criterion> (<a> minus <b>) -0.0048"
                   for m in re.finditer(rf"\b{re.escape(name)}(?: {_NUMBER} \[| \([^)]*\) {_NUMBER})", text)]
        for number in stated:
            value, slack = _value(number)
            if not any(abs(value - known) <= slack for known in effects):
                wrong.append(f"{field} states an effect of {number}")
        for match in _INTERVAL.finditer(text):
            (low, low_slack), (high, high_slack) = _value(match.group(1)), _value(match.group(2))
            if not any(abs(low - a) <= low_slack and abs(high - b) <= high_slack for a, b in intervals):
                wrong.append(f"{field} states an interval [{match.group(1)}, {match.group(2)}]")
    wrong += _arm_numbers(ctx)
    return [Issue("PROSE-5", INVALID, f"the prose states numbers the record does not hold: {'; '.join(wrong[:4])}")] \
        if wrong else []


def _numbers(value: Any) -> list[float]:
    if is_number(value):
        return [float(value)]
    if isinstance(value, dict):
        return [n for v in value.values() for n in _numbers(v)]
    return [n for v in value for n in _numbers(v)] if isinstance(value, list) else []


def _arm_numbers(ctx: GradeContext) -> list[str]:
    """A number stated right after an arm's name ("accuracy gs1_kernel 0.3750", "trimuon held-out NLL 12.9069") is
    one the record holds for that arm (its metrics, loss_eval or the decision's per-arm means)."""
    arms = as_dict(as_dict(ctx.result.get("metrics")).get("arms"))
    means = [as_dict(c.get("per_arm_means")) for c in map(as_dict, as_list(as_dict(ctx.result.get("decision"))
                                                                            .get("criteria")))]
    wrong = []
    for arm in arms:
        known = _numbers(arms[arm]) + _numbers(as_dict(as_dict(ctx.result.get("loss_eval")).get("arms")).get(arm)) \
            + [float(m[arm]) for m in means if is_number(m.get(arm))]
        pattern = re.compile(rf"(?<![\w-]){re.escape(str(arm))}(?: held-out NLL)? {_NUMBER}(?!\d)")
        for field, text in _texts(ctx):
            for match in pattern.finditer(text):
                value, slack = _value(match.group(1))
                if not any(abs(value - k) <= slack for k in known):
                    wrong.append(f"{field} states {arm} {match.group(1)}")
    return wrong


RECORD_CHECKS = [PLAN_1, ACT_4, EVID_11, PROSE_1, PROSE_2, PROSE_3, PROSE_4, PROSE_5]
