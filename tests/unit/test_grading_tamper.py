"""Tampered runs fail for every decision method: a flipped verdict, an edited effect, edited
observations (with and without re-hashing) and an emptied events log."""

from __future__ import annotations

import hashlib
import json

import pytest

from experiment.grading import grade_path, grade_record


def _files(result):
    return {f["name"]: f for f in result["evidence"]["files"]}


def _flip(result):
    result["verdict"] = {"supported": "refuted", "refuted": "supported", "inconclusive": "supported"}[result["verdict"]]


def _edit_effect(result):
    if "effect" in result:
        result["effect"] += 0.25
    elif "decision" not in result:
        result["loss_eval"]["arms"][next(iter(result["loss_eval"]["arms"]))]["value"] += 0.25
    else:  # three-way shape: the effect lives in the decision object only
        result["decision"]["criteria"][0]["effect"] += 0.25


def _edited_observations(rehash: bool):
    def edit(result):
        decision = result.get("decision")
        if decision is None:  # best_lr_threshold: the per-item held-out NLL rows behind loss_eval
            entry = _files(result)[result["evaluation"]["scores"][0]["predictions_ref"]]
            rows = [json.loads(line) for line in entry["content"].splitlines()]
            rows[0]["prediction"]["nll_sum"] *= 0.5
            entry["content"] = "".join(json.dumps(row) + "\n" for row in rows)
            if rehash:
                entry["sha256"] = hashlib.sha256(entry["content"].encode()).hexdigest()
            return
        entry = _files(result)[decision["observations_file"]["name"]]
        rows = [json.loads(line) for line in entry["content"].splitlines()]
        rows[0]["value"] = 1.0 - rows[0]["value"]
        entry["content"] = "".join(json.dumps(row) + "\n" for row in rows)
        if rehash:
            entry["sha256"] = decision["observations_file"]["sha256"] = hashlib.sha256(entry["content"].encode()).hexdigest()
    return edit


TAMPERS = {"flipped verdict": _flip, "edited effect": _edit_effect,
           "edited observations": _edited_observations(rehash=False),
           "edited and re-hashed observations": _edited_observations(rehash=True)}


@pytest.mark.parametrize("kind", ["paired", "best_lr"])  # paired_hoeffding and best_lr_threshold
@pytest.mark.parametrize("tamper", list(TAMPERS))
def test_tampered_record_fails_the_decision(graded_record, kind, tamper):
    result, _ = graded_record(kind)
    assert grade_record(result).categories["decision"].status in ("verified", "not_applicable")
    TAMPERS[tamper](result)
    graded = grade_record(result)
    assert graded.categories["decision"].status in ("invalid", "unverified"), graded.to_dict()["categories"]["decision"]
    assert not graded.ok


def _write_run(tmp_path, result, events):
    run = tmp_path / "run"
    (run / "evidence").mkdir(parents=True)
    (run / "result.json").write_text(json.dumps(result))
    (run / "events.jsonl").write_text("".join(json.dumps(event) + "\n" for event in events))
    return run


@pytest.mark.parametrize("kind", ["paired", "best_lr"])
def test_emptied_events_fail_the_decision_in_a_run_directory(graded_record, kind, tmp_path):
    result, events = graded_record(kind)
    run = _write_run(tmp_path, result, events)
    before = grade_path(run)
    assert before.categories["decision"].status in ("verified", "not_applicable"), before.to_dict()["categories"]["decision"]
    assert not [p for p in before.problems if p.startswith(("EVID-8", "DEC-14"))]
    (run / "events.jsonl").write_text("")
    after = grade_path(run)
    assert after.categories["decision"].status == "unverified"
    assert any(issue.rule == "DEC-14" for issue in after.categories["decision"].issues)
    assert any(p.startswith("EVID-8") for p in after.problems)


def test_a_bare_result_reads_nothing_else_from_disk(graded_record, tmp_path):
    """A result.json next to its evidence/ folder is still graded only from what it carries."""
    result, events = graded_record("paired")
    name = result["decision"]["observations_file"]["name"]
    entry = _files(result)[name]
    run = _write_run(tmp_path, result, events)
    (run / "evidence" / name).write_text(entry["content"])
    entry.pop("content")
    entry.pop("encoding")
    (run / "result.json").write_text(json.dumps(result))
    bare = grade_path(run / "result.json")
    assert bare.categories["decision"].status == "unverified"
    assert any(issue.rule == "DEC-3" for issue in bare.categories["decision"].issues)
