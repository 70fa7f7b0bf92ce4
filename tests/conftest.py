"""Test-wide settings: Hypothesis runs are derandomized (the same examples every run, so a
red CI is reproducible), without deadlines (timing is not what these tests judge) and
without an example database (nothing written into the working tree)."""

from hypothesis import HealthCheck, settings

settings.register_profile(
    "flinkspec",
    derandomize=True,
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.too_slow],
)
settings.load_profile("flinkspec")


# -- the browser tests (tests/test_viewer_browser.py): pytest-playwright drives the system's
# chromium (Debian's package), because Playwright's own browser download cannot work here.

import os  # noqa: E402
import shutil  # noqa: E402

import pytest  # noqa: E402


def system_chromium() -> str | None:
    """The chromium to drive: $FLINKSPEC_CHROMIUM, else the first of chromium /
    chromium-browser on PATH (``make test`` installs Debian's ``chromium`` when it can)."""
    env = os.environ.get("FLINKSPEC_CHROMIUM")
    if env:
        return env if os.access(env, os.X_OK) else None
    for name in ("chromium", "chromium-browser"):
        path = shutil.which(name)
        if path:
            return path
    return None


@pytest.fixture(scope="session")
def browser_type_launch_args(browser_type_launch_args):
    """pytest-playwright's launch options, pointed at the system chromium. A missing browser
    fails the browser tests with one line saying how to install it (never a skip)."""
    path = system_chromium()
    if path is None:
        pytest.fail("no chromium for the browser tests: `apt-get install chromium` as root (make test does "
                    "this when it runs as root), or set FLINKSPEC_CHROMIUM to a chromium binary", pytrace=False)
    return {**browser_type_launch_args, "executable_path": path, "args": ["--no-sandbox"]}
