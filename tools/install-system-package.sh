#!/usr/bin/env bash
# Install Debian package $1, which $2 (what needs it) needs, when we run as root; otherwise, or
# when apt-get fails, print one line saying what to do. Never fails: what needs the package
# then fails with the same advice (it never skips). The callers check first whether it is there.
set -u
pkg=$1
what=$2
if [ "$(id -u)" = "0" ] && command -v apt-get >/dev/null 2>&1; then
    echo "flinkspec: installing $pkg for $what (apt-get, first run only)..."
    if (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "$pkg") >"/tmp/flinkspec-$pkg-install.log" 2>&1; then
        exit 0
    fi
    echo "flinkspec: could not install $pkg with apt-get (see /tmp/flinkspec-$pkg-install.log): $what will fail"
    exit 0
fi
echo "flinkspec: $what needs Debian's $pkg package and this is not root: run 'sudo apt-get install $pkg'"
exit 0
