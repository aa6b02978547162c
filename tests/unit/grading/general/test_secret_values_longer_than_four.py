"""SEC-1's environment values (experiment/grading/secrets.py): a credential value longer than four
characters found in the text is reported by name; four characters or fewer are too short to tell
from ordinary text and are not."""

from __future__ import annotations

import pytest

from embedded_tinker.access import DEFAULT_API_KEY
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


def test_the_embedded_backends_published_default_key_is_no_secret(monkeypatch):
    """The route the CLI itself names (TINKER_API_KEY=tml-local against a separately served embedded backend)
    retains pipeline code that spells that key: a record of it is not a leak, while any other key value is."""
    code = f'DEFAULT_API_KEY = "{DEFAULT_API_KEY}"  # the SDK requires keys starting with "tml-"'
    monkeypatch.setenv("TINKER_API_KEY", DEFAULT_API_KEY)
    assert secret_scan.find_secrets(code) == []
    monkeypatch.setenv("TINKER_API_KEY", "tml-a-private-key-42")
    assert "the value of TINKER_API_KEY" in secret_scan.find_secrets(code + " tml-a-private-key-42")


def test_the_run_directory_scan_skips_the_published_key_too(monkeypatch):
    """The run-dir layer's scan of every file reads the same environment values (one home: environment_secrets)."""
    monkeypatch.setenv("TINKER_API_KEY", DEFAULT_API_KEY)
    assert secret_scan.environment_secrets() == {}
    monkeypatch.setenv("TINKER_API_KEY", "tml-a-private-key-42")
    assert secret_scan.environment_secrets() == {"TINKER_API_KEY": "tml-a-private-key-42"}
