"""The generation audit's re-solver (experiment/selfgen/text_resolver.py) answers honest tasks of varied phrasing,
each with the answer a careful reader gives (the ground truth, read by hand): a refusal of one of them makes the
audit reject an honest task (a false refusal), another answer makes it reject a right label (a wrong answer).

The corpus, by phrasing: objects in containers and places ("how many apples are in the box"), a unit or container
noun before the object ("5 bags of rice"), pronouns of both genders as subject, receiver and question holder
("she" after "Tom ... Anna" is Anna), "they" for everyone named, possessives ("Tom's sister", "in his bag", "2 of
her pencils"), "each", "in total" / "altogether", "left", "more than" / "fewer than", transfers between people
("gives Anna 2", "gets 3 from Tom", "takes 2 from Ben"). The refusals that must hold beside them are in
test_re_solver_reads_each_clause_from_the_text.py; the planted-task figures in
test_generation_audit_rejects_planted_tasks.py.

The rates, before and after a change (run from the checkout whose re-solver is measured; the corpus is this file):
`python -c "import sys; sys.path[:0] = ['', 'tests/unit']; import test_re_solver_reads_honest_phrasings as t; t.print_rates()"`
"""

from __future__ import annotations

from collections import Counter

import pytest

from experiment.selfgen.text_resolver import read_problem

HONEST: dict[str, list[tuple[str, int]]] = {
    "containers_and_places": [
        ("There are 5 apples in a box. How many apples are in the box?", 5),
        ("A basket holds 12 eggs. How many eggs are in the basket?", 12),
        ("A jar holds 9 cookies. Mia takes 4 out. How many cookies are in the jar now?", 5),
        ("There are 6 books on a shelf and 4 books on the desk. How many books are on the shelf?", 6),
        ("There are 6 books on a shelf and 4 books on the desk. How many books are there in total?", 10),
        ("A box holds 8 crayons. Leo takes 3 crayons out of the box. How many crayons are left in the box?", 5),
        ("There are 7 fish in a tank. How many fish are there in the tank?", 7),
        ("A crate holds 20 oranges. Sam takes 5 out. How many oranges are in the crate?", 15),
        ("The drawer has 14 pens. How many pens are in the drawer?", 14),
        ("A bag contains 10 marbles. Omar takes 4 out. How many marbles are left in the bag?", 6),
        ("Tom has 5 apples in a box. How many apples does Tom have?", 5),
        ("There are 3 apples on the table and 4 apples in a bowl. How many apples are on the table?", 3),
        ('There are 12 pears in a bowl. How many pears are in the bowl?', 12),
        ('A tray holds 16 cupcakes. Emma takes 6 out. How many cupcakes are on the tray?', 10),
        ("There are 4 cats in Diana's house. How many cats are in Diana's house?", 4),
        ('A jar contains 40 candies. Tim takes 15 candies out of the jar. How many candies are left?', 25),
    ],
    "unit_or_container_noun_before_the_object": [
        ("Tom buys 5 bags of rice. How many bags of rice does Tom buy?", 5),
        ("Anna has 4 boxes of pencils. She buys 2 more boxes of pencils. How many boxes of pencils does Anna have?", 6),
        ("Ben has 3 cups of flour. He uses 1 cup of flour. How many cups of flour does Ben have left?", 2),
        ("Maria has 6 bottles of water. She drinks 2. How many bottles of water does Maria have now?", 4),
        ("Leo has 8 packs of cards. He gives 3 packs of cards to Sam. How many packs of cards does Leo have left?", 5),
        ("Lucy bought 3 bags of apples. How many bags of apples did Lucy buy?", 3),
        ("Omar has 10 liters of juice. He drinks 3 liters of juice. How many liters of juice does Omar have?", 7),
        ("A shop has 20 bags of rice. The shop sells 8. How many bags of rice does the shop have left?", 12),
        ("Tom has 5 bags of rice. How many bags does Tom have?", 5),
        ("Priya has 7 slices of pizza. She eats 2 slices. How many slices of pizza does Priya have?", 5),
        ("Sam has 9 jars of jam. He sells 4 jars. How many jars of jam does Sam have now?", 5),
        ('Kevin buys 3 boxes of crayons. He buys 2 more boxes of crayons. How many boxes of crayons does Kevin buy?',
         5),
        ('Alice has 9 bags of flour. She uses 4 bags of flour. How many bags of flour does Alice have left?', 5),
        ('Ryan has 7 cans of soda. He gives Clara 3. How many cans of soda does Ryan have?', 4),
        ('Maya has 3 cups of rice. She buys 2 cups of rice. How many cups of rice does Maya have in all?', 5),
        ('Tom has 3 feet of rope. He buys 2 feet of rope. How many feet of rope does Tom have?', 5),
    ],
    "pronouns_of_both_genders": [
        ("Tom has 5 apples. Anna has 3 apples. She eats 1. How many apples does Anna have?", 2),
        ("Anna has 5 apples. Tom has 3 apples. She eats 1. How many apples does Anna have?", 4),
        ("Tom has 5 apples. Anna has 3 apples. He eats 1. How many apples does Tom have?", 4),
        ("Tom has 5 apples. Anna has 3 apples. He gives Anna 2. How many apples does Anna have?", 5),
        ("Tom has 5 apples. Anna has 3 apples. He gives Anna 2. How many apples does Tom have?", 3),
        ("Tom has 5 apples. He gives Anna 2. How many apples does Tom have?", 3),
        ("Sam has 12 coins. He gives Lucy 5. How many coins does Sam have?", 7),
        ("Lucy has 9 shells. She buys 4 more. How many shells does she have?", 13),
        ("Tom has 5 apples. Anna has 3 apples. How many apples does he have?", 5),
        ("Anna has 5 apples. Tom has 3 apples. How many apples does she have?", 5),
        ("Emma has 6 eggs and Noah has 2 eggs. She breaks 1. How many eggs does Emma have?", 5),
        ("Zoe has 8 flowers. Ivan has 3 flowers. He picks 2 more. How many flowers does Ivan have?", 5),
        ("Ivan has 8 flowers. Zoe has 3 flowers. He picks 2 more. How many flowers does Ivan have?", 10),
        ("Maria has 10 stickers. Ben has 4 stickers. She gives him 3. How many stickers does Ben have?", 7),
        ("Ben has 4 stickers. Maria has 10 stickers. She gives 3 to him. How many stickers does Maria have?", 7),
        ("Leo has 6 cards. Mia has 2 cards. He gives her 4. How many cards does Mia have?", 6),
        ("Mia has 6 cards. Leo has 2 cards. She gives 4 to him. How many cards does he have?", 6),
        ('Nina has 8 grapes. Owen has 5 grapes. He eats 2. How many grapes does Owen have?', 3),
        ('Owen has 8 grapes. Nina has 5 grapes. He eats 2. How many grapes does Owen have?', 6),
        ('Owen has 8 grapes. Nina has 5 grapes. She eats 2. How many grapes does she have?', 3),
        ('Ben has 7 toy cars. She buys 4 more. How many toy cars does Ben have now?', 11),
    ],
    "they_for_everyone_named": [
        ("Tom has 5 apples. Anna has 3 apples. How many apples do they have in total?", 8),
        ("Tom has 5 apples. Anna has 3 apples. How many apples do they have altogether?", 8),
        ("Ben has 2 kites and Zoe has 6 kites. How many kites do they have?", 8),
        ("Omar has 4 coins. Lucy has 5 coins. Sam has 1 coin. How many coins do they have in all?", 10),
        ('Rosa has 6 lemons and Karl has 3 lemons. How many lemons do they have altogether?', 9),
    ],
    "possessives": [
        ("Tom has 5 apples in his bag. How many apples does Tom have?", 5),
        ("Anna has 7 pencils. She gives 2 of her pencils to Ben. How many pencils does Anna have?", 5),
        ("Tom has 5 apples. He eats 2 of his apples. How many apples does Tom have?", 3),
        ("Tom's sister has 4 apples. How many apples does Tom's sister have?", 4),
        ("Tom's sister has 4 apples. She buys 3 more. How many apples does Tom's sister have?", 7),
        ("Ben has 6 marbles in his pocket. He loses 2. How many marbles does Ben have?", 4),
        ("There are 5 apples in Tom's box. How many apples are in Tom's box?", 5),
        ("There are 5 apples in Tom's box and 3 apples in Anna's box. How many apples are in Anna's box?", 3),
        ("Lucy's basket holds 9 eggs. How many eggs are in Lucy's basket?", 9),
        ("Hugo's brother has 6 kites. How many kites does Hugo's brother have?", 6),
        ("Hugo's brother has 6 kites. He loses 1. How many kites does Hugo's brother have?", 5),
        ('Felix has 5 marbles in his pocket. How many marbles does Felix have?', 5),
        ('Victor has 25 cards. He loses 5 of his cards. How many cards does Victor have now?', 20),
    ],
    "each": [
        ("Tom gives 2 apples to each of 3 friends. How many apples does Tom give away?", 6),
        ("Tom shares 12 apples among 3 friends. How many apples does each friend get?", 4),
        ("There are 4 boxes with 5 pens in each box. How many pens are there?", 20),
        ("Anna buys 3 bags. Each bag has 4 oranges. How many oranges does Anna buy?", 12),
        ("There are 5 rows. Each row has 6 chairs. How many chairs are there?", 30),
        ("Ben has 2 boxes. Each box holds 7 crayons. How many crayons does Ben have?", 14),
        ('There are 3 shelves. Each shelf holds 8 books. How many books are there?', 24),
        ('Laura buys 4 packs. Each pack has 6 pens. How many pens does Laura buy?', 24),
    ],
    "in_total_and_altogether": [
        ("Tom has 5 apples and 3 pears. How many apples does Tom have in total?", 5),
        ("Tom bought 4 apples on Monday and 6 apples on Tuesday. How many apples did Tom buy in total?", 10),
        ("Anna picked 7 flowers and 5 more flowers. How many flowers did Anna pick altogether?", 12),
        ("Mia collected 3 shells on Monday and 8 shells on Tuesday. How many shells did Mia collect in all?", 11),
        ("There are 4 ducks in a pond and 5 ducks on the grass. How many ducks are there altogether?", 9),
        ('George collected 6 shells on Monday and 9 more shells on Tuesday. How many shells did George collect in total?',
         15),
    ],
    "left": [
        ("Tom had 10 apples and lost 4. How many apples does Tom have left?", 6),
        ("Jack had 20 eggs. He broke 4 eggs and sold 6 eggs. How many eggs does Jack have left?", 10),
        ("Noah has 15 stamps. He uses 7 of them. How many stamps are left?", 8),
        ("A basket holds 11 plums. Yuki takes 5 out. How many plums are left in the basket?", 6),
        ("Kofi had 9 balloons. After selling some, Kofi has 2 left. How many balloons did Kofi sell?", 7),
        ('Helen had 30 cookies. She sold 12 and ate 3. How many cookies does Helen have left?', 15),
    ],
    "more_or_fewer_than": [
        ("Tom has 5 apples. Anna has 3 more apples than Tom. How many apples does Anna have?", 8),
        ("Tom has 9 apples. Anna has 4 fewer apples than Tom. How many apples does Anna have?", 5),
        ("Tom has 5 apples. Anna has 8 apples. How many more apples does Anna have than Tom?", 3),
        ("Tom has 12 marbles. Ben has 7 marbles. How many fewer marbles does Ben have than Tom?", 5),
        ("Lucy has 6 stamps. Omar has 2 more stamps than Lucy. How many stamps do they have in total?", 14),
        ("Leo has 10 cards. Mia has 3 more cards than him. How many cards does Mia have?", 13),
        ("Tom has 5 apples. Anna has 3 more than Tom. How many apples does Anna have?", 8),
        ('Mark has 20 nails. Paul has 4 more nails than Mark. How many nails does Paul have?', 24),
        ('Mark has 20 nails. Paul has 6 fewer nails than Mark. How many nails do they have in total?', 34),
        ('Julia has 11 beads. Ava has 15 beads. How many more beads does Ava have than Julia?', 4),
    ],
    "transfers_between_people": [
        ("Tom has 10 apples. Anna has 2 apples. Tom gives 3 apples to Anna. How many apples does Anna have?", 5),
        ("Tom has 10 apples. Anna has 2 apples. Tom gives 3 apples to Anna. How many apples does Tom have?", 7),
        ("Tom has 10 apples. Anna has 2 apples. Anna gets 3 apples from Tom. How many apples does Tom have?", 7),
        ("Tom has 10 apples. Anna has 2 apples. Anna gets 3 apples from Tom. How many apples does Anna have?", 5),
        ("Ben has 8 coins. Sam has 1 coin. Sam takes 2 coins from Ben. How many coins does Ben have?", 6),
        ("Maria has 6 pens. Leo has 4 pens. Leo receives 2 pens from Maria. How many pens does Leo have?", 6),
        ("Priya has 15 beads. She gives 5 beads to Zoe and 3 beads to Lena. How many beads does Priya have left?", 7),
        ("Tom has 10 apples. Anna has 2 apples. Tom gives Anna 3. How many apples does Tom have?", 7),
        ('Clara has 2 cans of soda. Ryan has 7 cans of soda. He gives Clara 3. How many cans of soda does Clara have?',
         5),
        ('Eric has 9 coins. Dan has 10 coins. He takes 5 coins from Eric. How many coins does Eric have?', 4),
        ('Eric has 9 coins. Dan has 10 coins. He takes 5 coins from Eric. How many coins does Dan have?', 15),
        ('Iris has 14 stamps. She gives 4 stamps to Felix and 2 stamps to Hugo. How many stamps does she have left?',
         8),
        ('Tony has 8 apples. Sophie has 3 apples. Tony gives Sophie 2 apples. How many apples does Sophie have now?',
         5),
        ('Sophie has 3 apples. Tony has 8 apples. Sophie gets 2 apples from Tony. How many apples does Tony have left?',
         6),
    ],
    "tenses_and_verbs": [
        ("Tom had 5 apples. He bought 3 more. How many apples does Tom have now?", 8),
        ("Sofia has 14 beads. She finds 6 more beads. How many beads does Sofia have?", 20),
        ("Ravi had 30 stamps. He sold 12 stamps. How many stamps does Ravi have now?", 18),
        ("Lena owns 4 kites. She makes 2 more kites. How many kites does Lena own now?", 6),
    ],
}


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
