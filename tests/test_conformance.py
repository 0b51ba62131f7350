"""The conformance kit: every built-in adapter passes it, and it catches a lying adapter."""

from __future__ import annotations

import pytest

from interchange_hub._tools.samples import OWN_API
from interchange_hub.testing import assert_conforms, check_conformance, samples
from tests.fake_plugins import boxes, dishonest, miskeyed, misspelled


@pytest.mark.parametrize("library", OWN_API)
def test_builtin_adapters_conform(library: str) -> None:
    report = assert_conforms(None, library)
    names = {c.name for c in report.checks}
    assert "takes data" in names and "declarations" in names
    assert len(report.checks) > 100


def test_a_third_party_adapter_conforms() -> None:
    report = assert_conforms(boxes, "boxes")
    claims = [c for c in report.checks if c.name.endswith("zero-copy claim")]
    assert claims and all(c.passed for c in claims)
    assert any("float table -> polars" in c.name for c in claims)


def test_a_false_zero_copy_claim_fails() -> None:
    report = check_conformance(dishonest, "boxes")
    failed = {c.name: c.detail for c in report.failures}
    assert "float table <- pyarrow: zero-copy claim" in failed
    assert failed["float table <- pyarrow: zero-copy claim"].startswith(
        "plan claims zero-copy; 0 of"
    )
    with pytest.raises(AssertionError, match="FAIL float table <- pyarrow: zero-copy claim"):
        assert_conforms(dishonest, "boxes")


def test_a_fast_path_key_function_that_disagrees_with_route_key_fails() -> None:
    report = check_conformance(miskeyed, "boxes")
    failed = {c.name: c.detail for c in report.failures}
    assert "float table: route key" in failed, sorted(failed)
    assert failed["float table: route key"] == (
        "route_key_of(type) gives ('box', 40), route_key ('box', ('x', 'y'))"
    )
    raising = check_conformance(miskeyed.Raising(), "boxes")
    failed = {c.name: c.detail for c in raising.failures}
    assert failed["float table: route key"] == "raised ValueError: no key for this box"
    honest = assert_conforms(boxes, "boxes")
    keyed = [c for c in honest.checks if c.name.endswith(": route key")]
    assert keyed and all(c.passed and c.detail == "consistent" for c in keyed)


def test_a_plugin_that_does_not_load_fails_registration() -> None:
    report = check_conformance(misspelled, "boxes")
    assert [c.name for c in report.failures] == ["registered"]
    assert "unknown hook 'register_adapter'" in report.failures[0].detail


def test_samples_cover_the_contract() -> None:
    data = samples()
    assert data["sliced table"].column(0).chunk(0).offset == 3
    assert data["chunked table"].column(0).num_chunks == 2
    assert data["table with nulls"].column("i").null_count > 0
    assert data["empty column"].to_pylist() == []
