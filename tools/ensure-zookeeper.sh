#!/usr/bin/env bash
# The ZooKeeper differential test (tests/test_zookeeper_differential.py, marked slow) starts a
# standalone server from Debian's `zookeeper` package (/usr/share/java/zookeeper.jar, run with
# the system's Java) on loopback. Installed here when we run as root. Otherwise one line says
# what to do (the test then fails with the same advice; it never skips).
set -u
if [ -f /usr/share/java/zookeeper.jar ] && command -v java >/dev/null 2>&1; then
    exit 0
fi
if [ "$(id -u)" = "0" ] && command -v apt-get >/dev/null 2>&1; then
    echo "flinkspec: installing zookeeper for the ZooKeeper differential test (apt-get, first run only)..."
    if (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq zookeeper) >/tmp/flinkspec-zookeeper-install.log 2>&1; then
        exit 0
    fi
    echo "flinkspec: could not install zookeeper with apt-get (see /tmp/flinkspec-zookeeper-install.log): the ZooKeeper differential test will fail"
    exit 0
fi
echo "flinkspec: the ZooKeeper differential test needs Debian's zookeeper package and this is not root: run 'sudo apt-get install zookeeper'"
exit 0
