"""Greedy exact-match evaluation of math problems through a sampling client.

The prompt, stop sequence and grader are the cookbook math env's (``MathEnv``), so the
evaluated behaviour is the trained behaviour; decoding is greedy (temperature 0). Every
item yields one row, invalid outputs included (they score 0).
"""

from __future__ import annotations

import asyncio
import inspect
from pathlib import Path
from typing import Any, Callable, Sequence

import tinker
import tinker_cookbook
from tinker_cookbook import renderers
from tinker_cookbook.recipes.math_rl import math_env, math_grading

from experiment.data import TaskItem
from experiment.rl_loop import make_env, prompt_tokens

PARSER_DESCRIPTION = (
    "renderer.parse_response -> get_text_content -> last \\boxed{} (math_grading.extract_boxed) "
    "graded by MathEnv.check_answer (sympy grade_answer, 1 s timeout); no \\boxed{} = incorrect"
)


def evaluator_code_files() -> list[Path]:
    """The code whose bytes define this evaluator (hashed into code_sha256)."""
    cookbook = Path(tinker_cookbook.__file__).parent
    return [
        Path(__file__),
        Path(inspect.getfile(math_env)),
        Path(inspect.getfile(math_grading)),
        cookbook / "rl" / "problem_env.py",
    ]


def prompt_template(few_shot: bool) -> str:
    prefix = "cookbook MathEnv.standard_fewshot_prefix() then " if few_shot else ""
    return prefix + "user: {question}" + math_env.MathEnv.question_suffix()


async def greedy_predictions(
    sampling_client: tinker.SamplingClient,
    renderer: renderers.Renderer,
    problems: Sequence[TaskItem],
    max_tokens: int,
    few_shot: bool,
    concurrency: int = 64,
    on_progress: Callable[[int, int], None] | None = None,
) -> list[dict[str, Any]]:
    """One row per problem: prediction text, reference, correct (0/1), stop reason."""
    semaphore = asyncio.Semaphore(concurrency)
    done = 0

    async def predict(problem: TaskItem) -> dict[str, Any]:
        nonlocal done
        env = make_env(problem, renderer, few_shot)
        async with semaphore:
            result = await sampling_client.sample(
                prompt=prompt_tokens(problem, renderer, few_shot),
                num_samples=1,
                sampling_params=tinker.SamplingParams(
                    stop=env.stop_condition, max_tokens=max_tokens, temperature=0.0
                ),
            )
        sequence = result.sequences[0]
        message, _ = renderer.parse_response(sequence.tokens)
        content = renderers.get_text_content(message)
        correct = await asyncio.to_thread(env.check_answer, content)
        done += 1
        if on_progress is not None:
            on_progress(done, len(problems))
        return {
            "item_id": problem.id,
            "prediction": content,
            "reference": problem.answer,
            "correct": 1.0 if correct else 0.0,
            "stop_reason": str(sequence.stop_reason),
            "n_tokens": len(sequence.tokens),
        }

    return list(await asyncio.gather(*[predict(p) for p in problems]))
