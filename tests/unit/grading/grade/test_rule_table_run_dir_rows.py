"""experiment/grading/rules.py's row builder for the run-dir layer's checks (issue 28 item 7: the table is built
at import, before a test can trace it, so the builder is called here): a check named by a bare method is a
method of run_dir._Validator, one named `Class.method` is that class's, and either names a real function."""

from __future__ import annotations

from experiment.grading import rules, run_dir


def _resolve(where: str):
    target = run_dir
    for part in where.split(".")[1:]:  # "run_dir.<Class>.<method>"
        target = getattr(target, part)
    return target


def test_a_bare_method_is_the_validators_and_a_dotted_one_is_its_classs():
    bare = rules._run_dir("events.format", "EVID-8", "every events.jsonl line is a JSON object", "check_events")
    dotted = rules._run_dir("evidence.manifest", "EVID-8", "the manifest is JSON", "_RunFiles.load")
    assert bare.checks == ("run_dir._Validator.check_events",)
    assert dotted.checks == ("run_dir._RunFiles.load",)
    assert _resolve(bare.checks[0]) is run_dir._Validator.check_events
    assert _resolve(dotted.checks[0]) == run_dir._RunFiles.load  # a classmethod: bound anew each time
    assert (bare.id, bare.category, bare.severity, bare.restates) == ("events.format", rules.RECORD, rules.P, "EVID-8")
