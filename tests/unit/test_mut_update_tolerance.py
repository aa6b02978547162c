"""experiment.stats.update_tolerance's building blocks against the formulas of its docstring and
docs/optimizers.md ("Error analysis of the update check"), computed here by hand (issue 28 item 7,
the complete mutation run's survivors): gamma_n, the fixed input's shapes and state, and the
first-order chain (Daleckii-Krein slot factors per step; the bound sums each injected error times
the largest product of the later steps' factors)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from experiment.stats import update_tolerance as ut


def test_gamma_is_n_u_over_one_minus_n_u():
    assert ut.gamma(10, 0.01) == pytest.approx(0.1 / 0.9, rel=1e-15)
    assert ut.gamma(3, 2.0 ** -11) == pytest.approx(3 * 2.0 ** -11 / (1 - 3 * 2.0 ** -11), rel=1e-15)


def test_the_fixed_input_is_the_tiny_models_projections_at_step_3():
    fixed = ut.fixed_optimizer_input(4)
    assert fixed["steps_taken"] == 3 and fixed["seed"] == 0
    shapes = [(pair["A"].shape, pair["B"].shape) for pair in fixed["pairs"]]
    # attention 128->128, MLP 128->512 and 512->128: A is rank x in, B is out x rank
    assert shapes == [((4, 128), (128, 4)), ((4, 128), (512, 4)), ((4, 512), (128, 4))]
    assert all(pair[key].dtype == np.float32 for pair in fixed["pairs"] for key in pair)


def _cube(x):
    return x ** 3


def _cube_slope(x):
    return 3 * x ** 2


def test_one_step_has_the_daleckii_krein_factors_of_each_slot():
    chain = ut._Chain(np.array([2.0, 1.0]), initial_error=0.0)
    chain.step(_cube, _cube_slope, injected=0.5)
    # diagonal p'(s): 12, 3; pair (2, 1): symmetric (8 - 1) / (2 - 1) = 7, skew (8 + 1) / (2 + 1) = 3;
    # outside the row space p(s) / s: 4, 1
    np.testing.assert_allclose(chain.factors[0], [12.0, 3.0, 7.0, 3.0, 4.0, 1.0], rtol=1e-15)
    np.testing.assert_allclose(chain.sigmas, [8.0, 1.0])
    assert chain.injected == [0.5]


def test_three_values_give_every_pair_once_row_by_row():
    chain = ut._Chain(np.array([3.0, 2.0, 1.0]), initial_error=0.0)
    chain.step(_cube, _cube_slope, injected=0.0)
    # pairs (3,2), (3,1), (2,1): symmetric 19, 13, 7; skew 35/5 = 7, 28/4 = 7, 9/3 = 3
    np.testing.assert_allclose(chain.factors[0], [27, 12, 3, 19, 13, 7, 7, 7, 3, 9, 4, 1], rtol=1e-15)


def test_equal_values_take_the_slope_as_their_symmetric_factor():
    chain = ut._Chain(np.array([1.0, 1.0 + 1e-13]), initial_error=0.0)
    chain.step(_cube, _cube_slope, injected=0.0)
    assert chain.factors[0][2] == pytest.approx(3.0, rel=1e-9)
    far = ut._Chain(np.array([1.0, 1.0 + 1e-6]), initial_error=0.0)
    far.step(_cube, _cube_slope, injected=0.0)
    assert far.factors[0][2] == pytest.approx(((1 + 1e-6) ** 3 - 1) / 1e-6, rel=1e-9)


def test_the_bound_carries_each_error_through_the_later_steps():
    chain = ut._Chain(np.array([2.0, 1.0]), initial_error=0.25)
    chain.step(_cube, _cube_slope, injected=0.5)

    def half(x):
        return x / 2

    def half_slope(x):
        return 0.5

    chain.step(half, half_slope, injected=0.125)
    first = np.array([12.0, 3.0, 7.0, 3.0, 4.0, 1.0])
    second = np.full(6, 0.5)
    wanted = 0.125 * 1.0 + 0.5 * float(np.max(second)) + 0.25 * float(np.max(first * second))
    assert chain.bound() == pytest.approx(wanted, rel=1e-15)
    assert wanted == 0.125 + 0.25 + 1.5


def test_a_chain_without_steps_is_its_initial_error():
    assert ut._Chain(np.array([1.0]), initial_error=0.75).bound() == 0.75
    assert not math.isnan(ut._Chain(np.array([1.0]), initial_error=0.0).bound())
