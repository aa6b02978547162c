"""SEC-1: the secret scan knows credential shapes, not only the values in the environment."""

from __future__ import annotations

import re
import string

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

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


# ------------------------------------------------------------ the literal pieces looked up before the regexes

def _regexes_only(text: str) -> list[str]:
    return [shape.what for shape in secret_scan._PATTERNS if shape.pattern.search(text)]


def test_every_code_point_the_case_insensitive_regexes_match_to_an_ascii_letter_is_folded():
    """The pieces of a case-insensitive shape are looked up in the folded text: every character that
    re.IGNORECASE matches to an ASCII letter must fold to that letter, or a secret spelled with it would
    skip its regex."""
    any_letter = re.compile("(?i)[a-z]")
    matched = [chr(code) for code in range(0x80, 0x110000) if any_letter.fullmatch(chr(code))]
    assert matched  # (U+0130, U+0131, U+017F and U+212A in Python 3.11)
    for char in matched:
        letters = [letter for letter in string.ascii_lowercase if re.fullmatch(f"(?i){letter}", char)]
        assert [secret_scan._folded(char)] == letters, (hex(ord(char)), letters)
    # and the folded text keeps every character's place (a piece found in it is where the regex must start)
    assert all(len(secret_scan._folded(chr(code))) == 1 for code in range(0x110000))


def test_a_secret_spelled_with_a_letter_re_folds_is_found_where_lowercasing_alone_would_skip_it(monkeypatch):
    for name in secret_scan.CREDENTIAL_ENV_VARS:
        monkeypatch.delenv(name, raising=False)
    leaks = ["Author\u0130zation: Basic Zm9vYmFyYmF6cXV4",  # LATIN CAPITAL LETTER I WITH DOT ABOVE
             "Modal-\u017fecret: s3cr3tValue99",  # LATIN SMALL LETTER LONG S
             "X-Ap\u0131-Key: 1234abcd5678"]  # LATIN SMALL LETTER DOTLESS I
    for text in leaks:
        assert _regexes_only(text)  # the regexes match it...
    # ...a lookup in str.lower() alone would skip those regexes...
    monkeypatch.setattr(secret_scan, "_folded", str.lower)
    assert [secret_scan.find_secrets(text) for text in leaks] == [[], [], []]
    # ...the real folding does not
    monkeypatch.undo()
    for name in secret_scan.CREDENTIAL_ENV_VARS:
        monkeypatch.delenv(name, raising=False)
    assert all(secret_scan.find_secrets(text) == _regexes_only(text) for text in leaks)


_KNOWN_TEXTS = LEAKS + HARMLESS + [
    "AUTHORIZATION = 'BASIC Zm9vYmFyYmF6cXV4'", "x-API-KEY: 1234abcd5678", "Tinker_Api_Key=ab12cd34ef56",
    "RUNS_PROXY_TOKEN_ID: tok3n-value-1", "HTTPS://h.example/p?Sig=abcd", "x-api-key=", "tinker_api_key: ", "api-key",
    "modal-key", "0a1b2c3d4e5f6g7h8", "tml-Ab3dEf6hIj9kLm2nOp5q", "tml-", "wk-", "bearer ", "\u0130", "\u017f",
    "\u212a", "\u0131", " ", "\n", '"', "=", ":"]
_FRAGMENTS = st.sampled_from(_KNOWN_TEXTS)


@pytest.mark.parametrize("text", _KNOWN_TEXTS)
def test_each_known_text_alone_and_in_capitals_finds_what_the_regexes_alone_find(text, monkeypatch):
    for name in secret_scan.CREDENTIAL_ENV_VARS:
        monkeypatch.delenv(name, raising=False)
    for variant in (text, text.upper(), f"prefix {text} suffix"):
        assert secret_scan.find_secrets(variant) == _regexes_only(variant)


@settings(max_examples=300, deadline=None)
@given(pieces=st.lists(st.one_of(_FRAGMENTS, st.text(max_size=12)), max_size=8))
def test_looking_up_the_pieces_first_finds_what_the_regexes_alone_find(pieces):
    text = "".join(pieces)
    with pytest.MonkeyPatch.context() as env:
        for name in secret_scan.CREDENTIAL_ENV_VARS:
            env.delenv(name, raising=False)
        assert secret_scan.find_secrets(text) == _regexes_only(text)
