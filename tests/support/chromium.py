"""Headless Chromium for the tests that render HTML (the check report, the docs site).

Debian's ``chromium`` (installed by .ci/run) in a window 1024 pixels wide: a screenshot, and
the document's scroll and client widths measured by a script added to the page (its
``<title>`` carries them out through ``--dump-dom``). Under CI a missing browser fails the
test; elsewhere it is skipped.
"""

from __future__ import annotations

import os
import re
import shutil
import struct
import subprocess
from pathlib import Path

import pytest

FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic",
         "--no-first-run", "--disable-background-networking",
         "--disable-component-update", "--disable-sync", "--window-size=1024,2000"]
# appended before </body>: opens every <details>, then reports the widths in the title
WIDTH_PROBE = ("<script>for (const d of document.querySelectorAll('details')) d.open = true;\n"
               "document.title = 'SW=' + document.documentElement.scrollWidth + "
               "';CW=' + document.documentElement.clientWidth</script>")


def find_chromium() -> str:
    found = shutil.which("chromium") or (
        "/usr/bin/chromium" if os.path.exists("/usr/bin/chromium") else None)
    if found is None:
        if os.environ.get("CI"):
            pytest.fail("chromium is not installed (.ci/run installs it)")
        pytest.skip("chromium is not installed")
    return found


def run_chromium(exe: str, profile: Path, *args: str) -> subprocess.CompletedProcess[str]:
    profile.mkdir()
    return subprocess.run([exe, *FLAGS, f"--user-data-dir={profile}", *args],
                          capture_output=True, text=True, timeout=60, check=False)


def screenshot(exe: str, profile: Path, url: str, png: Path) -> tuple[int, int, int]:
    """Render ``url`` into ``png``; (width, height, size in bytes) of the picture."""
    run = run_chromium(exe, profile, f"--screenshot={png}", url)
    assert png.exists(), run.stderr[-2000:]
    data = png.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n" and data[12:16] == b"IHDR"
    width, height = struct.unpack(">II", data[16:24])
    return width, height, len(data)


def widths(exe: str, profile: Path, page: Path) -> tuple[int, int]:
    """(scrollWidth, clientWidth) of ``page`` rendered with every <details> open; the
    probe is a copy of the page beside it, so its relative links still resolve."""
    probe = page.with_name("width-probe.html")
    probe.write_text(page.read_text("utf-8").replace("</body>", WIDTH_PROBE + "\n</body>"),
                     encoding="utf-8")
    run = run_chromium(exe, profile, "--dump-dom", probe.as_uri())
    m = re.search(r"<title>SW=(\d+);CW=(\d+)</title>", run.stdout)
    assert m, (run.stdout[:2000], run.stderr[-2000:])
    return int(m[1]), int(m[2])
