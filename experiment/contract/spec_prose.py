"""What a spec's prose states that a revision file writes as fields: arms, their optimizers and settings, LR grids,
and the margin of the success criterion (read by `--draft-revision`, experiment/contract/draft.py).

The exchange's specs may name no arms (the TriMuon spec: "The treatment arm runs on the fork with TriMuon. The
baseline arm runs dimuon-lite ... Each arm sweeps LR over {5e-5, 1e-4, 2e-4}"). Everything read here is a
proposal the researcher confirms; what the prose does not state stays `UNRESOLVED`.

- the treatment's optimizer is the spec's `optimizer.name` (else the first family the method names that the
  baseline text does not), the baseline's the first other family the baseline text names; a family the method
  names besides these, in a sentence about arms that does not defer them ("follow-up specs, not part of
  this decision"), is one more arm, its role open;
- settings written `name=value` or `name value` (beta1, beta2, eps, weight_decay, grad_clip_norm, momentum) in
  the baseline text are the baseline's, in the method text the treatment's, over the tinker SDK's defaults for
  the family's step (AdamParams, DimuonParams: every setting the update takes is stated); a TriMuon treatment against a
  DiMuon baseline keeps DiMuon's settings (TriMuon "keeps DiMuon's ... rules", and the correctness preflight's
  parity check compares exactly that), and "Polar Express" names DiMuon's polar step;
- an LR grid is a braced or bracketed list of numbers (`{5e-5, 1e-4, 2e-4}`); a sentence that names families
  gives it to their arms, one that names none (or says "each arm") to every arm; an arm whose text says "same
  ... LR grid" takes the other arms' grid;
- the margin: a bound the effect must exceed ("must exceed -0.03", "a lower bound above -0.03"; accuracy),
  "at least X nats" (NLL), "at least X points" or "no more than X points lower" (accuracy in [0, 1]:
  X / 100, negative for a non-inferiority margin).
"""

from __future__ import annotations

import re
from typing import Any

import tinker.types

# family words in prose -> (the family a service reports, the arm's proposed name); longest alternatives first
_FAMILY_WORDS = re.compile(r"\b(trimuon|dimuon[- _]lite|dimuon|adamw|adam|muon|sgd)\b", re.IGNORECASE)
_SETTINGS = re.compile(r"\b(beta1|beta2|eps|weight_decay|grad_clip_norm|momentum)\s*(?:=|:)?\s*"
                       r"(-?\d+(?:\.\d+)?(?:e-?\d+)?)\b", re.IGNORECASE)
_GRID = re.compile(r"[{\[]\s*((?:\d+(?:\.\d+)?(?:e-?\d+)?\s*,\s*)+\d+(?:\.\d+)?(?:e-?\d+)?)\s*[}\]]", re.IGNORECASE)
_ALL_ARMS = re.compile(r"\b(each|every|both) arms?\b|\ball arms\b", re.IGNORECASE)
_SAME_GRID = re.compile(r"\bsame\b[^.]*\bLR grid\b", re.IGNORECASE)
_MARGIN = re.compile(r"\b(at least|no more than|not more than|within)\s+(\d+(?:\.\d+)?)\s*"
                     r"(nats?|percentage points?|points?|pp)\b", re.IGNORECASE)
_ARM_SENTENCE = re.compile(r"\barms?\b", re.IGNORECASE)
_LATER = re.compile(r"follow[- ]up|not part of|out of scope|later spec|future", re.IGNORECASE)
_BOUND = re.compile(r"\b(?:exceeds?|above|greater than)\s+(-?\d+(?:\.\d+)?)(?!\.?\d)(?!\s*(?:nats?|points?|%|pp|percent))",
                    re.IGNORECASE)
_LOWER = re.compile(r"\b(lower|worse|below|drop|less)\b", re.IGNORECASE)


def family_word(word: str) -> tuple[str, str]:
    """(family, arm name) of a family word: 'dimuon-lite' -> ('dimuon', 'dimuon_lite'), 'Adam' -> ('adamw', 'adamw')."""
    lowered = re.sub(r"[- ]", "_", word.lower())
    family = "dimuon" if lowered.startswith("dimuon") else "adamw" if lowered in ("adam", "adamw") else lowered
    return family, "adamw" if family == "adamw" else lowered


def _families(text: str) -> list[tuple[str, str]]:
    """(family, arm name) of every family the text names, in order, each family once."""
    seen: dict[str, str] = {}
    for match in _FAMILY_WORDS.finditer(text):
        family, name = family_word(match.group(1))
        seen.setdefault(family, name)
    return list(seen.items())


def _settings(text: str) -> dict[str, float]:
    return {key.lower(): float(value) for key, value in _SETTINGS.findall(text)}


# The tinker SDK's step parameters of a family: the settings an arm's update takes (AdamParams: beta1, beta2, eps,
# weight_decay, grad_clip_norm), stated in full so the update the restoration check measures is the requested one.
SDK_PARAMS = {"adamw": "AdamParams", "dimuon": "DimuonParams", "trimuon": "DimuonParams"}


def sdk_defaults(family: str) -> dict[str, Any]:
    """The SDK's defaults for a family's step settings (learning rate aside), {} for a family it does not define."""
    params = getattr(tinker.types, SDK_PARAMS.get(family, ""), None)
    fields = getattr(params, "model_fields", {})
    return {name: field.default for name, field in fields.items() if name not in ("learning_rate", "type")
            and isinstance(field.default, (int, float)) and not isinstance(field.default, bool)}


def _sentences(text: str) -> list[str]:
    return [part for part in re.split(r"(?<=[.;])\s+", text) if part.strip()]


def _grids(texts: list[str], names_by_family: dict[str, str]) -> tuple[dict[str, list[float]], list[float] | None]:
    """(grid per arm name the sentences name, the grid stated for every arm or None)."""
    per_arm: dict[str, list[float]] = {}
    common = None
    for sentence in (s for text in texts for s in _sentences(text)):
        match = _GRID.search(sentence)
        if match is None:
            continue
        grid = sorted(float(value) for value in re.split(r"\s*,\s*", match.group(1)))
        named = [names_by_family[f] for f, _ in _families(sentence) if f in names_by_family]
        if _ALL_ARMS.search(sentence) or not named:
            common = common or grid
        else:
            for name in named:
                per_arm.setdefault(name, grid)
    return per_arm, common


def arms_from_text(spec: dict[str, Any]) -> list[dict[str, Any]]:
    """The arms the spec's method and baseline texts describe (the treatment first), each a revision `arms` entry;
    UNRESOLVED where the texts do not say."""
    method, baseline = _text(spec.get("method")), _text(spec.get("baseline"))
    stated = (spec.get("optimizer") or {}).get("name") if isinstance(spec.get("optimizer"), dict) else None
    baseline_families = _families(baseline)
    treatment = family_word(_FAMILY_WORDS.search(stated).group(1)) if stated and _FAMILY_WORDS.search(stated) else None
    if treatment is not None:  # the method's own word for the family names the arm ("dimuon" -> "dimuon-lite")
        treatment = next((f for f in _families(method) if f[0] == treatment[0]), treatment)
    if treatment is None:
        treatment = next((f for f in _families(method) if f[0] not in dict(baseline_families)), None)
    base = next((f for f in baseline_families if treatment is None or f[0] != treatment[0]), None)
    known = {x[0] for x in (treatment, base) if x}
    others = [f for sentence in _sentences(method) if _ARM_SENTENCE.search(sentence) and not _LATER.search(sentence)
              for f in _families(sentence) if f[0] not in known]
    others = list(dict(others).items())
    dataset = spec.get("dataset") if isinstance(spec.get("dataset"), dict) else {}
    data = f"{dataset.get('name') or 'the spec dataset'} train, seed-0 order"
    forked = "fork" in f"{stated} {method}".lower()
    arms = []
    for role, found, text in (("treatment", treatment, method), ("baseline", base, baseline)):
        if found is None:
            arms.append({"name": role, "role": role, "trained": True, "data": data,
                         "optimizer": f"UNRESOLVED: the {role}'s optimizer family (the {role} text names none)"})
            continue
        family, name = found
        config = {**sdk_defaults(family), **_settings(text)}
        if role == "baseline" and family == "dimuon" and re.search(r"polar[- ]express", baseline, re.IGNORECASE):
            config["polar_step"] = "polar_express"
        arms.append({"name": name, "role": role, "trained": True, "data": data,
                     "optimizer": {"family": family, "config": config}})
    if treatment and base and treatment[0] == "trimuon" and base[0] == "dimuon":
        arms[0]["optimizer"]["config"] = {k: v for k, v in arms[1]["optimizer"]["config"].items() if k != "polar_step"}
    for family, name in others:
        arms.append({"name": name, "role": f"UNRESOLVED: the role of {name} (the method names {family} besides the "
                                           "treatment and the baseline)", "trained": True, "data": data,
                     "optimizer": {"family": family, "config": sdk_defaults(family)}})
    if forked:
        for arm in arms:
            arm["service"] = "fork"  # "Run every arm on the fork so the comparison is fair" (the contract's source)
    by_family = {_family(arm): arm["name"] for arm in arms if _family(arm)}
    per_arm, common = _grids([method, baseline], by_family)
    same = bool(_SAME_GRID.search(baseline))
    for arm in arms:
        grid = per_arm.get(arm["name"]) or common or (next(iter(per_arm.values()), None) if same else None)
        if grid:
            arm["lr_grid"] = grid
    return arms


def _family(arm: dict[str, Any]) -> str | None:
    optimizer = arm.get("optimizer")
    return optimizer.get("family") if isinstance(optimizer, dict) else None


def margin_from_text(text: Any, metric: str) -> float | None:
    """The success criterion's margin for `metric` ("nll" or "accuracy"), or None when the text states none."""
    bound = _BOUND.search(_text(text))
    if metric == "accuracy" and bound is not None and abs(float(bound.group(1))) <= 1:
        return float(bound.group(1))  # "must exceed -0.03", "a lower bound above -0.03": the margin itself
    for match in _MARGIN.finditer(_text(text)):
        words, value, unit = match.group(1).lower(), float(match.group(2)), match.group(3).lower()
        if metric == "nll" and unit.startswith("nat"):
            return value
        if metric == "accuracy" and not unit.startswith("nat"):
            points = value / 100
            after = _text(text)[match.end():match.end() + 40]
            if words == "at least" and not _LOWER.search(after):
                return points
            return -points
    return None


def _text(value: Any) -> str:
    return value if isinstance(value, str) else ""
