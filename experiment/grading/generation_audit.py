"""Generation-audit category (GA-*): applicability, then every number re-derived from the inline
candidates and evaluation files with the contract's record functions (experiment.stats.generation_audit). The
re-solver's independence (GA-6) is re-derived here from the contract's text, not taken from the audit run
(experiment.selfgen.generation_audit), whose own notion of "the same model" would pass its own check."""

from __future__ import annotations

import json
from typing import Any

from experiment.contract.result_models import GenerationAudit
from experiment.data import DataError, gsm8k_questions, load_task_file, resolve_data_path
from experiment.stats import generation_audit as records
from experiment.grading.common import (
    INVALID, NOT_APPLICABLE, UNKNOWN, UNVERIFIED, CategoryGrade, GradeContext, Issue, as_dict, as_list, equal_json,
    is_integer, model_issues, run_checks, short,
)
from experiment.grading.registry import implements, rule

NAME = "generation_audit"
SUPPORTED = ("numeric_exact", "categorical_exact")


# The roles the re-solver must be independent of (GA-6): the generator, the filter's model, the trained base model.
DEPENDENT_ROLES = ("generator", "filter_base_model", "trained_base_model")


def _one_model(a: dict[str, Any], b: dict[str, Any]) -> bool:
    """The same model or program under both identities: one name (case, spaces and a trailing / aside), or one
    weights or code sha256."""
    def name(identity: dict[str, Any]) -> str:
        return str(identity.get("name") or "").strip().lower().rstrip("/")

    return bool(name(a)) and name(a) == name(b) or any(
        a.get(key) and a.get(key) == b.get(key) for key in ("weights_sha256", "code_sha256"))


def independence_problems(resolver: Any, identities: Any) -> list[str]:
    """GA-6: why the re-solver is no independent check of the generator, the filter's model and the trained base
    model ([] when it is); an identity not recorded is a problem too."""
    if not isinstance(resolver, dict) or not resolver.get("name"):
        return ["the re-solver's identity is not recorded"]
    problems = []
    for role in DEPENDENT_ROLES:
        other = identities.get(role) if isinstance(identities, dict) else None
        if not isinstance(other, dict) or not other.get("name"):
            problems.append(f"the {role.replace('_', ' ')}'s identity is not recorded")
        elif _one_model(resolver, other):
            problems.append(f"the re-solver {resolver['name']} is the {role.replace('_', ' ')} ({other['name']})")
    return problems


def applicability(spec: dict[str, Any] | None) -> tuple[Any, str]:
    """GA-1: True / False / None (unknown) and why."""
    if spec is None:
        return None, "no spec"
    section = as_dict(spec.get("generation_audit"))
    features = spec.get("experiment_features")
    generated = as_dict(features).get("generated_training_data")
    if generated is True or section.get("required") is True:
        return True, ("experiment_features.generated_training_data is true" if generated is True
                      else "generation_audit.required is true")
    if generated is None:
        return None, "experiment_features.generated_training_data is missing: applicability unknown"
    return False, "generation_audit opts out and no feature it covers is true"


def _record(ctx: GradeContext) -> dict[str, Any]:
    return as_dict(ctx.result.get("generation_audit"))


def _tasks(ctx: GradeContext) -> list[dict[str, Any]] | None:
    return ctx.evidence.jsonl(_record(ctx).get("dataset_file"))


def _evaluation(ctx: GradeContext) -> list[dict[str, Any]] | None:
    return ctx.evidence.jsonl(_record(ctx).get("evaluation_file"))


@rule("GA-2", "generation_audit", "invalid|unknown", "generation_audit has the contract's shape")
def GA_2(ctx: GradeContext) -> list[Issue]:
    if not isinstance(ctx.result.get("generation_audit"), (dict, type(None))):
        return [Issue("GA-2", INVALID, f"generation_audit {short(ctx.result['generation_audit'])} is not an object")]
    if not _record(ctx):
        return [Issue("GA-2", UNKNOWN, "RESULT has no generation_audit record")]
    return model_issues(GenerationAudit, _record(ctx), "GA-2", INVALID, "generation_audit") + [
        Issue("GA-2", INVALID, f"generation_audit.{problem}") for problem in _json_number_problems(_record(ctx))]


def _json_number_problems(record: dict[str, Any]) -> list[str]:
    """GA-2's numbers as JSON numbers, which the typed model takes loosely: version the number 1 (never true), the
    seed and the counts integers (never booleans, text or fractions), the label errors and overlaps not negative."""
    problems = ["version: true is not the number 1"] if record.get("version") is True else []
    if "sample_seed" in record and not is_integer(record["sample_seed"]):
        problems.append("sample_seed must be an integer")
    keys = ("generated", "accepted", "rejected", "execution_errors")
    if "counts" in record and not all(is_integer(as_dict(record["counts"]).get(key)) for key in keys):
        problems.append(f"counts must give integer {', '.join(keys)}")
    for key in ("label_error_count", "overlap_count"):
        if key in record and not (is_integer(record[key]) and record[key] >= 0):
            problems.append(f"{key} must be a non-negative integer")
    return problems


@rule("GA-3", "generation_audit", "invalid|unverified", "the candidates file and the full frozen evaluation set are retained inline")
def GA_3(ctx: GradeContext) -> list[Issue]:
    issues = []
    for key in ("dataset_file", "evaluation_file", "audit_file"):
        ref = _record(ctx).get(key)
        if not ctx.evidence.usable(ref):
            issues.append(Issue("GA-3", UNVERIFIED, f"{key}: {ctx.evidence.why(ref)}"))
        elif key != "audit_file" and as_dict(ctx.evidence.by_name.get(str(ref).split("#")[0])).get("kind") != "generated_tasks":
            issues.append(Issue("GA-3", UNVERIFIED, f"{key} {ref} is not retained as kind generated_tasks"))
    tasks = _tasks(ctx)
    if tasks is not None:
        issues += [Issue("GA-3", INVALID, problem) for problem in _candidate_problems(tasks)]
    return issues


_HELD_OUT: dict[str, list[tuple[str, str]] | None] = {}  # data file -> its (id, question) rows (read once)


def _held_out_set(ctx: GradeContext) -> list[tuple[str, str]] | None:
    """Every held-out item of the spec's eval data, (id, question) in file order, as the audit freezes it
    (experiment.selfgen.steps.generation_audit.full_evaluation_set); None where the data cannot be read here."""
    path = as_dict((ctx.spec or {}).get("eval")).get("path")
    key = str(path)
    if key not in _HELD_OUT:
        try:
            _HELD_OUT[key] = ([(item.id, item.question) for item in load_task_file(resolve_data_path(path))] if path
                              else gsm8k_questions("test"))
        except (DataError, OSError, ValueError, TypeError):
            _HELD_OUT[key] = None
    return _HELD_OUT[key]


@implements("GA-3")
def GA_3_evaluation_set(ctx: GradeContext) -> list[Issue]:
    """GA-3, the evaluation file *(project reading)*: it is the spec's whole held-out set, every item's id and
    text as the data gives them (the overlap GA-8 recomputes is only as good as this set)."""
    rows, held_out = _evaluation(ctx), _held_out_set(ctx)
    if rows is None or held_out is None:
        return []
    if [(str(r.get("item_id")), str(r.get("prompt"))) for r in rows] != held_out:
        return [Issue("GA-3", INVALID, f"the evaluation file {short(_record(ctx).get('evaluation_file'))} is not the "
                                       f"spec's held-out set ({len(held_out)} items, their ids and text)")]
    return []


@rule("GA-4", "generation_audit", "invalid", "counts and every disposition are what the candidates file and the filter give")
def GA_4(ctx: GradeContext) -> list[Issue]:
    recorded, issues = as_dict(_record(ctx).get("counts")), []
    parts = [recorded.get(key) for key in ("generated", "accepted", "rejected", "execution_errors")]
    if all(is_integer(part) for part in parts) and parts[0] != sum(parts[1:]):  # a disposition none of the three
        issues.append(Issue("GA-4", INVALID, "counts: generated is not accepted + rejected + execution_errors"))
    tasks = _tasks(ctx)
    if tasks is None:
        return issues
    counts = records.counts_of(tasks)
    if not equal_json(_record(ctx).get("counts"), counts):
        issues.append(Issue("GA-4", INVALID, f"counts {short(_record(ctx).get('counts'))} are not the candidates' {counts}"))
    return issues


def _filter_problems(tasks: list[dict[str, Any]], low: int, high: int, samples: int) -> list[str]:
    """The filter's count per candidate (`base_solved`, experiment.selfgen.task_generation): a whole number of its
    samples; an accepted candidate solved inside the spec's keep band, one the filter rejected outside it, with the
    filter's own words for it."""
    wrong = []
    for task in tasks:
        solved, error = task.get("base_solved"), str(task.get("error") or "")
        counted = is_integer(solved) and 0 <= solved <= samples
        by_filter = error.startswith("filter 5:")
        if (solved is not None and not counted) or (task.get("disposition") == "accepted" and not (
                counted and low <= solved <= high)) or (by_filter and not (
                counted and not low <= solved <= high and error == f"filter 5: the base model solved it in {solved} of "
                                                                   f"{samples} samples (kept: {low}-{high})")):
            wrong.append(str(task.get("item_id")))
    return wrong


@implements("GA-4")
def GA_4_filter(ctx: GradeContext) -> list[Issue]:
    """GA-4, the filter *(project reading)*: in every candidates file, each candidate's disposition is what the
    filter's count (`base_solved`) and the spec's keep band give (see `_filter_problems`)."""
    settings = ctx.generation_settings
    if settings is None:
        return []
    record, issues = _record(ctx), []
    names = dict.fromkeys([*(as_dict(r).get("dataset_file") for r in as_list(record.get("rounds"))),
                           record.get("dataset_file")])
    for name in names:
        tasks = ctx.evidence.jsonl(name)
        counted = tasks is not None and any("base_solved" in t for t in tasks)  # where the filter's counts are kept
        wrong = _filter_problems(tasks, *settings.keep_band, settings.filter_samples) if counted else []
        if wrong:
            issues.append(Issue("GA-4", INVALID, f"{short(name)}: {len(wrong)} candidate(s) ({short(', '.join(wrong))}) have "
                                                 "a disposition their filter count and the spec's keep band do not give"))
    return issues


@rule("GA-5", "generation_audit", "invalid", "the sample is the first accepted ids sorted by sha256(json.dumps([seed, item_id]))")
def GA_5(ctx: GradeContext) -> list[Issue]:
    tasks, seed = _tasks(ctx), _record(ctx).get("sample_seed")
    if tasks is None or not is_integer(seed):
        return []
    audit = records
    spec_audit = as_dict((ctx.spec or {}).get("generation_audit"))
    size = audit.sample_size(audit.counts_of(tasks)["accepted"], spec_audit)
    expected = [str(t["item_id"]) for t in audit.select_sample(tasks, size, seed)]
    sampled = [str(as_dict(s).get("item_id")) for s in as_list(_record(ctx).get("samples"))]
    if sampled != expected:
        return [Issue("GA-5", INVALID, f"the {len(sampled)} sampled ids are not the {len(expected)} selected by "
                                       "sha256(json.dumps([seed, item_id]))")]
    return []


@rule("GA-6", "generation_audit", "invalid|unverified", "each sample re-solved blind by a re-solver independent of generator, filter and base")
def GA_6(ctx: GradeContext) -> list[Issue]:
    for sample in as_list(_record(ctx).get("samples")):
        sample = as_dict(sample)
        if (sample.get("method") != "independent_resolve" or sample.get("blind_to_label") is not True
                or not sample.get("resolver_id") or not isinstance(sample.get("reasoning"), str)
                or "independent_answer" not in sample):
            return [Issue("GA-6", UNVERIFIED, f"sample {short(sample.get('item_id'))} is not a blind independent "
                                              "re-solve with resolver_id, reasoning and independent_answer")]
    return []


def _spec_identities(ctx: GradeContext) -> dict[str, set[str]]:
    """Who the spec says generates, filters, trains and re-solves (names; a trained base may be served
    under the `model` deviation's effective name)."""
    spec = ctx.spec or {}
    block = as_dict(spec.get("generation"))
    base = {str(spec.get("base_model"))} | {str(as_dict(d).get("effective")) for d in as_list(ctx.result.get("deviations"))
                                           if as_dict(d).get("field") == "model" and as_dict(d).get("original") == spec.get("base_model")}
    generator = str(block.get("generator_path") or block.get("generator_model"))
    generators = {generator} | (base if generator == spec.get("base_model") else set())  # "the frozen base": as served
    return {"generator": generators, "filter_base_model": base, "trained_base_model": base,
            "solver": {str(block.get("solver_path") or block.get("solver_model"))}}


@implements("GA-6")
def GA_6_independent_resolver(ctx: GradeContext) -> list[Issue]:
    """GA-6, independence: the record names its re-solver and the generator, filter and trained base model
    it is compared with, each the one the spec names, and the re-solver is none of them (name, weights or code)."""
    record = _record(ctx)
    resolver, compared = record.get("resolver"), record.get("compared_identities")
    if not isinstance(resolver, dict) or not isinstance(compared, dict):
        return [Issue("GA-6", UNVERIFIED, "the audit does not record the re-solver's identity and the generator, filter "
                                          "and trained base model it must be independent of")]
    issues = []
    if "generation" in (ctx.spec or {}):
        for role, names in _spec_identities(ctx).items():
            identity = resolver if role == "solver" else as_dict(compared.get(role))
            if str(identity.get("name")) not in names:
                issues.append(Issue("GA-6", INVALID, f"the audit's {role.replace('_', ' ')} {short(identity.get('name'))} "
                                                     f"is not the spec's {' or '.join(sorted(names))}"))
    problems = independence_problems(resolver, compared)
    for problem in problems:
        issues.append(Issue("GA-6", INVALID, f"{problem}: the re-solve is no independent check"))
    if (record.get("resolver_independent"), record.get("resolver_independence_problems")) != (not problems, problems):
        issues.append(Issue("GA-6", INVALID, "resolver_independent and resolver_independence_problems are not what the "
                                             "recorded identities give"))
    named = [as_dict(s).get("item_id") for s in as_list(record.get("samples"))
             if not str(as_dict(s).get("resolver_id", "")).startswith(str(resolver.get("name")))]
    if named:
        issues.append(Issue("GA-6", INVALID, f"{len(named)} sample(s) name another resolver than {short(resolver.get('name'))}"))
    return issues


@rule("GA-7", "generation_audit", "unverified", "answers compared by the spec's answer_comparison")
def GA_7(ctx: GradeContext) -> list[Issue]:
    strategy = as_dict((ctx.spec or {}).get("generation_audit")).get("answer_comparison")
    if strategy not in SUPPORTED:
        return [Issue("GA-7", UNVERIFIED, f"answer_comparison {short(strategy)} is missing or unsupported")]
    return []


@rule("GA-8", "generation_audit", "invalid", "label errors and evaluation overlaps recompute")
def GA_8(ctx: GradeContext) -> list[Issue]:
    tasks, evaluation = _tasks(ctx), _evaluation(ctx)
    record, issues = _record(ctx), []
    strategy = as_dict((ctx.spec or {}).get("generation_audit")).get("answer_comparison")
    audit = records
    if tasks is not None and strategy in SUPPORTED:
        labels = {str(t.get("item_id")): t.get("answer") for t in tasks}
        errors = sum(not audit.answer_agreement(labels.get(str(as_dict(s).get("item_id"))),
                                                as_dict(s).get("independent_answer"), strategy)
                     for s in as_list(record.get("samples")))
        if not equal_json(record.get("label_error_count"), errors):
            issues.append(Issue("GA-8", INVALID, f"label_error_count {short(record.get('label_error_count'))} but the "
                                                 f"samples give {errors}"))
    if tasks is not None and evaluation is not None:
        try:
            overlaps = len(audit.evaluation_overlap(tasks, evaluation))
        except (KeyError, TypeError):
            return issues + [Issue("GA-8", INVALID, "the evaluation file rows lack item_id or prompt")]
        if not equal_json(record.get("overlap_count"), overlaps):
            issues.append(Issue("GA-8", INVALID, f"overlap_count {short(record.get('overlap_count'))} but the evaluation "
                                                 f"set gives {overlaps}"))
    return issues


@rule("GA-9", "generation_audit", "invalid", "the audit passes before any optimizer update on generated data")
def GA_9(ctx: GradeContext) -> list[Issue]:
    """GA-9, the limits: the audit's label errors and evaluation overlaps are within the spec's limits."""
    record = _record(ctx)
    spec_audit = as_dict((ctx.spec or {}).get("generation_audit"))
    issues = []
    for count_key, limit_key in (("label_error_count", "max_label_errors"), ("overlap_count", "max_eval_overlaps")):
        count, limit = record.get(count_key), spec_audit.get(limit_key, 0)
        if isinstance(count, int) and isinstance(limit, int) and count > limit:
            issues.append(Issue("GA-9", INVALID, f"{count_key} {count} exceeds {limit_key} {limit}: the audit failed "
                                                 "and blocks a definitive verdict"))
    return issues


@implements("GA-9")
def GA_9_order(ctx: GradeContext) -> list[Issue]:
    """GA-9, the order: no optimizer update ran before the audit's gate passed."""
    issues = []
    if ctx.events is not None:
        order = [(e.get("event"), e.get("gate"), e.get("status")) for e in ctx.events]
        passed = next((i for i, e in enumerate(order) if e == ("gate", "generation_audit", "passed")), None)
        first_step = next((i for i, e in enumerate(ctx.events) if e.get("event") == "training_step"), None)
        if first_step is not None and (passed is None or first_step < passed):
            issues.append(Issue("GA-9", INVALID, "an optimizer update ran before the generation audit passed"))
    return issues


@rule("GA-10", "generation_audit", "unverified", "the record's samples are the retained audit file's")
def GA_10(ctx: GradeContext) -> list[Issue]:
    """*(project reading)* The record's audit samples are the retained audit file's: the same items,
    in the same order, each with the same fields the record reports (the file may add fields)."""
    record = _record(ctx)
    retained = ctx.evidence.json(record.get("audit_file"))
    samples = retained.get("samples") if isinstance(retained, dict) else retained
    if not isinstance(samples, list):
        return [Issue("GA-10", UNVERIFIED, f"the audit file {short(record.get('audit_file'))} is not retained inline "
                                           "with its samples")]
    mine = as_list(record.get("samples"))
    if isinstance(retained, dict) and any(k not in record or not equal_json(retained[k], record[k]) for k in retained
                                          if k != "samples"):  # the record is the whole audit the file holds
        return [Issue("GA-10", UNVERIFIED, f"the audit file {short(record.get('audit_file'))} says otherwise than the "
                                           "record's audit")]
    if len(mine) != len(samples) or any(not isinstance(f, dict) or any(not equal_json(f.get(k), v) for k, v in as_dict(r).items())
                                        for r, f in zip(mine, samples)):
        return [Issue("GA-10", UNVERIFIED, "generation_audit.samples are not the retained audit file's samples, so which the "
                                           "audit found cannot be told")]
    return []


def _samples_of(value: Any) -> list[dict[str, Any]] | None:
    samples = value.get("samples") if isinstance(value, dict) else value
    return [as_dict(x) for x in samples] if isinstance(samples, list) else None


@rule("GA-11", "generation_audit", "invalid", "every audit round recomputes from its own retained files")
def GA_11(ctx: GradeContext) -> list[Issue]:
    """*(project reading)* Every audit round recomputes from its own retained files (counts from its candidates,
    label errors from its sampled re-solves against the candidates' labels, its sample size), the last round
    is the record's, and the record's disagreements and duplicate count are what its files give."""
    record, audit = _record(ctx), records
    strategy = as_dict((ctx.spec or {}).get("generation_audit")).get("answer_comparison")
    rounds = [as_dict(r) for r in as_list(record.get("rounds"))]
    problems = []
    for number, entry in enumerate(rounds, 1):
        tasks = ctx.evidence.jsonl(entry.get("dataset_file"))
        samples = _samples_of(ctx.evidence.json(entry.get("audit_file")))
        if tasks is None or samples is None:
            problems.append(f"round {number}: its candidates or audit file is not retained")
            continue
        labels = {str(t.get("item_id")): t.get("answer") for t in tasks}
        errors = [s.get("item_id") for s in samples if strategy in SUPPORTED
                  and not audit.answer_agreement(labels.get(str(s.get("item_id"))), s.get("independent_answer"), strategy)]
        mislabelled = [s.get("item_id") for s in samples if "label" in s and s["label"] != labels.get(str(s.get("item_id")))]
        if not equal_json((entry.get("round"), entry.get("counts"), entry.get("sample_size")),
                          (number, audit.counts_of(tasks), len(samples))) \
                or (strategy in SUPPORTED and not equal_json(entry.get("label_error_count"), len(errors))) or mislabelled:
            problems.append(f"round {number}: its counts, sample size, label errors or sampled labels are not what its "
                            "files give")
    if rounds:
        last = rounds[-1]
        if not all(equal_json(last.get(k), record.get(k)) for k in ("dataset_file", "audit_file", "counts", "label_error_count")):
            problems.append("the last round is not the record's audit")
    tasks = _tasks(ctx)
    if tasks is not None and "duplicate_count" in record and not equal_json(record["duplicate_count"], audit.duplicate_count(tasks)):
        problems.append(f"duplicate_count {short(record['duplicate_count'])} is not what the candidates give")
    if "disagreements" in record and not equal_json(record.get("label_error_count"), len(as_list(record.get("disagreements")))):
        problems.append("disagreements do not list the label errors")
    if "sample_size" in record and not equal_json(record.get("sample_size"), len(as_list(record.get("samples")))):
        problems.append("sample_size is not the number of samples")
    return [Issue("GA-11", INVALID, problem) for problem in problems]


def _candidate_problems(tasks: list[dict[str, Any]]) -> list[str]:
    """GA-3 on one candidates file (the record's, and every round's in GA-11): unique item_ids, every candidate with
    its item_id and prompt, and an answer unless its program failed (execution_error)."""
    problems = []
    ids = [str(t.get("item_id")) for t in tasks]
    if len(set(ids)) != len(ids):
        problems.append("candidate item_ids are not unique")
    incomplete = [t.get("item_id") for t in tasks if not all(
        isinstance(t.get(k), str) and t[k] for k in ("item_id", "prompt", *(("answer",) if t.get("disposition") in (
            "accepted", "rejected") else ())))]
    if incomplete:
        problems.append(f"{len(incomplete)} candidate(s) lack an item_id, prompt or answer")
    return problems


def _rebuilt_round(ctx: GradeContext, number: int, entry: dict[str, Any], retained: dict[str, Any],
                   tasks: list[dict[str, Any]], evaluation: list[dict[str, Any]]) -> dict[str, Any]:
    """The audit file round `number` must be, rebuilt with the run's own functions
    (experiment.stats.generation_audit.build_report, validate) from what the grader cannot recompute: the
    round's candidates, the evaluation set, and the re-solver's answers and reasoning for the samples the
    round's seed selects (the record's seed, one less per earlier round); the independence record is the
    record's, `rounds` the record's rounds up to this one."""
    audit, record = records, _record(ctx)
    spec_audit = as_dict((ctx.spec or {}).get("generation_audit"))
    rounds = as_list(record.get("rounds"))
    seed = record.get("sample_seed")
    seed = seed - (len(rounds) - number) if is_integer(seed) else seed
    samples = [as_dict(s) for s in as_list(retained.get("samples"))]
    resolved = {str(s.get("item_id")): {"independent_answer": s.get("independent_answer"), "reasoning": s.get("reasoning")}
                for s in samples}
    report = audit.build_report(tasks=tasks, evaluation=evaluation, resolved=resolved,
                                resolver_id=samples[0].get("resolver_id") if samples else None, spec_audit=spec_audit,
                                seed=seed, dataset_file=entry.get("dataset_file"),
                                evaluation_file=record.get("evaluation_file"), audit_file=entry.get("audit_file"))
    validation = audit.validate(report, spec_audit, tasks, evaluation, require_comparison=True)
    report.update({key: record.get(key) for key in ("resolver", "compared_identities", "resolver_independent",
                                                    "resolver_independence_problems") if key in record})
    report.update(round=number, status=validation.status, validation_reasons=validation.reasons,
                  rounds=rounds[:number])
    return report


@implements("GA-11")
def GA_11_files(ctx: GradeContext) -> list[Issue]:
    """GA-11, every round's audit file field by field *(project reading)*: each round (the last included) is held
    to the checks of the record's audit (GA-3 on its candidates, GA-5 its sample from its seed, GA-8 its label
    errors and overlaps) by rebuilding its file with the run's own functions from its candidates, the evaluation
    set and its re-solves (see `_rebuilt_round`), and every field of the retained file must be the rebuilt one's;
    each round entry is its file's summary."""
    record = _record(ctx)
    evaluation = _evaluation(ctx)
    issues = []
    for number, entry in enumerate((as_dict(r) for r in as_list(record.get("rounds"))), 1):
        tasks = ctx.evidence.jsonl(entry.get("dataset_file"))
        retained = ctx.evidence.json(entry.get("audit_file"))
        if tasks is None or evaluation is None or not isinstance(retained, dict):
            continue  # GA-11 says the round's files are not retained
        where = f"round {number} ({short(entry.get('audit_file'))})"
        issues += [Issue("GA-11", INVALID, f"{where}: {problem}") for problem in _candidate_problems(tasks)]
        try:
            rebuilt = _rebuilt_round(ctx, number, entry, retained, tasks, evaluation)
        except KeyError:
            issues.append(Issue("GA-11", INVALID, f"{where}: its samples are not the candidates its seed selects"))
            continue
        wrong = sorted(key for key in set(rebuilt) | set(retained)
                       if key not in rebuilt or key not in retained or _json(retained[key]) != _json(rebuilt[key]))
        if wrong:
            issues.append(Issue("GA-11", INVALID, f"{where}: {', '.join(wrong)} are not what its candidates, the "
                                                  "evaluation set and its re-solves give"))
        summary = {k: rebuilt[k] for k in ("round", "dataset_file", "audit_file", "counts", "sample_size",
                                            "label_error_count", "overlap_count", "status")}
        if not equal_json(entry, summary):
            issues.append(Issue("GA-11", INVALID, f"round {number}: the record's round entry is not its audit file's "
                                                  f"summary ({', '.join(k for k in summary if not equal_json(entry.get(k), summary[k])) or 'keys'})"))
    return issues


def _json(value: Any) -> str:
    """A JSON value written canonically: equal texts are the same value (true is not 1, 1 is not 1.0)."""
    return json.dumps(value, sort_keys=True)


CHECKS = [GA_2, GA_3, GA_3_evaluation_set, GA_4, GA_4_filter, GA_5, GA_6, GA_6_independent_resolver, GA_7, GA_8, GA_9,
          GA_9_order, GA_10, GA_11, GA_11_files]


@rule("GA-1", "generation_audit", "unknown", "the audit applies when generated training data is used (applicability unknown: unknown)")
def grade(ctx: GradeContext) -> CategoryGrade:
    if not isinstance(ctx.result.get("generation_audit"), (dict, type(None))):
        return CategoryGrade(NAME, INVALID, GA_2(ctx))  # a record that is no object is only that, applicable or not
    applicable, why = applicability(ctx.spec)
    if applicable is False:
        if _record(ctx):
            return run_checks(NAME, CHECKS, ctx)  # an audit that was run anyway is still graded
        return CategoryGrade(NAME, NOT_APPLICABLE, notes=[why])
    if applicable is None:
        return CategoryGrade(NAME, UNKNOWN, [Issue("GA-1", UNKNOWN, why)])
    if not _record(ctx):
        return CategoryGrade(NAME, UNKNOWN, GA_2(ctx))
    return run_checks(NAME, CHECKS, ctx)
