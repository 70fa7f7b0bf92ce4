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



# -- the default run's output (`make test`, `pytest -q`): no dot per passing test. A failure or
# an error is still marked as it happens (F, E) and reported in full at the end; a long run
# prints a line every PROGRESS_EVERY seconds (tests run, failed, elapsed); pytest's last line
# is the summary (passed, failed, time). `-v` shows every test as pytest does. Under pytest-xdist
# (`make test` runs `-n auto`) the controller prints these lines: the workers report every test to
# it, and a worker prints nothing of its own.

import time  # noqa: E402

from properties.progress import format_elapsed  # noqa: E402

#: seconds between two "tests: N/M run" lines of a quiet run
PROGRESS_EVERY = 60.0
_QUIET: dict = {"reporter": None, "next": 0.0, "t0": 0.0, "run": 0, "failed": 0, "total": "?"}


@pytest.hookimpl(trylast=True)
def pytest_configure(config):
    reporter = config.pluginmanager.get_plugin("terminalreporter")
    if reporter is None or config.get_verbosity() > 0 or hasattr(config, "workerinput"):  # an xdist worker
        return
    _QUIET.update(reporter=reporter, t0=time.monotonic(), next=time.monotonic() + PROGRESS_EVERY)
    if hasattr(reporter, "_show_progress_info"):
        reporter._show_progress_info = False  # no " [ 40%]" after a line of dots that is not drawn


@pytest.hookimpl(tryfirst=True)
def pytest_report_teststatus(report, config):
    if _QUIET["reporter"] is not None and report.when == "call" and report.passed \
            and not hasattr(report, "wasxfail"):
        return "passed", "", "PASSED"  # counted in the summary, no dot
    return None


def pytest_collection_finish(session):
    if not hasattr(session.config, "workerinput"):
        _QUIET["total"] = len(session.items)


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_node_collection_finished(node, ids):
    """Under xdist the controller collects nothing itself: every worker sends it the same list."""
    _QUIET["total"] = len(ids)


def pytest_runtest_logreport(report):
    if report.failed:
        _QUIET["failed"] += 1
    if report.when == "teardown":
        _QUIET["run"] += 1


def pytest_runtest_logfinish(nodeid, location):
    reporter = _QUIET["reporter"]
    if reporter is None or time.monotonic() < _QUIET["next"]:
        return
    _QUIET["next"] = time.monotonic() + PROGRESS_EVERY
    tw = getattr(reporter, "_tw", None)
    if tw is not None and tw.width_of_current_line:  # after an F or E of this line
        tw.line()
    reporter.write_line(f"tests: {_QUIET['run']}/{_QUIET['total']} run, {_QUIET['failed']} failed "
                        f"({format_elapsed(time.monotonic() - _QUIET['t0'])})")
