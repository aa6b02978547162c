"""The generation audit's re-solver (experiment/selfgen/text_resolver.py) answers honest tasks of varied phrasing,
each with the answer a careful reader gives (the ground truth, read by hand): a refusal of one of them makes the
audit reject an honest task (a false refusal), another answer makes it reject a right label (a wrong answer).

The corpus (tests/honest_task_phrasings.py), by phrasing: objects in containers and places ("how many apples are in
the box"), a unit or container noun before the object ("5 bags of rice"), pronouns of both genders as subject,
receiver and question holder ("she" after "Tom ... Anna" is Anna), "they" for everyone named, possessives ("Tom's
sister", "in his bag", "2 of her pencils"), "each", "in total" / "altogether", "left", "more than" / "fewer than",
transfers between people ("gives Anna 2", "gets 3 from Tom", "takes 2 from Ben"). The refusals that must hold
beside them are in test_re_solver_reads_each_clause_from_the_text.py; the planted-task figures in
test_generation_audit_rejects_planted_tasks.py.

The rates, before and after a change (run from the checkout whose re-solver is measured, with this worktree's tests
first on the path):
`python -c "import sys; sys.path[:0] = ['', 'tests', 'tests/unit']; import test_re_solver_reads_honest_phrasings as t; t.print_rates()"`
"""

from __future__ import annotations

from collections import Counter

import pytest

from experiment.selfgen.text_resolver import read_problem

from honest_task_phrasings import HONEST


def rates() -> dict[str, tuple[int, int, int]]:
    """phrasing -> (texts, refused, answered wrongly)."""
    found = {}
    for kind, tasks in HONEST.items():
        answers = [read_problem(text).answer for text, _ in tasks]
        found[kind] = (len(tasks), sum(a is None for a in answers),
                       sum(a is not None and a != str(answer) for a, (_, answer) in zip(answers, tasks)))
    return found


def print_rates() -> None:
    total = Counter()
    for kind, (count, refused, wrong) in rates().items():
        print(f"{kind:44s} {count:3d} texts  refused {refused:3d}  wrong answer {wrong:3d}")
        total.update(texts=count, refused=refused, wrong=wrong)
    print(f"all: {total['texts']} texts; false refusals {total['refused']} ({total['refused'] / total['texts']:.1%}); "
          f"wrong answers {total['wrong']} ({total['wrong'] / total['texts']:.1%})")


def test_the_corpus_covers_each_phrasing_with_no_text_twice():
    texts = [text for tasks in HONEST.values() for text, _ in tasks]
    assert len(HONEST) >= 10 and all(len(tasks) >= 4 for tasks in HONEST.values())
    assert len(set(texts)) == len(texts)


@pytest.mark.parametrize("text, answer", [task for tasks in HONEST.values() for task in tasks])
def test_an_honest_task_of_any_phrasing_is_answered_as_a_careful_reader_answers_it(text, answer):
    solution = read_problem(text)
    assert solution.answer == str(answer), solution.reasoning
