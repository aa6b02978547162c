"""Measurements for the correctness preflight record (contract section 4).

Everything here is float64 numpy and measures; nothing decides on its own except
``accepts``, which applies the spec's tolerances to measured errors.

* ``parity_errors(actual, reference)``: the four error numbers of one check.
* ``accepts(errors, tolerance)``: max_abs_error <= atol + rtol * reference_max_abs,
  and cosine_similarity >= min_cosine when the tolerance gives one.
* ``lr_scaling_errors(probes)``: relative change of update_norm / learning_rate
  against the first probe.
* ``importance_sampling_loss_and_grad``: the documented Tinker importance-sampling
  loss -(exp(lp - lp_sampled) * A).sum() and its gradient w.r.t. lp.
* ``file_sha256`` and ``revision_pins``: what the run pins when the spec's
  revisions are UNRESOLVED.
"""

from __future__ import annotations

import hashlib
import importlib.metadata
import math
from pathlib import Path

import numpy as np


def _as_float64_vector(values, name: str) -> np.ndarray:
    array = np.asarray(values, dtype=np.float64).reshape(-1)
    if array.size == 0:
        raise ValueError(f"{name} is empty")
    if not np.all(np.isfinite(array)):
        raise ValueError(f"{name} contains a non-finite value")
    return array


def parity_errors(actual, reference) -> dict[str, float]:
    """Errors of ``actual`` against ``reference`` (any shapes with equal size; flattened).

    - max_abs_error = max |actual - reference|
    - reference_max_abs = max |reference|
    - relative_l2_error = ||actual - reference|| / ||reference||; when ||reference|| is
      0 it is 0.0 if actual is also all zeros, else ``math.inf``
    - cosine_similarity = <actual, reference> / (||actual|| ||reference||); 1.0 when both
      norms are 0, 0.0 when exactly one is 0
    """
    actual = _as_float64_vector(actual, "actual")
    reference = _as_float64_vector(reference, "reference")
    if actual.shape != reference.shape:
        raise ValueError(f"actual has {actual.size} values, reference {reference.size}")
    difference = actual - reference
    reference_norm = float(np.linalg.norm(reference))
    actual_norm = float(np.linalg.norm(actual))
    difference_norm = float(np.linalg.norm(difference))
    if reference_norm > 0:
        relative_l2 = difference_norm / reference_norm
    else:
        relative_l2 = 0.0 if difference_norm == 0 else math.inf
    if reference_norm > 0 and actual_norm > 0:
        # dot / sqrt(|a|^2 |r|^2) is exactly 1 for identical vectors; clip rounding.
        cosine = float(np.dot(actual, reference)) / math.sqrt(
            float(np.dot(actual, actual)) * float(np.dot(reference, reference)))
        cosine = min(1.0, max(-1.0, cosine))
    elif reference_norm == 0 and actual_norm == 0:
        cosine = 1.0
    else:
        cosine = 0.0
    return {
        "max_abs_error": float(np.max(np.abs(difference))),
        "reference_max_abs": float(np.max(np.abs(reference))),
        "relative_l2_error": relative_l2,
        "cosine_similarity": cosine,
    }


def accepts(errors: dict, tolerance: dict) -> tuple[bool, str]:
    """Apply one spec tolerance ({"atol", "rtol"[, "min_cosine"]}) to measured errors."""
    atol = float(tolerance.get("atol", 0.0))
    rtol = float(tolerance.get("rtol", 0.0))
    allowed = atol + rtol * errors["reference_max_abs"]
    if not errors["max_abs_error"] <= allowed:
        return False, (f"max_abs_error {errors['max_abs_error']:.3e} exceeds "
                       f"atol + rtol * reference_max_abs = {allowed:.3e}")
    if tolerance.get("min_cosine") is not None:
        min_cosine = float(tolerance["min_cosine"])
        if not errors["cosine_similarity"] >= min_cosine:
            return False, (f"cosine_similarity {errors['cosine_similarity']:.9f} is below "
                           f"min_cosine {min_cosine}")
    return True, f"max_abs_error {errors['max_abs_error']:.3e} <= {allowed:.3e}"


def check_tolerances(errors: dict, tolerances: dict) -> tuple[bool, list[str]]:
    """Every tolerance of a spec path against its measured errors: (all accepted, one reason each).

    A tolerance with no measurement blocks like a failed check (contract section 4)."""
    passed, reasons = True, []
    for key, tolerance in tolerances.items():
        if key not in errors:
            passed = False
            reasons.append(f"{key}: no measurement for this check (a missing check blocks like a failed one)")
            continue
        ok, why = accepts(errors[key], tolerance)
        passed &= ok
        reasons.append(f"{key}: {why}")
    return passed, reasons


def lr_scaling_errors(probes: list[dict]) -> list[float]:
    """Relative change of update_norm / learning_rate against the first probe.

    ``probes`` are dicts with ``learning_rate`` and ``update_norm``, each measured
    from a reset state.  The first entry of the result is always 0.0.
    """
    if not probes:
        raise ValueError("no LR probes given")
    ratios = []
    for probe in probes:
        learning_rate = float(probe["learning_rate"])
        update_norm = float(probe["update_norm"])
        if not (learning_rate > 0 and math.isfinite(learning_rate)):
            raise ValueError(f"learning_rate must be positive and finite, got {learning_rate}")
        if not math.isfinite(update_norm):
            raise ValueError("update_norm is not finite")
        ratios.append(update_norm / learning_rate)
    if ratios[0] == 0:
        raise ValueError("the first probe's update_norm is 0: no scale to compare against")
    return [(ratio - ratios[0]) / ratios[0] for ratio in ratios]


def importance_sampling_loss_and_grad(
    logprobs, sampling_logprobs, advantages, mask=None
) -> tuple[float, np.ndarray]:
    """Tinker's importance-sampling loss and its gradient w.r.t. ``logprobs``, float64.

    loss = -sum(mask * exp(logprobs - sampling_logprobs) * advantages)
    d loss / d logprobs = -mask * exp(logprobs - sampling_logprobs) * advantages

    A sum over tokens, no normalisation.  All inputs have one shape (e.g. the
    per-token arrays of one datum, or all datums concatenated); ``mask`` (default:
    all ones) selects the counted tokens.
    """
    logprobs = np.asarray(logprobs, dtype=np.float64)
    sampling_logprobs = np.asarray(sampling_logprobs, dtype=np.float64)
    advantages = np.asarray(advantages, dtype=np.float64)
    mask = np.ones_like(logprobs) if mask is None else np.asarray(mask, dtype=np.float64)
    if not (logprobs.shape == sampling_logprobs.shape == advantages.shape == mask.shape):
        raise ValueError("logprobs, sampling_logprobs, advantages and mask differ in shape")
    for name, values in (("logprobs", logprobs), ("sampling_logprobs", sampling_logprobs),
                         ("advantages", advantages), ("mask", mask)):
        if not np.all(np.isfinite(values)):
            raise ValueError(f"{name} contains a non-finite value")
    ratio = np.exp(logprobs - sampling_logprobs)
    gradient = -mask * ratio * advantages
    return float(gradient.sum()), gradient


def file_sha256(path) -> str:
    """sha256 hex digest of a file's bytes."""
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def revision_pins(files=(), packages=("tinker", "tinker-cookbook")) -> dict:
    """Installed versions of ``packages`` and sha256 of ``files``, for the record.

    Returns {"packages": {name: version}, "files": {path as given: sha256}}.
    A package that is not installed raises ``importlib.metadata.PackageNotFoundError``.
    """
    return {
        "packages": {name: importlib.metadata.version(name) for name in packages},
        "files": {Path(path).as_posix(): file_sha256(path) for path in files},
    }
