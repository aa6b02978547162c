"""The SFT family (the TriMuon spec): gate steps in steps/, the training runs and routing in runs.py, loop, loss eval, adaptation manifests, the optimizer probe."""
