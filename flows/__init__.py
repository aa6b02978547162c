"""Prefect flows and the CLI (python -m flows.run)."""
