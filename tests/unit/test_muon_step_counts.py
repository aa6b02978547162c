"""TriMuon's step counts against the spec's literal text (issue 17): "two outer Polar Switch passes,
then four cubic Newton-Schulz refinements" (specs/trimuon_vs_dimuon_no_robots.json, method)."""

from __future__ import annotations

import numpy as np
import torch

from embedded_tinker.muon import polar_express, polar_switch
from experiment.stats.optim_reference import polar_express_reference, polar_switch_reference

SPEC_PASSES = 2  # literal from the spec text
SPEC_REFINEMENTS = 4  # literal from the spec text


def _x():
    return torch.randn(64, 8, generator=torch.Generator().manual_seed(17))


def test_server_polar_switch_runs_two_passes_and_four_refinements_by_default():
    X = _x()
    default = polar_switch(X)
    assert torch.equal(default, polar_switch(X, passes=SPEC_PASSES, refinements=SPEC_REFINEMENTS))
    for refinements in (SPEC_REFINEMENTS - 1, SPEC_REFINEMENTS + 1):
        assert not torch.equal(default, polar_switch(X, passes=SPEC_PASSES, refinements=refinements))
    for passes in (SPEC_PASSES - 1, SPEC_PASSES + 1):
        assert not torch.equal(default, polar_switch(X, passes=passes, refinements=SPEC_REFINEMENTS))


def test_reference_polar_switch_is_two_sweeps_then_four_cubic_steps():
    X = _x().numpy().astype(np.float64)
    Y = X
    for _ in range(SPEC_PASSES):
        Y = polar_express_reference(Y)
    for _ in range(SPEC_REFINEMENTS):  # p(x) = 3/2 x - 1/2 x^3, written out here
        Y = 1.5 * Y - 0.5 * (Y @ Y.T @ Y)
    np.testing.assert_allclose(polar_switch_reference(X), Y, rtol=0, atol=1e-12)
    # one step fewer is measurably different at this precision
    Z = X
    for _ in range(SPEC_PASSES):
        Z = polar_express_reference(Z)
    for _ in range(SPEC_REFINEMENTS - 1):
        Z = 1.5 * Z - 0.5 * (Z @ Z.T @ Z)
    assert np.max(np.abs(polar_switch_reference(X) - Z)) > 1e-9


def test_polar_express_default_is_five_steps():
    # docs/optimizers.md: "Algorithm 1 of arXiv 2505.16932 with 5 steps" (the literal, not the constant)
    X = _x()
    assert torch.equal(polar_express(X), polar_express(X, steps=5))
    assert not torch.equal(polar_express(X), polar_express(X, steps=4))
