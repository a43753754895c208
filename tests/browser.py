"""Headless Chromium for the tests that look at pages (the HTML report, the docs site):
Debian's Chromium driven directly (``--headless --dump-dom`` and ``--screenshot``, console
messages through ``--enable-logging=stderr``), no driver package to keep in step with it.
``scripts/test.sh`` installs it with apt-get when it is missing and it may; where it cannot,
the browser checks are skipped and say why."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

BROWSER = next(
    (b for b in ("chromium", "chromium-browser", "google-chrome") if shutil.which(b)), None
)
needs_browser = pytest.mark.skipif(
    BROWSER is None,
    reason="no Chromium here (scripts/test.sh installs Debian's chromium with apt-get as root)",
)


def chromium(page: Path | str, tmp: Path, *args: str) -> tuple[str, str]:
    """Run headless Chromium on ``page`` (a file or a URL); returns (stdout, the console
    messages)."""
    assert BROWSER is not None
    proc = subprocess.run(
        [
            BROWSER,
            "--headless",
            "--no-sandbox",  # CI runs as root
            "--disable-gpu",
            "--hide-scrollbars",
            "--enable-logging=stderr",
            "--v=0",
            f"--user-data-dir={tmp / 'profile'}",
            *args,
            page.resolve().as_uri() if isinstance(page, Path) else page,
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    console = [line for line in proc.stderr.splitlines() if ":CONSOLE" in line]
    return proc.stdout, "\n".join(console)
