"""Parsing, the spec's filters in order, and generation through the stock SDK against the real
embedded server (the generator's completions, the real sandbox, the base model's math-env rollouts)."""

from __future__ import annotations

import json
import os
import threading

import pytest

from experiment.contract.generation import generation_settings
from experiment.contract.rehearsal import EMBEDDED_GENERATOR

from experiment.contract.spec import load_spec
from experiment.data import TaskItem
from experiment.selfgen.task_generation import (
    ACCEPTED,
    EXECUTION_ERROR,
    REJECTED,
    GenerationSettings,
    TaskGenerator,
    contains_answer,
    evaluation_prompt_index,
    filter_settings,
    normalize_prompt,
    parse_completion,
)
from suite import SELFGEN_SPEC

needs_sandbox = pytest.mark.skipif(os.name != "posix" or os.geteuid() != 0,
                                   reason="the sandbox refuses to run without privilege drop (root)")

PROBLEM = ("Maria has 37 stickers in her album. Her brother gives her 45 more stickers, and then she buys "
           "a pack with 12 stickers. How many stickers does Maria have now?")


# ---- settings from the spec ----

def test_the_selfgen_spec_prose_gives_every_generation_setting():
    settings = generation_settings(load_spec(SELFGEN_SPEC))
    assert settings.instruction == ("Write one grade-school math word problem with a single integer answer, "
                                    "then a short Python function solve() that returns the answer.")
    assert settings.generator_model == "Qwen/Qwen3.5-2B" and settings.solver_model == "Qwen/Qwen3.5-397B-A17B"
    assert (settings.temperature, settings.sandbox_timeout_s) == (1.0, 2.0)
    assert (settings.min_words, settings.max_words) == (20, 120)
    assert settings.keep_band == (1, 6) and settings.filter_samples == 8 and settings.filter_max_tokens == 512
    assert settings.n_accept == 640


# ---- parsing ----

def test_parse_plain_problem_then_code():
    parsed = parse_completion(f"{PROBLEM}\n\ndef solve():\n    return 37 + 45 + 12\n")
    assert parsed.error is None and parsed.problem == PROBLEM
    assert parsed.code == "def solve():\n    return 37 + 45 + 12\n"


def test_parse_labelled_problem_and_fenced_code_with_trailing_prose():
    text = (f"**Problem:** {PROBLEM}\n\nHere is the Python function:\n```python\ndef solve():\n"
            "    total = 37 + 45\n    return total + 12\n```\nThe answer is 94.")
    parsed = parse_completion(text)
    assert parsed.error is None and parsed.problem == PROBLEM
    assert parsed.code == "def solve():\n    total = 37 + 45\n    return total + 12\n"


@pytest.mark.parametrize("text, reason", [
    ("Tom has 3 apples. How many?\n\\boxed{3}", "no 'def solve():'"),
    ("def solve():\n    return 4\n", "no problem text"),
    ("Tom has 3 apples.\n    def solve():\n        return 3", "no 'def solve():'"),  # not at a line start
    ("Tom has 3 apples.\ndef solve(x):\n    return x", "no 'def solve():'"),  # solve must take no arguments
])
def test_parse_failures_say_why(text, reason):
    parsed = parse_completion(text)
    assert parsed.problem is None and reason in parsed.error


# ---- filters ----

@pytest.mark.parametrize("text, answer, expected", [
    ("Tom has 94 apples.", 94, True),
    ("Tom has 1,234 apples.", 1234, True),
    ("Tom has 194 apples and 940 pears.", 94, False),
    ("It costs 9.4 dollars.", 94, False),
    ("It costs 94.5 dollars.", 94, False),
    ("The temperature fell to -7 degrees.", -7, True),
    ("Tom has 12 apples.", 94, False),
])
def test_contains_answer_matches_standalone_numbers_only(text, answer, expected):
    assert contains_answer(text, answer) is expected


def test_normalized_prompt_is_nfkc_casefold_whitespace():
    assert normalize_prompt("  Tom\u00a0HAS\t３ apples.\n") == normalize_prompt("tom has 3 APPLES.")


def _settings(**changes) -> GenerationSettings:
    base = {"instruction": "Write one problem.", "generator_model": "embedded/tiny-arith", "generator_path": None,
            "solver_model": "embedded/tiny-arith", "solver_path": None, "n_accept": 2, "filter_samples": 8,
            "keep_band": (1, 6), "min_words": 20, "max_words": 120, "filter_max_tokens": 16,
            "generation_max_tokens": 48, "solver_max_tokens": 16, "temperature": 1.0, "sandbox_timeout_s": 2.0,
            "max_candidates": 8, "batch_size": 4}
    base.update(changes)
    return GenerationSettings(**base)


@pytest.fixture(scope="module")
def sandbox():
    from experiment.selfgen.sandbox import Sandbox

    if os.name != "posix" or os.geteuid() != 0:
        pytest.skip("the sandbox refuses to run without privilege drop (root)")
    return Sandbox()


def _screener(sandbox, evaluation=(), **settings) -> TaskGenerator:
    """A generator used only for filters 1-4 (its samplers are never called by _screen)."""
    return TaskGenerator(settings=_settings(**settings), generator=None, filter_sampler=None, renderer=None,
                         evaluation_prompts=evaluation_prompt_index(list(evaluation)), sandbox=sandbox,
                         filter_arm=None)


@needs_sandbox
def test_filters_1_to_4_in_the_spec_order(sandbox):
    held_out = TaskItem("arith-test-000001", PROBLEM.upper(), "94")
    screen = _screener(sandbox, [held_out])._screen
    code = "\n\ndef solve():\n    return 37 + 45 + 12\n"
    cases = {
        "unparsable": ("Tom has 3 apples.", EXECUTION_ERROR, "filter 1: parse"),
        "crashes": (PROBLEM + "\n\ndef solve():\n    return 1 // 0\n", EXECUTION_ERROR, "filter 1: exception"),
        "returns a float": (PROBLEM + "\n\ndef solve():\n    return 94.0\n", EXECUTION_ERROR, "filter 1: not_an_integer"),
        "loops": (PROBLEM + "\n\ndef solve():\n    while True:\n        pass\n", EXECUTION_ERROR, "filter 1: timeout"),
        "states its answer": (PROBLEM + " The answer is 94." + code, REJECTED, "filter 2"),
        "too short": ("Tom has 37 apples and buys 57 more. How many now?" + code.replace("45 + 12", "57"), REJECTED,
                      "filter 3: 11 words"),
        "an eval question": (PROBLEM + code, REJECTED, "filter 4: normalized exact match with evaluation item arith-test-000001"),
    }
    for index, (name, (completion, disposition, error)) in enumerate(cases.items()):
        row = screen(index, completion)
        assert row["disposition"] == disposition, name
        assert row["error"].startswith(error), (name, row["error"])
        assert row["item_id"] == f"selfgen-{index:06d}"
        assert row["completion"] == (completion if name == "unparsable" else None)
        assert isinstance(row["prompt"], str) and row["prompt"]  # every candidate row has a prompt (GA-3)
    survivor = _screener(sandbox)._screen(9, PROBLEM + code)
    assert survivor["disposition"] is None and survivor["answer"] == "94" and survivor["error"] is None
    assert survivor["word_count"] == len(PROBLEM.split()) and survivor["code"] == code.strip("\n") + "\n"


@needs_sandbox
def test_the_label_check_rejects_an_ill_posed_text_before_filter_5(sandbox):
    """The generator's own label check (issue 45): a text that does not determine its label ("7 apples in a crate
    and 2 toy cars ... how many toy cars", labelled 9) is rejected at screening, before the solvability filter, where
    the embedded generator writes the tasks (the family the check reads)."""
    screen = _screener(sandbox, generator_model=EMBEDDED_GENERATOR)._screen
    ill_posed = ("There are 7 apples in a crate and 2 toy cars on the table. How many toy cars are there altogether?"
                 "\n\ndef solve():\n    return 7 + 2\n")
    row = screen(0, ill_posed)
    assert row["disposition"] == REJECTED and row["answer"] == "9" and row["base_solved"] is None
    assert row["error"] == ("label check: the problem text does not determine the label: the program adds apple and "
                            "car/toy")
    well_posed = screen(1, ill_posed.replace("7 apples in a crate", "7 toy cars in a crate"))
    assert well_posed["disposition"] is None and well_posed["error"] is None


@needs_sandbox
def test_a_specs_own_generator_keeps_the_specs_filters_and_no_other(sandbox):
    """The label check reads the embedded family's sentence forms only (it rejects about 5% of sound GSM8K questions):
    a spec's own generator (Qwen in the exchange's spec) is screened by the spec's filters alone, so the production
    path adds no filter the spec does not name. The same ill-posed text passes screening there (the audit's
    re-solve and the spec's solvability filter judge it)."""
    assert not _settings(generator_model="Qwen/Qwen3.5-2B").label_checked
    assert _settings(generator_model=EMBEDDED_GENERATOR).label_checked
    ill_posed = ("There are 7 apples in a crate and 2 toy cars on the table. How many toy cars are there altogether?"
                 "\n\ndef solve():\n    return 7 + 2\n")
    row = _screener(sandbox, generator_model="Qwen/Qwen3.5-2B")._screen(0, ill_posed)
    assert row["disposition"] is None and row["error"] is None and row["answer"] == "9"


@needs_sandbox
def test_a_secret_printed_by_generated_code_never_reaches_the_candidate(sandbox, monkeypatch):
    secret = "rx-fake-secret-generation-91c2"
    monkeypatch.setenv("TINKER_API_KEY", secret)
    completion = PROBLEM + ("\n\nimport os\ndef solve():\n    print(os.environ)\n"
                            "    raise ValueError(str(dict(os.environ)))\n")
    row = _screener(sandbox)._screen(0, completion)
    assert row["disposition"] == EXECUTION_ERROR
    assert secret not in json.dumps(row)


# ---- the full loop against the real embedded server ----

@pytest.fixture(scope="module")
def embedded(embedded_server):
    import tinker

    from embedded_tinker.launch import LOCAL_API_KEY
    from experiment.rl.recipe import renderer_named

    server = embedded_server  # one backend for the session (tests/conftest.py)
    client = tinker.ServiceClient(base_url=server.base_url, api_key=LOCAL_API_KEY)
    training = client.create_lora_training_client(base_model="embedded/tiny-arith", rank=2).result()
    renderer = renderer_named(training.get_info().model_data.tokenizer_id, "qwen3_5_disable_thinking")
    yield client, renderer
    client.close("success")


def test_base_model_solve_counts_through_the_math_env(embedded):
    from experiment.rl.recipe import run_async
    from experiment.selfgen.task_generation import base_solve_counts

    client, renderer = embedded
    sampler = client.create_sampling_client(base_model="embedded/tiny-arith").result()
    arm = filter_settings(_settings(), "qwen3_5_disable_thinking", few_shot=False)
    easy = TaskItem("t-easy", "Tom has 3 apples. He buys 4 more. How many apples does Tom have now?", "7")
    wrong = TaskItem("t-wrong", "Tom has 3 apples. He buys 4 more. How many apples does Tom have now?", "9001")
    counts = run_async(base_solve_counts(sampler, renderer, [easy, wrong], arm, base_seed=11))
    assert counts[1] == 0  # nobody answers 9001
    assert 0 <= counts[0] <= 8
    assert counts == run_async(base_solve_counts(sampler, renderer, [easy, wrong], arm, base_seed=11))  # seeded


@needs_sandbox
def test_generation_keeps_every_candidate_in_order(embedded, sandbox):
    """The pre-trained base model does not follow the instruction: every candidate is kept, rejected
    at parse, and generation stops at max_candidates without accepting anything."""
    from experiment.rl.recipe import run_async

    client, renderer = embedded
    settings = _settings(max_candidates=6, batch_size=4)
    sampler = client.create_sampling_client(base_model="embedded/tiny-arith").result()
    generator = TaskGenerator(settings=settings, generator=sampler, filter_sampler=sampler, renderer=renderer,
                              evaluation_prompts={}, sandbox=sandbox,
                              filter_arm=filter_settings(settings, "qwen3_5_disable_thinking", False))
    enough = run_async(generator.generate_until(2))
    assert enough is False
    assert [row["item_id"] for row in generator.candidates] == [f"selfgen-{i:06d}" for i in range(6)]
    assert generator.counts()["generated"] == 6
    assert sum(generator.counts()[k] for k in ("accepted", "rejected", "execution_errors")) == 6
    for row in generator.candidates:
        assert row["disposition"] in (ACCEPTED, REJECTED, EXECUTION_ERROR)
        assert isinstance(row["completion"], str) or row["prompt"] is not None
    assert generator.measurements.candidates == 6 and generator.measurements.generation_seconds > 0


def test_the_local_generator_assets_match_their_metadata():
    import hashlib

    from embedded_tinker.tasks import selfgen

    metadata = json.loads((selfgen.GENERATOR_DIR / selfgen.METADATA_FILE).read_text())
    weights = (selfgen.GENERATOR_DIR / "model.safetensors").read_bytes()
    assert hashlib.sha256(weights).hexdigest() == metadata["weights_sha256"]
    assert metadata["instruction"] == generation_settings(load_spec(SELFGEN_SPEC)).instruction == selfgen.INSTRUCTION
    assert metadata["train"]["steps"] == selfgen.TRAIN_STEPS
    example = selfgen.templated_example(__import__("random").Random(0))
    parsed = parse_completion(example["completion"])
    assert parsed.problem == example["question"] and parsed.code.startswith("def solve():\n    return ")


# ---- the sandbox beside the filter's rollouts ----

SURVIVORS = (
    PROBLEM + "\n\ndef solve():\n    return 37 + 45 + 12\n",
    ("A baker makes 23 loaves of bread in the morning and 18 more loaves in the afternoon. He sells 15 loaves "
     "before closing. How many loaves are left at the end of the day?\n\ndef solve():\n    return 23 + 18 - 15\n"),
    ("Sam reads 14 pages on Monday, 21 pages on Tuesday and 9 pages on Wednesday of his new library book. "
     "How many pages has Sam read in those three days together?\n\ndef solve():\n    return 14 + 21 + 9\n"),
)
BATCH = (SURVIVORS[0], "Tom has 3 apples.", SURVIVORS[1], SURVIVORS[2])  # the second fails at parse


class FilterSamplerWatch:
    """The filter's sampling client, noting when it is first asked for rollouts."""

    def __init__(self, sampler):
        self.sampler, self.asked = sampler, threading.Event()

    def sample(self, *args, **kwargs):
        self.asked.set()
        return self.sampler.sample(*args, **kwargs)

    def __getattr__(self, name):
        return getattr(self.sampler, name)


class SandboxHeldAtLastCandidate:
    """The real sandbox; the batch's last candidate runs only once the filter was asked for rollouts (or
    after `patience_s`, so that a generator that screens everything first fails instead of hanging)."""

    def __init__(self, sandbox, asked: threading.Event, last_code: str, patience_s: float = 120.0):
        self.sandbox, self.asked, self.last_code, self.patience_s = sandbox, asked, last_code, patience_s
        self.asked_before_last: bool | None = None

    def run(self, code):
        if code == self.last_code:
            self.asked_before_last = self.asked.wait(self.patience_s)
        return self.sandbox.run(code)


def _batch_generator(settings, sampler, renderer, sandbox) -> TaskGenerator:
    generator = TaskGenerator(settings=settings, generator=None, filter_sampler=sampler, renderer=renderer,
                              evaluation_prompts={}, sandbox=sandbox,
                              filter_arm=filter_settings(settings, "qwen3_5_disable_thinking", False))

    async def the_batch(size):  # the generator's completions, fixed
        return list(BATCH[:size])

    generator._sample = the_batch
    return generator


@needs_sandbox
def test_the_filter_samples_a_survivor_while_later_candidates_run_in_the_sandbox(embedded, sandbox):
    from experiment.rl.recipe import run_async

    client, renderer = embedded
    settings = _settings(max_candidates=len(BATCH), batch_size=len(BATCH), n_accept=len(SURVIVORS))
    watch = FilterSamplerWatch(client.create_sampling_client(base_model="embedded/tiny-arith").result())
    held = SandboxHeldAtLastCandidate(sandbox, watch.asked, parse_completion(BATCH[-1]).code)
    generator = _batch_generator(settings, watch, renderer, held)
    run_async(generator.generate_until(settings.n_accept))
    assert held.asked_before_last is True  # the first survivor's rollouts were asked for before the last screen
    assert [row["disposition"] is not None for row in generator.candidates] == [True] * len(BATCH)
    assert [row["base_solved"] is not None for row in generator.candidates] == [True, False, True, True]


@needs_sandbox
def test_screening_beside_the_filter_records_what_screening_first_records(embedded, sandbox):
    """Every row, disposition and base-model solve count as in the order without overlap: every candidate
    screened, then every survivor's rollouts in one list from the batch's seed."""
    from experiment.rl.recipe import run_async
    from experiment.selfgen.task_generation import base_solve_counts

    client, renderer = embedded
    settings = _settings(max_candidates=len(BATCH), batch_size=len(BATCH), n_accept=len(SURVIVORS), seed=5)
    sampler = client.create_sampling_client(base_model="embedded/tiny-arith").result()
    generator = _batch_generator(settings, sampler, renderer, sandbox)
    run_async(generator.generate_until(settings.n_accept))

    rows = [generator._screen(index, text) for index, text in enumerate(BATCH)]
    survivors = [row for row in rows if row["disposition"] is None]
    counts = run_async(base_solve_counts(sampler, renderer, [TaskItem(r["item_id"], r["prompt"], r["answer"])
                                                             for r in survivors],
                                         generator.filter_arm, settings.seed * 1_000_003))
    solved = iter(counts)
    assert [row["base_solved"] for row in generator.candidates] == [
        next(solved) if row["disposition"] is None else None for row in rows]
    screened = ("item_id", "index", "prompt", "answer", "code", "completion", "word_count")
    assert [[row[key] for key in screened] for row in generator.candidates] == [[row[key] for key in screened]
                                                                               for row in rows]
    assert [row["disposition"] for row in generator.candidates][1] == EXECUTION_ERROR  # the unparsable one
    assert generator.measurements.filter_rollouts == len(survivors) * settings.filter_samples
