"""Fixtures of the browser tests: headless Chromium driven by selenium.

Chromium and chromedriver come from Debian's packages (``chromium``,
``chromium-driver``), installed by ``scripts/install-browser.sh`` (which
``scripts/test.sh`` runs).  Without them the browser tests are skipped,
except under CI (``CI=true``), where a missing browser is a failure.
Screenshots go to ``test-artifacts/`` (ignored by git).
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from topology.settings import PROJECT_ROOT

CHROMIUM = Path("/usr/bin/chromium")
CHROMEDRIVER = Path("/usr/bin/chromedriver")
ARTIFACTS = PROJECT_ROOT / "test-artifacts"

CHROME_FLAGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-dev-shm-usage",
    "--window-size=1280,900",
)


def _missing() -> str | None:
    try:
        import selenium  # noqa: F401
    except ImportError:
        return "selenium is not installed (pip install -e '.[test]')"
    for path in (CHROMIUM, CHROMEDRIVER):
        if not path.exists():
            return f"{path} is missing (run scripts/install-browser.sh)"
    return None


@pytest.fixture
def chrome() -> Iterator[object]:
    """A fresh headless Chromium with an empty profile; quit at the end."""
    problem = _missing()
    if problem:
        if os.environ.get("CI", "").lower() in ("1", "true", "yes"):
            pytest.fail(f"the browser tests cannot run: {problem}", pytrace=False)
        pytest.skip(problem)
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    profile = tempfile.mkdtemp(prefix="vexnudge-chromium-")
    options = webdriver.ChromeOptions()
    options.binary_location = str(CHROMIUM)
    for flag in CHROME_FLAGS:
        options.add_argument(flag)
    options.add_argument(f"--user-data-dir={profile}")
    driver = webdriver.Chrome(service=Service(str(CHROMEDRIVER)), options=options)
    driver.set_page_load_timeout(30)
    try:
        yield driver
    finally:
        driver.quit()
        shutil.rmtree(profile, ignore_errors=True)


def screenshot(driver: object, name: str) -> Path:
    """Save a PNG of the current page under test-artifacts/."""
    ARTIFACTS.mkdir(exist_ok=True)
    path = ARTIFACTS / f"{name}.png"
    driver.save_screenshot(str(path))  # type: ignore[attr-defined]
    return path
