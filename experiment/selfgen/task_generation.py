"""Self-generated math tasks: prompt the generator, parse, run solve() in the sandbox, filter.

Spec selfgen_tasks_vs_gsm8k, "Generation (custom, client-side)":
  - the generator is sampled through the sampling client at T=1.0 with one fixed instruction;
  - each completion is parsed into problem text and a `solve()` function; solve() runs in the
    sandbox (experiment/selfgen/sandbox.py) and its integer return value is the label;
  - filters, in the spec's order (the first that fails decides the disposition):
      1. parse and execution succeed          (no solve() to run, or a sandbox failure: execution_error; where
                                              no problem text could be parsed, the raw text is the prompt, since
                                              every candidate row has one, GA-3)
      2. the problem text does not contain the answer
      3. the problem is min_words..max_words words long
      4. no normalized exact match with any evaluation question
      5. the base model solves it from text alone in keep_band of filter_samples samples at the
         spec's max_tokens (the cookbook math env, the same env and reward as training);
    and, before filter 5 (this pipeline's own, issue 45): the generator's label check
    (experiment/selfgen/text_label_check.py) holds solve() against the text it claims to solve (the asked
    object is one the text counts, the program's numbers are the text's, its arithmetic adds like objects,
    the label is a whole number), so ill-posed texts are rejected before training ("label check: ...");
  - the first n_accept accepted candidates, in generation order, form the training set.
A batch's candidates are screened (filters 1-4) one after another in a worker thread while filter 5's
rollouts of the survivors screened so far are sampled, so the service is not idle through the sandbox;
each survivor's samples are drawn from the seeds it has in the batch, so the outcome is the same.

Every candidate is kept, in generation order, as one row:
    {"item_id", "index", "prompt", "answer", "disposition", "code", "error", "completion" (the raw
     text, kept only when parsing failed), "word_count", "base_solved", "execution_seconds"}
with disposition accepted | rejected | execution_error (GA-3).
"""

from __future__ import annotations

import asyncio
import re
import time
import unicodedata
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from experiment.data import TaskItem
from experiment.service.capacity import answered
from experiment.contract.generation import GenerationSettings
from experiment.selfgen import text_label_check
from experiment.stats.generation_audit import ACCEPTED, EXECUTION_ERROR, REJECTED, normalize_prompt

if TYPE_CHECKING:  # the filters' constants and text rules (read by the grader) load no SDK and no torch
    import tinker

    from experiment.rl.loop import RLArmSettings
    from experiment.selfgen.sandbox import Sandbox

ITEM_ID_FORMAT = "selfgen-{index:06d}"
MAX_KEPT_COMPLETION_CHARS = 2000
LABEL_CHECK = "label check"  # the rejection reason's prefix of the generator's own well-posedness filter


# ---- parsing ----

@dataclass(frozen=True)
class ParsedCompletion:
    problem: str | None
    code: str | None
    error: str | None  # why it could not be parsed; None when both parts were found


_FENCE = re.compile(r"```[ \t]*(?:python|py|python3)?[ \t]*\n(.*?)```", re.DOTALL | re.IGNORECASE)
_DEF_SOLVE = re.compile(r"^def solve\(\s*\)", re.MULTILINE)
_LEADING_LABEL = re.compile(r"^\s*(?:\*\*|#+\s*)?(?:word problem|math problem|problem|question)\s*(?:\*\*)?\s*:\s*(?:\*\*)?\s*",
                            re.IGNORECASE)
_TRAILING_LABEL = re.compile(r"\n[^\n]*(?:solution|function|python|code|solve\(\))[^\n]*:\s*(?:\*\*)?\s*$", re.IGNORECASE)


def parse_completion(text: str) -> ParsedCompletion:
    """Problem text, then `def solve():` (fenced or not). Nothing after the code is problem text."""
    fenced = next((m for m in _FENCE.finditer(text) if _DEF_SOLVE.search(m.group(1))), None)
    if fenced is not None:
        code, before = fenced.group(1), text[: fenced.start()]
    else:
        match = _DEF_SOLVE.search(text)
        if match is None:
            return ParsedCompletion(None, None, "parse: no 'def solve():' at the start of a line")
        code, before = text[match.start():], text[: match.start()]
    problem = _TRAILING_LABEL.sub("", before.strip()).strip()
    problem = _LEADING_LABEL.sub("", problem).strip()
    if not problem:
        return ParsedCompletion(None, code.strip() or None, "parse: no problem text before the code")
    return ParsedCompletion(problem, code.strip("\n") + "\n", None)


# ---- filters ----

def word_count(text: str) -> int:
    return len(text.split())


def contains_answer(problem: str, answer: int) -> bool:
    """True when the answer appears in the text as a standalone number (1,234 counts as 1234)."""
    digits = str(abs(answer))
    flattened = re.sub(r"(?<=\d),(?=\d{3}\b)", "", unicodedata.normalize("NFKC", problem))
    return re.search(rf"(?<![\d.]){re.escape(digits)}(?!\d)(?!\.\d)", flattened) is not None


def filter_settings(settings: GenerationSettings, renderer_name: str, few_shot: bool) -> RLArmSettings:
    """The math-env rollout regime of the solvability filter (same env and reward as training)."""
    from experiment.rl.loop import RLArmSettings

    return RLArmSettings(
        name="generation_filter", advantage="group_mean", group_size=settings.filter_samples,
        groups_per_batch=1, learning_rate=0.0, max_tokens=settings.filter_max_tokens,
        temperature=1.0, seed=settings.seed, renderer_name=renderer_name, few_shot=few_shot,
    )


async def base_solve_counts(sampler: tinker.SamplingClient, renderer: Any, tasks: Sequence[TaskItem],
                            arm: RLArmSettings, base_seed: int, first_index: int = 0) -> list[int]:
    """Per task: how many of arm.group_size math-env samples earn the correct-answer reward
    (`first_index`: the tasks are a batch's survivors first_index.., collect_rollouts).

    The env's reward is correct_answer + format_coef * (format_ok - 1): 0.9..1 when correct,
    at most 0 when not, so "solved" is reward > 0.5."""
    from experiment.rl.loop import collect_rollouts

    groups = await collect_rollouts(sampler, renderer, tasks, arm, base_seed, first_index)
    return [sum(1 for reward in group.get_total_rewards() if reward > 0.5) for group in groups]


# ---- the generation loop ----

@dataclass
class GenerationMeasurements:
    candidates: int = 0
    generation_seconds: float = 0.0  # sampling the generator
    execution_seconds: float = 0.0  # sandbox calls
    # base-model solvability rollouts, past the batch's screening (they are sampled beside it), so that the
    # three add up to the generation's wall time
    filter_seconds: float = 0.0
    filter_rollouts: int = 0

    def as_dict(self) -> dict[str, Any]:
        return {key: round(value, 4) if isinstance(value, float) else value for key, value in vars(self).items()}


@dataclass
class TaskGenerator:
    """Generates candidates in order until n accepted; resumable (the audit's repair tops up)."""

    settings: GenerationSettings
    generator: tinker.SamplingClient
    filter_sampler: tinker.SamplingClient
    renderer: Any
    evaluation_prompts: dict[str, str]  # normalized prompt -> evaluation item id
    sandbox: Sandbox
    filter_arm: RLArmSettings
    on_progress: Callable[[dict[str, Any]], None] | None = None
    generator_renderer: Any = None  # the generator's own renderer when its tokenizer differs
    candidates: list[dict[str, Any]] = field(default_factory=list)
    measurements: GenerationMeasurements = field(default_factory=GenerationMeasurements)
    batches: int = 0

    def accepted(self) -> list[dict[str, Any]]:
        return [row for row in self.candidates if row["disposition"] == ACCEPTED]

    def training_tasks(self) -> list[TaskItem]:
        """The first n_accept accepted candidates, in generation order."""
        rows = self.accepted()[: self.settings.n_accept]
        return [TaskItem(row["item_id"], row["prompt"], row["answer"]) for row in rows]

    def counts(self) -> dict[str, int]:
        dispositions = [row["disposition"] for row in self.candidates]
        return {"generated": len(dispositions), "accepted": dispositions.count(ACCEPTED),
                "rejected": dispositions.count(REJECTED), "execution_errors": dispositions.count(EXECUTION_ERROR)}

    async def generate_until(self, n_accept: int) -> bool:
        """Generate batches until n_accept candidates are accepted or max_candidates is reached."""
        while len(self.accepted()) < n_accept and len(self.candidates) < self.settings.max_candidates:
            room = self.settings.max_candidates - len(self.candidates)
            await self._one_batch(min(self.settings.batch_size, room), n_accept)
        return len(self.accepted()) >= n_accept

    async def _one_batch(self, size: int, n_accept: int) -> None:
        started = time.perf_counter()
        completions = await self._sample(size)
        self.measurements.generation_seconds += time.perf_counter() - started
        rows, survivors, solving = await self._screen_while_filtering(completions)
        if survivors:
            started = time.perf_counter()
            solved = [count for counts in await asyncio.gather(*solving) for count in counts]
            self.measurements.filter_seconds += time.perf_counter() - started
            self.measurements.filter_rollouts += len(survivors) * self.filter_arm.group_size
            low, high = self.settings.keep_band
            for row, count in zip(survivors, solved):
                row["base_solved"] = count
                if low <= count <= high:
                    row["disposition"] = ACCEPTED
                else:
                    row["disposition"] = REJECTED
                    row["error"] = (f"filter 5: the base model solved it in {count} of "
                                    f"{self.settings.filter_samples} samples (kept: {low}-{high})")
        for row in rows:  # candidates past the n_accept-th acceptance were generated too: keep them
            self.candidates.append(row)
        self.batches += 1
        self.measurements.candidates = len(self.candidates)
        if self.on_progress is not None:
            self.on_progress({**self.counts(), "target_accepted": n_accept})

    async def _screen_while_filtering(self, completions: list[str]
                                      ) -> tuple[list[dict[str, Any]], list[dict[str, Any]], list[asyncio.Task]]:
        """Filters 1-4 of each completion in order, in a worker thread (the sandbox), while the filter's
        rollouts of the survivors screened so far are sampled: (rows, survivors, one task per survivor
        counting its base-model solves). Survivor k's rollouts are drawn from the seeds survivor k of
        the batch's list gets (base_solve_counts' first_index), so what is recorded is what screening
        every completion first and then rolling out every survivor gives."""
        seed = self.settings.seed * 1_000_003 + self.batches * 10_007
        rows: list[dict[str, Any]] = []
        survivors: list[dict[str, Any]] = []
        solving: list[asyncio.Task] = []
        try:
            for offset, text in enumerate(completions):
                row = await asyncio.to_thread(self._screen, len(self.candidates) + offset, text)
                rows.append(row)
                if row["disposition"] is None:
                    task = TaskItem(row["item_id"], row["prompt"], row["answer"])
                    solving.append(asyncio.ensure_future(base_solve_counts(
                        self.filter_sampler, self.renderer, [task], self.filter_arm, seed, first_index=len(survivors))))
                    survivors.append(row)
        except BaseException:  # the sandbox failed (or the run stops): no rollout is left running
            for pending in solving:
                pending.cancel()
            await asyncio.gather(*solving, return_exceptions=True)
            raise
        return rows, survivors, solving

    async def _sample(self, size: int) -> list[str]:
        import tinker
        from tinker_cookbook import renderers

        renderer = self.generator_renderer or self.renderer
        prompt = renderer.build_generation_prompt([{"role": "user", "content": self.settings.instruction}])
        result = await answered(self.generator.sample(
            prompt=prompt, num_samples=size,
            sampling_params=tinker.SamplingParams(
                stop=renderer.get_stop_sequences(), max_tokens=self.settings.generation_max_tokens,
                # the service draws row i from seed + i: one distinct seed per candidate index
                temperature=self.settings.temperature, seed=self.settings.seed * 1_000_003 + len(self.candidates),
            ),
        ))
        texts = []
        for sequence in result.sequences:
            message, _ = renderer.parse_response(sequence.tokens)
            texts.append(renderers.get_text_content(message))
        return texts

    def _screen(self, index: int, completion: str) -> dict[str, Any]:
        """Filters 1-4 and the label check (everything but the base-model solve rate); disposition None = survived."""
        parsed = parse_completion(completion)
        row: dict[str, Any] = {
            "item_id": ITEM_ID_FORMAT.format(index=index), "index": index,
            "prompt": parsed.problem or completion[:MAX_KEPT_COMPLETION_CHARS],
            "answer": None, "disposition": None, "code": parsed.code, "error": None,
            # the raw text only where parsing failed (prompt + code carry it otherwise; keeps the file small)
            "completion": completion[:MAX_KEPT_COMPLETION_CHARS] if parsed.error else None,
            "word_count": word_count(parsed.problem) if parsed.problem else 0, "base_solved": None,
            "execution_seconds": None,
        }
        if parsed.error:  # no program to run: its execution failed (GA-3 asks an answer of every other candidate)
            row.update(disposition=EXECUTION_ERROR, error=f"filter 1: {parsed.error}")
            return row
        result = self.sandbox.run(parsed.code)
        self.measurements.execution_seconds += result.seconds
        row["execution_seconds"] = result.seconds
        if not result.ok:
            row.update(disposition=EXECUTION_ERROR, error=f"filter 1: {result.error_kind}: {result.error}")
            return row
        row["answer"] = str(result.value)
        if contains_answer(parsed.problem, result.value):
            row.update(disposition=REJECTED, error="filter 2: the problem text contains the answer")
        elif not self.settings.min_words <= row["word_count"] <= self.settings.max_words:
            row.update(disposition=REJECTED, error=f"filter 3: {row['word_count']} words "
                                                  f"(kept: {self.settings.min_words}-{self.settings.max_words})")
        elif normalize_prompt(parsed.problem) in self.evaluation_prompts:
            match = self.evaluation_prompts[normalize_prompt(parsed.problem)]
            row.update(disposition=REJECTED, error=f"filter 4: normalized exact match with evaluation item {match}")
        elif self.settings.label_checked and (unclear := text_label_check.problems(parsed.problem, parsed.code,
                                                                                  result.value)):
            row.update(disposition=REJECTED, error=f"{LABEL_CHECK}: the problem text does not determine the label: "
                                                   f"{'; '.join(unclear)}")
        return row


def evaluation_prompt_index(evaluation: Sequence[TaskItem]) -> dict[str, str]:
    """normalized question -> the first evaluation item id carrying it."""
    index: dict[str, str] = {}
    for item in evaluation:
        index.setdefault(normalize_prompt(item.question), item.id)
    return index

