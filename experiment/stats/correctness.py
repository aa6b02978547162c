"""Measurements for the correctness preflight record (CORR-1..CORR-9).

Everything here is float64 numpy and measures; nothing decides on its own except
``accepts``, which applies the spec's tolerances to measured errors.

* ``parity_errors(actual, reference)``: the four error numbers of one check.
* ``accepts(errors, tolerance)``: max_abs_error <= atol + rtol * reference_max_abs,
  and cosine_similarity >= min_cosine when the tolerance gives one.
* ``lr_scaling_errors(probes)``: relative change of update_norm / learning_rate
  against the first probe.
* ``importance_sampling_loss_and_grad``: the documented Tinker importance-sampling
  loss -(exp(lp - lp_sampled) * A).sum() and its gradient w.r.t. lp.
* ``file_sha256`` and ``revision_pins``: hashes and versions a pin is made of.
* ``pinned_revisions(spec)`` / ``revision_status``: the revisions the spec, or its recorded
  revision file, pins per path, and whether the reported ones match them. The run never
  pins them itself: while a revision is UNRESOLVED the check stays unverified and the run
  requests a spec revision (CORR-6).
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

    A tolerance with no measurement blocks like a failed check (CORR-2)."""
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
        if update_norm < 0:
            raise ValueError(f"update_norm is a norm, never negative, got {update_norm}")
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


# ---- revision pins (CORR-6) ----

REVISION_KEYS = ("baseline_revision", "reference_revision")
# A recorded spec revision (specs/<name>.plan.json) may pin the revisions a spec leaves UNRESOLVED
# under this key, either {"<path id>": {"baseline_revision": ..., "reference_revision": ...}} or
# {"paths": [{"id": "<path id>", "baseline_revision": ..., "reference_revision": ...}]}.
REVISION_FILE_KEY = "correctness_revisions"


def is_pinned(value) -> bool:
    """A revision is pinned when it is a non-empty string that does not say UNRESOLVED."""
    return isinstance(value, str) and bool(value.strip()) and "UNRESOLVED" not in value.upper()


def _revision_file_paths(spec: dict) -> dict[str, dict]:
    section = spec.get(REVISION_FILE_KEY)
    if not isinstance(section, dict):
        return {}
    if isinstance(section.get("paths"), list):
        return {str(path.get("id")): path for path in section["paths"] if isinstance(path, dict)}
    return {str(key): value for key, value in section.items() if isinstance(value, dict)}


def pinned_revisions(spec: dict, revision_supplied=()) -> dict[str, dict[str, dict]]:
    """path id -> revision key -> {"pinned": str | None, "source": str | None, "spec_text": str | None}.

    `spec` is the merged spec (spec file + recorded revision file); `revision_supplied` the
    top-level keys the revision file supplied (so a pin can be attributed to it). A pin in the
    spec's own `correctness_preflight.paths[]` wins; else the revision file's `correctness_revisions`.
    `pinned` is None while the revision is UNRESOLVED everywhere."""
    supplied = set(revision_supplied or ())
    section = spec.get("correctness_preflight") if isinstance(spec.get("correctness_preflight"), dict) else {}
    spec_source = "spec revision file" if "correctness_preflight" in supplied else "spec"
    revision_paths = _revision_file_paths(spec)
    pins: dict[str, dict[str, dict]] = {}
    for path in section.get("paths", []) or []:
        if not isinstance(path, dict):
            continue
        path_id = str(path.get("id"))
        entry = {}
        for key in REVISION_KEYS:
            text = path.get(key)
            override = (revision_paths.get(path_id) or {}).get(key)
            if is_pinned(text):
                entry[key] = {"pinned": text, "source": spec_source, "spec_text": text}
            elif is_pinned(override):
                entry[key] = {"pinned": override, "source": f"spec revision file ({REVISION_FILE_KEY})", "spec_text": text}
            else:
                entry[key] = {"pinned": None, "source": None, "spec_text": text}
        pins[path_id] = entry
    return pins


def unresolved_revisions(pins: dict[str, dict[str, dict]]) -> list[tuple[str, str]]:
    """(path id, revision key) of every revision pinned nowhere."""
    return [(path_id, key) for path_id, entry in pins.items() for key, pin in entry.items() if pin["pinned"] is None]


def revision_status(pins_for_path: dict[str, dict], reported: dict[str, str]) -> dict[str, dict]:
    """Per revision key: the pin, the revision the run measured against, and
    `status` in matches | differs | unresolved (nothing pinned: the check stays unverified)."""
    status = {}
    for key in REVISION_KEYS:
        pin = pins_for_path.get(key) or {"pinned": None, "source": None}
        value = reported.get(key)
        if pin["pinned"] is None:
            state = "unresolved"
        else:
            state = "matches" if value == pin["pinned"] else "differs"
        status[key] = {"pinned": pin["pinned"], "source": pin["source"], "reported": value, "status": state}
    return status
