"""Rehearsal scale: the written rules that turn a spec as written into its rehearsal.

`python -m flows.run SPEC --rehearse` runs the exchange's spec file plus its recorded revision file
(`<name>.plan.json`, the same file production uses) on the embedded backend, in minutes on 2 CPU
cores. Every rule that changes the spec lives here and nowhere else; each change it makes is one
deviation `{field, original, effective, reason}` that the run posts to RESULT.deviations, and the
run is marked as a rehearsal (RESULT.rehearsal, the summary), so it can never be taken for a result
to submit.

The rules (constants below):
- model: `embedded/tiny-arith` (the embedded model family), LoRA rank REHEARSAL_LORA_RANK, sequence
  length at most REHEARSAL_MAX_SEQ_LEN;
- data: each dataset becomes the local stand-in task of the same kind (STAND_INS: GSM8K -> the
  embedded arithmetic word problems, no_robots -> the embedded chat set); a spec whose dataset has
  no stand-in cannot be rehearsed;
- rollouts: at most RL_MAX_ROLLOUTS_PER_STEP per arm-step; groups per batch (and the spec's batch
  size) shrink by the one factor that achieves it, group sizes are kept (they are the design);
  answers are at most the stand-in's max_tokens, without the GSM8K few-shot prefix;
- steps: RL arms share RL_ARM_STEP_BUDGET steps (halved when an arm trains on generated tasks,
  since generating and auditing them is the other half of the work); SFT training runs (one per
  arm and LR grid point) share SFT_RUN_STEP_BUDGET steps; never more than the spec's own steps and
  never fewer than MIN_STEPS (the activation pilot needs two);
- training pool: steps (at least PILOT_STEPS, the two a kernel arm's preflight and the activation pilot
  take) x distinct prompts per step (each prompt seen once, as in the seed specs:
  GS1 40 x 64 = 2560, self-generated 40 x 16 = 640, TriMuon 80 x 64 = 5120 rows); generated-task
  counts follow the pool;
- eval: at most the stand-in's held-out size (STAND_IN.max_eval);
- learning rates: every LR in the spec and its revision file is multiplied by one factor, the
  embedded model's calibrated LR (CALIBRATED_LR) over the spec's `optimizer.lr`, so grid spacing
  and arm ratios are kept (a sizing pilot: at production LRs the tiny model does not move);
- budget: at most REHEARSAL_BUDGET (GPU-hours, wall minutes).

Two scales (SCALES): `standard`, the rehearsal a user runs before spending (every gate and a verdict
in minutes), and `wiring`, the smallest run that still passes through every gate and writes every
record (2 steps per arm, a short eval), for the end-to-end tests that check how the
pipeline is wired, not what it measures. A wiring rehearsal's verdict means nothing and says so.

The result is a plain spec dict; `experiment.contract.spec.load_spec(path, rehearse=True)` validates it like
any spec and records the substitutions in the spec's source.
"""

from __future__ import annotations

import copy
import hashlib
import json
import math
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from experiment.contract.errors import SpecError
from experiment.contract.rollout import DEFAULT_RENDERER, rollout_settings
from experiment.data import DataError, count_jsonl_rows, count_task_file, resolve_data_path
from experiment.stats.activation import PILOT_STEPS
from experiment.stats.feasibility import STATED_PILOT  # the pattern the pilot's size is read with, one home


class Spec(Protocol):
    """What the rules read of the parsed spec that experiment.contract.spec.load_spec hands to
    rehearse_spec (that module imports this one, so the rules name the fields, not the class)."""

    base_model: str
    training_type: str

    def data_source(self, arm_name: str) -> str: ...

    def to_dict(self) -> dict[str, Any]: ...

RULES_FILE = Path(__file__)
EMBEDDED_MODEL = "embedded/tiny-arith"
EMBEDDED_GENERATOR = "embedded_tinker/assets/selfgen-generator"
# The generation audit's independent re-solver in a rehearsal: the embedded model is the trained base and
# the filter model (and the generator is fine-tuned from it), so no served model is independent of them;
# the arithmetic family is solved exactly by a program instead (experiment/selfgen/exact_solver.py).
EMBEDDED_SOLVER = "exact-solver:embedded-arithmetic"
REHEARSAL_LORA_RANK = 8
REHEARSAL_MAX_SEQ_LEN = 256
RL_MAX_ROLLOUTS_PER_STEP = 64
RL_ARM_STEP_BUDGET = 24
SFT_RUN_STEP_BUDGET = 120
SFT_MAX_BATCH = 16
MIN_STEPS = 2
CALIBRATED_LR = {"rl": 1e-3, "sft": 0.04}
REHEARSAL_BUDGET = {"gpu_hours": 0.1, "max_wall_minutes": 60}  # room for a shared, loaded 2-core machine
# Generation of self-generated tasks by the embedded generator (embedded_tinker/assets/selfgen-generator):
# it writes short problems (so a lower word floor), answers fit in 16 tokens, and a candidate cap of
# 60 per accepted task (most of what it writes is ill-posed: the generator's label check keeps about 4% of
# its candidates, filter 5 about two thirds of those, and the audit replaces what it still finds wrong); the
# audit re-solves a sample of at least generation_audit.min_sample_size, so with a small accepted set it needs
# more rounds.
REHEARSAL_GENERATION = {
    "min_words": 8,
    "filter_max_tokens": 16,
    "generation_max_tokens": 96,
    "solver_max_tokens": 16,
    "candidates_per_accept": 60,
    "batch_size": 32,
    "max_audit_rounds": 12,
}
NOT_FOR_SUBMISSION = "REHEARSAL at embedded scale, not a result to submit"


@dataclass(frozen=True)
class Scale:
    """How far a rehearsal shrinks the spec: step budgets, rollouts per arm-step, eval items."""

    name: str
    rl_arm_step_budget: int
    sft_run_step_budget: int
    rl_max_rollouts_per_step: int
    max_eval: int | None  # None: the stand-in's own held-out size
    purpose: str


SCALES = {
    "standard": Scale("standard", RL_ARM_STEP_BUDGET, SFT_RUN_STEP_BUDGET, RL_MAX_ROLLOUTS_PER_STEP, None,
                      "every gate and a verdict in minutes, before any GPU money is spent"),
    # rollouts per arm-step stay as in the standard scale: the GS1 kernel needs neighbours in its batch
    "wiring": Scale("wiring", 2 * MIN_STEPS, 6 * MIN_STEPS, RL_MAX_ROLLOUTS_PER_STEP, 48,
                    "the smallest run through every gate and record (tests of the wiring); its verdict means nothing"),
}


@dataclass(frozen=True)
class StandIn:
    """The local task that stands in for a dataset of the same kind."""

    kind: str
    name: str
    train: str
    test: str
    max_eval: int
    benchmark: str
    max_tokens: int | None  # answer length for sampled tasks (None: SFT, nothing is sampled)


STAND_INS = {
    "gsm8k": StandIn("math word problems with an integer answer", "embedded-arithmetic",
                     "embedded_tinker/tasks/data/train.jsonl", "embedded_tinker/tasks/data/test.jsonl", 500,
                     "embedded arithmetic test (embedded_tinker/tasks/data/test.jsonl)", 16),
    "no_robots": StandIn("chat conversations in the no_robots schema", "embedded-chat",
                         "embedded_tinker/tasks/data/chat_train.jsonl", "embedded_tinker/tasks/data/chat_test.jsonl", 64,
                         "embedded chat test split (embedded_tinker/tasks/data/chat_test.jsonl)", None),
}
STAND_IN_TRAIN_ROWS = {"gsm8k": 20000, "no_robots": 512}


def rules_sha256() -> str:
    return hashlib.sha256(RULES_FILE.read_bytes()).hexdigest()


def _stand_in_key(dataset: dict[str, Any]) -> str:
    text = " ".join(str(dataset.get(k, "")) for k in ("name", "hf_path", "path")).lower()
    for key in STAND_INS:
        if key in text or key.replace("_", "-") in text:
            return key
    raise SpecError("dataset", f"no local stand-in for {dataset.get('name') or dataset.get('hf_path')!r}; "
                               f"a rehearsal knows {', '.join(STAND_INS)}")


def _local_rows(block: dict[str, Any], training: str) -> int | None:
    """Rows of the section's own data file when it is here (a path in the project's data directories, read as the
    run reads it), else None: such a file is used as given in a rehearsal."""
    path = block.get("path")
    if not isinstance(path, str) or not path or path.endswith(".parquet"):
        return None
    try:
        resolved = resolve_data_path(path)
        return count_task_file(resolved) if training == "rl" else count_jsonl_rows(resolved)
    except DataError:
        return None


def _round_lr(value: float) -> float:
    return float(f"{value:.6g}")


def _text(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value, sort_keys=True)


# The deviation field (GEN-6) of each setting a rule changes names what changed: the contract's field where one
# says it (a substituted model, a smaller batch, fewer steps, another dataset or eval set), else the setting
# itself (issue 45): a learning rate wherever it is stated (the optimizer, an arm, its grid, a preflight's probes)
# is `learning_rate`, never `model`; the budget is `budget`, never `steps`; the rollout settings (answer length,
# temperature, renderer) are `rollout`, never `effective_batch` (sequences per optimizer step); a correctness
# path's pre-registered tolerances and the analysis they come from are `tolerance`, never `model`.
_LEARNING_RATE_KEYS = ("lr", "lr_grid", "learning_rate", "learning_rates", "update_learning_rates")
_CATEGORIES = (
    (("base_model",), "model"),
    (("lora_rank",), "lora_rank"),
    (("max_seq_len",), "max_seq_len"),
    (("batch_size",), "effective_batch"),
    (("rollout",), "rollout"),
    (("budget",), "budget"),
    (("correctness_preflight",), "tolerance"),
    (("steps", "decision_rule", "verdict_rule"), "steps"),
    (("dataset", "generation"), "dataset"),
    (("eval", "command"), "evaluator"),
)
_ARM_CATEGORIES = {"groups_per_batch": "effective_batch", "steps": "steps"}


def deviation_field(setting: str) -> str:
    """The deviation `field` for a setting path such as `arms[x].lr` or `dataset.path`: what changed."""
    last = setting.rsplit(".", 1)[-1]
    if last in _LEARNING_RATE_KEYS:
        return "learning_rate"
    if last == "lora_rank":
        return "lora_rank"
    if setting.startswith("arms["):
        return _ARM_CATEGORIES[last]
    head = setting.split(".", 1)[0].split("[", 1)[0]
    for heads, category in _CATEGORIES:
        if head in heads or setting in heads:
            return category
    raise KeyError(f"no deviation field for rehearsal setting {setting!r}")


class _Rewriter:
    def __init__(self, raw: dict[str, Any]):
        self.spec = copy.deepcopy(raw)
        self.substitutions: list[dict[str, str]] = []

    def _record(self, where: str, original: Any, effective: str, reason: str) -> None:
        self.substitutions.append({"setting": where, "field": deviation_field(where), "original": _text(original),
                                   "effective": effective, "reason": reason})

    def drop(self, where: str, container: dict[str, Any], key: str, reason: str) -> None:
        if key in container:
            self._record(where, container.pop(key), "(removed)", reason)

    def set(self, where: str, container: dict[str, Any], key: str, value: Any, reason: str) -> None:
        original = container.get(key)
        if original == value:
            return
        container[key] = value
        self._record(where, original, _text(value), reason)

    def deviations(self) -> list[dict[str, str]]:
        """RESULT.deviations in the contract's shape; the setting is named in the reason."""
        return [{"field": s["field"], "original": s["original"], "effective": s["effective"],
                 "reason": f"rehearsal: {s['setting']}: {s['reason']}"} for s in self.substitutions]


def rehearse_spec(raw: dict[str, Any], stem: str, spec_sha256: str, parsed: Spec, scale: str = "standard"
                  ) -> tuple[dict[str, Any], dict[str, Any]]:
    """(rehearsal spec dict, rehearsal record) for a merged spec (file + revision file) and its parsed form,
    at one of SCALES.

    Long because: the rehearsal rules are one written sequence of substitutions, each recorded where it happens;
    rules_sha256 covers this order.
    """
    if scale not in SCALES:
        raise SpecError("rehearsal_scale", f"unknown rehearsal scale {scale!r}; choose one of {', '.join(SCALES)}")
    size = SCALES[scale]
    spec = parsed
    r = _Rewriter(raw)
    s = r.spec
    training = spec.training_type
    # the researcher's own files (dataset.path, eval.path in the data directories) are used as given, scaled by the
    # rules below, never swapped for a stand-in; the stand-in then only sets the kind (SFT chat, RL tasks)
    local_train = _local_rows(s.get("dataset") or {}, training)
    local_eval = _local_rows(s.get("eval") or {}, training)
    key = ("gsm8k" if training == "rl" else "no_robots") if local_train is not None else _stand_in_key(s.get("dataset") or {})
    stand_in = STAND_INS[key]
    trained = [arm for arm in s.get("arms", []) if arm.get("trained", True)]
    generated = [arm for arm in trained if spec.data_source(arm["name"]) == "generated_tasks"]

    r.set("base_model", s, "base_model", EMBEDDED_MODEL, "the embedded model family replaces the spec's model")
    if s.get("lora_rank") is not None:
        r.set("lora_rank", s, "lora_rank", min(int(s["lora_rank"]), REHEARSAL_LORA_RANK), "rank for the embedded model")
    if s.get("max_seq_len") is not None:
        r.set("max_seq_len", s, "max_seq_len", min(int(s["max_seq_len"]), REHEARSAL_MAX_SEQ_LEN),
              "sequence length of the embedded model")

    # ---- steps ----
    if training == "rl":
        budget = size.rl_arm_step_budget // (2 if generated else 1)
        cap = max(MIN_STEPS, budget // max(1, len(trained)))
        why = (f"RL arms share {budget} rehearsal steps"
               + (" (half the budget: generating and auditing tasks is the other half)" if generated else ""))
    else:
        runs = sum(len(arm.get("lr_grid") or [None]) for arm in trained)
        cap = max(MIN_STEPS, size.sft_run_step_budget // max(1, runs))
        why = f"{runs} SFT training runs share {size.sft_run_step_budget} rehearsal steps"
    steps = min(int(s["steps"]), cap)
    r.set("steps", s, "steps", steps, why)
    for arm in s.get("arms", []):
        if arm.get("steps") is not None:
            r.set(f"arms[{arm['name']}].steps", arm, "steps", min(int(arm["steps"]), cap), why)
    _restate_step_texts(r, s, int(raw["steps"]), steps)

    # ---- batch / rollouts ----
    if training == "rl":
        rollouts = [int(arm.get("group_size") or 8) * int(arm.get("groups_per_batch") or s.get("batch_size") or 1)
                    for arm in trained]
        factor = min(1.0, size.rl_max_rollouts_per_step / max(rollouts or [1]))
        why = f"at most {size.rl_max_rollouts_per_step} rollouts per arm-step; group sizes kept"
        for arm in trained:
            if arm.get("groups_per_batch") is not None:
                r.set(f"arms[{arm['name']}].groups_per_batch", arm, "groups_per_batch",
                      max(1, math.floor(int(arm["groups_per_batch"]) * factor)), why)
        if s.get("batch_size") is not None:
            r.set("batch_size", s, "batch_size", max(1, math.floor(int(s["batch_size"]) * factor)), why)
        per_step = max([int(arm.get("groups_per_batch") or s.get("batch_size") or 1) for arm in trained] or [1])
        _rewrite_rollout(r, spec, stand_in)
    else:
        if s.get("batch_size") is not None:
            r.set("batch_size", s, "batch_size", min(int(s["batch_size"]), SFT_MAX_BATCH),
                  f"at most {SFT_MAX_BATCH} rows per SFT step")
        per_step = int(s.get("batch_size") or SFT_MAX_BATCH)
    # at least the two steps of prompts a kernel arm's correctness preflight and the activation pilot take
    pool = min(max(steps, PILOT_STEPS) * per_step, STAND_IN_TRAIN_ROWS[key] if local_train is None else local_train)

    # ---- data ----
    dataset = s.setdefault("dataset", {})
    if local_train is None:
        why = f"local stand-in of the same kind ({stand_in.kind}) for {dataset.get('name') or dataset.get('hf_path')}"
        r.set("dataset.name", dataset, "name", stand_in.name, why)
        r.set("dataset.path", dataset, "path", stand_in.train, why)
        for field_name in ("hf_path", "split"):
            r.drop(f"dataset.{field_name}", dataset, field_name, why)
    if dataset.get("n_examples") is not None:
        r.set("dataset.n_examples", dataset, "n_examples", min(int(dataset["n_examples"]), pool),
              "training pool = rehearsal steps x distinct prompts per step (each seen once)")
    evaluation = s["eval"]
    if local_eval is None:
        r.set("eval.benchmark", evaluation, "benchmark", stand_in.benchmark, "held-out split of the stand-in task")
        r.set("eval.path", evaluation, "path", stand_in.test, "held-out split of the stand-in task")
    held_out = stand_in.max_eval if local_eval is None else local_eval
    max_eval = min(held_out, size.max_eval or held_out)
    r.set("eval.n_examples", evaluation, "n_examples", min(int(evaluation["n_examples"]), max_eval),
          (f"at most the stand-in's {stand_in.max_eval} held-out items" if local_eval is None else
           f"at most the {local_eval} items of the spec's own eval.path") if max_eval == held_out
          else f"at most {max_eval} held-out items at the {scale} scale")

    _restate_pilot_size(r, s, steps, int(evaluation["n_examples"]))

    # ---- learning rates ----
    spec_lr = (s.get("optimizer") or {}).get("lr")
    if spec_lr:
        lr_factor = CALIBRATED_LR[training] / float(spec_lr)
        _rescale_lrs(r, s, lr_factor, f"every LR x{lr_factor:.6g}: the embedded model's calibrated {training} LR "
                                      f"{CALIBRATED_LR[training]:g} over the spec's optimizer.lr {float(spec_lr):g} "
                                      "(grid spacing and arm ratios kept)")

    # ---- restoration groups: rank follows the model ----
    for index, group in enumerate((s.get("restoration_preflight") or {}).get("groups", [])):
        for arm in group.get("arms", []):
            config = arm.get("optimizer_config") or {}
            if "lora_rank" in config:
                r.set(f"restoration_preflight.groups[{index}].arms[{arm.get('name')}].optimizer_config.lora_rank",
                      config, "lora_rank",
                      s.get("lora_rank", REHEARSAL_LORA_RANK), "rank for the embedded model")

    # ---- optimizer update checks: tolerances keyed by LR follow the rehearsal's LRs and rank ----
    _retolerance_update_checks(r, s)

    # ---- generation of tasks (from the revision file) ----
    if isinstance(s.get("generation"), dict):
        _rewrite_generation(r, s["generation"], pool)

    # ---- budget ----
    budget_block = s["budget"]
    for name, limit in REHEARSAL_BUDGET.items():
        if budget_block.get(name) is not None:
            r.set(f"budget.{name}", budget_block, name, min(float(budget_block[name]), limit),
                  f"a rehearsal is budgeted at most {limit} {name.replace('_', ' ')}")

    tested_instead = _tested_instead(raw, s, scale, stand_in, key)
    record = {
        "rehearsal": True,
        "note": NOT_FOR_SUBMISSION,
        "scale": scale,
        "scale_purpose": size.purpose,
        "spec": stem,
        "spec_sha256": spec_sha256,
        "backend": "embedded",
        "model": EMBEDDED_MODEL,
        "spec_model": spec.base_model,
        "stand_in": {"for": key, "train": stand_in.train if local_train is None else None,
                     "test": stand_in.test if local_eval is None else None},
        # the researcher's own data files, used as given (scaled, never swapped)
        "local_data": {name: block.get("path") for name, block, rows in (("dataset", dataset, local_train),
                                                                         ("eval", evaluation, local_eval))
                       if rows is not None},
        "rules": "experiment/contract/rehearsal.py",
        "rules_sha256": rules_sha256(),
        "substitution_count": len(r.substitutions),
        "substitutions": r.substitutions,
        "deviations": r.deviations(),
        # the model, data and eval set are replaced: the spec's hypothesis is not what a rehearsal tests (GEN-6)
        "original_hypothesis_tested": False,
        "tested_instead": tested_instead,
    }
    return s, record


def _tested_instead(written: dict[str, Any], rehearsed: dict[str, Any], scale: str, stand_in: StandIn, key: str) -> str:
    """RESULT.tested_instead of a rehearsal: what ran in place of the spec's hypothesis, from the
    spec as written and its rehearsal (model, training data, the endpoint's eval set, steps)."""
    def rank(spec: dict[str, Any]) -> str:
        return f" (LoRA rank {spec['lora_rank']})" if spec.get("lora_rank") is not None else ""

    before_data, before_eval = written.get("dataset") or {}, written.get("eval") or {}
    after_eval = rehearsed.get("eval") or {}
    data_name = before_data.get("name") or before_data.get("hf_path") or key
    endpoint = written.get("primary_endpoint") or before_eval.get("metric") or "the spec's endpoint"
    generation = rehearsed.get("generation") if isinstance(rehearsed.get("generation"), dict) else None
    written_generation = written.get("generation") if isinstance(written.get("generation"), dict) else {}
    generated = (f"; generated tasks written by {generation.get('generator_model')} instead of "
                 f"{written_generation.get('generator_model')}" if generation else "")
    return (f"A {scale}-scale rehearsal of the pipeline on the embedded backend, not the spec's hypothesis: "
            f"{rehearsed.get('base_model')}{rank(rehearsed)} instead of {written.get('base_model')}{rank(written)}; "
            f"training data {stand_in.name} ({stand_in.kind}, {stand_in.train}) instead of {data_name}{generated}; "
            f"{rehearsed.get('steps')} steps instead of {written.get('steps')}; the endpoint {endpoint} measured on "
            f"{after_eval.get('n_examples')} items of {stand_in.benchmark} instead of {before_eval.get('n_examples')} "
            f"items of {before_eval.get('benchmark')}.")


def rehearsal_result_fields(record: dict[str, Any]) -> dict[str, Any]:
    """The RESULT fields that mark a rehearsal before anything runs: the record (its deviations go to
    their own field), every substitution as a deviation, and the hypothesis it does not test."""
    return {"rehearsal": {k: v for k, v in record.items() if k != "deviations"},
            "deviations": list(record["deviations"]),
            "original_hypothesis_tested": False,
            "tested_instead": record["tested_instead"]}


_STEP_TEXT = r"\b(at step|after step|steps? of|after) {n}\b|\b{n}( training)? steps\b"


def _restate_step_texts(r: _Rewriter, s: dict[str, Any], written: int, rehearsed: int) -> None:
    """The decision's own words follow the steps that run: a rule text that names the spec's step count
    ("the lowest held-out NLL at step 80") names the rehearsal's (a `steps` deviation like the count itself)."""
    if written == rehearsed:
        return
    pattern = re.compile(_STEP_TEXT.format(n=written))

    def restated(match: re.Match[str]) -> str:
        return match.group(0).replace(str(written), str(rehearsed))

    for rule_name in ("decision_rule", "verdict_rule"):
        rule = s.get(rule_name)
        if not isinstance(rule, dict):
            continue
        for key, value in list(rule.items()):
            if isinstance(value, str) and pattern.search(value):
                r.set(f"{rule_name}.{key}", rule, key, pattern.sub(restated, value),
                      f"the rule's text names the steps that run ({rehearsed}, not {written})")


def _restate_pilot_size(r: _Rewriter, s: dict[str, Any], steps: int, eval_items: int) -> None:
    """A timing pilot the spec states in its command ("2 steps per arm plus 100 eval items") is never larger
    than the rehearsal: at most its steps per arm and its held-out items, so the pilot that runs is the one
    the rehearsed spec states (and the feasibility record's size source says what ran)."""
    text = s.get("command")
    match = STATED_PILOT.search(text) if isinstance(text, str) else None
    if not match:
        return
    sizes = [(match.start(1), match.end(1), int(match.group(1)), steps)]
    if match.group(2):
        sizes.append((match.start(2), match.end(2), int(match.group(2)), eval_items))
    restated = text
    for start, end, stated, limit in reversed(sizes):
        if stated > limit:
            restated = restated[:start] + str(limit) + restated[end:]
    r.set("command", s, "command", restated, f"the timing pilot the command states fits the rehearsal "
                                             f"(at most {steps} steps per arm and {eval_items} eval items)")


def _rewrite_rollout(r: _Rewriter, spec: Spec, stand_in: StandIn) -> None:
    try:
        written = rollout_settings(spec)
        temperature, renderer = written.temperature, written.renderer_name
    except ValueError:
        temperature, renderer = 1.0, DEFAULT_RENDERER
    block = {"max_tokens": stand_in.max_tokens, "temperature": temperature, "renderer": renderer, "few_shot": False}
    r.set("rollout", r.spec, "rollout", block,
          f"answers of the stand-in task fit in {stand_in.max_tokens} tokens; no GSM8K few-shot prefix")


def _rescale_lrs(r: _Rewriter, s: dict[str, Any], factor: float, why: str) -> None:
    def scaled(value: Any) -> Any:
        return _round_lr(float(value) * factor) if isinstance(value, (int, float)) and not isinstance(value, bool) else value

    optimizer = s.get("optimizer") or {}
    if "lr" in optimizer:
        r.set("optimizer.lr", optimizer, "lr", scaled(optimizer["lr"]), why)
    for arm in s.get("arms", []):
        if arm.get("lr") is not None:
            r.set(f"arms[{arm['name']}].lr", arm, "lr", scaled(arm["lr"]), why)
        if arm.get("lr_grid"):
            r.set(f"arms[{arm['name']}].lr_grid", arm, "lr_grid", [scaled(v) for v in arm["lr_grid"]], why)
    for index, group in enumerate((s.get("restoration_preflight") or {}).get("groups", [])):
        for arm in group.get("arms", []):
            config = arm.get("optimizer_config") or {}
            for name in ("lr", "learning_rate"):
                if name in config:
                    r.set(f"restoration_preflight.groups[{index}].arms[{arm.get('name')}].optimizer_config.{name}",
                          config, name, scaled(config[name]), why)
    for path in (s.get("correctness_preflight") or {}).get("paths", []):
        scaling = path.get("lr_scaling") or {}
        if scaling.get("learning_rates"):
            r.set(f"correctness_preflight.paths[{path.get('id')}].lr_scaling.learning_rates", scaling,
                  "learning_rates", [scaled(v) for v in scaling["learning_rates"]], why)


def _retolerance_update_checks(r: _Rewriter, s: dict[str, Any]) -> None:
    """An optimizer path whose tolerances are keyed by learning rate (`<check>@lr=<lr>`) is checked at
    every LR the sweep trains. The rehearsal trains other LRs at another rank, so the update-check LRs
    become the rehearsed sweep's and every tolerance is recomputed by the same written a-priori float32
    analysis the revision file's values came from (experiment.stats.update_tolerance): fixed before
    anything is measured, never fitted to errors."""
    # the analysis itself, one home; imported here because it loads numpy, which loading a spec does not need
    from experiment.stats.update_tolerance import update_check_plan

    rank = int(s.get("lora_rank") or REHEARSAL_LORA_RANK)
    sweep = sorted({float(lr) for arm in s.get("arms", [])  # each arm's grid, or its one lr
                    for lr in (arm.get("lr_grid") or ([arm["lr"]] if arm.get("lr") is not None else []))})
    for path in (s.get("correctness_preflight") or {}).get("paths", []):
        if not (path.get("update_learning_rates") and isinstance(path.get("tolerances"), dict)
                and any("@lr=" in key for key in path["tolerances"])):
            continue
        where = f"correctness_preflight.paths[{path.get('id')}]"
        why = (f"the update checks run at every rehearsed LR ({', '.join(f'{lr:g}' for lr in sweep)}) at rank {rank}; "
               "tolerances recomputed by the plan's written float32 error analysis (experiment.stats.update_tolerance)")
        planned = update_check_plan(sweep, rank)
        r.set(f"{where}.update_learning_rates", path, "update_learning_rates", sweep, why)
        r.set(f"{where}.tolerances", path, "tolerances", planned["tolerances"], why)
        analysis = path.get("error_analysis")
        if isinstance(analysis, dict) and "rank" in analysis:  # the analysis states the rank it is computed at
            r.set(f"{where}.error_analysis.rank", analysis, "rank", rank, why)
        scaling = path.setdefault("lr_scaling", {})
        r.set(f"{where}.lr_scaling.max_relative_change", scaling, "max_relative_change",
              planned["lr_scaling"]["max_relative_change"], why)


def _rewrite_generation(r: _Rewriter, block: dict[str, Any], pool: int) -> None:
    g = REHEARSAL_GENERATION
    why = "the embedded generator replaces the spec's generator model"
    r.set("generation.generator_model", block, "generator_model", EMBEDDED_GENERATOR, why)
    solver_why = ("the audit's independent re-solver is an exact solver of the arithmetic stand-in (a program): "
                  "every served embedded model is the trained base, the filter model or the generator's origin")
    r.set("generation.solver_model", block, "solver_model", EMBEDDED_SOLVER, solver_why)
    for name, reason in (("generator_path", why), ("solver_path", solver_why)):
        if block.get(name) is not None:
            r.drop(f"generation.{name}", block, name, reason)
    if block.get("n_accept") is not None:
        r.set("generation.n_accept", block, "n_accept", min(int(block["n_accept"]), pool),
              "accepted tasks = the rehearsal training pool")
    n_accept = int(block.get("n_accept") or pool)
    if isinstance(block.get("words"), list) and len(block["words"]) == 2:
        r.set("generation.words", block, "words", [min(int(block["words"][0]), g["min_words"]), block["words"][1]],
              "the embedded generator writes short problems")
    for name in ("filter_max_tokens", "solver_max_tokens", "generation_max_tokens"):
        if name in block or name == "generation_max_tokens":
            r.set(f"generation.{name}", block, name, g[name], "token lengths of the embedded task family")
    r.set("generation.max_candidates", block, "max_candidates", g["candidates_per_accept"] * n_accept,
          f"{g['candidates_per_accept']} candidates per accepted task for the embedded generator")
    r.set("generation.batch_size", block, "batch_size", g["batch_size"], "larger sampling batches on CPU")
    r.set("generation.max_audit_rounds", block, "max_audit_rounds", g["max_audit_rounds"],
          "a small accepted set needs more audit rounds to reach the audit's sample size")


def rehearsal_summary(summary: str, record: dict[str, Any]) -> str:
    """The run's summary, led by the rehearsal mark (idempotent). It names the substituted model and the settings
    calibrated for it (learning rates, rank), as the contract asks of a substituted model."""
    aliases = {"learning_rate": "lr", "learning_rates": "lr_grid"}
    model_settings: list[str] = []
    for s in record["substitutions"]:
        if s["field"] in ("learning_rate", "lora_rank") and not s["setting"].startswith(
                ("correctness_preflight", "restoration_preflight")):  # the preflights' own settings stay in deviations
            name = s["setting"].rsplit(".", 1)[-1]
            text = f"{aliases.get(name, name)} {s['effective']}"
            if text not in model_settings:
                model_settings.append(text)
    # a prefix, not a sentence of its own: the contract's summary stays two sentences
    scale = record.get("scale", "standard")
    at_scale = "" if scale == "standard" else f" at the {scale} scale (its verdict means nothing)"
    mark = (f"{NOT_FOR_SUBMISSION} ({record['spec']}{at_scale} on {record['model']} instead of {record['spec_model']}; "
            f"{'; '.join(model_settings)}; {record['substitution_count']} substitutions listed in deviations):")
    return summary if summary.startswith(NOT_FOR_SUBMISSION) else f"{mark} {summary}".strip()
