"""Evaluator provenance, evaluator id, prediction rows and the evaluation record
(EVAL-1..EVAL-10, the parts that need no model).

The evaluator is frozen before anything is scored: its provenance is

    {"code_sha256": <sha256 of the evaluator's code files>,
     "prompt_template": <str>,
     "decoding": {"temperature", "max_tokens", "stop": [str, ...], ...},
     "parser": <str>,
     "items": {"ids": [<explicit item id strings>]}}

and its id is the sha256 of that object as canonical JSON (``evaluator_id``).  The
provenance never contains an arm or a checkpoint: the scored model stays separate
from the evaluator's identity.

``code_sha256``: the files are sorted by name (see ``code_files_sha256``); for each
one the line "<sha256 of its bytes>  <name>\\n" is written (the format of
``sha256sum``) and the sha256 of all these lines together is the code hash.  The name
is the path relative to ``code_root`` when given, else the file's base name, so the
hash does not depend on where the checkout lives.
"""

from __future__ import annotations

import hashlib
import json
import math
from pathlib import Path

from experiment.stats.decision import Observation


class EvaluationError(ValueError):
    """An evaluator or score that the contract would reject."""


FORBIDDEN_PROVENANCE_KEYS = ("arm", "checkpoint")
BASE_LABEL = "base"  # the untrained base model, scored under this label when the spec has no eval-only arm for it


def canonical_json(value) -> str:
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=True, allow_nan=False)


def code_files_sha256(code_files, code_root=None) -> str:
    """sha256 over a sha256sum-style manifest of the files, sorted by name.

    `code_files` is a list of paths (named as described in the module docstring) or a mapping
    {stable name: path} when the files come from several roots (project, installed packages)."""
    return manifest_sha256(code_files_manifest(code_files, code_root))


def manifest_sha256(named: dict) -> str:
    """The code hash of {name: sha256 of the file's bytes}: the sha256 of its sha256sum lines, sorted by name."""
    manifest = "".join(f"{named[name]}  {name}\n" for name in sorted(named))
    return hashlib.sha256(manifest.encode("utf-8")).hexdigest()


def code_files_manifest(code_files, code_root=None) -> dict:
    """{name: sha256 of its bytes} of the evaluator's code files, named as `code_files_sha256` names them."""
    if not code_files:
        raise EvaluationError("no evaluator code files given")
    named = {}
    if isinstance(code_files, dict):
        for name, path in code_files.items():
            named[str(name)] = hashlib.sha256(Path(path).read_bytes()).hexdigest()
        code_files = []
    for path in code_files:
        path = Path(path)
        name = path.relative_to(code_root).as_posix() if code_root is not None else path.name
        if name in named:
            raise EvaluationError(f"two code files share the name {name!r}; pass code_root")
        named[name] = hashlib.sha256(path.read_bytes()).hexdigest()
    return named


def _checked_item_ids(item_ids) -> list[str]:
    if isinstance(item_ids, str) or not isinstance(item_ids, (list, tuple)):
        raise EvaluationError(
            f"item ids must be an explicit list of strings, got {type(item_ids).__name__} "
            f"{item_ids!r:.80}; list every evaluated item id (a range or manifest is not accepted)")
    if not item_ids:
        raise EvaluationError("item ids list is empty")
    for item_id in item_ids:
        if not isinstance(item_id, str) or not item_id:
            raise EvaluationError(f"item ids must be non-empty strings, got {item_id!r}")
    if len(set(item_ids)) != len(item_ids):
        raise EvaluationError("item ids contain duplicates")
    return list(item_ids)


def _checked_decoding(decoding: dict) -> dict:
    if not isinstance(decoding, dict):
        raise EvaluationError("decoding must be a dict")
    missing = [key for key in ("temperature", "max_tokens", "stop") if key not in decoding]
    if missing:
        raise EvaluationError(f"decoding lacks {', '.join(missing)}")
    stop = decoding["stop"]
    if not isinstance(stop, list) or not all(isinstance(s, str) for s in stop):
        raise EvaluationError("decoding.stop must be a list of stop strings, not prose")
    bad = [key for key in decoding if key in FORBIDDEN_PROVENANCE_KEYS]
    if bad:
        raise EvaluationError(f"decoding must not name the scored model ({', '.join(bad)})")
    canonical_json(decoding)  # raises on NaN / non-JSON values
    return dict(decoding)


def evaluator_provenance(code_files: list, prompt_template: str, decoding: dict, parser: str,
                         item_ids: list[str], code_root=None) -> dict:
    """The frozen evaluator's provenance object (see the module docstring)."""
    if not isinstance(prompt_template, str) or not prompt_template:
        raise EvaluationError("prompt_template must be a non-empty string")
    if not isinstance(parser, str) or not parser:
        raise EvaluationError("parser must be a non-empty string")
    return {
        "code_sha256": code_files_sha256(code_files, code_root),
        "prompt_template": prompt_template,
        "decoding": _checked_decoding(decoding),
        "parser": parser,
        "items": {"ids": _checked_item_ids(item_ids)},
    }


def evaluator_id(provenance: dict) -> str:
    """sha256 hex of the provenance as canonical JSON, exactly as EVAL-2 states it."""
    return hashlib.sha256(canonical_json(provenance).encode()).hexdigest()


def prediction_row(item_id: str, arm: str, prediction, reference: str, correct: bool,
                   evaluator_id: str, seed: int, checkpoint: str | None,
                   metric: str = "accuracy", raw_output: str | None = None,
                   grading: str | None = None, grading_error: str | None = None) -> dict:
    """One predictions-JSONL row.  An invalid or unparsable output stays a row:
    ``prediction`` is then None (``raw_output`` keeps the text) and ``value`` is 0.
    ``grading`` says how the value came about (graded | no_boxed | timeout | grader_error): a
    grading timeout scores 0 but is named in its row, never a silent 0."""
    extra = {}
    if grading is not None:
        extra["grading"] = grading
    if grading_error is not None:
        extra["grading_error"] = grading_error
    return {
        "item_id": item_id,
        "arm": arm,
        "prediction": prediction,
        "reference": reference,
        "metric": metric,
        "value": 1.0 if (correct and prediction is not None) else 0.0,
        "evaluator_id": evaluator_id,
        "seed": seed,
        "checkpoint": checkpoint,
        "raw_output": raw_output,
        **extra,
    }


UNGRADED = ("timeout", "grader_error")


def grading_failures(rows: list[dict]) -> dict[str, list[str]]:
    """Item ids whose grading timed out or crashed, by kind (empty when every item was graded)."""
    failures: dict[str, list[str]] = {}
    for row in rows:
        if row.get("grading") in UNGRADED:
            failures.setdefault(row["grading"], []).append(row["item_id"])
    return failures


def score_rows(rows: list[dict]) -> float:
    """Accuracy: the mean ``value`` of the rows of one arm, seed, metric and evaluator."""
    if not rows:
        raise EvaluationError("no prediction rows to score")
    for key in ("arm", "seed", "metric", "evaluator_id"):
        if len({row[key] for row in rows}) != 1:
            raise EvaluationError(f"rows mix several values of {key}")
    item_ids = [row["item_id"] for row in rows]
    if len(set(item_ids)) != len(item_ids):
        raise EvaluationError("rows contain an item twice")
    return sum(float(row["value"]) for row in rows) / len(rows)


def observations_from_predictions(rows: list[dict]) -> list[Observation]:
    """Decision observations (item_id, arm, seed, metric, value, evaluator_id) from rows."""
    return [Observation(item_id=row["item_id"], arm=row["arm"], seed=row["seed"],
                        metric=row["metric"], value=float(row["value"]),
                        evaluator_id=row["evaluator_id"]) for row in rows]


def score_entry(arm: str, value: float, evaluator_id: str, seed: int, predictions_ref: str,
                metric: str = "accuracy", grading_failures: dict[str, list[str]] | None = None) -> dict:
    """One `scores[]` entry; items whose grading timed out or crashed are named under
    `grading_failures` (they score 0 in `value`, as the contract counts failures)."""
    entry = {"arm": arm, "metric": metric, "value": value, "evaluator_id": evaluator_id,
             "seed": seed, "predictions_ref": predictions_ref}
    if grading_failures:
        entry["grading_failures"] = {kind: list(ids) for kind, ids in grading_failures.items()}
    return entry


def evaluation_record(evaluators: dict, scores: list[dict], comparisons: list[dict]) -> dict:
    """The `evaluation` object (EVAL-1); checks that every id recomputes from its provenance,
    that every score names a known evaluator and has a finite value, and that no
    provenance names an arm or checkpoint."""
    for identifier, provenance in evaluators.items():
        if evaluator_id(provenance) != identifier:
            raise EvaluationError(f"evaluator id {identifier} does not match its provenance")
        text = canonical_json(provenance)
        for key in FORBIDDEN_PROVENANCE_KEYS:
            if f'"{key}":' in text:
                raise EvaluationError(f"evaluator {identifier} provenance contains {key!r}")
        _checked_item_ids(provenance.get("items", {}).get("ids"))
    for score in scores:
        if score.get("evaluator_id") not in evaluators:
            raise EvaluationError(f"score of arm {score.get('arm')!r} names an unknown evaluator")
        value = score.get("value")
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
            raise EvaluationError(f"score of arm {score.get('arm')!r} has no finite value")
    for comparison in comparisons:
        if len(comparison.get("arms", [])) < 2:
            raise EvaluationError("a comparison needs at least two arms")
    return {"version": 1, "evaluators": dict(evaluators), "scores": list(scores),
            "comparisons": list(comparisons)}
