"""Property tests are deterministic (issue 45 item 11): the same examples on every run.

- every hypothesis test runs under the suite's profile (tests/conftest.py): derandomized, no example database,
  no deadline; a test's own @settings keeps them;
- the e2e every-leaf property perturbs records rebuilt by each run, so it does not draw at all: its perturbations
  are ranked by the record's shape (tests/leaves.py, ranked_perturbations).
"""

from __future__ import annotations

import copy

from hypothesis import given, settings
from hypothesis import strategies as st

import leaves as L


def test_the_suite_profile_is_derandomized_without_database_or_deadline():
    assert (settings.default.derandomize, settings.default.database, settings.default.deadline) == (True, None, None)
    assert settings(max_examples=7).derandomize  # a test's own settings keep the profile's


def _draws() -> list[int]:
    seen: list[int] = []

    @settings(max_examples=25)
    @given(st.integers(0, 10**9))
    def draw(value: int) -> None:
        seen.append(value)

    draw()
    return seen


def test_a_property_draws_the_same_examples_each_time():
    assert _draws() == _draws()


def _reshaped(value):
    """The same shape, every value changed: what another run of the same pipeline writes."""
    if isinstance(value, dict):
        return {key: _reshaped(inner) for key, inner in value.items()}
    if isinstance(value, list):
        return [_reshaped(inner) for inner in value]
    return L.changed(value)


def test_the_ranked_perturbations_depend_on_the_record_shape_only(graded_record):
    record, _ = graded_record("paired")
    rebuilt = _reshaped({key: value for key, value in record.items() if key != "evidence"})
    rebuilt["evidence"] = copy.deepcopy(record["evidence"])  # inline files keep their shape too
    chosen = [(leaf.pattern, kind) for leaf, kind in L.ranked_perturbations(record, 60)]
    assert len(chosen) == 60
    assert [(leaf.pattern, kind) for leaf, kind in L.ranked_perturbations(rebuilt, 60)] == chosen
    assert [(leaf.pattern, kind) for leaf, kind in L.ranked_perturbations(record, 60)] == chosen
