"""The two deployment routes have names of their own (issue 30.5): `prefect deploy` (deployments/prefect.yaml,
run by workers) and `deployments/serve.py` registering one name crashed that deployment's runs
("Downloading flow code from storage at None"), whichever route registered it last."""

from __future__ import annotations

import importlib.util

import yaml
from suite import REPO_ROOT


def test_the_worker_and_serve_routes_register_distinct_deployment_names():
    spec = importlib.util.spec_from_file_location("serve", REPO_ROOT / "deployments" / "serve.py")
    serve = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(serve)
    declared = yaml.safe_load((REPO_ROOT / "deployments" / "prefect.yaml").read_text())["deployments"]
    worker_names = [deployment["name"] for deployment in declared]
    assert worker_names == ["worker"] and serve.DEPLOYMENT_NAME == "local"
    assert serve.DEPLOYMENT_NAME not in worker_names
    assert declared[0]["concurrency_limit"] > 1  # a second worker adds throughput
    readme = (REPO_ROOT / "deployments" / "README.md").read_text()
    assert "run-experiment/local" in readme and "run-experiment/worker" in readme
