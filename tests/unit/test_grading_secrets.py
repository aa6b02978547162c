"""SEC-1: the secret scan knows credential shapes, not only the values in the environment."""

from __future__ import annotations

import itertools

import pytest

from experiment.grading import grade_record
from experiment.grading import secrets as secret_scan

FAKE_TINKER_KEY = "tml-" + "Ab3dEf6hIj9kLm2nOp5q"
FAKE_MODAL_ID = "wk-" + "Q1w2E3r4T5y6U7i8O9p0"
FAKE_MODAL_SECRET = "ws-" + "Z9x8C7v6B5n4M3a2S1d0"

LEAKS = [
    f"client = ServiceClient(api_key='{FAKE_TINKER_KEY}')",
    f"token id {FAKE_MODAL_ID}",
    f"secret={FAKE_MODAL_SECRET}",
    "headers: {'Authorization': 'Bearer abcDEF123456ghiJKL789'}",
    "Modal-Secret: s3cr3tValue99",
    "https://bucket.s3.amazonaws.com/w.bin?X-Amz-Credential=AK1&X-Amz-Signature=deadbeef1234",
    "https://storage.example.com/ckpt?token=abcd1234efgh",
]
HARMLESS = ["Modal-Key: $MODAL_PROXY_TOKEN_ID", "Authorization: Bearer <token>", "tinker://run-1/weights/step-3",
            "learning rate 1e-4 with the tml-style renderer", "https://example.com/attachments/predictions.jsonl"]


@pytest.mark.parametrize("text", LEAKS)
def test_credential_shapes_are_found_without_being_in_the_environment(text, monkeypatch):
    for name in secret_scan.CREDENTIAL_ENV_VARS:
        monkeypatch.delenv(name, raising=False)
    assert secret_scan.find_secrets(text)


@pytest.mark.parametrize("text", HARMLESS)
def test_placeholders_and_references_are_not_secrets(text, monkeypatch):
    for name in secret_scan.CREDENTIAL_ENV_VARS:
        monkeypatch.delenv(name, raising=False)
    assert secret_scan.find_secrets(text) == []


def test_a_key_stored_in_evidence_fails_the_record(graded_record, monkeypatch):
    result, _ = graded_record("paired")
    entry = result["evidence"]["files"][0]
    entry["content"] = entry["content"][:-2] + f', "note": "{FAKE_TINKER_KEY}"' + "}\n"
    entry.pop("sha256")
    for name in secret_scan.CREDENTIAL_ENV_VARS:
        monkeypatch.delenv(name, raising=False)
    # the attack succeeds against a scan that only knows the environment's values...
    real_patterns = secret_scan._PATTERNS
    monkeypatch.setattr(secret_scan, "_PATTERNS", ())
    assert not [p for p in grade_record(result).problems if p.startswith("SEC-1")]
    # ...and the real scan catches it by its shape
    monkeypatch.setattr(secret_scan, "_PATTERNS", real_patterns)
    problems = [p for p in grade_record(result).problems if p.startswith("SEC-1")]
    assert problems and "Tinker API key" in problems[0] and FAKE_TINKER_KEY not in problems[0]


def test_an_environment_secret_value_is_found(graded_record, monkeypatch):
    result, _ = graded_record("best_lr")
    monkeypatch.setenv("MODAL_PROXY_TOKEN_SECRET", "plainvalue-without-shape")
    result["summary"] = "ran with plainvalue-without-shape. Done."
    problems = [p for p in grade_record(result).problems if p.startswith("SEC-1")]
    assert problems and "MODAL_PROXY_TOKEN_SECRET" in problems[0] and "plainvalue" not in problems[0]


# ---- the words that let a pure-ASCII text skip a pattern (secrets.could_match) ----

def every_pattern(text: str) -> list[str]:
    """The shapes the patterns alone find: every pattern run on the whole text."""
    return [what for what, _, pattern in secret_scan._PATTERNS if pattern.search(text)]


# Texts: a shape's beginning (as written, lower- or upper-case), a separator and a value, every combination
SHAPE_STARTS = ["tml-", "wk-", "ws-", "Authorization: Bearer", "authorization=token", "Bearer", "modal-secret",
                "Modal-Key", "x-api-key", "api-key", "api_key", "TINKER_API_KEY", "modal_proxy_token_id",
                "MODAL_PROXY_TOKEN_SECRET", "runs_proxy_token_id", "runs_proxy_token_secret",
                "https://bucket.example/w.bin?X-Amz-Signature", "http://h.example/ckpt?token", "see"]
SEPARATORS = ["", " ", ": ", "=", '": "', "'"]
VALUES = ["Ab3dEf6hIj9kLm2nOp5q", "abcd1234efgh", "$MODAL_PROXY_TOKEN_ID", "<token>", "word", ""]
TEXTS = [case(start) + separator + value for start, case, separator, value
         in itertools.product(SHAPE_STARTS, [str, str.lower, str.upper], SEPARATORS, VALUES)]


def test_skipping_by_words_finds_what_every_pattern_finds(monkeypatch):
    """On every such text, skipping the patterns whose words a text lacks changes nothing."""
    for name in secret_scan.CREDENTIAL_ENV_VARS:
        monkeypatch.delenv(name, raising=False)
    assert {what for text in TEXTS for what in every_pattern(text)} == {what for what, _, _ in secret_scan._PATTERNS}
    assert [(text, secret_scan.find_secrets(text)) for text in TEXTS] == [(text, every_pattern(text)) for text in TEXTS]


def words_missing_api_key(monkeypatch):
    """Weakened: the credential header's words without api-key and api_key."""
    monkeypatch.setattr(secret_scan, "_PATTERNS", tuple((what, tuple(w for w in words if "api" not in w), pattern)
                                                        for what, words, pattern in secret_scan._PATTERNS))


def words_trusted_on_any_text(monkeypatch):
    """Weakened: the words looked for in any text, lower-cased (lower() keeps a dotless i, IGNORECASE folds it to i)."""
    monkeypatch.setattr(secret_scan, "could_match", lambda text: [any(w in text.lower() for w in words)
                                                                  for _, words, _ in secret_scan._PATTERNS])


@pytest.mark.parametrize("leak,weaken,shape", [
    ("TINKER_API_KEY=Ab3dEf6hIj9kLm2nOp5q", words_missing_api_key, "a credential header with a value"),
    ("Author\u0131zation: token abcd1234efgh", words_trusted_on_any_text, "an Authorization header with a value")])
def test_a_leak_is_not_skipped_by_its_words(leak, weaken, shape, monkeypatch):
    for name in secret_scan.CREDENTIAL_ENV_VARS:
        monkeypatch.delenv(name, raising=False)
    with monkeypatch.context() as weakened:  # the attack succeeds against a weakened skip...
        weaken(weakened)
        assert secret_scan.find_secrets(leak) == []
    assert secret_scan.find_secrets(leak) == [shape]  # ...not against the real one
