#!/usr/bin/env bash
# The browser tests (tests/test_viewer_browser.py) drive a headless chromium with Playwright.
# Playwright cannot download its own browser build here, so they use the system's chromium:
# Debian's `chromium` package, installed here when we run as root. Otherwise one line says
# what to do (or set FLINKSPEC_CHROMIUM to a chromium binary); the browser tests then fail
# with the same advice, they never skip.
set -u
if [ -n "${FLINKSPEC_CHROMIUM:-}" ] || command -v chromium >/dev/null 2>&1 || command -v chromium-browser >/dev/null 2>&1; then
    exit 0
fi
exec bash "$(dirname "$0")/install-system-package.sh" chromium "the browser tests"
