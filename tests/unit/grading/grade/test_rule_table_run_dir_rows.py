"""The rule registry's rows for the run-dir layer's checks (experiment.grading.registry.run_dir_checks): each row
names the method that emits its check id, as registered there (a classmethod by its function), with the contract
rule it restates, and is a record-level problem."""

from __future__ import annotations

from experiment.grading import registry, rules, run_dir


def test_a_run_dir_row_names_the_method_that_emits_it():
    events, manifest = rules.BY_ID["events.format"], rules.BY_ID["evidence.manifest"]
    assert events.checks == (registry.where(run_dir.Validator.check_events),)
    assert manifest.checks == (registry.where(run_dir.RunFiles.load.__func__),)
    assert (events.category, events.severity, events.restates) == (rules.RECORD, (rules.PROBLEM,), "EVID-8")


def test_every_run_dir_row_restates_a_contract_rule_that_is_checked():
    for row in rules.RUN_DIR_RULES:
        assert row.restates in rules.BY_ID and rules.BY_ID[row.restates] in rules.CONTRACT_RULES, row.id


def test_a_run_dir_check_that_shares_its_rules_implementation_names_and_runs_that_function():
    """A run-dir row registered with its contract rule's check functions (run_dir_checks' fourth element on) lists
    those functions among its checks, each one of the restated rule's own checks, and the layer runs exactly them;
    one contract rule may report under several run-dir ids (evaluation.missing and evaluation.shape: EVAL_1)."""
    shared = [row for row in rules.RUN_DIR_RULES if len(row.checks) > 1]
    assert {"result.status", "evaluation.evaluator_id", "evaluation.code_sha256", "evaluation.item_ids",
            "evaluation.decoding", "evaluation.provenance", "evaluation.missing", "evaluation.shape",
            "vocabulary.verdict", "loss_eval.values", "feasibility.phases"} <= {row.id for row in shared}
    for row in shared:
        assert row.checks[1:] == tuple(registry.where(f) for f in registry.shared(row.id)), row.id
        assert set(row.checks[1:]) <= set(rules.BY_ID[row.restates].checks), row.id
