"""The generator's label check (experiment/selfgen/text_label_check.py), rule by rule: each case is a small task
whose expected finding follows from the rule as the module's docstring states it (1 the text is prose ending in
its one question; 2 the question's object, places and people are the text's; 3 the program's numbers are the
text's; 4 its arithmetic agrees with the objects the text attaches to its numbers; 5 the label is a whole number
above zero). The measured figures on the generated sample are in test_generator_label_check_rejects_ill_posed_tasks.py."""

from __future__ import annotations

import pytest

from experiment.selfgen import text_label_check
from experiment.selfgen.text_label_check import problems


def _program(expression: str) -> str:
    return f"def solve():\n    return {expression}\n"


def _reasons(text: str, expression: str | None, label) -> list[str]:
    return problems(text, None if expression is None else _program(expression), label)


# ---- the object a number counts, singular ----

@pytest.mark.parametrize("plural, singular", [
    ("cookies", "cookie"), ("berries", "berry"), ("flies", "fly"), ("lies", "lie"), ("boxes", "box"),
    ("dishes", "dish"), ("ads", "ad"), ("apples", "apple"), ("us", "us"), ("glass", "glass"), ("toy", "toy"),
])
def test_a_plural_and_its_singular_are_one_object(plural, singular):
    assert text_label_check._stem(plural) == singular


def test_a_number_counts_at_most_the_two_lowercase_words_after_it():
    numbers = text_label_check._numbers("In 2024 Tom bought 3 big red balls and 4 more pens, then 5 of them.")
    assert numbers == [(2024, None, False), (3, frozenset({"big", "red"}), False), (4, None, False), (5, None, False)]


def test_a_number_followed_by_each_or_per_is_a_per_each_amount():
    numbers = text_label_check._numbers("Ann fills 6 bags with 4 pens in each bag and pays 2 dollars per bag.")
    assert numbers == [(6, frozenset({"bag"}), False), (4, frozenset({"pen"}), True), (2, frozenset({"dollar"}), True)]


def test_only_the_number_itself_is_read_not_a_decimal_or_a_word_around_it():
    assert [value for value, _, _ in text_label_check._numbers("It costs 1,200 dollars, 3.5 more, 7th and 9.")] == [
        1200, 9]


# ---- 1: prose that ends in its only question ----

@pytest.mark.parametrize("text", [
    "tom has 5 apples. How many apples does Tom have?",
    "Tom has 5 apples. he buys 2 more. How many apples does Tom have?",
    "Tom has 5 apples. iPads cost 3 dollars. How many apples does Tom have?",
    "eBay sells Tom 5 apples. How many apples does Tom have?",
])
def test_a_sentence_that_begins_in_lowercase_is_refused(text):
    assert "a sentence begins with a lowercase letter" in _reasons(text, None, 5)


def test_a_lowercase_word_after_an_abbreviation_does_not_begin_a_sentence():
    text = "Tom buys pens, pencils etc. and 4 apples. How many apples does Tom buy?"
    assert _reasons(text, "4", 4) == []


def test_a_text_that_asks_nothing_is_refused():
    assert _reasons("Tom has 5 apples. He buys 2 more.", "5 + 2", 7) == ["the text ends in no question"]


def test_an_instruction_ends_a_text_as_a_question_does():
    assert _reasons("Lena has 9 marbles and loses 4. Find Leo's number of marbles now.", "9 - 4", 5) == [
        "the question names Leo, which the text does not"]


# ---- 2: the question's object, places and people ----

@pytest.mark.parametrize("text", [
    "Tom has 3 red cars. How many toy cars does Tom have?",  # any word of the asked object the text mentions
    "Tom has 5 apples. How many apples?",  # no verb after the object
])
def test_a_question_about_an_object_the_text_mentions_is_kept(text):
    assert not any("never mentions" in reason for reason in _reasons(text, None, 5))


@pytest.mark.parametrize("text, missing", [
    ("Tom has 5 apples. How many pears?", "pear"),
    ("Tom has 3 toy trucks. How many red cars does Tom have?", "car red"),
])
def test_a_question_about_an_object_the_text_never_mentions_is_refused(text, missing):
    assert f"the question asks about {missing}, which the text never mentions" in _reasons(text, None, 5)


def test_a_question_clause_after_a_lead_in_is_read_from_its_how_many():
    text = "Tom has 5 apples and 3 pears. After lunch, how many pears does Tom have?"
    assert "the program counts apple; the question asks about pear" in _reasons(text, "5 + 0", 5)


def test_the_last_how_many_of_the_last_sentence_is_the_question():
    text = "Tom has 12 dollars. Knowing how much he has, how many pears can Tom buy?"
    assert "the question asks about pear, which the text never mentions" in _reasons(text, None, 4)


def test_the_asked_object_is_the_last_word_before_the_verb():
    text = "Tom has 5 apples and 3 pears. How many of the pears does Tom have?"
    assert "the program counts apple; the question asks about pear" in _reasons(text, "5 + 0", 5)


def test_a_place_the_question_names_must_be_the_texts():
    kept = "A basket holds 7 flowers. Mia takes 3 out. How many flowers are left in the basket?"
    assert _reasons(kept, "7 - 3", 4) == []
    refused = kept.replace("in the basket", "in the jar")
    assert _reasons(refused, "7 - 3", 4) == ["the question names jar, which the text does not"]


def test_a_capitalised_word_of_the_question_is_held_as_a_person_only_where_the_text_names_people():
    text = "A shop has 8 bikes and sells 3 bikes. How many bikes does the shop have left on Main Street?"
    assert _reasons(text, "8 - 3", 5) == []
    named = "Ann has 8 bikes and sells 3 bikes. How many bikes does Ann have left on Main Street?"
    assert _reasons(named, "8 - 3", 5) == ["the question names Main, Street, which the text does not"]


# ---- 5: the label ----

@pytest.mark.parametrize("label", [0, -1, 2.5, True, None, "5"])
def test_a_label_that_is_no_whole_number_above_zero_is_refused(label):
    assert f"the label {label!r} is not a whole number above zero" in _reasons(
        "Tom has 5 apples. How many apples does Tom have?", None, label)


def test_a_whole_number_written_as_a_float_is_a_whole_number():
    assert _reasons("Tom has 5 apples. How many apples does Tom have?", "5", 5.0) == []


# ---- 3: the program's numbers are the text's ----

@pytest.mark.parametrize("text, expression", [
    ("Ann has 4 apples and Ben has twice as many. How many apples does Ben have?", "4 * 2"),
    ("Ann has 4 apples and Ben has double that number. How many apples does Ben have?", "4 * 2"),
    ("Ann has 4 apples and then doubles them. How many apples does Ann have?", "4 * 2"),
    ("Ann has 8 apples and gives half of them to Ben. How many apples does Ben get?", "8 // 2"),
    ("Ann halves a pile of 8 apples. How many apples does Ann keep?", "8 // 2"),
    ("Ann has 4 apples and Ben has triple that. How many apples does Ben have?", "4 * 3"),
    ("Ann has 4 apples and Ben has thrice that. How many apples does Ben have?", "4 * 3"),
    ("Omar bakes 3 dozen cookies. How many cookies does Omar bake?", "3 * 12"),
    ("Omar bakes 2 dozens of cookies. How many cookies does Omar bake?", "2 * 12"),
    ("Ann buys a pair of socks for 1 doll. How many socks does Ann buy?", "1 * 2"),
    ("Ann buys 3 pairs of socks. How many socks does Ann buy?", "3 * 2"),
    ("Ann saves 5 dollars daily for a week. How many dollars does Ann save?", "5 * 7"),
    ("Ann saves 5 dollars daily for 3 weeks. How many dollars does Ann save?", "5 * 7 * 3"),
    ("A machine makes 4 toys each second. How many toys does it make in an hour?", "4 * 60"),
    ("A machine makes 4 toys each second. How many toys does it make in 2 hours?", "4 * 60 * 2"),
    ("A tap drips 3 drops each second. How many drops does it drip in a minute?", "3 * 60"),
    ("A tap drips 3 drops each second. How many drops does it drip in 2 minutes?", "3 * 60 * 2"),
    ("Ann answers 45 percent of 20 questions right. How many questions does Ann answer right?", "20 * 45 // 100"),
    ("Ann has 3 dollars. How many cents does Ann have?", "3 * 100"),
    ("A plant grows 2 leaves each hour. How many leaves does it grow in a day?", "2 * 24"),
    ("A plant grows 2 leaves each hour. How many leaves does it grow in 3 days?", "2 * 24 * 3"),
])
def test_a_number_word_the_text_uses_stands_for_its_number(text, expression):
    assert _reasons(text, expression, eval(expression)) == []


def test_a_program_with_a_syntax_error_is_held_to_the_text_rules_only():
    assert _reasons("Tom has 5 apples. How many apples does Tom have?", "(5 +", 5) == []


def test_the_function_read_is_solve_not_a_helper_before_it():
    code = ("def tally():\n    return 1\n\ndef answer():\n    return 2\n\n"
            "def solve():\n    return 5 + 3\n")
    assert problems("Tom has 5 apples and buys 3 apples. How many apples does Tom have?", code, 8) == []


def test_a_program_without_solve_is_held_to_the_text_rules_only():
    assert problems("Tom has 5 apples. How many apples does Tom have?", "def answer():\n    return 9\n", 5) == []


def test_named_values_are_read_through_to_the_numbers_they_hold():
    code = 'def solve():\n    """The apples and the pears."""\n    apples = 7\n    pears = 2\n    return apples + pears\n'
    assert problems("Tom has 7 apples and 2 pears. How many apples does Tom have?", code, 9) == [
        "the program adds apple and pear"]


def test_a_program_that_calls_a_function_is_held_to_the_text_rules_only():
    text = "There are 7 apples in a crate and 2 toy cars on the table. How many toy cars are there altogether?"
    assert _reasons(text, "int(7 + 2)", 9) == []


def test_an_undefined_name_makes_the_program_unreadable():
    assert _reasons("Tom has 5 apples. How many apples does Tom have?", "apples + 62", 67) == []


# ---- 4: the arithmetic agrees with the objects ----

def test_the_kth_use_of_a_number_is_its_kth_statement():
    text = "Tom has 3 apples and 3 pears. How many pears does Tom have?"
    assert "the program counts apple; the question asks about pear" in _reasons(text, "3", 3)
    assert "the program adds apple and pear" in _reasons(text, "3 + 3", 6)


def test_a_number_used_more_often_than_stated_counts_nothing():
    text = "Sofia buys 8 bags with 2 marbles in each bag. How many marbles does Sofia buy?"
    assert "the program adds bag and marble" in _reasons(text, "8 + 2 * 2", 12)


def test_a_sum_counts_what_its_terms_share():
    text = "Tom has 3 red apples, 4 green apples and 2 red pears. How many apples does Tom have?"
    assert _reasons(text, "3 + 4 + 2", 9) == ["the program adds apple and pear/red"]


def test_a_sum_with_a_bare_number_counts_the_other_terms_object():
    text = "Tom has 5 apples and buys 3 more. How many pears does Tom have?"
    assert "the program counts apple; the question asks about pear" in _reasons(text, "5 + 3", 8)


def test_a_count_times_a_per_each_amount_counts_the_per_each_object():
    text = "Tom has 2 red bags and 3 blue bags with 4 pens in each bag. How many bags does Tom have?"
    assert _reasons(text, "(2 + 3) * 4", 20) == ["the program counts pen; the question asks about bag"]
    assert _reasons(text, "2 + 3", 5) == ["the text states 4, which the program does not use"]


def test_a_product_counts_the_per_each_object_only_of_its_own_two_factors():
    crates = ("A truck carries 3 crates with 4 boxes in each crate. Each box holds 5 pens. How many pens does the "
              "truck carry?")
    assert _reasons(crates, "3 * 4 * 5", 60) == []
    boxes = "Ann has 2 crates. Each crate has 3 boxes, and there are 4 pens in each box. How many boxes does Ann have?"
    assert _reasons(boxes, "2 * 3 * 4", 24) == ["the program counts pen; the question asks about box"]


def test_two_per_each_amounts_multiplied_count_no_one_object():
    text = "A shelf has 3 books in each row and 2 rows on each shelf. How many books are on the shelf?"
    assert _reasons(text, "2 * 3", 6) == []


def test_a_quotient_times_a_per_each_amount_counts_the_per_each_object():
    text = "Ann has 12 bags and gives half to Ben. There are 3 apples in each bag. How many bags does Ben have?"
    assert _reasons(text, "12 // 2 * 3", 18) == ["the program counts apple; the question asks about bag"]


def test_a_chained_assignment_binds_every_name_it_assigns():
    text = "There are 7 apples in a crate and 2 toy cars on the table. How many toy cars are there altogether?"
    code = "def solve():\n    apples = fruit = 7\n    return fruit + 2\n"
    assert problems(text, code, 9) == ["the program adds apple and car/toy"]
    assert problems(text, "def solve():\n    apples = fruit = 7\n    return apples + 2\n", 9) == [
        "the program adds apple and car/toy"]


def test_an_assignment_to_anything_but_names_makes_the_program_unreadable():
    text = "Tom has 7 apples and buys 2 apples. How many apples does Tom have?"
    for code in ("def solve():\n    apples, more = 7, 2\n    return apples + more\n",
                 "def solve():\n    box = {}\n    box['apples'] = 7\n    return box['apples'] + 2\n",
                 "def solve():\n    totals[0] = 7\n    return 7 + 2\n"):
        assert problems(text, code, 9) == []  # held to the text rules and the label only
