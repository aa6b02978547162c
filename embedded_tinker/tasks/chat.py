"""Deterministic generator of a small synthetic chat set in the no_robots schema.

Each row has the fields of ``HuggingFaceH4/no_robots``:

    {"prompt": "Reverse the order of these words: river stone apple",
     "prompt_id": "chat-train-000017",
     "messages": [{"role": "user", "content": "Reverse the order of these words: river stone apple"},
                  {"role": "assistant", "content": "apple stone river"}],
     "category": "Rewrite"}

Some rows start with a system message, as in no_robots. Every task has one correct, short,
rule-based answer, so a tiny model can lower its held-out NLL within a few dozen LoRA steps.
Test rows are drawn first and train rows never repeat a test prompt.

Regenerate the committed files with ``python -m embedded_tinker.tasks.chat``.
"""

from __future__ import annotations

import argparse
import json
import random
from pathlib import Path

DATA_DIR = Path(__file__).resolve().parent / "data"
DEFAULT_SEED = 20261129
DEFAULT_N_TRAIN = 512
DEFAULT_N_TEST = 128

WORDS = ["apple", "river", "stone", "cloud", "garden", "lamp", "window", "tiger", "bread", "music",
         "paper", "candle", "forest", "mirror", "rocket", "pencil", "ocean", "silver", "button", "winter"]
COLORS = ["red", "blue", "green", "yellow", "black", "white"]
ANIMALS = ["cat", "dog", "horse", "rabbit", "fox", "owl"]
SYSTEM_PROMPTS = ["You are a helpful assistant.", "You are a concise assistant. Answer briefly."]


def _reverse(rng: random.Random):
    words = rng.sample(WORDS, rng.randint(3, 5))
    return "Rewrite", f"Reverse the order of these words: {' '.join(words)}", " ".join(reversed(words))


def _uppercase(rng: random.Random):
    word = rng.choice(WORDS)
    return "Rewrite", f"Write the word {word} in capital letters.", word.upper()


def _spell(rng: random.Random):
    word = rng.choice(WORDS)
    return "Rewrite", f"Spell the word {word} with dashes between the letters.", "-".join(word)


def _next_number(rng: random.Random):
    n = rng.randint(1, 98)
    return "Open QA", f"What number comes after {n}?", f"The number after {n} is {n + 1}."


def _sort_numbers(rng: random.Random):
    numbers = rng.sample(range(1, 50), rng.randint(3, 5))
    return "Classify", f"Sort these numbers from smallest to largest: {' '.join(map(str, numbers))}", \
        " ".join(map(str, sorted(numbers)))


def _repeat(rng: random.Random):
    word, times = rng.choice(WORDS), rng.randint(2, 4)
    return "Generation", f"Repeat the word {word} {times} times.", " ".join([word] * times)


def _larger(rng: random.Random):
    a, b = rng.sample(range(1, 100), 2)
    return "Closed QA", f"Which is larger, {a} or {b}?", f"{max(a, b)} is larger."


def _count_words(rng: random.Random):
    words = rng.sample(WORDS, rng.randint(2, 6))
    return "Closed QA", f"How many words are in this list: {', '.join(words)}?", f"There are {len(words)} words."


def _question(rng: random.Random):
    animal, color = rng.choice(ANIMALS), rng.choice(COLORS)
    return "Rewrite", f"Turn this sentence into a question: The {animal} is {color}.", f"Is the {animal} {color}?"


def _first_letter(rng: random.Random):
    word = rng.choice(WORDS)
    return "Extract", f"What is the first letter of the word {word}?", f"The first letter of {word} is {word[0]}."


TASKS = [_reverse, _uppercase, _spell, _next_number, _sort_numbers, _repeat, _larger, _count_words,
         _question, _first_letter]


def make_row(rng: random.Random, prompt_id: str) -> dict:
    category, prompt, answer = rng.choice(TASKS)(rng)
    messages = [{"role": "user", "content": prompt}, {"role": "assistant", "content": answer}]
    if rng.random() < 0.25:
        messages.insert(0, {"role": "system", "content": rng.choice(SYSTEM_PROMPTS)})
    return {"prompt": prompt, "prompt_id": prompt_id, "messages": messages, "category": category}


def build_splits(seed: int = DEFAULT_SEED, n_train: int = DEFAULT_N_TRAIN, n_test: int = DEFAULT_N_TEST):
    rng = random.Random(seed)
    test, seen = [], set()
    while len(test) < n_test:
        row = make_row(rng, f"chat-test-{len(test):06d}")
        if row["prompt"] not in seen:
            seen.add(row["prompt"])
            test.append(row)
    train = []
    while len(train) < n_train:
        row = make_row(rng, f"chat-train-{len(train):06d}")
        if row["prompt"] not in seen:
            train.append(row)
    return train, test


def write_jsonl(path: Path, rows: list[dict]) -> None:
    path.write_text("".join(json.dumps(row, sort_keys=True) + "\n" for row in rows), encoding="utf-8")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seed", type=int, default=DEFAULT_SEED)
    parser.add_argument("--out", type=Path, default=DATA_DIR)
    args = parser.parse_args()
    train, test = build_splits(args.seed)
    write_jsonl(args.out / "chat_train.jsonl", train)
    write_jsonl(args.out / "chat_test.jsonl", test)
    print(f"wrote {len(train)} train and {len(test)} test conversations to {args.out}")


if __name__ == "__main__":
    main()
