"""The error of a spec that cannot be run as written (its own module: spec.py and the rehearsal rules raise it)."""

from __future__ import annotations


class SpecError(ValueError):
    """A spec that cannot be run as written. str() is one line: `spec error: <field>: <problem>`."""

    def __init__(self, field_name: str, problem: str):
        self.field_name = field_name
        self.problem = problem
        super().__init__(f"spec error: {field_name}: {problem}" if field_name else f"spec error: {problem}")
