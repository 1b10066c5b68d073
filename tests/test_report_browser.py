"""A real run's report in a real browser (marker ``lab``: a small lab campaign runs first).

A two-point campaign runs in the local lab (real iptables NAT, the software tester); ``natbench report``
writes its HTML; headless Chromium (Debian's ``chromium``) loads it from a copy with a checking script
appended, takes a screenshot, and must log no console message but the check's own, which counts the images
that were decoded. Set ``NATBENCH_ARTIFACTS`` to a directory to keep the screenshot.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from html.parser import HTMLParser
from pathlib import Path

import pytest

import natbench
from natbench.host import find_command
from natbench.report.aggregate import MIN_CPU_SAMPLES
from natbench.report.html import run_figures

pytestmark = pytest.mark.lab

ROOT = Path(__file__).resolve().parents[1]
CHECK = """<script>
addEventListener('load', () => {
  const imgs = [...document.images];
  const ok = imgs.filter(i => i.complete && i.naturalWidth > 0 && i.naturalHeight > 0).length;
  console.log('natbench-check images ' + ok + ' of ' + imgs.length);
});
</script>"""


class _Page(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.imgs = 0
        self.captions: list[str] = []
        self.h2: list[str] = []
        self._in: str | None = None

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag == "img":
            self.imgs += 1
        if tag in ("figcaption", "h2"):
            self._in = tag
            (self.captions if tag == "figcaption" else self.h2).append("")

    def handle_endtag(self, tag: str) -> None:
        if tag == self._in:
            self._in = None

    def handle_data(self, data: str) -> None:
        if self._in == "figcaption":
            self.captions[-1] += data
        elif self._in == "h2":
            self.h2[-1] += data


def _campaign(tmp_path: Path) -> Path:
    text = (ROOT / "campaigns" / "quickstart.yaml").read_text()
    small = text.replace("src_ports: [800, 1600, 1600]", "src_ports: [800, 1600]")
    small = small.replace("dst_ports: [20, 20, 40]", "dst_ports: [20, 20]")
    small = small.replace("repetitions: 3", "repetitions: 1")
    assert small.count("src_ports: [800, 1600]\n") == 1 and "repetitions: 3" not in small, "the quickstart changed"
    text = small
    path = tmp_path / "small.yaml"
    path.write_text(text)
    return path


def test_a_real_runs_report_renders_in_chromium_with_no_console_error_and_every_image_decoded(tmp_path: Path) -> None:
    browser = find_command("chromium")
    if browser is None:
        pytest.skip("needs chromium (Debian package chromium; ./dev setup installs it)")
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    run = subprocess.run(
        [sys.executable, "-m", "natbench", "run", str(_campaign(tmp_path)), "-o", str(tmp_path / "run")],
        capture_output=True,
        text=True,
        timeout=900,
        env=env,
        check=False,
    )
    assert run.returncode == 0, run.stderr[-2000:]
    out = tmp_path / "report"
    rep = subprocess.run(
        [sys.executable, "-m", "natbench", "report", str(tmp_path / "run"), "--out", str(out), "--format", "html"],
        capture_output=True,
        text=True,
        timeout=300,
        env=env,
        check=False,
    )
    assert rep.returncode == 0, rep.stderr[-2000:]
    page = (out / "report.html").read_text()
    parsed = _Page()
    parsed.feed(page)
    assert parsed.h2[:2] == ["Summary", "Results"]  # the summary comes first
    assert parsed.imgs > 0 and len(parsed.captions) == parsed.imgs
    for caption in parsed.captions:  # human captions: words, no internal point ids or file stems
        assert not re.search(r"\b[0-9a-f]{12}\b", caption), caption
        assert not caption.startswith("cpu-") and len(caption.split()) >= 6, caption
    # no plot of one sample: every CPU plot's trial has several samples
    loaded = natbench.load(tmp_path / "run")
    for fig in run_figures(loaded):
        if fig.section == "cpu_time":
            mt = [ln for ln in fig.figure.axes[0].get_lines()]
            assert all(len(line.get_xdata()) >= MIN_CPU_SAMPLES for line in mt), fig.key

    checked = out / "checked.html"
    checked.write_text(page.replace("</body>", CHECK + "</body>"))
    shot = tmp_path / "report.png"
    proc = subprocess.run(
        [
            browser,
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--hide-scrollbars",
            "--enable-logging=stderr",
            "--v=0",
            "--virtual-time-budget=5000",
            "--window-size=1400,3000",
            f"--screenshot={shot}",
            checked.as_uri(),
        ],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    console = [ln for ln in proc.stderr.splitlines() if ":CONSOLE" in ln]
    ours = [ln for ln in console if "natbench-check" in ln]
    assert [ln for ln in console if "natbench-check" not in ln] == []
    assert len(ours) == 1, proc.stderr[-2000:]
    assert f'"natbench-check images {parsed.imgs} of {parsed.imgs}"' in ours[0]
    assert shot.stat().st_size > 20_000  # a page with tables and plots, not a blank one
    keep = os.environ.get("NATBENCH_ARTIFACTS")
    if keep:
        Path(keep).mkdir(parents=True, exist_ok=True)
        shutil.copy(shot, Path(keep) / "report.png")
