"""Domain logic of the pipeline: spec, plan, gates, RESULT, store, service, data.

Plain Python with no Prefect import (tests/unit/test_no_prefect_in_domain.py enforces this), so every
decision can be tested directly. Prefect wiring lives in flows/ and tasks/.
"""
from pathlib import Path

PROJECT_ROOT = Path(__file__).resolve().parent.parent  # the repository root (data/, specs/, experiment/)
