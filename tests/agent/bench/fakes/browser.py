"""A real headless browser for the report tests: Chromium from Debian's packages.

``scripts/setup`` installs it (``apt-get install chromium``) where it can. Where it is missing the
tests that need it are skipped, except in CI (``CI`` set, as ``.ci/run`` does), where a missing
browser is a failure: the HTML report must have been seen rendered by a browser.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import pytest

FLAGS = (
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
    "--disable-sync", "--no-first-run", "--disable-extensions", "--hide-scrollbars",
    # nothing may be fetched: every host name resolves to nothing
    "--host-resolver-rules=MAP * ~NOTFOUND",
)  # fmt: skip
TIMEOUT_S = 120


def in_ci() -> bool:
    return os.environ.get("CI", "").strip().lower() not in ("", "0", "false", "no")


def chromium() -> str:
    """The browser's path; skips the test where it is not installed, fails it in CI."""
    path = shutil.which("chromium")
    if path:
        return path
    message = ("Chromium is not installed; scripts/setup installs it from Debian's packages "
               "(apt-get install chromium)")
    if in_ci():
        pytest.fail(f"{message}, and CI never skips the browser test")
    pytest.skip(message)


def _run(browser: str, profile: Path, *args: str) -> subprocess.CompletedProcess[str]:
    profile.mkdir(parents=True, exist_ok=False)  # a new, empty profile for every call
    result = subprocess.run([browser, *FLAGS, f"--user-data-dir={profile}", *args], capture_output=True, text=True,
                            timeout=TIMEOUT_S, check=False)
    assert result.returncode == 0, result.stderr[-2000:]
    return result


def dump_dom(browser: str, page: Path, profile: Path) -> str:
    """The page's DOM after it loaded (scripts and image handlers have run)."""
    return _run(browser, profile, "--dump-dom", page.resolve().as_uri()).stdout


def screenshot(browser: str, page: Path, profile: Path, out: Path, size: str = "1280,4000") -> Path:
    _run(browser, profile, f"--window-size={size}", f"--screenshot={out}", page.resolve().as_uri())
    assert out.is_file() and out.stat().st_size > 0
    return out


class Dom(HTMLParser):
    """The parts of a page the tests look at: headings, blockquotes, images, and every URL it names."""

    def __init__(self, text: str) -> None:
        super().__init__(convert_charrefs=True)
        self.headings: list[tuple[str, str]] = []
        self.quotes: list[str] = []
        self.images: list[dict[str, Any]] = []
        self.fetched: list[tuple[str, str]] = []
        self.missing_plot_texts: list[str] = []
        self._open: list[str] = []
        self._buffer: list[str] = []
        self.feed(text)

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        a = {k: v or "" for k, v in attrs}
        if tag == "img":
            self.images.append(a)
        for key in ("src", "href"):
            if key in a and tag != "a":
                self.fetched.append((tag, a[key]))
        if tag in ("h1", "h2", "h3", "blockquote") or (tag == "p" and a.get("class") == "missing-plot"):
            self._open.append("missing" if tag == "p" else tag)
            self._buffer = []

    def handle_endtag(self, tag: str) -> None:
        if not self._open:
            return
        want = "p" if self._open[-1] == "missing" else self._open[-1]
        if tag != want:
            return
        kind = self._open.pop()
        text = " ".join("".join(self._buffer).split())
        if kind == "blockquote":
            self.quotes.append(text)
        elif kind == "missing":
            self.missing_plot_texts.append(text)
        else:
            self.headings.append((kind, text))

    def handle_data(self, data: str) -> None:
        if self._open:
            self._buffer.append(data)
