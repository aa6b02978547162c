"""The generation audit's record functions (contract §10, GA-3..GA-8): pure definitions on the frozen candidates
and evaluation files, with no SDK. The audit run (experiment.selfgen.generation_audit) builds its record with
them and the grader (experiment.grading.generation_audit) checks a record with them: both read the contract's
definitions from here, and the grader imports no pipeline code.

- dispositions `accepted | rejected | execution_error`; `counts_of` the candidates file;
- the sample: `min(accepted, min_sample_size or 100)` accepted tasks sorted by sha256(json.dumps([seed, item_id]));
- answers compared by the spec's strategy (`numeric_exact`: strict scalar numbers, zero tolerance;
  `categorical_exact`: exact, case-sensitive);
- overlap: NFKC + casefold + whitespace-normalised exact prompt match against the full held-out set;
- `build_report` the record, `validate` every number of it re-derived.
"""

from __future__ import annotations

import hashlib
import json
import re
import unicodedata
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any

from experiment.data import TaskItem

ACCEPTED, REJECTED, EXECUTION_ERROR = "accepted", "rejected", "execution_error"
DISPOSITIONS = (ACCEPTED, REJECTED, EXECUTION_ERROR)
SUPPORTED_STRATEGIES = ("numeric_exact", "categorical_exact")
DEFAULT_SAMPLE_SIZE = 100


class UnsupportedComparison(ValueError):
    """The spec's answer_comparison is missing or not one this audit implements."""


def normalize_prompt(text: str) -> str:
    """NFKC, casefold, whitespace runs collapsed to one space (the GA-8 overlap rule)."""
    return " ".join(unicodedata.normalize("NFKC", text).casefold().split())


def _evaluation_rows(evaluation: Iterable[Any]) -> list[tuple[str, str]]:
    rows = []
    for item in evaluation:
        if isinstance(item, TaskItem):
            rows.append((item.id, item.question))
        else:
            rows.append((str(item["item_id"]), str(item["prompt"])))
    return rows


# ---- the helpers the contract names ----

def sample_key(seed: int, item_id: str) -> str:
    return hashlib.sha256(json.dumps([seed, item_id]).encode()).hexdigest()


def select_sample(tasks: Sequence[dict[str, Any]], size: int, seed: int) -> list[dict[str, Any]]:
    """The first `size` accepted tasks sorted by sha256(json.dumps([seed, item_id]))."""
    accepted = [task for task in tasks if task.get("disposition", ACCEPTED) == ACCEPTED]
    return sorted(accepted, key=lambda task: sample_key(seed, str(task["item_id"])))[:size]


def sample_size(accepted: int, spec_audit: dict[str, Any]) -> int:
    return min(accepted, int(spec_audit.get("min_sample_size") or DEFAULT_SAMPLE_SIZE))


_INTEGER = re.compile(r"[+-]?\d+")
_DECIMAL = re.compile(r"[+-]?\d+\.\d+")
_FRACTION = re.compile(r"([+-]?\d+)/(\d+)")


def strict_number(text: Any) -> Fraction | None:
    """A strict scalar: integer, decimal or fraction (surrounding whitespace only). Else None."""
    if isinstance(text, bool) or text is None:
        return None
    if isinstance(text, int):
        return Fraction(text)
    value = str(text).strip()
    if _INTEGER.fullmatch(value) or _DECIMAL.fullmatch(value):
        return Fraction(value)
    match = _FRACTION.fullmatch(value)
    if match and int(match.group(2)) != 0:
        return Fraction(int(match.group(1)), int(match.group(2)))
    return None


def answer_agreement(label: Any, independent_answer: Any, strategy: str) -> bool:
    """Whether the independent answer equals the label under the declared strategy."""
    if strategy == "numeric_exact":
        expected, found = strict_number(label), strict_number(independent_answer)
        return expected is not None and found is not None and expected == found
    if strategy == "categorical_exact":
        return isinstance(label, str) and label != "" and isinstance(independent_answer, str) and label == independent_answer
    raise UnsupportedComparison(f"answer_comparison {strategy!r} is not supported (use one of {SUPPORTED_STRATEGIES})")


def evaluation_overlap(tasks: Sequence[dict[str, Any]], evaluation: Iterable[Any]) -> list[dict[str, str]]:
    """Accepted tasks whose normalized prompt equals a held-out prompt: [{item_id, evaluation_item_id}]."""
    index: dict[str, str] = {}
    for item_id, prompt in _evaluation_rows(evaluation):
        index.setdefault(normalize_prompt(prompt), item_id)
    overlaps = []
    for task in tasks:
        if task.get("disposition") != ACCEPTED or task.get("prompt") is None:
            continue
        match = index.get(normalize_prompt(task["prompt"]))
        if match is not None:
            overlaps.append({"item_id": str(task["item_id"]), "evaluation_item_id": match})
    return overlaps


def duplicate_count(tasks: Sequence[dict[str, Any]]) -> int:
    """Accepted tasks whose normalized prompt repeats an earlier accepted task's."""
    seen, duplicates = set(), 0
    for task in tasks:
        if task.get("disposition") == ACCEPTED:
            key = normalize_prompt(task["prompt"])
            duplicates += key in seen
            seen.add(key)
    return duplicates


def counts_of(tasks: Sequence[dict[str, Any]]) -> dict[str, int]:
    dispositions = [task.get("disposition") for task in tasks]
    return {"generated": len(dispositions), "accepted": dispositions.count("accepted"),
            "rejected": dispositions.count("rejected"), "execution_errors": dispositions.count("execution_error")}


# ---- the record and its validation ----

def build_report(*, tasks: Sequence[dict[str, Any]], evaluation: Sequence[Any], resolved: dict[str, dict[str, Any]],
                 resolver_id: str, spec_audit: dict[str, Any], seed: int, dataset_file: str, evaluation_file: str,
                 audit_file: str) -> dict[str, Any]:
    """The `generation_audit` record (GA-2) for the current candidates and the re-solves of its sample."""
    strategy = spec_audit.get("answer_comparison")
    counts = counts_of(tasks)
    sample = select_sample(tasks, sample_size(counts["accepted"], spec_audit), seed)
    samples, disagreements = [], []
    for task in sample:
        solved = resolved[str(task["item_id"])]
        agrees = answer_agreement(task["answer"], solved["independent_answer"], strategy)
        if not agrees:
            disagreements.append({"item_id": str(task["item_id"]), "label": task["answer"],
                                  "independent_answer": solved["independent_answer"]})
        samples.append({
            "item_id": str(task["item_id"]), "independent_answer": solved["independent_answer"],
            "resolver_id": resolver_id, "method": "independent_resolve", "reasoning": solved["reasoning"],
            "blind_to_label": True, "label": task["answer"], "agrees": agrees,
        })
    overlaps = evaluation_overlap(tasks, evaluation)
    return {
        "version": 1, "stage": "before_training",
        "dataset_file": dataset_file, "evaluation_file": evaluation_file, "audit_file": audit_file,
        "sample_seed": seed, "counts": counts, "samples": samples,
        "label_error_count": len(disagreements), "overlap_count": len(overlaps),
        "answer_comparison": strategy, "sample_size": len(samples),
        "disagreements": disagreements, "overlaps": overlaps, "duplicate_count": duplicate_count(tasks),
        "note": "agreement with an independent solver does not establish semantic truth; the overlap check "
                "is exact after NFKC/casefold/whitespace normalization and does not detect paraphrases",
    }


@dataclass
class AuditValidation:
    status: str  # "passed" | "failed"
    reasons: list[str] = field(default_factory=list)

    @property
    def passed(self) -> bool:
        return self.status == "passed"


def validate(report: dict[str, Any], spec_audit: dict[str, Any], tasks: Sequence[dict[str, Any]],
             evaluation: Sequence[Any], require_comparison: bool = True) -> AuditValidation:
    """Re-derive every number of the record from the tasks and the evaluation set; passed or failed."""
    reasons: list[str] = []
    if not isinstance(report, dict) or report.get("version") != 1 or report.get("stage") != "before_training":
        return AuditValidation("failed", ["the record is not a version-1 before_training generation_audit"])
    for key in ("dataset_file", "evaluation_file", "audit_file"):
        if not isinstance(report.get(key), str) or not report[key]:
            reasons.append(f"{key} is not a file name")
    seed = report.get("sample_seed")
    if isinstance(seed, bool) or not isinstance(seed, int):
        return AuditValidation("failed", reasons + ["sample_seed is not an integer"])
    strategy = spec_audit.get("answer_comparison")
    if strategy not in SUPPORTED_STRATEGIES:
        if require_comparison:
            return AuditValidation("failed", reasons + [f"answer_comparison {strategy!r} is missing or unsupported: unverified"])
        strategy = None
    counts = counts_of(tasks)
    if report.get("counts") != counts:
        reasons.append(f"counts {report.get('counts')} are not the candidates' {counts}")
    if counts["accepted"] == 0:
        reasons.append("no accepted task to audit")
    expected_ids = [str(t["item_id"]) for t in select_sample(tasks, sample_size(counts["accepted"], spec_audit), seed)]
    samples = report.get("samples") if isinstance(report.get("samples"), list) else []
    sampled_ids = [str(s.get("item_id")) for s in samples if isinstance(s, dict)]
    if sampled_ids != expected_ids:
        reasons.append(f"the {len(sampled_ids)} sampled ids are not the {len(expected_ids)} selected by "
                       "sha256(json.dumps([seed, item_id]))")
    labels = {str(t["item_id"]): t.get("answer") for t in tasks}
    errors = 0
    for sample in samples:
        if not isinstance(sample, dict):
            reasons.append("a sample is not an object")
            continue
        if (sample.get("method") != "independent_resolve" or sample.get("blind_to_label") is not True
                or not sample.get("resolver_id") or not isinstance(sample.get("reasoning"), str)):
            reasons.append(f"sample {sample.get('item_id')}: needs method independent_resolve, blind_to_label "
                           "true, a resolver_id and the worked solution")
        if strategy is not None:
            errors += not answer_agreement(labels.get(str(sample.get("item_id"))), sample.get("independent_answer"), strategy)
    if strategy is not None and report.get("label_error_count") != errors:
        reasons.append(f"label_error_count {report.get('label_error_count')} but the samples give {errors}")
    overlaps = len(evaluation_overlap(tasks, evaluation))
    if report.get("overlap_count") != overlaps:
        reasons.append(f"overlap_count {report.get('overlap_count')} but the evaluation set gives {overlaps}")
    max_errors = int(spec_audit.get("max_label_errors", 0))
    max_overlaps = int(spec_audit.get("max_eval_overlaps", 0))
    if errors > max_errors:
        reasons.append(f"{errors} label errors in {len(samples)} re-solved samples (max {max_errors})")
    if overlaps > max_overlaps:
        reasons.append(f"{overlaps} accepted tasks overlap the evaluation set (max {max_overlaps})")
    return AuditValidation("failed" if reasons else "passed", reasons)
