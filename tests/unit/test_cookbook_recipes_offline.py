"""docs/embedded-backend.md says which tinker-cookbook recipes run against the embedded backend and why
the one-file recipes cannot: this keeps the reason true for the installed cookbook."""

from __future__ import annotations

import inspect

import pytest
from suite import REPO_ROOT

ONE_FILE_RECIPES = ("sl_basic", "rl_basic", "sl_loop", "rl_loop")


@pytest.mark.parametrize("model", ["embedded/tiny-arith", str(REPO_ROOT / "embedded_tinker" / "assets" / "tiny-arith")])
def test_the_cookbook_registry_knows_no_embedded_model(model):
    from tinker_cookbook import model_info

    with pytest.raises(Exception, match="Unknown model"):
        model_info.get_recommended_renderer_name(model)


@pytest.mark.parametrize("recipe", ONE_FILE_RECIPES)
def test_each_one_file_recipe_looks_its_renderer_up_and_is_documented(recipe):
    import importlib

    source = inspect.getsource(importlib.import_module(f"tinker_cookbook.recipes.{recipe}"))
    assert "get_recommended_renderer_name(" in source  # the lookup that raises "Unknown model"
    docs = (REPO_ROOT / "docs" / "embedded-backend.md").read_text()
    assert f"`{recipe}`" in docs
