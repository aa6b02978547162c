"""Capacity policy bounds (CAP-1) and the one-line error text it records."""

from __future__ import annotations

import pytest

from experiment.service.capacity import SECRET_ENV_NAMES, CapacityPolicy, safe_error_text


@pytest.mark.parametrize("scale", [0.0, -0.5, -1.0])
def test_a_time_scale_that_is_not_positive_is_refused(scale):
    with pytest.raises(ValueError, match="time_scale must be positive"):
        CapacityPolicy(time_scale=scale)


def test_a_small_positive_time_scale_is_accepted():
    assert CapacityPolicy(time_scale=0.01).time_scale == 0.01


@pytest.mark.parametrize("backoff", [(), (60, 0), (-1,)])
def test_backoff_needs_positive_delays(backoff):
    with pytest.raises(ValueError, match="backoff_seconds"):
        CapacityPolicy(backoff_seconds=backoff)


@pytest.fixture
def no_secrets(monkeypatch):
    for name in SECRET_ENV_NAMES:
        monkeypatch.delenv(name, raising=False)
    return monkeypatch


def test_a_four_character_secret_is_redacted_a_shorter_one_is_not(no_secrets):
    no_secrets.setenv("MODAL_PROXY_TOKEN_SECRET", "wxyz")
    assert safe_error_text(RuntimeError("refused wxyz here")) == "RuntimeError: refused [redacted] here"
    no_secrets.setenv("MODAL_PROXY_TOKEN_SECRET", "xyz")  # too short to replace safely
    assert safe_error_text(RuntimeError("refused xyz here")) == "RuntimeError: refused xyz here"


def test_error_text_is_one_line_and_cut_to_500_characters(no_secrets):
    short = safe_error_text(RuntimeError("a\nb   c"))
    assert short == "RuntimeError: a b c"  # whitespace folded, nothing appended
    long_text = safe_error_text(RuntimeError("x" * 2000))
    assert len(long_text) == 500 and long_text.endswith("...")
    assert long_text[:-3] == ("RuntimeError: " + "x" * 2000)[:497]
    exactly = "RuntimeError: " + "y" * (500 - len("RuntimeError: "))
    assert safe_error_text(RuntimeError("y" * (500 - len("RuntimeError: ")))) == exactly


def test_progress_durations_switch_to_whole_seconds_at_ten():
    from experiment.service.capacity import _seconds

    assert _seconds(9.5) == "9.5 s"
    assert _seconds(10.0) == "10 s"
    assert _seconds(0.25) == "0.25 s"
    assert _seconds(-12.4) == "-12 s"
