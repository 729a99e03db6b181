"""Where the browser tests and the browser benchmarks find Chromium (no pytest needed, so benchmarks import it)."""

from __future__ import annotations

import shutil
from pathlib import Path

CHROMIUM_NAMES = ("chromium", "chromium-browser", "google-chrome")  # looked up on the PATH after /usr/bin/chromium


def find_chromium() -> str | None:
    """Path of a Chromium-family browser on this machine, or None to use Playwright's own download."""
    if Path("/usr/bin/chromium").exists():
        return "/usr/bin/chromium"
    for name in CHROMIUM_NAMES:
        path = shutil.which(name)
        if path:
            return path
    return None
