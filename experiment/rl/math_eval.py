"""Greedy exact-match evaluation of math problems through a sampling client.

The prompt, stop sequence and grader are the cookbook math env's (``MathEnv``), so the
evaluated behaviour is the trained behaviour; decoding is greedy (temperature 0). Every
item yields one row, invalid outputs included (they score 0).

The evaluator's code hash (``evaluator_code_files``) covers the grader, the prompt construction
(``experiment/rl/loop.py`` make_env/prompt_tokens, the item loader) and the renderer (its module
and the tokenizer files it encodes with). Grading runs under a timeout; a timeout (after one
retry with a longer limit) or a grader error is recorded in the item's row (``grading``), never
silently scored as a plain wrong answer.
"""

from __future__ import annotations

import asyncio
import inspect
from concurrent.futures import ThreadPoolExecutor
from concurrent.futures import TimeoutError as FuturesTimeout
from pathlib import Path
from typing import Any, Callable, Sequence

import tinker
import tinker_cookbook
from tinker_cookbook import renderers
from tinker_cookbook.recipes.math_rl import math_env, math_grading

from experiment.contract.evaluators import RL_FEW_SHOT_PREFIX, RL_PARSER
from experiment.data import TaskItem
from experiment.rl.loop import make_env, prompt_tokens
from experiment.service.capacity import answered

GRADING_TIMEOUT_SECONDS = 1.0  # the cookbook MathEnv's own limit
GRADING_RETRY_TIMEOUT_SECONDS = 10.0  # one retry before a timeout is recorded
PARSER_DESCRIPTION = RL_PARSER  # the evaluator the spec fixes: experiment/contract/evaluators.py
TOKENIZER_FILES = ("tokenizer.json", "tokenizer_config.json", "special_tokens_map.json", "vocab.json",
                   "merges.txt", "chat_template.jinja")


def evaluator_code_files(renderer: renderers.Renderer | None = None) -> dict[str, Path]:
    """The code whose bytes define this evaluator (hashed into code_sha256), by stable name.

    The grader and parser, the prompt construction (env, prompt tokens, item loader) and, given the
    renderer, its module(s) and the local tokenizer files it encodes with."""
    cookbook = Path(tinker_cookbook.__file__).parent
    project = Path(__file__).resolve().parents[2]
    files = {
        "experiment/rl/math_eval.py": Path(__file__),
        "experiment/rl/loop.py": project / "experiment" / "rl" / "loop.py",  # make_env, prompt_tokens
        "experiment/data.py": project / "experiment" / "data.py",  # the evaluated items
        "tinker_cookbook/recipes/math_rl/math_env.py": Path(inspect.getfile(math_env)),
        "tinker_cookbook/recipes/math_rl/math_grading.py": Path(inspect.getfile(math_grading)),
        "tinker_cookbook/rl/problem_env.py": cookbook / "rl" / "problem_env.py",
        "tinker_cookbook/renderers/__init__.py": Path(inspect.getfile(renderers)),
        "tinker_cookbook/renderers/base.py": cookbook / "renderers" / "base.py",
    }
    if renderer is not None:
        for cls in type(renderer).__mro__:
            module = inspect.getmodule(cls)
            path = Path(getattr(module, "__file__", "") or "")
            if path.is_file() and cookbook in path.parents:
                files[f"tinker_cookbook/{path.relative_to(cookbook).as_posix()}"] = path
        tokenizer_dir = Path(str(getattr(getattr(renderer, "tokenizer", None), "name_or_path", "") or ""))
        if tokenizer_dir.is_dir():
            for name in TOKENIZER_FILES:
                if (tokenizer_dir / name).is_file():
                    files[f"tokenizer/{name}"] = tokenizer_dir / name
    return {name: path for name, path in files.items() if path.is_file()}


def _grade_once(grader: Callable[[str, str], bool], given: str, reference: str, timeout: float) -> bool | None:
    """grader(given, reference) in a worker thread; None when it did not finish within `timeout`."""
    executor = ThreadPoolExecutor(max_workers=1)
    try:
        return bool(executor.submit(grader, given, reference).result(timeout=timeout))
    except FuturesTimeout:
        return None
    finally:
        executor.shutdown(wait=False, cancel_futures=True)


def grade_answer(content: str, reference: str, grader: Callable[[str, str], bool] | None = None) -> dict[str, Any]:
    """{"correct": bool, "grading": graded | no_boxed | timeout | grader_error[, "grading_error"]}.

    The cookbook's safe_grade turns a timeout or an exception into a silent False; here each is
    named in the result (and so in the prediction row)."""
    grader = grader or math_grading.grade_answer
    try:
        given = math_grading.extract_boxed(content)
    except ValueError:
        return {"correct": False, "grading": "no_boxed"}
    try:
        for timeout in (GRADING_TIMEOUT_SECONDS, GRADING_RETRY_TIMEOUT_SECONDS):
            verdict = _grade_once(grader, given, reference, timeout)
            if verdict is not None:
                return {"correct": verdict, "grading": "graded"}
    except Exception as err:  # noqa: BLE001 - a grader crash is recorded in the row, not raised
        return {"correct": False, "grading": "grader_error", "grading_error": f"{type(err).__name__}: {err}"[:300]}
    return {"correct": False, "grading": "timeout",
            "grading_error": f"grader did not finish in {GRADING_TIMEOUT_SECONDS:g} s nor on retry in "
                             f"{GRADING_RETRY_TIMEOUT_SECONDS:g} s"}


def prompt_template(few_shot: bool) -> str:
    prefix = RL_FEW_SHOT_PREFIX if few_shot else ""
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
    """One row per problem: prediction text, reference, correct (0/1), grading status, stop reason."""
    semaphore = asyncio.Semaphore(concurrency)
    done = 0

    async def predict(problem: TaskItem) -> dict[str, Any]:
        nonlocal done
        env = make_env(problem, renderer, few_shot)
        async with semaphore:
            result = await answered(sampling_client.sample(
                prompt=prompt_tokens(problem, renderer, few_shot),
                num_samples=1,
                sampling_params=tinker.SamplingParams(
                    stop=env.stop_condition, max_tokens=max_tokens, temperature=0.0
                ),
            ))
        sequence = result.sequences[0]
        message, _ = renderer.parse_response(sequence.tokens)
        content = renderers.get_text_content(message)
        graded = await asyncio.to_thread(grade_answer, content, env.get_reference_answer())
        done += 1
        if on_progress is not None:
            on_progress(done, len(problems))
        return {
            "item_id": problem.id,
            "prediction": content,
            "reference": problem.answer,
            "correct": 1.0 if graded["correct"] else 0.0,
            "grading": graded["grading"],
            **({"grading_error": graded["grading_error"]} if "grading_error" in graded else {}),
            "stop_reason": str(sequence.stop_reason),
            "n_tokens": len(sequence.tokens),
        }

    return list(await asyncio.gather(*[predict(p) for p in problems]))
