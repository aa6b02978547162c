"""A grade in three levels a person can read: green, amber (honest unverified) and red.

The grader gives each of the exchange's six categories a status (verified, not_applicable, invalid,
unverified, unknown) and lists record-level problems. A reader wants one word first:

- **green**: every category verified or not applicable, and no problem. Exit status 0.
- **amber**: nothing was found wrong, but some category could not be verified (unverified or unknown).
  Each such category is named with what would settle it. Exit status 3. The README's rehearsal of GS1
  is amber: its correctness pins come from the recorded revision file, which the exchange cannot check
  against its own spec (CORR-6).
- **red**: a category is invalid, or the record has a problem. Exit status 1.

`level(grade)` takes the grade as a dict (`Grade.to_dict()`, or RESULT.grade), so the CLI, the run's
summary and the Prefect UI read the same words. Exit status 2 stays "the input could not be read".
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

GREEN, AMBER, RED = "green", "amber", "red"
EXIT_STATUS = {GREEN: 0, RED: 1, AMBER: 3}
SETTLED = ("verified", "not_applicable")
OPEN = ("unverified", "unknown")

MEANING = {
    GREEN: "every category verified or not applicable, no problem",
    AMBER: "nothing found wrong, but not everything could be verified",
    RED: "a category is invalid or the record has a problem",
}

# What would settle an open category, by the rule id that left it open (the first one that has a hint),
# else by the category. Written for a person deciding what to do next, not for the grader.
SETTLE_BY_RULE = {
    "CORR-6": "pin the correctness revisions in the spec itself (they come from the revision file, which the "
              "exchange does not read); or accept it: the run compared them with the revision file's pins",
    "CORR-3": "run the correctness preflight where the baseline is a separate implementation (on the embedded "
              "backend the baseline check compares the same code with itself)",
    "REST-6": "a service that reports the optimizer config in get_info (production reports only the family)",
    "FEAS-1": "a run that reaches the feasibility pilot",
    "DEC-1": "a run that reaches the decision gate",
}
SETTLE_BY_CATEGORY = {
    "evaluator": "retain the evaluator's frozen record and every prediction file inline",
    "decision": "retain the observations file inline and let the run reach its decision",
    "restoration": "retain each arm's restoration evidence (server responses, restore events)",
    "correctness": "a correctness preflight whose revisions and errors the exchange can check",
    "feasibility": "a measured feasibility pilot retained with the record",
    "generation_audit": "the generation audit's candidates file and samples retained inline",
}


@dataclass
class Level:
    word: str  # green | amber | red
    open_categories: dict[str, str] = field(default_factory=dict)  # category -> what would settle it
    red_reasons: list[str] = field(default_factory=list)

    @property
    def exit_status(self) -> int:
        return EXIT_STATUS[self.word]

    def headline(self) -> str:
        text = f"{self.word.upper()}: {MEANING[self.word]}"
        if self.word == RED:
            text += f" ({'; '.join(self.red_reasons)})"
        elif self.word == AMBER:
            text += f" ({', '.join(self.open_categories)})"
        return text

    def lines(self) -> list[str]:
        """The headline, then one line per open category with what would settle it (amber and red alike)."""
        return [self.headline()] + [f"  {name} would be settled by: {hint}" for name, hint in self.open_categories.items()]


def _issues(entry: dict[str, Any]) -> list[str]:
    issues = entry.get("issues")
    return [str(issue) for issue in issues] if isinstance(issues, list) else []


def settle_hint(category: str, issues: list[str]) -> str:
    for issue in issues:
        rule = issue.split(":", 1)[0].strip()
        if rule in SETTLE_BY_RULE:
            return SETTLE_BY_RULE[rule]
    return SETTLE_BY_CATEGORY.get(category, "the evidence the issues above name")


def level(grade: Any) -> Level:
    """green, amber or red for a grade dict ({"categories": {name: {"status", "issues"}}, "problems": [...]})."""
    if not isinstance(grade, dict) or not isinstance(grade.get("categories"), dict):
        return Level(RED, red_reasons=["no grade"])
    red, open_categories = [], {}
    for name, entry in grade["categories"].items():
        status = entry.get("status") if isinstance(entry, dict) else None
        if status in SETTLED:
            continue
        if status in OPEN:
            open_categories[name] = settle_hint(name, _issues(entry))
        else:
            red.append(f"{name} {status}")
    problems = grade.get("problems") or []
    if problems:
        red.append(f"{len(problems)} problem{'s' if len(problems) != 1 else ''}")
    if red:
        return Level(RED, open_categories, red)
    return Level(AMBER if open_categories else GREEN, open_categories)
