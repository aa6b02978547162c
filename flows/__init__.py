"""Prefect flows and the CLI (python -m flows.run).

Importing `flows` turns telemetry and analytics off for every path the project starts (CLI, serve,
worker, tests) before Prefect is imported, unless the environment says otherwise: the pipeline is
offline and must not try to reach the internet.
"""

import os

for _name, _value in (
    ("DO_NOT_TRACK", "1"),                          # Prefect SDK analytics (client side)
    ("PREFECT_SERVER_ANALYTICS_ENABLED", "false"),  # the (temporary) Prefect server's analytics
    ("TINKER_TELEMETRY", "0"),                      # the tinker SDK's telemetry
):
    os.environ.setdefault(_name, _value)
