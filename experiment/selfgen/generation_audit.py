"""Generation audit (GA-1..GA-9; selfgen spec, "Generation audit").

Before any optimizer update on generated data:
  1. freeze the candidates file (every candidate, generation order, with its disposition) and the
     full held-out evaluation set (item_id, prompt) as evidence of kind generated_tasks;
  2. `select_sample(accepted, min(accepted, min_sample_size or 100), seed)`: accepted tasks sorted
     by sha256(json.dumps([seed, item_id])) (the project's reading of "the JSON [seed, item_id]");
  3. re-solve each sampled task from its TEXT ONLY with the independent solver: a model through a
     sampling client (greedy, the math-env prompt), or an exact solver of the task family (a program,
     experiment/selfgen/exact_solver.py); the label and the generated code are never shown; solver
     identity and worked solution are recorded, and the solver must be none of the generator, the
     filter model and the trained base model (`independence_record`);
  4. compare with the spec's `answer_comparison` (`numeric_exact`: strict scalar integers, decimals
     or fractions, zero tolerance; `categorical_exact`: exact, case-sensitive, no normalization);
  5. count overlaps: NFKC + casefold + whitespace-normalised exact prompt match of every accepted
     task against the full held-out set (this does not detect paraphrases or semantic leakage);
  6. report the `generation_audit` record (GA-2), and `validate(...)` it: passed only when every rule holds and
     label errors <= max_label_errors and overlaps <= max_eval_overlaps.
Any label error or overlap, whatever the thresholds, rejects the affected tasks, tops the accepted
set back up by generating more, freezes NEW file versions and re-audits (`audit_with_repair`) on a
fresh sample (sample_seed = audit seed + round - 1, recorded), so a passing re-audit is evidence
about the repaired set and not a re-check of tasks already seen.
Agreement with an independent solver does not establish semantic truth; disagreements and the
sample denominator are reported.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from experiment.data import TaskItem
from experiment.selfgen.task_generation import REJECTED
from experiment.selfgen.text_resolver import Solution
from experiment.service.capacity import answered
from experiment.stats.generation_audit import (
    AuditValidation, build_report, sample_size, select_sample, validate,
)

if TYPE_CHECKING:  # the record functions (the grader's) load no SDK and no torch; the audit run does
    import tinker

    from experiment.selfgen.task_generation import TaskGenerator

CANDIDATE_FIELDS = ("item_id", "index", "prompt", "answer", "disposition", "code", "error", "completion",
                    "word_count", "base_solved", "execution_seconds")
EVALUATION_FILE = "generation-evaluation-set.jsonl"


def candidates_file_name(version: int) -> str:
    return f"generated-tasks-v{version}.jsonl"


def audit_file_name(version: int) -> str:
    return f"generation-audit-v{version}.json"


# ---- frozen files ----

def candidates_jsonl(rows: Iterable[dict[str, Any]]) -> str:
    return "".join(json.dumps({key: row.get(key) for key in CANDIDATE_FIELDS}, ensure_ascii=False) + "\n"
                   for row in rows)


def evaluation_jsonl(evaluation: Iterable[TaskItem]) -> str:
    return "".join(json.dumps({"item_id": item.id, "prompt": item.question}, ensure_ascii=False) + "\n"
                   for item in evaluation)


# ---- blind re-solve ----

async def blind_resolve(sampler: tinker.SamplingClient, renderer: Any, item_id: str, problem_text: str,
                        max_tokens: int, few_shot: bool) -> dict[str, Any]:
    """Greedy math-env answer to the problem TEXT; the task built here carries no label."""
    import tinker
    from tinker_cookbook import renderers

    from experiment.rl.loop import make_env, prompt_tokens
    from tinker_cookbook.recipes.math_rl.math_grading import extract_boxed

    blind = TaskItem(item_id, problem_text, answer="")
    env = make_env(blind, renderer, few_shot)
    result = await answered(sampler.sample(
        prompt=prompt_tokens(blind, renderer, few_shot), num_samples=1,
        sampling_params=tinker.SamplingParams(stop=env.stop_condition, max_tokens=max_tokens, temperature=0.0),
    ))
    message, _ = renderer.parse_response(result.sequences[0].tokens)
    reasoning = renderers.get_text_content(message)
    try:
        answer = extract_boxed(reasoning)
    except ValueError:
        answer = None
    return {"independent_answer": answer, "reasoning": reasoning}


# ---- the audit with repair rounds ----

@dataclass
class AuditOutcome:
    passed: bool
    report: dict[str, Any] | None
    validation: AuditValidation | None
    rounds: int
    resolve_seconds: float
    resolves: int
    reasons: list[str]


@dataclass
class Resolver:
    """The independent solver: a sampling client, its identity, and its answers so far (by item id)."""

    sampler: tinker.SamplingClient
    renderer: Any
    resolver_id: str
    max_tokens: int
    few_shot: bool
    identity: dict[str, Any] = field(default_factory=dict)  # what the audit records about the solver
    answers: dict[str, dict[str, Any]] = field(default_factory=dict)
    seconds: float = 0.0

    async def resolve(self, tasks: Sequence[dict[str, Any]]) -> None:
        import asyncio

        todo = [t for t in tasks if str(t["item_id"]) not in self.answers]
        started = time.perf_counter()
        solved = await asyncio.gather(*[
            blind_resolve(self.sampler, self.renderer, str(t["item_id"]), t["prompt"], self.max_tokens, self.few_shot)
            for t in todo
        ])
        self.seconds += time.perf_counter() - started
        for task, answer in zip(todo, solved):
            self.answers[str(task["item_id"])] = answer


@dataclass
class ProgramResolver:
    """The independent solver as a deterministic program of the task family (experiment.selfgen.exact_solver):
    the same answers and worked solutions as a model re-solve, from the problem text only."""

    solve: Callable[[str], Solution]
    resolver_id: str
    identity: dict[str, Any]
    answers: dict[str, dict[str, Any]] = field(default_factory=dict)
    seconds: float = 0.0

    async def resolve(self, tasks: Sequence[dict[str, Any]]) -> None:
        started = time.perf_counter()
        for task in tasks:
            if str(task["item_id"]) not in self.answers:
                solution = self.solve(task["prompt"])
                self.answers[str(task["item_id"])] = {"independent_answer": solution.answer,
                                                      "reasoning": solution.reasoning}
        self.seconds += time.perf_counter() - started


# The roles the re-solver must be independent of (issue 28): whoever wrote the tasks, whoever filtered
# them, and the model the arms train: agreement with any of them is no independent check of a label.
DEPENDENT_ROLES = ("generator", "filter_base_model", "trained_base_model")


def _same_model(a: dict[str, Any], b: dict[str, Any]) -> bool:
    """One model (or program) under both identities: the same name, or the same weights or code hash."""
    def name(identity: dict[str, Any]) -> str:
        return str(identity.get("name") or "").strip().lower().rstrip("/")

    if name(a) and name(a) == name(b):
        return True
    return any(a.get(key) and a.get(key) == b.get(key) for key in ("weights_sha256", "code_sha256"))


def independence_problems(resolver: dict[str, Any], identities: dict[str, dict[str, Any]]) -> list[str]:
    """Why the re-solver is not independent of the generator, the filter model and the trained base
    model (same name, same weights or same code); [] when it is. A missing identity is a problem."""
    if not isinstance(resolver, dict) or not resolver.get("name"):
        return ["the re-solver's identity is not recorded"]
    problems = []
    for role in DEPENDENT_ROLES:
        other = identities.get(role) if isinstance(identities, dict) else None
        if not isinstance(other, dict) or not other.get("name"):
            problems.append(f"the {role.replace('_', ' ')}'s identity is not recorded")
        elif _same_model(resolver, other):
            problems.append(f"the re-solver {resolver['name']} is the {role.replace('_', ' ')} ({other['name']})")
    return problems


def independence_record(resolver: dict[str, Any], identities: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """The audit record's statement of who re-solved and whom it is independent of (checked, GA-6)."""
    problems = independence_problems(resolver, identities)
    return {"resolver": resolver, "compared_identities": identities, "resolver_independent": not problems,
            "resolver_independence_problems": problems}


async def audit_with_repair(
    generator: TaskGenerator,
    resolver: Resolver | ProgramResolver,
    evaluation: Sequence[TaskItem],
    spec_audit: dict[str, Any],
    seed: int,
    max_rounds: int,
    freeze: Callable[[str, str], None],
    post: Callable[[dict[str, Any]], None],
    identities: dict[str, dict[str, Any]] | None = None,
) -> AuditOutcome:
    """Generate to n_accept, freeze, audit; on label errors or overlaps reject, top up, re-audit.

    `freeze(name, text)` stores an immutable generated_tasks evidence file; `post(report)` puts the
    record in RESULT. Each round freezes a new candidates file and a new audit file."""
    freeze(EVALUATION_FILE, evaluation_jsonl(evaluation))
    n_accept = generator.settings.n_accept
    report, validation, reasons, history = None, None, [], []
    for round_number in range(1, max_rounds + 1):
        enough = await generator.generate_until(n_accept)
        dataset_file, audit_file = candidates_file_name(round_number), audit_file_name(round_number)
        tasks = generator.candidates
        freeze(dataset_file, candidates_jsonl(tasks))
        accepted = generator.accepted()
        if not enough:
            reasons = [(f"only {len(accepted)} of {n_accept} tasks accepted after {len(tasks)} candidates "
                        f"(max_candidates {generator.settings.max_candidates})")]
            if not accepted:
                return AuditOutcome(False, None, None, round_number, resolver.seconds, len(resolver.answers), reasons)
        # a fresh sample each round: a re-audit that re-drew the already verified tasks would say
        # nothing about the unsampled ones (when the sample is every accepted task this changes nothing)
        round_seed = seed + round_number - 1
        sample = select_sample(tasks, sample_size(len(accepted), spec_audit), round_seed)
        await resolver.resolve(sample)
        report = build_report(tasks=tasks, evaluation=evaluation, resolved=resolver.answers,
                              resolver_id=resolver.resolver_id, spec_audit=spec_audit, seed=round_seed,
                              dataset_file=dataset_file, evaluation_file=EVALUATION_FILE, audit_file=audit_file)
        validation = validate(report, spec_audit, tasks, evaluation, require_comparison=True)
        history.append({"round": round_number, "dataset_file": dataset_file, "audit_file": audit_file,
                        "counts": report["counts"], "sample_size": report["sample_size"],
                        "label_error_count": report["label_error_count"], "overlap_count": report["overlap_count"],
                        "status": validation.status})
        report.update(independence_record(resolver.identity, identities or {}))
        report["round"] = round_number
        report["status"] = validation.status
        report["validation_reasons"] = validation.reasons
        report["rounds"] = list(history)  # every audit so far, this one last (earlier files stay frozen)
        freeze(audit_file, json.dumps(report, indent=2, ensure_ascii=False) + "\n")
        post(report)
        if not enough:
            return AuditOutcome(False, report, validation, round_number, resolver.seconds, len(resolver.answers), reasons)
        if validation.passed:
            return AuditOutcome(True, report, validation, round_number, resolver.seconds, len(resolver.answers), [])
        bad = {d["item_id"]: f"audit round {round_number}: label {d['label']} disagrees with the independent "
                             f"answer {d['independent_answer']!r}" for d in report["disagreements"]}
        bad.update({o["item_id"]: f"audit round {round_number}: normalized exact match with evaluation item "
                                  f"{o['evaluation_item_id']}" for o in report["overlaps"]})
        if not bad:  # the record itself is wrong: nothing a repair of tasks can fix
            return AuditOutcome(False, report, validation, round_number, resolver.seconds, len(resolver.answers),
                                validation.reasons)
        for row in tasks:
            if row["item_id"] in bad:
                row["disposition"] = REJECTED
                row["error"] = bad[row["item_id"]]
        reasons = validation.reasons
    return AuditOutcome(False, report, validation, max_rounds, resolver.seconds, len(resolver.answers),
                        [f"still failing after {max_rounds} audit rounds"] + reasons)
