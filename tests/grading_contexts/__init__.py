"""Minimal grading contexts for the grader's category tests, one module per category of experiment/grading
(non-test modules: tests import them by name, as `from grading_contexts.restoration import context`).

Each module holds the context builder, message reader and small records its category's tests share, moved
here from the test module that first made them, so that no test module imports another."""
