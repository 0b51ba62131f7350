"""Shared fixtures: a fresh hub per test; gpu and slow markers."""

from __future__ import annotations

import os
from typing import Any

import pytest

# Tests never pick up plugins installed in the environment unless they ask for them.
os.environ.setdefault("INTERCHANGE_HUB_DISABLE_PLUGIN_AUTOLOAD", "1")

import interchange_hub as ih


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption("--runslow", action="store_true", help="run tests marked slow")


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    skip_slow = pytest.mark.skip(reason="slow: pass --runslow to run")
    skip_gpu = pytest.mark.skip(reason="no CUDA device available")
    has_gpu = None
    for item in items:
        if "slow" in item.keywords and not config.getoption("--runslow"):
            item.add_marker(skip_slow)
        if "gpu" in item.keywords:
            if has_gpu is None:
                has_gpu = _cuda_available()
            if not has_gpu:
                item.add_marker(skip_gpu)


def _cuda_available() -> bool:
    try:
        import torch
    except ImportError:
        return False
    return bool(torch.cuda.is_available())


@pytest.fixture
def hub() -> ih.Hub:
    """A hub of the built-in adapters, with nothing loaded from entry points."""
    return ih.Hub(autoload=False)


def pytest_terminal_summary(terminalreporter: Any) -> None:
    """The corpus tests' tally (tests/helpers.OUTCOMES), when they ran."""
    from tests.helpers import OUTCOMES

    if OUTCOMES:
        parts = ", ".join(f"{k} {v:,}" for k, v in sorted(OUTCOMES.items()))
        terminalreporter.write_line(f"type corpus cases: {parts}")
