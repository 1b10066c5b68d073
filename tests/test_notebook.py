"""docs/examples/notebook.ipynb runs in a real Jupyter kernel and shows every plot as an image.

nbclient starts an IPython kernel (ipykernel) of this interpreter, as Jupyter (classic or Lab) would, and executes
every cell of the shipped notebook on a run directory the test writes (seed 000 Figure 2 with DUT CPU samples).
The outputs are what a front end receives through IPython's display protocol: every cell that draws a plot must
hold an ``image/png`` (a real PNG), with no ``%matplotlib`` magic in the notebook, and no cell may raise.

The kernel is this interpreter's, named by a kernelspec written to a temporary directory: a fresh virtual
environment needs no ``python -m ipykernel install``, and a user's own ``python3`` kernel (maybe another
interpreter without natbench) is never picked up.
"""

from __future__ import annotations

import base64
import json
import re
import struct
import sys
from pathlib import Path
from typing import Any

import pytest

nbclient = pytest.importorskip("nbclient", reason="nbclient and ipykernel are test dependencies (dev extra)")
nbformat = pytest.importorskip("nbformat", reason="nbformat is a test dependency (dev extra)")
pytest.importorskip("ipykernel", reason="ipykernel is a test dependency (dev extra)")

from jupyter_client.kernelspec import KernelSpecManager  # noqa: E402 (after the skips above)
from jupyter_client.manager import KernelManager  # noqa: E402

NOTEBOOK = Path(__file__).resolve().parents[1] / "docs" / "examples" / "notebook.ipynb"
KERNEL = "natbench-test"

PLOT_CALL = re.compile(r"\.plot\(|\bplot_\w+\(")
"""A cell that draws: ``run.plot(...)`` or a ``plots.plot_...(...)`` function."""


def _kernel_manager(tmp_path: Path, run_dir: Path) -> KernelManager:
    """A kernel manager for an IPython kernel of this interpreter, with NATBENCH_RUN naming the run directory."""
    spec_dir = tmp_path / "kernels" / KERNEL
    spec_dir.mkdir(parents=True)
    spec = {
        "argv": [sys.executable, "-m", "ipykernel_launcher", "-f", "{connection_file}"],
        "display_name": "natbench test kernel",
        "language": "python",
        "env": {"NATBENCH_RUN": str(run_dir)},
    }
    (spec_dir / "kernel.json").write_text(json.dumps(spec))
    specs = KernelSpecManager(kernel_dirs=[str(tmp_path / "kernels")], ensure_native_kernel=False)
    # IPC sockets in the test's directory: no TCP port to race for on a shared machine, nothing sent in plain text
    return KernelManager(
        kernel_name=KERNEL, kernel_spec_manager=specs, transport="ipc", ip=str(tmp_path / "kernel-ipc")
    )


def _png_size(data: bytes) -> tuple[int, int]:
    """Width and height from a PNG's IHDR chunk (AssertionError when the bytes are no PNG)."""
    assert data[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG"
    assert data[12:16] == b"IHDR"
    width, height = struct.unpack(">II", data[16:24])
    return width, height


def _source(cell: Any) -> str:
    return cell.source if isinstance(cell.source, str) else "".join(cell.source)


def test_notebook_runs_in_a_kernel_and_shows_every_plot(fig2_dir: Path, tmp_path: Path) -> None:
    nb = nbformat.read(NOTEBOOK, as_version=4)
    code = [c for c in nb.cells if c.cell_type == "code"]
    assert not any("%matplotlib" in _source(c) for c in code), "the notebook must show plots without a magic"
    plot_cells = [c for c in code if PLOT_CALL.search(_source(c))]
    assert len(plot_cells) >= 2, "the notebook draws a metric and the DUT's CPU idle time"

    km = _kernel_manager(tmp_path, fig2_dir)
    client = nbclient.NotebookClient(
        nb,
        km=km,
        timeout=300,  # a busy 2-CPU machine: importing pandas and matplotlib in the kernel takes seconds
        startup_timeout=120,
        resources={"metadata": {"path": str(tmp_path)}},
    )
    try:
        client.execute(cleanup_kc=True)  # raises CellExecutionError naming the cell when one raised
    finally:
        if km.has_kernel:  # stopped already unless execution failed on the way
            km.shutdown_kernel(now=True)
    assert not km.is_alive(), "the kernel is shut down again"

    for cell in code:
        errors = [o for o in cell.outputs if o.output_type == "error"]
        assert not errors, f"cell {cell.id} raised {errors[0].ename}: {errors[0].evalue}"
        stderr = "".join(o.text for o in cell.outputs if o.output_type == "stream" and o.name == "stderr")
        assert "Traceback" not in stderr, f"cell {cell.id}: {stderr}"
    assert code[0].outputs, "the first cell shows the loaded run"
    assert "Run(" in code[0].outputs[0].data["text/plain"] and "points=5" in code[0].outputs[0].data["text/plain"]

    for cell in plot_cells:
        images = [o for o in cell.outputs if o.output_type in ("display_data", "execute_result")]
        pngs = [o.data["image/png"] for o in images if "image/png" in o.data]
        assert pngs, f"plot cell {cell.id} shows no image, only {[sorted(o.data) for o in images]}"
        assert len(pngs) == len(images), f"plot cell {cell.id}: an output without its image"
        for png in pngs:
            width, height = _png_size(base64.b64decode(png))
            assert width >= 400 and height >= 250, f"plot cell {cell.id}: a {width} x {height} image"
        # SVG only where asked (natbench.report.figure.display_formats): the default is PNG alone
        assert not any("image/svg+xml" in o.data for o in images)
    # the CPU idle cell draws one figure per monitored trial it picks (two here), each displayed
    cpu = next(c for c in plot_cells if "plot_cpu_idle" in _source(c))
    assert len([o for o in cpu.outputs if "image/png" in o.get("data", {})]) == 2
