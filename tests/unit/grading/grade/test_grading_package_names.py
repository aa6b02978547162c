"""experiment.grading's package surface (issue 28 item 7, the complete mutation run's survivors): the
lazily exported names resolve to the category modules' objects, and an unknown name is an
AttributeError."""

from __future__ import annotations

import pytest

import experiment.grading as grading
from experiment.grading import common, grade


def test_the_lazy_names_are_the_modules_objects():
    assert grading.Grade is common.Grade and grading.CategoryGrade is common.CategoryGrade
    assert grading.CATEGORIES is common.CATEGORIES
    assert grading.grade_record is grade.grade_record and grading.GradeInputError is grade.GradeInputError


def test_an_unknown_name_is_an_attribute_error():
    with pytest.raises(AttributeError, match="no_such_name"):
        grading.no_such_name  # noqa: B018
    assert not hasattr(grading, "Issue")
