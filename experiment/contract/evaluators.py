"""The evaluator a spec fixes for each training type: what the pipeline freezes and what the grader holds it to.

An RL spec's endpoint is exact-match accuracy under greedy decoding (temperature 0) at the rollout's answer
length, with the cookbook math env's prompt (its few-shot prefix where the rollout asks for it) and its boxed-answer
grader. An SFT spec's endpoint is the held-out NLL of the assistant tokens, scored teacher-forced (nothing is
sampled) at the spec's sequence length. The evaluation steps (experiment/rl/steps/evaluation.py,
experiment/sft/steps/evaluation.py) build their provenance from these; the grader (experiment/grading/spec_anchor.py)
compares a record's provenance with them and recomputes the code hash from the retained code.
"""

from __future__ import annotations

# ---- RL: greedy exact match (experiment/rl/math_eval.py) ----

RL_PARSER = (
    "renderer.parse_response -> get_text_content -> last \\boxed{} (math_grading.extract_boxed) "
    "graded by the MathEnv grader (sympy grade_answer) under a 1 s timeout, retried once with 10 s; "
    "no \\boxed{} = incorrect (grading no_boxed); a grading timeout or grader error scores 0 and is "
    "recorded in the row (grading timeout | grader_error)"
)
# the cookbook MathEnv's question suffix (tinker_cookbook.recipes.math_rl.math_env.MathEnv.question_suffix();
# tests/unit/test_evaluator_contract.py holds the two together)
RL_QUESTION_SUFFIX = " Write your answer in \\boxed{} format."
RL_FEW_SHOT_PREFIX = "cookbook MathEnv.standard_fewshot_prefix() then "
RL_TEMPERATURE = 0.0  # greedy
# the project files the RL evaluator's code hash covers (besides the cookbook's and the tokenizer's)
RL_EVALUATOR_PROJECT_CODE = ("experiment/rl/math_eval.py", "experiment/rl/loop.py", "experiment/data.py")
# a project file's name in records made before it moved (issue 49 put the data readers below the contract): such a
# record's code manifest and retained code name it there
RL_EVALUATOR_FORMER_NAMES = {"experiment/data.py": "experiment/run/data.py"}
# the cookbook files it always covers (the grader, the env, the renderer's base), by the name the manifest gives them
RL_EVALUATOR_COOKBOOK_CODE = ("tinker_cookbook/recipes/math_rl/math_env.py", "tinker_cookbook/recipes/math_rl/math_grading.py",
                              "tinker_cookbook/rl/problem_env.py", "tinker_cookbook/renderers/__init__.py",
                              "tinker_cookbook/renderers/base.py")
RL_DECODING_KEYS = ("temperature", "max_tokens", "stop")  # nothing else is set on the sampler


def rl_prompt_template(few_shot: bool) -> str:
    return (RL_FEW_SHOT_PREFIX if few_shot else "") + "user: {question}" + RL_QUESTION_SUFFIX


# ---- SFT: held-out NLL, teacher-forced (experiment/sft/loss_eval.py) ----

SFT_EVALUATOR_CODE = ("experiment/sft/loss_eval.py", "experiment/sft/loop.py")
SFT_PARSER = "NLL = -logprob summed over tokens with loss weight > 0, totals per example (experiment/sft/loss_eval.py)"
TEACHER_FORCED = {"temperature": 0.0, "max_tokens": 0, "stop": []}  # scored by forward(): nothing is sampled


def sft_prompt_template(renderer_name: str, max_seq_len: int) -> str:
    return (f"renderer {renderer_name}; conversation_to_datum(train_on_what=all_assistant_messages, "
            f"reduction=none, max_length={max_seq_len}); forward(..., cross_entropy)")


def sft_parser(aggregation: str) -> str:
    return f"{SFT_PARSER}; aggregation {aggregation}"
