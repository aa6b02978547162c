"""The record's words cannot hide a claim or state another outcome (experiment/grading/prose.py, PROSE-4's count
with a thousands separator in spec_anchor.py). Each tampering below graded as the honest record before these rules
(tests/tampering_classes.py: the zero-width and homoglyph 'supported', 'Confidence is strong despite', 'misses'
rewritten 'clears', 'on all 1,319 held-out items'); the honest wording of each family's prose passes."""

from __future__ import annotations

from types import SimpleNamespace

from experiment.grading import prose, spec_anchor
from experiment.grading.evidence import EvidenceAccess

GS1_REASONING = ("The paired Hoeffding bound over 48 items gives an effect (gs1_kernel \u2212 grpo_gs8) of +0.0000 with "
                 "interval [-0.3533, 0.3533]: non-inferiority not shown. So the claim is not supported: verdict refuted "
                 "(accuracy gs1_kernel 0.3750, grpo_gs8 0.3750). Confidence is weak because of: one seed.")
SFT_REASONING = ("Best-LR held-out NLL dimuon_lite 12.9021 (LR 0.08), trimuon 12.9069 (LR 0.08). Verdict refuted: "
                 "nll_gap effect -0.004811 misses margin 0.01; step_time_not_higher effect -0.01373 misses margin 0. "
                 "Confidence is weak: one seed and no interval.")


def _ctx(**result):
    return SimpleNamespace(result=result)


def _rules(issues):
    return [issue.rule for issue in issues]


def test_the_honest_prose_of_each_family_hides_nothing_and_states_its_outcome():
    for reasoning in (GS1_REASONING, SFT_REASONING):
        ctx = _ctx(summary="REHEARSAL at embedded scale (gs1 on embedded/tiny-arith): trained.", reasoning=reasoning,
                   verdict="refuted", confidence="weak")
        assert prose.PROSE_6(ctx) == [] and prose.PROSE_7(ctx) == []


def test_an_invisible_character_or_a_homoglyph_in_the_prose_is_named():
    for text in ("Verdict s\u200bupported (s\u200bupported).", "The claim is \u0455upported.",
                 "The claim is sup\u00adported.", "The claim is \uff53upported."):
        assert _rules(prose.PROSE_6(_ctx(summary=text, verdict="refuted"))) == ["PROSE-6"], text
    assert prose.PROSE_6(_ctx(summary="\u5b9f\u9a13 on embedded/tiny-arith: a \u2212 b.")) == []  # one script a word
    assert prose.PROSE_6(_ctx(summary="median step 35 \u00b5s, na\u00efve baseline.")) == []  # a unit, an accent


def test_the_confidence_and_margin_outcomes_the_prose_states_are_the_records():
    strong = GS1_REASONING.replace("Confidence is weak because of:", "Confidence is strong despite:")
    assert _rules(prose.PROSE_7(_ctx(reasoning=strong, confidence="weak"))) == ["PROSE-7"]
    clears = SFT_REASONING.replace(" misses ", " clears ")
    issues = prose.PROSE_7(_ctx(reasoning=clears, confidence="weak"))
    assert _rules(issues) == ["PROSE-7"] and "effect -0.004811 clears margin 0.01" in issues[0].message
    assert prose.PROSE_7(_ctx(reasoning="nll_gap effect +0.02 meets margin 0.01.", confidence="weak")) == []


def test_an_item_count_with_a_thousands_separator_is_the_evaluators_too():
    record = {"evaluation": {"version": 1, "evaluators": {"e": {"items": {"ids": [f"i{n}" for n in range(48)]}}},
                             "scores": []},
              "evidence": {"version": 1, "files": []},
              "summary": "Scored the final checkpoints on all 1,319 held-out items."}
    ctx = SimpleNamespace(result=record, evidence=EvidenceAccess(record), spec=None, spec_model=None, plan=None)
    assert _rules(spec_anchor.PROSE_4(ctx)) == ["PROSE-4"]
    record["summary"] = "Scored the final checkpoints on 48 held-out items."
    assert spec_anchor.PROSE_4(ctx) == []


def test_an_item_count_the_prose_states_in_other_words_is_the_evaluators_too():
    """'on 1319 GSM8K test items' and GS1's reasoning 'bound over 1319 items' (for 48) graded as honest before."""
    record = {"evaluation": {"version": 1, "evaluators": {"e": {"items": {"ids": [f"i{n}" for n in range(48)]}}},
                             "scores": []},
              "evidence": {"version": 1, "files": []}}
    ctx = SimpleNamespace(result=record, evidence=EvidenceAccess(record), spec=None, spec_model=None, plan=None)
    for said in ({"summary": "Scored the final checkpoints on 1319 GSM8K test items."},
                 {"reasoning": "The paired Hoeffding bound over 1319 items gives an effect. So it is."}):
        record.update({"summary": "", "reasoning": "", **said})
        assert _rules(spec_anchor.PROSE_4(ctx)) == ["PROSE-4"], said
    record.update(summary="Scored on 48 held-out items.", reasoning="The bound over 48 items gives an effect.")
    assert spec_anchor.PROSE_4(ctx) == []


MODEL = {"field": "model", "original": "Qwen/Qwen3.5-2B", "effective": "embedded/tiny-arith", "reason": "rehearsal: x"}


def test_the_prose_names_the_spec_model_only_as_the_one_replaced():
    """A summary saying every arm trained 'on Qwen/Qwen3.5-2B' where the run substituted embedded/tiny-arith graded
    as the honest record before PROSE-8; the honest wordings name it as what was replaced."""
    honest = ("REHEARSAL at embedded scale, not a result to submit (gs1 on embedded/tiny-arith instead of "
              "Qwen/Qwen3.5-2B; lora_rank 8): Trained every arm on embedded/tiny-arith (a rehearsal substitute for "
              "Qwen/Qwen3.5-2B) and scored the final checkpoints.")
    served = "Trained every arm on org/small (the service does not serve Qwen/Qwen3.5-2B)."
    for text in (honest, served):
        assert prose.PROSE_8(_ctx(summary=text, deviations=[MODEL])) == []
    claimed = honest.replace("on embedded/tiny-arith (a rehearsal substitute for Qwen/Qwen3.5-2B)", "on Qwen/Qwen3.5-2B")
    issues = prose.PROSE_8(_ctx(summary=claimed, deviations=[MODEL]))
    assert _rules(issues) == ["PROSE-8"] and "embedded/tiny-arith" in issues[0].message
    assert prose.PROSE_8(_ctx(summary=claimed, deviations=[])) == []  # no substitution: the spec's model ran


def test_a_stated_confidence_is_held_to_the_record_whichever_way_it_errs():
    """'weak' sorts after 'strong': each direction of a wrong confidence is named, and the message says what the prose
    claims against what the record holds; a record without a confidence states none."""
    for said, recorded in (("strong", "weak"), ("weak", "strong"), ("weak", None)):
        issues = prose.PROSE_7(_ctx(summary=f"Done. Confidence is {said} here.", confidence=recorded))
        assert _rules(issues) == ["PROSE-7"], (said, recorded)
        assert f"summary says confidence {said} (the record: {recorded})" in issues[0].message
    assert prose.PROSE_7(_ctx(summary="Done. Confidence is strong here.", confidence="strong")) == []


def test_an_effect_at_its_margin_may_be_said_to_meet_or_to_miss_it():
    """At a tie the criterion's own direction decides (an 'at least' criterion meets at the margin, a 'more than' one
    misses it: experiment/stats/decision.py), so the prose is held to neither reading; one past the tie it is."""
    for verb in ("meets", "misses"):
        assert prose.PROSE_7(_ctx(reasoning=f"nll_gap effect 0.01 {verb} margin 0.01.", confidence="weak")) == [], verb
    assert _rules(prose.PROSE_7(_ctx(reasoning="nll_gap effect 0.011 misses margin 0.01.", confidence="weak"))) \
        == ["PROSE-7"]
    assert _rules(prose.PROSE_7(_ctx(reasoning="nll_gap effect 0.009 meets margin 0.01.", confidence="weak"))) \
        == ["PROSE-7"]


def test_one_finding_names_at_most_four_wrong_outcomes_and_three_mixed_words():
    outcomes = " ".join(f"c{n} effect 0.{n} misses margin 0.0{n}." for n in range(1, 6))  # five wrong, each 0.n > 0.0n
    issues = prose.PROSE_7(_ctx(reasoning=outcomes, confidence="weak"))
    assert _rules(issues) == ["PROSE-7"]
    assert [f"effect 0.{n} misses margin 0.0{n}" in issues[0].message for n in range(1, 6)] == [True] * 4 + [False]
    words = "a\u0455b c\u0455d e\u0455f g\u0455h"  # four words mixing Latin and Cyrillic
    issues = prose.PROSE_6(_ctx(summary=words))
    assert _rules(issues) == ["PROSE-6"]
    assert [repr(w) in issues[0].message for w in words.split()] == [True, True, True, False]


def test_only_a_model_deviation_that_changed_the_model_holds_the_prose_to_the_replacement():
    """Other deviations (a field sorting before or after "model"), entries that are no deviation, a model deviation
    without an original, with an empty one, or one that kept the model: none limits how the prose names things."""
    text = "Trained every arm on Qwen/Qwen3.5-2B at 0.08 for 12 steps."
    others = [{"field": "learning_rate", "original": "0.08", "effective": "0.04"},
              {"field": "steps", "original": "12", "effective": "6"}, "model", None,
              {"field": "model", "effective": "Qwen/Qwen3.5-2B"},
              {"field": "model", "original": "", "effective": "Qwen/Qwen3.5-2B"},
              {"field": "model", "original": "Qwen/Qwen3.5-2B", "effective": "Qwen/Qwen3.5-2B"}]
    assert prose.PROSE_8(_ctx(summary=text, deviations=others)) == []
    issues = prose.PROSE_8(_ctx(summary=text, deviations=[*others, MODEL]))  # after the others, still read
    assert _rules(issues) == ["PROSE-8"]


def test_a_claimed_model_is_named_once_per_field_however_often_it_is_mentioned():
    claimed = "Trained on Qwen/Qwen3.5-2B; scored Qwen/Qwen3.5-2B's final checkpoint."
    issues = prose.PROSE_8(_ctx(summary=claimed, reasoning=claimed, deviations=[MODEL]))
    assert _rules(issues) == ["PROSE-8"]
    assert issues[0].message.count("names Qwen/Qwen3.5-2B as the model") == 2
    assert "summary names" in issues[0].message and "reasoning names" in issues[0].message


def test_latin_mixed_with_a_script_sorting_after_latin_is_named_and_that_script_alone_is_not():
    """Thai sorts after LATIN and MICRO by its Unicode name: a word mixing it with Latin letters hides text, a Thai
    word alone does not."""
    assert _rules(prose.PROSE_6(_ctx(summary="The claim is sup\u0e01orted."))) == ["PROSE-6"]
    assert prose.PROSE_6(_ctx(summary="\u0e20\u0e32\u0e29\u0e32 on embedded/tiny-arith.")) == []


def test_line_breaks_and_tabs_in_the_prose_hide_nothing():
    """Control characters (category Cc, which sorts before the invisible format characters' Cf) are layout."""
    assert prose.PROSE_6(_ctx(summary="Trained every arm.\nScored\tthe final checkpoints.\r\n")) == []


def test_a_wrong_outcome_is_quoted_as_the_prose_states_it():
    issues = prose.PROSE_7(_ctx(reasoning=SFT_REASONING.replace(" misses margin 0.01", " clears margin 0.01"),
                                confidence="weak"))
    assert [i.message for i in issues] == [
        "the prose states another outcome than the record: reasoning says effect -0.004811 clears margin 0.01"]


def test_a_replaced_model_is_held_to_the_prose_whichever_way_its_name_sorts_against_the_replacement():
    """'org/large' sorts after 'embedded/tiny-arith' where 'Qwen/Qwen3.5-2B' sorts before it."""
    model = {**MODEL, "original": "org/large"}
    issues = prose.PROSE_8(_ctx(summary="Trained every arm on org/large.", deviations=[model]))
    assert _rules(issues) == ["PROSE-8"]
    assert prose.PROSE_8(_ctx(summary="Trained on embedded/tiny-arith instead of org/large.", deviations=[model])) == []


# ---------------------------------------------------------------- PROSE-9


def _prose9(reasoning, method="paired_hoeffding", arms=None):
    ctx = _ctx(reasoning=reasoning, decision={"method": method}, metrics={"arms": arms or {}})
    return [issue.message for issue in prose.PROSE_9(ctx)]


PREFIX = "the prose states another method, LR or unit than the record: "


def test_another_interval_method_is_named_only_against_a_paired_hoeffding_decision():
    text = "A paired t-test gives an effect of +0.02."
    assert _prose9(text) == [PREFIX + "reasoning names 't-test', the decision used the paired Hoeffding bound"]
    for method in ("best_lr_threshold", "threshold", None):  # sorting before and after paired_hoeffding
        assert _prose9(text, method=method) == []


def test_a_stated_lr_is_the_arms_selected_lr_named_as_stated():
    arms = {"trimuon": {"selected_lr": 0.08}}
    assert _prose9("NLL trimuon 12.9 (LR 0.08).", arms=arms) == []
    assert _prose9("NLL trimuon 12.9 (LR 0.16).", arms=arms) == [  # twice the selected: no multiple agrees
        PREFIX + "reasoning gives trimuon LR 0.16 (its selected_lr: 0.08)"]
    assert _prose9("grid-edge LR selected for trimuon (0.04)", arms=arms) == [
        PREFIX + "reasoning gives trimuon LR 0.04 (its selected_lr: 0.08)"]


def test_the_lr_tolerance_is_one_part_in_a_million_million_of_the_lr_and_at_least_of_one():
    """|stated - selected| may be 1e-12 * max(1, |selected|), no more: exactly that much agrees."""
    assert _prose9("NLL a 1.0 (LR 1e-12).", arms={"a": {"selected_lr": 0.0}}) == []
    assert _prose9("NLL a 1.0 (LR 1.5e-12).", arms={"a": {"selected_lr": 0.0}}) != []
    assert _prose9("NLL a 1.0 (LR 1000.0000000005).", arms={"a": {"selected_lr": 1000.0}}) == []
    assert _prose9("NLL a 1.0 (LR 1000.000000002).", arms={"a": {"selected_lr": 1000.0}}) != []


def test_an_optimizer_step_time_in_any_unit_but_seconds_is_named():
    for unit in ("ms", "us", "\u00b5s"):
        assert _prose9(f"median optimizer step trimuon 0.0993{unit}, dimuon 0.1s.") == [
            PREFIX + f"reasoning states an optimizer-step time in {', '.join(sorted({unit, 's'}))}, the record in seconds"]
    assert _prose9("median optimizer step trimuon 0.0993s, dimuon 0.1s.") == []


def test_the_finding_names_four_wrong_statements_at_most():
    arms = {name: {"selected_lr": 0.08} for name in "abcde"}
    text = " ".join(f"NLL {name} 1.0 (LR 0.5)." for name in "abcde")
    assert _prose9(text, arms=arms) == [
        PREFIX + "; ".join(f"reasoning gives {name} LR 0.5 (its selected_lr: 0.08)" for name in "abcd")]
