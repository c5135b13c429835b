"""Run in parallel (pytest-xdist) with `--dist loadgroup`, the tests marked `slow`
(a real model, vLLM, llama-server, Dynamo or a harness CLI, each using the cores
itself) share one group, so they run one after another on one worker while the rest
spread over the others."""

from __future__ import annotations

import pytest


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if item.get_closest_marker("slow") is not None:
            item.add_marker(pytest.mark.xdist_group("slow"))
