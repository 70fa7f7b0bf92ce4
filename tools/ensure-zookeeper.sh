#!/usr/bin/env bash
# The ZooKeeper differential test (tests/test_zookeeper_differential.py, marked slow) starts a
# standalone server from Debian's `zookeeper` package (/usr/share/java/zookeeper.jar, run with
# the system's Java) on loopback. Installed here when we run as root; otherwise one line says
# what to do (the test then fails with the same advice; it never skips).
set -u
if [ -f /usr/share/java/zookeeper.jar ] && command -v java >/dev/null 2>&1; then
    exit 0
fi
exec bash "$(dirname "$0")/install-system-package.sh" zookeeper "the ZooKeeper differential test"
