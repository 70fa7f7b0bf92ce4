#!/usr/bin/env bash
# The browser tests (tests/test_viewer_browser.py) drive a headless chromium with Playwright.
# Playwright cannot download its own browser build here, so they use the system's chromium:
# Debian's `chromium` package, installed here when we run as root. Otherwise one line says
# what to do (the browser tests then fail with the same advice; they never skip).
set -u
if [ -n "${FLINKSPEC_CHROMIUM:-}" ] || command -v chromium >/dev/null 2>&1 || command -v chromium-browser >/dev/null 2>&1; then
    exit 0
fi
if [ "$(id -u)" = "0" ] && command -v apt-get >/dev/null 2>&1; then
    echo "flinkspec: installing chromium for the browser tests (apt-get, first run only)..."
    if (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium) >/tmp/flinkspec-chromium-install.log 2>&1; then
        exit 0
    fi
    echo "flinkspec: could not install chromium with apt-get (see /tmp/flinkspec-chromium-install.log): the browser tests will fail"
    exit 0
fi
echo "flinkspec: the browser tests need chromium and this is not root: run 'sudo apt-get install chromium' (or set FLINKSPEC_CHROMIUM to a chromium binary)"
exit 0
