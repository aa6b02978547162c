"""The committed tiny-arith assets: tokenizer, task data, pre-trained weights (fast, offline).

transformers is imported in the tests that use it, not when the file is collected (every worker
collects every file; the import takes seconds)."""

import os

os.environ.setdefault("HF_HUB_OFFLINE", "1")

import hashlib
import json
import re

import pytest
import torch
from tinker_cookbook import renderers

from embedded_tinker import pretrain
from embedded_tinker.tasks import arithmetic

MAX_WEIGHTS_BYTES = 20 * 1024 * 1024
GENERATION_SUFFIX = "<|im_start|>assistant\n<think>\n\n</think>\n\n"


@pytest.fixture(scope="module")
def tokenizer():
    from transformers import AutoTokenizer
    return AutoTokenizer.from_pretrained(pretrain.MODEL_DIR)


@pytest.fixture(scope="module")
def renderer(tokenizer):
    return renderers.get_renderer("qwen3_5_disable_thinking", tokenizer)


@pytest.fixture(scope="module")
def metadata():
    return json.loads((pretrain.MODEL_DIR / pretrain.METADATA_FILE).read_text())


@pytest.fixture(scope="module")
def model():
    from transformers import AutoModelForCausalLM
    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # for this module only: later modules (the sampling engine's) keep the default
    yield AutoModelForCausalLM.from_pretrained(pretrain.MODEL_DIR)
    torch.set_num_threads(threads)


# ---------------------------------------------------------------- tokenizer
def test_tokenizer_dirs_hold_the_same_tokenizer():
    from transformers import AutoTokenizer
    # tokenizer.json (vocab, merges, added tokens) is byte-identical; tokenizer_config.json in
    # tiny-arith is re-saved by the training stage (transformers adds "is_local")
    name = "tokenizer.json"
    assert (pretrain.TOKENIZER_DIR / name).read_bytes() == (pretrain.MODEL_DIR / name).read_bytes()
    shared, model_dir = (
        AutoTokenizer.from_pretrained(d) for d in (pretrain.TOKENIZER_DIR, pretrain.MODEL_DIR)
    )
    assert shared.special_tokens_map == model_dir.special_tokens_map
    assert shared.get_vocab() == model_dir.get_vocab()


def test_tokenizer_is_fast_with_chat_tokens_as_single_ids(tokenizer):
    assert tokenizer.is_fast
    ids = set()
    for token in pretrain.SPECIAL_TOKENS + pretrain.MARKUP_TOKENS:
        encoded = tokenizer.encode(token, add_special_tokens=False)
        assert len(encoded) == 1, token
        ids.add(encoded[0])
    assert len(ids) == len(pretrain.SPECIAL_TOKENS) + len(pretrain.MARKUP_TOKENS)
    assert tokenizer.eos_token == "<|im_end|>" and tokenizer.pad_token == "<|endoftext|>"
    assert len(tokenizer) == pretrain.VOCAB_SIZE


@pytest.mark.parametrize(
    "text",
    [
        "Tom has 37 apples. He buys 45 more. How many apples does Tom have now?",
        "def solve():\n    x = 3 * (40 + 5)\n    return x  # {}[]<>~`\t",
        "Ünïcödé, emoji 🙂 and 中文 fall back to bytes.",
        "<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\n<think>\n\n</think>\n\n\\boxed{12}<|im_end|>",
    ],
)
def test_tokenizer_round_trips(tokenizer, text):
    assert tokenizer.decode(tokenizer.encode(text, add_special_tokens=False)) == text


def test_digits_are_single_tokens(tokenizer):
    pieces = tokenizer.convert_ids_to_tokens(tokenizer.encode("1234 + 56", add_special_tokens=False))
    assert [p for p in pieces if re.search(r"\d", p)] == ["1", "2", "3", "4", "5", "6"]


def test_tokenizer_build_is_reproducible():
    from transformers import AutoTokenizer
    rebuilt = pretrain.build_tokenizer()
    committed = AutoTokenizer.from_pretrained(pretrain.TOKENIZER_DIR)
    assert rebuilt.get_vocab() == committed.get_vocab()
    text = arithmetic.load_split("test")[0]["question"]
    assert rebuilt.encode(text) == committed.encode(text)


# ---------------------------------------------------------------- renderer
def test_renderer_generation_prompt_and_stop(tokenizer, renderer):
    question = arithmetic.load_split("test")[0]["question"]
    prompt = pretrain.generation_prompt(renderer, question)
    text = tokenizer.decode(prompt)
    assert text == (
        f"<|im_start|>user\n{question} Write your answer in \\boxed{{}} format.<|im_end|>\n"
        + GENERATION_SUFFIX
    )
    assert renderer.get_stop_sequences() == [tokenizer.convert_tokens_to_ids("<|im_end|>")]
    message, termination = renderer.parse_response(
        tokenizer.encode("\\boxed{12}<|im_end|>", add_special_tokens=False)
    )
    assert message["content"] == "\\boxed{12}"
    assert termination == renderers.ParseTermination.STOP_SEQUENCE


def test_supervised_example_is_prompt_plus_weighted_completion(tokenizer, renderer):
    row = arithmetic.load_split("train")[0]
    ids, weights = pretrain.supervised_example(renderer, row)
    prompt = pretrain.generation_prompt(renderer, row["question"])
    assert ids[: len(prompt)] == prompt and not any(weights[: len(prompt)])
    completion = ids[len(prompt) :]
    assert tokenizer.decode(completion) == f"\\boxed{{{row['answer']}}}<|im_end|>"
    assert all(w == 1.0 for w in weights[len(prompt) :])


def test_cookbook_math_env_sees_the_trained_prompt_and_rewards_the_trained_completion(tokenizer, renderer):
    import asyncio

    from tinker_cookbook.recipes.math_rl.math_env import MathEnv

    row = arithmetic.load_split("test")[3]
    env = MathEnv(problem=row["question"], answer=row["answer"], renderer=renderer, convo_prefix=None)
    observation, stop = asyncio.run(env.initial_observation())
    assert observation.to_ints() == pretrain.generation_prompt(renderer, row["question"])
    assert stop == renderer.get_stop_sequences()
    completion = tokenizer.encode(f"\\boxed{{{row['answer']}}}<|im_end|>", add_special_tokens=False)
    assert asyncio.run(env.step(completion)).reward == 1.0


# ---------------------------------------------------------------- task family
def test_task_generator_is_deterministic():
    first = arithmetic.build_splits(seed=7, n_train=300, n_test=50)
    assert first == arithmetic.build_splits(seed=7, n_train=300, n_test=50)
    assert first != arithmetic.build_splits(seed=8, n_train=300, n_test=50)


def test_committed_task_data_matches_generator():
    committed = {split: arithmetic.load_split(split) for split in ("train", "test")}
    assert committed == arithmetic.build_splits()
    assert len(committed["train"]) == arithmetic.DEFAULT_N_TRAIN
    assert len(committed["test"]) == arithmetic.DEFAULT_N_TEST


def test_train_and_test_questions_are_disjoint_and_unique():
    train = [row["question"] for row in arithmetic.load_split("train")]
    test = [row["question"] for row in arithmetic.load_split("test")]
    assert len(set(train)) == len(train) and len(set(test)) == len(test)
    assert not set(train) & set(test)


def _solve(question: str) -> int:
    """Independent answer check from the question's wording (not the generator's code path)."""
    a, b = (int(x) for x in re.findall(r"\d+", question))
    if any(w in question for w in ("bags with", "rows with", "to each of")):
        return a * b
    if any(w in question for w in (" gives " + str(b) + " to", "lost", "takes", "already has", "left. How many")):
        return a - b
    return a + b


def test_rows_have_the_documented_shape_and_correct_answers():
    for split in ("train", "test"):
        for index, row in enumerate(arithmetic.load_split(split)):
            assert set(row) == {"id", "question", "answer"}
            assert row["id"] == f"arith-{split}-{index:06d}"
            assert row["answer"] == str(int(row["answer"])) and int(row["answer"]) >= 0
            assert int(row["answer"]) == _solve(row["question"]), row


# ---------------------------------------------------------------- weights
def test_weights_load_and_are_small(model, metadata):
    from transformers import Qwen3ForCausalLM
    weights = pretrain.MODEL_DIR / "model.safetensors"
    assert isinstance(model, Qwen3ForCausalLM)
    assert weights.stat().st_size <= MAX_WEIGHTS_BYTES
    assert metadata["weights_bytes"] == weights.stat().st_size
    assert metadata["weights_sha256"] == hashlib.sha256(weights.read_bytes()).hexdigest()
    assert metadata["n_parameters"] == sum(p.numel() for p in model.parameters())
    assert model.config.tie_word_embeddings and model.config.max_position_embeddings >= 1024


def test_recorded_accuracy_is_in_the_band_rl_needs(metadata):
    assert metadata["n_test"] == arithmetic.DEFAULT_N_TEST
    assert 0.20 <= metadata["greedy_accuracy_test"] <= 0.70
    assert metadata["train"]["steps"] == pretrain.TRAIN_STEPS


def test_greedy_accuracy_on_a_test_subset(model, tokenizer, renderer, metadata):
    rows = arithmetic.load_split("test")[:50]
    accuracy = pretrain.greedy_accuracy(model, tokenizer, renderer, rows)
    # 50 items: a loose band around the full-set number recorded in the metadata
    assert 0.10 <= accuracy <= 0.85
    assert abs(accuracy - metadata["greedy_accuracy_test"]) <= 0.25


def test_greedy_completions_end_on_the_stop_token(model, tokenizer, renderer):
    rows = arithmetic.load_split("test")[:20]
    prompts = [pretrain.generation_prompt(renderer, row["question"]) for row in rows]
    completions = pretrain.greedy_completions(model, tokenizer, prompts)
    stop_id = tokenizer.convert_tokens_to_ids("<|im_end|>")
    for completion in completions:
        assert completion[-1] == stop_id
        assert re.fullmatch(r"\\boxed\{\d+\}", tokenizer.decode(completion[:-1]))
