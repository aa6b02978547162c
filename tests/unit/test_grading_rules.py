"""Each rule of docs/contract-rules.md that the grader implements: a good record graded green,
then the same record with exactly that rule broken gets the contract's status and the rule id."""

from __future__ import annotations

import base64

import pytest
from rule_cases import CASES, SPEC_CASES, files, spec_dict

from experiment.grading import decision as decision_module
from experiment.grading import grade_record


def grade(result, spec=None):
    return grade_record(result, spec=spec)


def assert_rule(graded, category, status, rule):
    got = graded.categories[category]
    assert got.status == status, (got.status, [i.sentence() for i in got.issues])
    assert rule in {issue.rule for issue in got.issues}, [i.sentence() for i in got.issues]


@pytest.mark.parametrize("kind", ["paired", "best_lr"])
def test_good_records_grade_green(graded_record, kind):
    """Green against the spec with every pin in the spec itself; the TriMuon record's correctness pins
    come from its recorded revision, so against its recorded spec correctness is unverified (CORR-6),
    as the exchange grades it, and nothing else fails."""
    result, _ = graded_record(kind)
    graded = grade(result, spec=spec_dict(kind))
    assert graded.ok, graded.to_dict()
    assert {c.status for c in graded.categories.values()} <= {"verified", "not_applicable"}
    recorded = grade(result)
    failing = {name: c for name, c in recorded.categories.items() if c.failing}
    if kind == "paired":
        assert recorded.ok, recorded.to_dict()
    else:
        assert list(failing) == ["correctness"] and not recorded.problems, recorded.to_dict()
        assert {(i.rule, i.status) for i in failing["correctness"].issues} == {("CORR-6", "unverified")}
        assert all("recorded spec revision" in i.message for i in failing["correctness"].issues)


@pytest.mark.parametrize("kind,edit,category,status,rule", CASES,
                         ids=[f"{c[4]}-{c[3]}-{i}" for i, c in enumerate(CASES)])
def test_breaking_one_rule_gets_the_contracts_status(graded_record, kind, edit, category, status, rule):
    result, _ = graded_record(kind)
    spec = spec_dict(kind) if category == "correctness" else None  # pins in the spec itself, not a revision (CORR-6)
    assert grade(result, spec).categories[category].status in ("verified", "not_applicable")
    edit(result)
    assert_rule(grade(result, spec), category, status, rule)


@pytest.mark.parametrize("kind,edit,category,status,rule", SPEC_CASES,
                         ids=[f"{c[4]}-{c[3]}-{i}" for i, c in enumerate(SPEC_CASES)])
def test_rules_that_the_spec_sets(graded_record, kind, edit, category, status, rule):
    result, _ = graded_record(kind)
    assert grade(result, spec=spec_dict(kind)).categories[category].status in ("verified", "not_applicable")
    assert_rule(grade(result, spec=spec_dict(kind, edit)), category, status, rule)


def test_the_pilot_size_the_spec_states_is_held_to_and_only_when_stated(graded_record):
    """FEAS-10: the self-generated seed spec states its pilot (2 steps per arm plus 100 eval items); a
    record whose pilot measured another size is unknown under it, and the same record graded against
    the spec with that sentence taken out of its command has no FEAS-10 issue."""
    result, _ = graded_record("paired")
    stated = spec_dict("paired")
    assert "2 steps per arm plus 100 eval items" in stated["command"]
    assert grade(result, spec=stated).categories["feasibility"].status == "verified"
    measured = result["feasibility"]["measurements"]["training"]["units"]
    result["feasibility"]["measurements"]["training"]["units"] = measured + 1
    assert_rule(grade(result, spec=stated), "feasibility", "unknown", "FEAS-10")
    unstated = spec_dict("paired", lambda s: s.update(
        command=s["command"].replace("2 steps per arm plus 100 eval items", "a short pilot")))
    assert "FEAS-10" not in {issue.rule for issue in grade(result, spec=unstated).categories["feasibility"].issues}


def test_unresolved_revisions_pinned_by_a_revision_are_unverified_as_the_exchange_grades_them(graded_record):
    """Item 4 of issue 28: pins that only a recorded revision supplies grade correctness unverified (the
    exchange grades against its own spec), however well the checks come out; --plan predicts the same."""
    result, _ = graded_record("best_lr")
    path = result["correctness_preflight"]["paths"][0]

    def unresolved_with_pins(spec):
        spec_path = spec["correctness_preflight"]["paths"][0]
        spec_path.update(baseline_revision="UNRESOLVED: pin", reference_revision="UNRESOLVED: pin")
        spec["correctness_pins"] = {path["id"]: {"baseline_revision": path["baseline_revision"],
                                                 "reference_revision": path["reference_revision"]}}
        spec["correctness_preflight"]["status"] = "unresolved"

    graded = grade(result, spec=spec_dict("best_lr", unresolved_with_pins))
    assert_rule(graded, "correctness", "unverified", "CORR-6")
    assert all("recorded spec revision" in issue.message for issue in graded.categories["correctness"].issues)
    # without the pins the same record is unverified too, for the UNRESOLVED revisions themselves
    graded = grade(result, spec=spec_dict("best_lr", lambda s: (unresolved_with_pins(s), s.pop("correctness_pins"))))
    assert_rule(graded, "correctness", "unverified", "CORR-6")
    assert any("UNRESOLVED" in issue.message for issue in graded.categories["correctness"].issues)


def test_generation_audit_not_applicable_when_the_spec_opts_out(graded_record):
    result, _ = graded_record("best_lr")
    graded = grade(result)
    assert graded.categories["generation_audit"].status == "not_applicable"
    assert_rule(graded, "correctness", "unverified", "CORR-6")  # its pins come from the recorded revision


def test_observation_cap(graded_record, monkeypatch):
    result, _ = graded_record("paired")
    monkeypatch.setattr(decision_module, "MAX_OBSERVATIONS", 5)
    assert_rule(grade(result), "decision", "unverified", "DEC-4")


def test_base64_evidence_is_decoded_and_checked(graded_record):
    result, _ = graded_record("paired")
    entry = files(result)["restoration-rl_gsm8k.json"]
    entry["content"] = base64.b64encode(entry["content"].encode()).decode()
    entry["encoding"] = "base64"
    assert grade(result).categories["restoration"].status == "verified"
    entry["content"] = base64.b64encode(b"{}").decode()
    graded = grade(result)
    assert_rule(graded, "restoration", "unverified", "REST-8")
    assert any(p.startswith("EVID-2") for p in graded.problems)


@pytest.mark.parametrize("edit,rule", [
    (lambda r: r.update(status="running"), "GEN-3"),
    (lambda r: r["metrics"].update(rl_gsm8k_accuracy=0.5), "GEN-5"),
    (lambda r: r.update(confidence="weak"), "GEN-4"),
    (lambda r: r.update(outcome_reason="tie", verdict="supported"), "GEN-4"),
    (lambda r: r["deviations"].append({"field": "loss", "original": "a", "effective": "b"}), "GEN-6"),
    (lambda r: r.update(summary="One. Two. Three."), "GEN-8"),
    (lambda r: r["evidence"].update(per_arm_metrics={}), "EVID-5"),
    (lambda r: r.update(status="finished"), "GEN-2"),
    (lambda r: r.update(capacity_block={"error": "trainer capacity exhausted", "comparison_steps_completed": 0,
                                        "released_clients": True}), "GEN-7"),
    (lambda r: r["evidence"]["files"][0].pop("content"), "EVID-1"),
    (lambda r: r["evidence"]["files"].__setitem__(slice(None), [f for f in r["evidence"]["files"]
                                                                  if f["kind"] != "script"]), "EVID-4"),
    (lambda r: r["evidence"]["checkpoints"].append({"arm": "a", "step": 1, "uri": "https://x/w?sig=abcdef"}), "EVID-6"),
    (lambda r: r["evidence"]["files"].append({**r["evidence"]["files"][0], "content": "{}"}), "EVID-7"),
])
def test_record_level_rules_are_problems(graded_record, edit, rule):
    kind = "best_lr" if rule == "GEN-3" else "paired"
    result, _ = graded_record(kind)
    edit(result)
    graded = grade(result)
    assert any(p.startswith(rule) for p in graded.problems), graded.problems
    assert not graded.ok


def test_evidence_caps(graded_record, monkeypatch):
    from experiment.grading import general

    result, _ = graded_record("paired")
    monkeypatch.setattr(general, "MAX_FILE_BYTES", 100)
    assert any(p.startswith("EVID-3") for p in grade(result).problems)
    monkeypatch.setattr(general, "MAX_FILE_BYTES", 10 * 1024 * 1024)
    monkeypatch.setattr(general, "MAX_FILES", 3)
    assert any(p.startswith("EVID-3") for p in grade(result).problems)


def test_production_exposure_grades_restoration_unverified_and_nothing_else(graded_record):
    """Production: no adapter hash, get_info reports only {"type": family}; initialization proven
    by the immutable full-initialization checkpoint (REST-2 passes), the optimizer config stays
    unverified (REST-6) and every other category is green."""
    result, _ = graded_record("paired")
    for name, arm in result["initialization_provenance"]["arms"].items():
        init = arm["initialization"]
        init.pop("adapter_sha256")
        init.update(checkpoint_uri="tinker://run/weights/init-full", checkpoint_immutable=True,  # where REST-10 started
                    checkpoint_scope="full_initialization", loaded_checkpoint_uri="tinker://run/weights/init-full",
                    load_succeeded=True)
        arm["optimizer_checks"][0]["actual_config"] = {"type": "adamw"}
        # the load of the initialization checkpoint is restore 1; no response after load_state exposes the optimizer
        from experiment.rl import restoration as r

        ref = arm["optimizer_checks"][0]["evidence_ref"]
        arm.update(restore_count=1, restores=[r.restore_record(1, f"s:train:{name}", r.LOAD_STATE, init["checkpoint_uri"],
                                                               False, ref, "2026-12-02T12:00:00Z")])
        arm["optimizer_checks"][1:] = [r.declared_check(arm["optimizer_checks"][0]["requested"], 1, ref, "not exposed")]
    graded = grade(result)
    restoration = graded.categories["restoration"]
    assert restoration.status == "unverified"
    assert {issue.rule for issue in restoration.issues} == {"REST-6"}
    assert all("does not expose" in issue.message or "declared" in issue.message for issue in restoration.issues)
    others = {name: c.status for name, c in graded.categories.items() if name != "restoration"}
    assert set(others.values()) <= {"verified", "not_applicable"}, others
    assert graded.problems == []
