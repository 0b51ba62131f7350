"""Every printed example of the README is what the code prints (run as doctests).

The ``>>>`` examples of README.md run in order in one namespace, so a later block may use
what an earlier one made; whitespace runs compare equal (plans align their columns).
"""

from __future__ import annotations

import doctest
import re
import warnings
from pathlib import Path

import pytest

import interchange_hub as ih

README = Path(__file__).resolve().parent.parent / "README.md"
BLOCK = re.compile(r"```(?:python|pycon|text)\n(.*?)```", re.DOTALL)


def _examples() -> str:
    blocks = [b for b in BLOCK.findall(README.read_text()) if ">>> " in b]
    return "\n".join(blocks)


def test_the_readme_has_printed_examples() -> None:
    text = _examples()
    assert text.count(">>> print(ih.plan(") >= 3
    assert "pip install 'interchange-hub[polars,torch]'" in README.read_text()


def test_every_printed_example_matches_real_output() -> None:
    parser = doctest.DocTestParser()
    test = parser.get_doctest(_examples(), {"ih": ih}, "README.md", str(README), 0)
    flags = doctest.NORMALIZE_WHITESPACE | doctest.ELLIPSIS
    runner = doctest.DocTestRunner(optionflags=flags)
    report: list[str] = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ih.WriteThroughWarning)
        runner.run(test, out=report.append)
    if runner.failures:
        pytest.fail("".join(report))
    assert runner.tries >= 10
