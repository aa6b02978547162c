"""The run-dir layer's check class: one object per run directory, its check groups run in turn; a group that
raises on a malformed record is the problem `<group>.shape`."""

from __future__ import annotations

from functools import cached_property
from pathlib import Path
from typing import Any

from experiment.grading import correctness, decision, generation_audit, restoration
from experiment.grading.common import NOT_APPLICABLE, GradeContext, applied
from experiment.grading.registry import run_dir_checks, shared
from experiment.grading.run_dir.evidence import contract_context, typed_spec
from experiment.grading.run_dir.files import SECTION_GATES, Problem, ValidationReport, RunFiles
from experiment.grading.run_dir.record import RecordChecks
from experiment.grading.run_dir.preflights import PreflightChecks
from experiment.grading.run_dir.evaluation import EvaluationChecks
from experiment.grading.run_dir.decision import DecisionChecks
from experiment.grading.run_dir.training_data import TrainingDataChecks
from experiment.grading.run_dir.retained import RetainedFileChecks


# the categories the contract may grade not applicable (the evaluator and feasibility always apply): graded once on
# the run directory, when one of their rules is first run, to learn whether it applies
CATEGORY_MODULES = (correctness, decision, generation_audit, restoration)


class Validator(RecordChecks, PreflightChecks, EvaluationChecks, DecisionChecks, TrainingDataChecks,
                 RetainedFileChecks):
    """Every check group of the run-dir layer on one run directory (`run()`); the groups live in the modules
    named after their sections."""

    def __init__(self, files: RunFiles):
        self.files = files
        self.result = files.result
        self.plan = files.plan or {}
        self.spec = files.spec or {}
        self.report = ValidationReport(problems=list(files.setup_problems))
        self._category_status: dict[str, str] = {}  # category module -> its contract grade's status on this run

    def problem(self, check: str, message: str) -> None:
        self.report.problems.append(Problem(check, message))

    @cached_property
    def typed(self) -> tuple[Any, Any, str]:
        """(the typed spec, the execution plan derived from it, why not): built once, from the retained spec."""
        return typed_spec(self.files)

    @cached_property
    def contract(self) -> GradeContext:
        """RESULT, the typed spec and plan, and evidence/ as the contract rules read a record (built when a restated
        check first runs)."""
        spec, plan, _ = self.typed
        return contract_context(self.files, spec, plan)

    def restated(self, check: str) -> bool:
        """The run-dir check `check` restates a contract rule: run that rule's one implementation (the check functions
        registered with the check id, experiment.grading.registry.shared) on this run directory's RESULT, typed spec
        and plan, and evidence/ files; each finding is a problem under `check`. A rule of a category the contract
        grades not applicable for this spec (correctness of a stock-only run, ...) is not applied, as the category
        grade does not apply it. True when the rule found something."""
        functions = shared(check)
        if any(self._not_applicable(function) for function in functions):
            return False
        issues = [issue for function in functions for issue in applied(function, self.contract)]
        for issue in issues:
            self.problem(check, issue.message)
        return bool(issues)

    def _not_applicable(self, function: Any) -> bool:
        module = next((m for m in CATEGORY_MODULES if function.__module__ == m.__name__), None)
        if module is None:
            return False
        if module.__name__ not in self._category_status:
            try:
                self._category_status[module.__name__] = module.grade(self.contract).status
            except (AttributeError, KeyError, TypeError, ValueError, IndexError, ZeroDivisionError):
                self._category_status[module.__name__] = ""  # too malformed to tell: its rules are applied
        return self._category_status[module.__name__] == NOT_APPLICABLE

    @property
    def vocabulary(self) -> str | None:
        return self.plan.get("vocabulary")

    @property
    def final(self) -> bool:
        return self.result.get("status") in ("succeeded", "failed")

    def plan_arm_names(self) -> list[str]:
        return [arm["name"] for arm in self.plan.get("arms") or [] if isinstance(arm, dict) and "name" in arm]

    def plan_gate(self, name: str) -> dict[str, Any]:
        for gate in self.plan.get("gates") or []:
            if isinstance(gate, dict) and gate.get("name") == name:
                return gate
        return {}

    def section_required(self, section: str) -> bool:
        """True when the gate producing `section` passed, so the section must be present."""
        gate = SECTION_GATES[section]
        return self.files.gate_passed(gate)

    @run_dir_checks(
        ("run.spec", "SPEC", "the retained spec parses and plans: the contract rules the run-dir checks run need its plan"),
        ("events.shape", "RUN-1", "the events check could not be applied to a malformed record"),
        ("result.shape", "GEN-2", "the RESULT check could not be applied to a malformed record"),
        ("vocabulary.shape", "GEN-3", "the vocabulary check could not be applied to a malformed record"),
        ("activation.shape", "ACT-1", "the activation check could not be applied to a malformed record"),
        ("correctness.shape", "CORR-2", "the correctness check could not be applied to a malformed record"),
        ("loss_eval.shape", "LOSS-2", "the loss_eval check could not be applied to a malformed record"),
        ("evidence.shape", "EVID-8", "the evidence check could not be applied to a malformed record"),
        ("secrets.shape", "SEC-1", "the secret scan could not be applied"),
    )
    def run(self) -> ValidationReport:
        if self.files.spec is not None and self.typed[1] is None:
            self.problem("run.spec", f"{self.typed[2]}; the rules that need the spec's plan were not applied")
        checks = [
            ("events", self.check_events),
            ("result", self.check_result_shape),
            ("vocabulary", self.check_vocabulary),
            ("deviations", self.check_deviations),
            ("activation", self.check_activation_calibration),
            ("correctness", self.check_correctness),
            ("provenance", self.check_initialization_provenance),
            ("evaluation", self.check_evaluation),
            ("decision", self.check_decision),
            ("loss_eval", self.check_loss_eval),
            ("adaptation", self.check_adaptation),
            ("generation_audit", self.check_generation_audit),
            ("feasibility", self.check_feasibility),
            ("evidence", self.check_evidence),
            ("secrets", self.check_no_credentials),
        ]
        for name, check in checks:
            try:
                check()
            except (AttributeError, KeyError, TypeError, ValueError, OverflowError) as err:
                # a record so malformed that a rule could not be applied is itself a problem
                self.problem(
                    f"{name}.shape",
                    f"a record has an unexpected shape ({type(err).__name__}: {err}); the rest of this check was skipped",
                )
            self.report.checks.append(name)
        return self.report


def validate_run(run_dir: str | Path) -> list[Problem]:
    """Every problem found in the run directory (empty when the run is consistent)."""
    return run_validation(run_dir).problems


def run_validation(run_dir: str | Path) -> ValidationReport:
    """Problems plus the names of the checks that ran. Raises RunDirError for a bad directory."""
    run = RunFiles.load(Path(run_dir))
    return Validator(run).run()
