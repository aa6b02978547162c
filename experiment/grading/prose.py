"""The record's words, held to what they can hide or claim besides the verdict (issue 45: prose that states a verdict,
a number or a scale must match the record). Record level: findings go to `problems` (experiment/grading/general.py
runs CHECKS); the verdict, item count, effects and per-arm numbers are PROSE-1..PROSE-5 (spec_anchor.py).

- PROSE-6 summary and reasoning hide no text: no invisible format character (zero-width space, joiner, soft hyphen,
  a bidirectional override: Unicode category Cf) and no word that mixes Latin letters with letters of another
  script ("ѕupported" with a Cyrillic dze reads "supported" and matches no rule's word).
- PROSE-7 the confidence and the criterion outcomes the prose states are the record's: "confidence is strong|weak"
  names RESULT.confidence, and "effect X meets|misses margin Y" says what X against Y gives.
- PROSE-8 where a `model` deviation replaced the spec's model, the prose names the spec's model only as the one
  replaced ("instead of", "a rehearsal substitute for", "the service does not serve"), never as the one that ran.
- PROSE-9 the method, the selected learning rates and the time units the prose states are the record's: no other
  interval method than the decision's paired Hoeffding bound ("a paired t-test"), "<arm> <nll> (LR x)" and
  "grid-edge LR selected for <arm> (x)" name the arm's selected_lr, and "median optimizer step <arm> <t>s" is in
  seconds (a time written in ms or µs is a thousandfold claim).
"""

from __future__ import annotations

import re
import unicodedata
from typing import Any

from experiment.grading.common import INVALID, GradeContext, Issue
from experiment.grading.registry import rule


def _texts(ctx: GradeContext) -> list[tuple[str, str]]:
    return [(field, ctx.result[field]) for field in ("summary", "reasoning") if isinstance(ctx.result.get(field), str)]


def _script(char: str) -> str:
    """The script word of a letter's Unicode name (LATIN, CYRILLIC, GREEK, FULLWIDTH, ...); the micro sign of a unit
    ("µs") counts as Latin."""
    script = unicodedata.name(char, "UNKNOWN").split(" ")[0]
    return "LATIN" if script == "MICRO" else script


@rule("PROSE-6", "record", "invalid", "summary and reasoning hide no text: no invisible format character, no word mixing Latin with another script")
def PROSE_6(ctx: GradeContext) -> list[Issue]:
    """Summary and reasoning hide no text: no invisible format character (category Cf) and no word that mixes Latin
    letters with letters of another script."""
    found = []
    for field, text in _texts(ctx):
        hidden = sorted({f"U+{ord(c):04X}" for c in text if unicodedata.category(c) == "Cf"})
        if hidden:
            found.append(f"{field} holds invisible character(s) {', '.join(hidden)}")
        mixed = [word for word in re.findall(r"\w+", text)
                 if len({_script(c) for c in word if c.isalpha()} | {"LATIN"}) > 1
                 and any(_script(c) == "LATIN" for c in word if c.isalpha())]
        if mixed:
            found.append(f"{field} mixes scripts in {', '.join(repr(w) for w in mixed[:3])}")
    return [Issue("PROSE-6", INVALID, f"the prose hides text: {'; '.join(found)}")] if found else []


_CONFIDENCE = re.compile(r"\bconfidence (?:is|was|stays|remains) (strong|weak)\b", re.I)
_NUMBER = r"([+\-\u2212]?\d+(?:\.\d+)?(?:e[+\-]?\d+)?)"
_OUTCOME = re.compile(r"\beffect " + _NUMBER + r" (meets|clears|exceeds|passes|misses|fails|falls short of) "
                      r"(?:the |its )?margin " + _NUMBER, re.I)
_MEETS = ("meets", "clears", "exceeds", "passes")


def _number(text: str) -> float:
    return float(text.replace("\u2212", "-"))


@rule("PROSE-7", "record", "invalid", "the confidence and the criterion outcomes the prose states are the record's")
def PROSE_7(ctx: GradeContext) -> list[Issue]:
    """"Confidence is strong|weak" names RESULT.confidence (a record without one states none), and "effect X
    meets|misses margin Y" says what X against Y gives."""
    confidence: Any = ctx.result.get("confidence")
    wrong = []
    for field, text in _texts(ctx):
        for match in _CONFIDENCE.finditer(text):
            if match.group(1).lower() != confidence:
                wrong.append(f"{field} says confidence {match.group(1).lower()} (the record: {confidence})")
        for match in _OUTCOME.finditer(text):
            effect, margin = _number(match.group(1)), _number(match.group(3))
            meets = match.group(2).lower() in _MEETS
            if (meets and effect < margin) or (not meets and effect > margin):
                wrong.append(f"{field} says effect {match.group(1)} {match.group(2).lower()} margin {match.group(3)}")
    return [Issue("PROSE-7", INVALID, f"the prose states another outcome than the record: {'; '.join(wrong[:4])}")] \
        if wrong else []


_REPLACED = ("instead of ", "substitute for ", "does not serve ", "in place of ")


@rule("PROSE-8", "record", "invalid", "the prose names a replaced spec model only as the one replaced, never as the one that ran")
def PROSE_8(ctx: GradeContext) -> list[Issue]:
    """Where a `model` deviation replaced the spec's model, every mention of it in the prose says it was replaced."""
    wrong = []
    for deviation in ctx.result.get("deviations") or []:
        if not isinstance(deviation, dict) or deviation.get("field") != "model":
            continue
        original, effective = deviation.get("original"), deviation.get("effective")
        if not isinstance(original, str) or not original or original == effective:
            continue
        for field, text in _texts(ctx):
            for match in re.finditer(re.escape(original), text):
                if not text[: match.start()].endswith(_REPLACED):
                    wrong.append(f"{field} names {original} as the model (it ran {effective})")
                    break
    return [Issue("PROSE-8", INVALID, f"the prose claims the spec's model: {'; '.join(wrong)}")] if wrong else []


_OTHER_METHODS = re.compile(r"\b(t-test|t test|bootstrap\w*|wilcoxon|mann-whitney|permutation test|z-test|"
                            r"clopper-pearson|wilson (?:score )?interval|bernstein|bayes\w*|normal approximation)\b", re.I)
_SELECTED_LR = (re.compile(r"\b([\w.-]+) [+\-]?\d+(?:\.\d+)? \(LR " + _NUMBER + r"\)"),
                re.compile(r"\bgrid-edge LR selected for ([\w.-]+) \(" + _NUMBER + r"\)"))
_STEP_TIME = re.compile(r"\bmedian optimizer step ((?:[\w.-]+ \d+(?:\.\d+)?(?:e[+\-]?\d+)?\s*[µu]?m?s\b,? ?)+)", re.I)


@rule("PROSE-9", "record", "invalid", "the method, the selected learning rates and the time units the prose states are the record's")
def PROSE_9(ctx: GradeContext) -> list[Issue]:
    """No interval method other than the decision's; an arm's selected LR as the record's selected_lr; optimizer-step
    times in seconds."""
    method = (ctx.result.get("decision") or {}).get("method") if isinstance(ctx.result.get("decision"), dict) else None
    arms = (ctx.result.get("metrics") or {}).get("arms") if isinstance(ctx.result.get("metrics"), dict) else None
    arms = arms if isinstance(arms, dict) else {}
    wrong = []
    for field, text in _texts(ctx):
        other = _OTHER_METHODS.search(text) if method == "paired_hoeffding" else None
        if other:
            wrong.append(f"{field} names {other.group(0)!r}, the decision used the paired Hoeffding bound")
        for pattern in _SELECTED_LR:
            for match in pattern.finditer(text):
                entry = arms.get(match.group(1))
                selected = entry.get("selected_lr") if isinstance(entry, dict) else None
                if isinstance(selected, (int, float)) and not isinstance(selected, bool) \
                        and abs(_number(match.group(2)) - selected) > 1e-12 * max(1.0, abs(selected)):
                    wrong.append(f"{field} gives {match.group(1)} LR {match.group(2)} (its selected_lr: {selected:g})")
        for match in _STEP_TIME.finditer(text):
            units = re.findall(r"\d\s*([µu]?m?s)\b", match.group(1))
            if any(unit != "s" for unit in units):
                wrong.append(f"{field} states an optimizer-step time in {', '.join(sorted(set(units)))}, the record "
                             "in seconds")
    return [Issue("PROSE-9", INVALID, f"the prose states another method, LR or unit than the record: "
                                      f"{'; '.join(wrong[:4])}")] if wrong else []


CHECKS = [PROSE_6, PROSE_7, PROSE_8, PROSE_9]
