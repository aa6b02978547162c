"""Expected outcomes end a flow run without a traceback in its log.

A deployment run (serve or worker) that ends in a Failed state has Prefect's engine raise the state's
exception and log it on `prefect.flow_runs` as "Engine execution exited with unexpected exception",
traceback included. For outcomes the flow has already explained in one line (a run of the same spec
in progress elsewhere: RunInProgress; a failed gate: GateFailedError, whose RESULT says why), that
traceback is noise: `quiet_expected_outcomes()` installs a filter that drops exactly those records.
Every other exception keeps its traceback.
"""

from __future__ import annotations

import logging

ENGINE_LOGGER = "prefect.flow_runs"


class ExpectedOutcomeFilter(logging.Filter):
    """Drops a record that carries the traceback of an expected outcome (one of `expected`)."""

    def __init__(self, expected: tuple[type[BaseException], ...]):
        super().__init__()
        self.expected = expected

    def filter(self, record: logging.LogRecord) -> bool:
        error = record.exc_info[1] if record.exc_info else None
        return not isinstance(error, self.expected)


def quiet_expected_outcomes(*expected: type[BaseException]) -> ExpectedOutcomeFilter:
    """Install (once) the filter for `expected` on the engine's flow-run logger; returns it."""
    logger = logging.getLogger(ENGINE_LOGGER)
    for existing in logger.filters:
        if isinstance(existing, ExpectedOutcomeFilter):
            existing.expected = tuple(dict.fromkeys((*existing.expected, *expected)))
            return existing
    installed = ExpectedOutcomeFilter(tuple(expected))
    logger.addFilter(installed)
    return installed
