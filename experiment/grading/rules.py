"""The grader's rule table: every rule id the grader can emit, with its category, severity and check,
derived from the registry (experiment.grading.registry).

Each rule is registered once, at the function that implements it (`@rule(id, category, severity,
description)`, `@implements(id)` for a further check, `@run_dir_checks(...)` for the run-dir layer's ids);
this module imports every grading module, so that every registration has run, and builds `RULES` from the
registry. The rules the run enforces and the grader cannot re-check from a record are declared here, without a
check (RUN-1, CAP-1, ...), so that every id of docs/contract-rules.md is a row.

`category` is one of the exchange's six categories (a finding is an issue of that category and sets its status)
or `record` (a finding goes to `Grade.problems`: the record is not green, whatever its categories say).
`severity` is the statuses a finding of the rule gives: `invalid`, `unverified`, `unknown`, or `problem` for a
record-level finding that carries no status word (the run-dir layer's checks, the spec attestation's
sentences). Any check that cannot be applied to a malformed record also gives `invalid` under its rule
(experiment.grading.common.applied); that status is not repeated in every row.

`checks` names where the rule is implemented, relative to experiment.grading (`evaluator.EVAL_2`, a method of
the run-dir layer, or another function that emits the id). The ids of the run-dir layer are `<section>.<check>`
(experiment.grading.run_dir); `restates` says which contract rule such a check re-checks from the run
directory's files.

`python -m experiment.grading.rules --markdown` prints the run-directory checks' list of docs/contract-rules.md;
tests/unit/test_grading_rule_table.py holds the table to the code (every emitted id is a row, every check
function a row's, severities as emitted) and to docs/contract-rules.md (the same ids, categories and statuses;
the run-dir list is the generated one).
"""

from __future__ import annotations

import argparse
import sys

from experiment.grading import (  # noqa: F401 - imported for their registrations
    activation, correctness, decision, evaluator, feasibility, general, generation_audit, grade, prose, restoration,
    run_dir, run_files, spec_anchor, traces,
)
from experiment.grading.common import INVALID, UNKNOWN, UNVERIFIED
from experiment.grading.registry import PROBLEM, RECORD, SEVERITIES, SHAPE_RULES, Rule, declare, table
from experiment.grading.reproduce import offline, service  # noqa: F401 - imported for their registrations

__all__ = ["BY_ID", "CONTRACT_RULES", "INVALID", "PROBLEM", "RECORD", "RULES", "RUN_DIR_RULES", "SEVERITIES",
           "SHAPE_RULES", "UNKNOWN", "UNVERIFIED", "Rule", "markdown"]

# enforced by the run, not re-checkable from a record (the run-dir layer re-checks the gate order: events.gate_order,
# events.stop_on_failure; capacity_block's shape: result.capacity_block)
declare("RUN-1", RECORD, "the gates run in the contract's order and the first failed gate stops the run")
declare("RUN-2", RECORD, "the preflight probe: one forward_backward and optim_step per arm with its exact settings")
declare("GEN-1", RECORD, "real numbers only: nothing estimated or invented; missing evidence is never verified")
declare("GEN-9", RECORD, "a finished run never infers support or a tie from successful execution alone")
declare("EVAL-11", "evaluator", "a grading timeout is recorded in its prediction row, never silently scored 0")
declare("FEAS-11", "feasibility", "downsizing keeps the primary endpoint, each cut a recorded deviation")
declare("CAP-1", RECORD, "capacity refusals retried with backoff, then a failed run with capacity_block")
declare("CAP-2", RECORD, "a deployment run stopped by capacity is re-queued within the spec's wall budget")

# the order of docs/contract-rules.md's sections
FAMILIES = ("RUN", "GEN", "SPEC", "EVID", "SEC", "PLAN", "PROSE", "EVAL", "LOSS", "DEC", "ADAPT", "REST", "CORR", "FEAS",
            "GA", "REPRO", "ACT", "TRACE", "CAP")


def _contract_order(found: Rule) -> tuple[int, int]:
    family, _, number = found.id.partition("-")
    return FAMILIES.index(family), int(number or 0)


_REGISTERED = table()
CONTRACT_RULES = tuple(sorted((r for r in _REGISTERED if not r.restates), key=_contract_order))
RUN_DIR_RULES = tuple(r for r in _REGISTERED if r.restates)  # in the order the run-dir layer defines them
RULES = CONTRACT_RULES + RUN_DIR_RULES
BY_ID = {found.id: found for found in RULES}


def markdown() -> str:
    """The run-directory checks' list of docs/contract-rules.md: one line per run-dir id, with the rule it restates
    and, where it runs that rule's own check function on the run directory's files, the function."""
    def line(r: Rule) -> str:
        shared = "".join(f" Runs `{check}`." for check in r.checks[1:])
        return f"- `{r.id}` ({r.restates}) {r.description[0].upper()}{r.description[1:]}.{shared}\n"
    return "".join(line(r) for r in RUN_DIR_RULES)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m experiment.grading.rules", description=__doc__.splitlines()[0])
    parser.add_argument("--markdown", action="store_true", required=True,
                        help="print the run-directory checks' list of docs/contract-rules.md")
    parser.parse_args(argv)
    sys.stdout.write(markdown())
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
