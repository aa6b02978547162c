"""Spec intake: the three real specs load verbatim; each bad input gives one line naming the field."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from suite import GS1_SPEC, SELFGEN_SPEC, TRIMUON_SPEC

from experiment.contract.spec import SpecError, load_spec, plan_file_path


def test_spec_round_trips_verbatim(tmp_path):
    alone = tmp_path / GS1_SPEC.name  # without its revision file
    shutil.copy(GS1_SPEC, alone)
    spec = load_spec(alone)
    assert spec.to_dict() == json.loads(GS1_SPEC.read_text())
    assert spec.source.revision is None
    assert len(spec.source.sha256) == 64


def _leaves(value, prefix=""):
    if isinstance(value, dict):
        return {k: v for key, item in value.items() for k, v in _leaves(item, f"{prefix}.{key}" if prefix else key).items()}
    if isinstance(value, list) and value and all(isinstance(i, dict) for i in value):
        return {k: v for index, item in enumerate(value)
                for k, v in _leaves(item, f"{prefix}[{item.get('name', item.get('id', index))}]").items()}
    return {prefix: value}


@pytest.mark.parametrize("path", [GS1_SPEC, SELFGEN_SPEC, TRIMUON_SPEC])
def test_revision_keeps_every_stated_value(path):
    """A recorded revision adds structure and pins UNRESOLVED values; everything the spec states stays."""
    spec = load_spec(path)
    assert spec.source.revision is not None
    merged, written = _leaves(spec.to_dict()), _leaves(json.loads(path.read_text()))
    for key, value in written.items():
        if key not in spec.source.revision.resolved:
            assert merged[key] == value, key
    for key in spec.source.revision.resolved:
        assert str(written[key]).lower().startswith("unresolved") and merged[key] != written[key]


def test_unknown_fields_are_kept():
    spec = load_spec(GS1_SPEC)
    assert spec.command.startswith("Custom client loop")  # not modelled, still there
    assert spec.section("spec_preflight")["status"] == "passed"


def test_legacy_spec_takes_structure_from_its_plan_file():
    spec = load_spec(TRIMUON_SPEC)
    revision = spec.source.revision
    assert revision is not None
    assert revision.path == str(plan_file_path(TRIMUON_SPEC))
    # the revision names its rule `verdict_rule` (the exchange's spec has no decision_rule to pin)
    assert {"arms", "verdict_rule", "experiment_features", "correctness_preflight"} <= set(revision.supplied)
    assert "decision_rule" not in spec.to_dict()
    assert spec.source.sha256 != spec.source.file_sha256  # the revision is part of the spec hash
    original = json.loads(TRIMUON_SPEC.read_text())
    assert {k: v for k, v in spec.to_dict().items() if k in original} == original


def _write(tmp_path: Path, spec: dict | str, name: str = "spec.json") -> Path:
    path = tmp_path / name
    path.write_text(spec if isinstance(spec, str) else json.dumps(spec))
    return path


def _gs1() -> dict:
    return json.loads(GS1_SPEC.read_text())


def _error(path: Path) -> str:
    with pytest.raises(SpecError) as caught:
        load_spec(path)
    message = str(caught.value)
    assert "\n" not in message
    assert message.startswith("spec error: ")
    return message


def test_not_json(tmp_path):
    assert "not valid JSON" in _error(_write(tmp_path, "{not json"))


def test_missing_base_model(tmp_path):
    spec = _gs1()
    del spec["base_model"]
    assert _error(_write(tmp_path, spec)) == "spec error: base_model: required field is missing"


def test_negative_steps(tmp_path):
    spec = _gs1()
    spec["steps"] = -3
    assert _error(_write(tmp_path, spec)) == "spec error: steps: must be a positive integer (got -3)"


def test_nested_field_is_named(tmp_path):
    spec = _gs1()
    spec["eval"]["n_examples"] = 0
    assert _error(_write(tmp_path, spec)) == "spec error: eval.n_examples: must be a positive integer (got 0)"


def test_unknown_decision_method(tmp_path):
    spec = _gs1()
    spec["decision_rule"]["method"] = "vibes"
    message = _error(_write(tmp_path, spec))
    assert message.startswith("spec error: decision_rule.method: unknown method 'vibes'")


def test_decision_weight_naming_a_missing_arm(tmp_path):
    spec = _gs1()
    spec["decision_rule"]["criteria"][0]["weights"] = {"gs1_kernel": 1, "ppo": -1}
    message = _error(_write(tmp_path, spec))
    assert message.startswith("spec error: decision_rule.criteria[0].weights: names arm 'ppo' that does not exist")


def test_paired_comparison_needs_a_decision_rule(tmp_path):
    spec = _gs1()
    del spec["decision_rule"]
    assert "decision_rule: required because experiment_features.paired_comparison is true" in _error(_write(tmp_path, spec))


def test_legacy_spec_without_plan_file(tmp_path):
    copy = tmp_path / TRIMUON_SPEC.name
    shutil.copy(TRIMUON_SPEC, copy)
    assert _error(copy) == (
        f"spec error: {copy} has no arms, decision_rule or experiment_features; "
        f"expected companion plan file {plan_file_path(copy)} supplying them"
    )


def test_plan_file_may_not_override_the_spec(tmp_path):
    copy = tmp_path / TRIMUON_SPEC.name
    shutil.copy(TRIMUON_SPEC, copy)
    plan = json.loads(plan_file_path(TRIMUON_SPEC).read_text())
    plan["steps"] = 10
    plan_file_path(copy).write_text(json.dumps(plan))
    assert _error(copy).startswith("spec error: steps: plan file")


def test_plan_file_passed_as_spec(tmp_path):
    assert "is a companion plan file" in _error(plan_file_path(TRIMUON_SPEC))


def test_missing_file(tmp_path):
    assert "no such file" in _error(tmp_path / "nope.json")
