"""The comparison notebook and the HTML form of plans it shows.

``Plan._repr_html_`` is tested on real plans (a torch result that writes through to its
source, a device move planned on the CPU and one run by the simulated device, copies and
losses) and on a plan made of hostile strings. The notebook is checked as committed (up to
date, no outputs, no set-up lines) and as rendered: ``notebooks/run.py`` executes it and
writes the HTML page, and the page is read for errors, plan tables, notes and figures.
"""

from __future__ import annotations

import dataclasses
import html
import json
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import polars as pl
import pyarrow as pa
import pytest

import interchange_hub as ih
from interchange_hub._core.info import Copy, Loss
from tests.fake_plugins import simdevice
from tests.fake_plugins.simdevice import SIM, SimArray

ROOT = Path(__file__).resolve().parent.parent
NOTEBOOKS = ROOT / "notebooks"
NOTEBOOK = NOTEBOOKS / "compare_libraries.ipynb"
SETUP_NOISE = ("sys.path", "noqa", "type: ignore")


def rows(page: str) -> list[str]:
    return re.findall(r"<tr>.*?</tr>", page, flags=re.DOTALL)


# -- Plan._repr_html_ ---------------------------------------------------------------------------
def test_plan_html_is_a_table_of_the_steps(hub: ih.Hub) -> None:
    plan = hub.plan(pa.chunked_array([[1.0, 2.0, 3.0]]), to="torch")
    page = plan._repr_html_()
    assert page.startswith("<div") and "<table>" in page
    assert "Plan pyarrow.ChunkedArray &rarr; torch</b>: zero-copy" in page
    body = [r for r in rows(page) if "<td" in r]
    assert len(body) == len(plan.steps)
    for step, row in zip(plan.steps, body, strict=True):
        assert html.escape(step.edge.protocol) in row and html.escape(step.estimate.why) in row


def test_plan_html_shows_the_write_through_note(hub: ih.Hub) -> None:
    plan = hub.plan(pl.Series("x", [1.0, 2.0, 3.0]), to="torch")
    assert plan.notes and any("copy=True" in note for note in plan.notes)
    page = plan._repr_html_()
    for note in plan.notes:
        assert f"<b>note:</b> {html.escape(note)}</div>" in page
    assert page.index("</table>") < page.index("<b>note:</b>")  # below the steps


def test_plan_html_shows_a_device_move_planned_on_the_cpu(hub: ih.Hub) -> None:
    # Planning runs nothing: a numpy array to a CUDA tensor plans on a machine without one.
    plan = hub.plan(np.arange(1_000, dtype=np.float32), to="torch", device="cuda:0")
    assert plan.device_moves == 1
    page = plan._repr_html_()
    assert "(1 device move)" in page
    (row,) = [r for r in rows(page) if "device move</b>" in r]
    assert "<b>cpu &rarr; cuda:0</b>" in row and "copy 3.9 KiB" in row
    assert "Tensor.to" in row


def test_plan_html_shows_a_device_move_of_the_simulated_device() -> None:
    hub = ih.Hub(autoload=False, plugins=[*ih.builtin_plugins(), simdevice])
    plan = hub.plan(SimArray(np.arange(1_000, dtype="float64"), SIM), to="polars")
    assert plan.device_moves == 1
    page = plan._repr_html_()
    (row,) = [r for r in rows(page) if "device move</b>" in r]
    assert "<b>ext_dev:0 &rarr; cpu</b>" in row and "SimArray.to_host" in row


def test_plan_html_shows_copies_and_losses(hub: ih.Hub) -> None:
    frame = pd.DataFrame({"n": pd.array([1, None, 3], dtype="Int64"), "f": [0.5, 1.5, 2.5]})
    plan = hub.plan(frame, to="numpy")
    assert plan.losses and plan.copies
    page = plan._repr_html_()
    assert "lossy (1)" in page
    for loss in plan.losses:
        assert f"<b>lossy</b> {html.escape(loss.message())}" in page
    for copy in plan.copies:
        assert html.escape(copy.reason) in page


def test_plan_html_names_columns_copied_for_one_reason_once(hub: ih.Hub) -> None:
    plan = hub.plan(np.zeros((10, 3)), to="polars")  # C order: every column is gathered
    reasons = {c.reason for c in plan.copies}
    assert len(plan.copies) == 3 and len(reasons) == 1
    page = plan._repr_html_()
    assert "copies columns &#x27;column_0&#x27;, &#x27;column_1&#x27;, &#x27;column_2&#x27;" in page
    assert page.count(html.escape(reasons.pop())) == 1


def test_plan_html_shows_each_columns_plan(hub: ih.Hub) -> None:
    # as_dict=True plans carry one plan per column after the table's own steps.
    table = hub.plan(pd.DataFrame({"a": [1.0, 2.0]}), to="pyarrow")
    column = hub.plan(pl.Series("a", [1.0, 2.0]), to="torch")
    plan = dataclasses.replace(table, columns=(("a", column), ("<b>", column)))
    page = plan._repr_html_()
    assert "<b>column &#x27;a&#x27;</b>: zero-copy, 2 steps" in page
    assert "<b>column &#x27;&lt;b&gt;&#x27;</b>" in page
    assert page.count("<table>") == 3
    assert page.count(f"<b>note:</b> {html.escape(column.notes[0])}") == 2


def test_plan_html_of_a_plan_without_steps_says_so(hub: ih.Hub) -> None:
    plan = hub.plan(pa.table({"a": [1]}), to="pyarrow")
    assert not plan.steps
    assert "no steps: the object is returned as is" in plan._repr_html_()
    deferred = dataclasses.replace(plan, deferred=True)
    assert "route planned when the stream is read" in deferred._repr_html_()


def test_plan_html_escapes_every_text(hub: ih.Hub) -> None:
    frame = pd.DataFrame({"n": pd.array([1, None], dtype="Int64")})
    plan = hub.plan(frame, to="numpy")
    evil = "<script>alert('x')</script> & <b>"
    step = plan.steps[-1]
    edge = dataclasses.replace(step.edge, adapter=evil, source=evil, target=evil, protocol=evil)
    estimate = dataclasses.replace(
        step.estimate,
        why=evil,
        copies=(Copy(evil, 8, evil),),
        losses=(Loss(evil, evil, evil, evil),),
    )
    bad = dataclasses.replace(
        plan,
        source=evil,
        target=evil,
        steps=(dataclasses.replace(step, edge=edge, estimate=estimate),),
        notes=(evil,),
    )
    page = bad._repr_html_()
    assert "<script" not in page
    assert page.count(html.escape(evil)) >= 8  # title x2, adapter, nodes x2, via, why, note
    tags = set(re.findall(r"</?([a-z]+)", page))
    assert tags <= {"div", "b", "table", "thead", "tbody", "tr", "th", "td", "code", "span", "br"}


def test_plan_html_is_self_contained(hub: ih.Hub) -> None:
    page = hub.plan(pd.DataFrame({"s": ["a", "b"]}), to="polars")._repr_html_()
    for banned in ("<script", "<style", "class=", "href=", "src=", "javascript:"):
        assert banned not in page
    cells = re.findall(r"<t[dh]\b[^>]*>", page)
    assert cells and all('style="' in cell and "text-align:left" in cell for cell in cells)
    assert "color:#1f2328" in page  # text colour set with the background: legible in dark themes


# -- the committed notebook --------------------------------------------------------------------
def cell_sources(nb: dict[str, Any]) -> list[str]:
    return [
        "".join(c["source"]) if isinstance(c["source"], list) else c["source"] for c in nb["cells"]
    ]


def test_the_committed_notebook_is_generated_without_outputs() -> None:
    check = subprocess.run(
        [sys.executable, str(NOTEBOOKS / "make_notebook.py"), "--check"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert check.returncode == 0, check.stdout + check.stderr
    nb = json.loads(NOTEBOOK.read_text())
    code = [c for c in nb["cells"] if c["cell_type"] == "code"]
    assert code and all(c["outputs"] == [] and c["execution_count"] is None for c in code)


def test_the_notebook_opens_with_an_introduction_and_no_set_up_noise() -> None:
    nb = json.loads(NOTEBOOK.read_text())
    first = nb["cells"][0]
    assert first["cell_type"] == "markdown"
    intro = cell_sources(nb)[0]
    assert intro.startswith("# ") and "notebooks/run.py" in intro
    for source in cell_sources(nb):
        for noise in SETUP_NOISE:
            assert noise not in source, f"{noise!r} in a cell:\n{source}"


# -- the rendered notebook ---------------------------------------------------------------------
@pytest.fixture(scope="module")
def rendered(tmp_path_factory: pytest.TempPathFactory) -> tuple[dict[str, Any], str]:
    """The notebook executed and rendered by notebooks/run.py (as CI runs it): ~20 s."""
    out = tmp_path_factory.mktemp("notebook")
    run = subprocess.run(
        [
            sys.executable,
            str(NOTEBOOKS / "run.py"),
            "--output",
            str(out / "executed.ipynb"),
            "--html",
            str(out / "notebook.html"),
        ],
        capture_output=True,
        text=True,
        check=False,
        timeout=300,
    )
    assert run.returncode == 0, run.stdout + run.stderr
    return (
        json.loads((out / "executed.ipynb").read_text()),
        (out / "notebook.html").read_text(encoding="utf-8"),
    )


def test_the_rendered_notebook_has_no_errors(rendered: tuple[dict[str, Any], str]) -> None:
    nb, page = rendered
    outputs = [o for c in nb["cells"] if c["cell_type"] == "code" for o in c["outputs"]]
    assert outputs
    assert not [o for o in outputs if o["output_type"] == "error"]
    stderr = [o["text"] for o in outputs if o.get("name") == "stderr"]
    assert not stderr, stderr  # no warnings either
    assert "Traceback" not in page
    assert 'data-mime-type="application/vnd.jupyter.stderr"' not in page


def test_the_rendered_notebook_shows_plans_as_tables_with_notes(
    rendered: tuple[dict[str, Any], str],
) -> None:
    # nbconvert writes the entities out as characters: compare the text.
    page = html.unescape(rendered[1])
    plans = re.findall(r"<b>Plan [^<]*</b>", page)
    assert len(plans) >= 5
    assert "<b>Plan polars.Series → torch</b>" in page
    series = pl.Series("values", np.arange(1_000.0))
    notes = ih.plan(series, to="torch").notes
    assert notes and all(f"<b>note:</b> {note}</div>" in page for note in notes)
    assert "<b>cpu → cuda:0</b>" in page and "device move</b>" in page
    assert "<b>lossy</b>" in page
    assert page.count("<table>") >= len(plans)


def test_the_rendered_notebook_has_its_figures(rendered: tuple[dict[str, Any], str]) -> None:
    nb, page = rendered
    for call in ("views.heatmap(results)", "views.memory_plot(results)"):
        (cell,) = [c for c in nb["cells"] if call in "".join(c["source"])]
        assert [o for o in cell["outputs"] if "image/png" in o.get("data", {})], call
    assert page.count('src="data:image/png;base64,') >= 2  # embedded: the page stands alone


def test_the_rendered_cells_have_no_set_up_noise(rendered: tuple[dict[str, Any], str]) -> None:
    nb, _ = rendered
    for source in cell_sources(nb):
        assert not any(noise in source for noise in SETUP_NOISE), source
