"""The evaluated item range and the training-batch offsets (issue 17): expected items are written
out as literals over a task file made here."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from experiment.contract.spec import load_spec
from experiment.data import TaskItem
from experiment.rl.loop import RLArmSettings, step_problems
from experiment.rl.recipe import eval_items

GS1_SEED = Path(__file__).resolve().parents[2] / "specs" / "gs1_kernel_vs_grpo_gsm8k.json"


@pytest.fixture(autouse=True)
def _task_files_in_tmp_path_are_allowed(tmp_path, monkeypatch):
    monkeypatch.setenv("RX_DATA_DIRS", str(tmp_path))  # the task files lie outside the project's data directories


def _spec_with_eval(tmp_path, rows: int, n_examples):
    task_file = tmp_path / "heldout.jsonl"
    task_file.write_text("".join(json.dumps({"id": f"q{i}", "question": f"{i}+1?", "answer": str(i + 1)}) + "\n"
                                 for i in range(rows)))
    raw = load_spec(GS1_SEED, rehearse=True).to_dict()  # complete: revision merged, embedded scale
    raw["eval"]["path"] = str(task_file)
    raw["eval"]["n_examples"] = n_examples
    path = tmp_path / "gs1_eval_variant.json"
    path.write_text(json.dumps(raw))
    return load_spec(path)


def test_eval_items_are_exactly_the_first_n_in_file_order(tmp_path):
    items = eval_items(_spec_with_eval(tmp_path, rows=7, n_examples=3))
    assert [item.id for item in items] == ["q0", "q1", "q2"]
    assert items[1] == TaskItem("q1", "1+1?", "2")


def test_eval_items_all_of_them_and_exactly_all(tmp_path):
    assert [i.id for i in eval_items(_spec_with_eval(tmp_path, rows=4, n_examples=4))] == ["q0", "q1", "q2", "q3"]


def test_eval_items_more_than_the_file_holds_is_an_error(tmp_path):
    with pytest.raises(ValueError, match="eval.n_examples is 5 but the held-out set has 4 items"):
        eval_items(_spec_with_eval(tmp_path, rows=4, n_examples=5))


ORDER = [TaskItem(f"p{i}", f"question {i}", str(i)) for i in range(10)]


def _arm(groups_per_batch: int, name="arm") -> RLArmSettings:
    return RLArmSettings(name, "group_mean", group_size=2, groups_per_batch=groups_per_batch,
                         learning_rate=1e-3, max_tokens=8)


def test_step_problems_offsets():
    arm = _arm(3)
    assert [p.id for p in step_problems(ORDER, arm, 0)] == ["p0", "p1", "p2"]
    assert [p.id for p in step_problems(ORDER, arm, 1)] == ["p3", "p4", "p5"]
    assert [p.id for p in step_problems(ORDER, arm, 2)] == ["p6", "p7", "p8"]
    assert [p.id for p in step_problems(ORDER, _arm(5), 1)] == ["p5", "p6", "p7", "p8", "p9"]  # exactly the last


def test_step_problems_past_the_order_is_an_error():
    with pytest.raises(ValueError, match=r"arm late: step 3 needs prompts 9\.\.11 but the prompt order has only 10"):
        step_problems(ORDER, _arm(3, name="late"), 3)
    with pytest.raises(ValueError, match="needs prompts 10..10"):
        step_problems(ORDER, _arm(1), 10)
    assert [p.id for p in step_problems(ORDER, _arm(1), 9)] == ["p9"]
