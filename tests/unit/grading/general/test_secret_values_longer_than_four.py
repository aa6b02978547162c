"""SEC-1's environment values (experiment/grading/secrets.py): a credential value longer than four
characters found in the text is reported by name; four characters or fewer are too short to tell
from ordinary text and are not."""

from __future__ import annotations

import pytest

from experiment.grading import secrets as secret_scan


@pytest.fixture(autouse=True)
def _no_credentials_in_the_environment(monkeypatch):
    for name in secret_scan.CREDENTIAL_ENV_VARS:
        monkeypatch.delenv(name, raising=False)


@pytest.mark.parametrize("value, found", [("abc", False), ("abcd", False), ("abcde", True), ("abcdef", True)])
def test_a_value_is_reported_only_when_longer_than_four_characters(value, found):
    text = f"log line with {value} inside"
    expected = ["the value of MY_TOKEN"] if found else []
    assert secret_scan.find_secrets(text, {"MY_TOKEN": value}) == expected
