#!/bin/sh
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# The configuration of every private dbus-daemon the tests and the
# benchmarks start, printed on stdout:
#
#   bus-conf.sh KIND SOCKET [POLICY [SERVICEDIR]]
#
# KIND
#   system  the system bus's default policy (system.conf: every uid
#           connects, nobody owns a name or calls a method unless a policy
#           file allows it), then POLICY included: what the installed
#           units/org.memacct1.conf really allows. POLICY is required.
#   open    a session-type bus on which anyone may connect (any uid, not
#           only the bus daemon's: a test that drops to another uid needs
#           that), own any name, send anything and eavesdrop; then POLICY
#           included when it is given and exists.
# SOCKET      the path of the bus's listening socket (unix:path=SOCKET)
# SERVICEDIR  a directory of activation files (.service), when given
#
# Used by tests/lib.sh (start_bus, start_open_bus), tests/dbus/test-notify.py
# and tests/bench/run-dbus.sh. POSIX sh.

set -eu

usage() {
        echo "usage: bus-conf.sh system|open SOCKET [POLICY [SERVICEDIR]]" >&2
        exit 2
}

[ $# -ge 2 ] && [ $# -le 4 ] || usage
kind=$1
socket=$2
policy=${3:-}
servicedir=${4:-}

case $kind in
system)
        [ -n "$policy" ] || {
                echo "bus-conf.sh: a system bus needs a POLICY file" >&2
                exit 2
        }
        ;;
open) ;;
*) usage ;;
esac

cat <<EOF
<!DOCTYPE busconfig PUBLIC "-//freedesktop//DTD D-Bus Bus Configuration 1.0//EN"
 "http://www.freedesktop.org/standards/dbus/1.0/busconfig.dtd">
<busconfig>
EOF
if [ "$kind" = system ]; then
        echo "  <type>system</type>"
else
        echo "  <type>session</type>"
fi
cat <<EOF
  <listen>unix:path=$socket</listen>
  <auth>EXTERNAL</auth>
EOF
if [ -n "$servicedir" ]; then
        echo "  <servicedir>$servicedir</servicedir>"
fi
if [ "$kind" = system ]; then
        cat <<EOF
  <policy context="default">
    <allow user="*"/>
    <deny own="*"/>
    <deny send_type="method_call"/>
    <allow send_type="signal"/>
    <allow send_requested_reply="true" send_type="method_return"/>
    <allow send_requested_reply="true" send_type="error"/>
    <allow receive_type="method_call"/>
    <allow receive_type="method_return"/>
    <allow receive_type="error"/>
    <allow receive_type="signal"/>
    <allow send_destination="org.freedesktop.DBus" send_interface="org.freedesktop.DBus"/>
    <allow send_destination="org.freedesktop.DBus" send_interface="org.freedesktop.DBus.Introspectable"/>
    <allow send_destination="org.freedesktop.DBus" send_interface="org.freedesktop.DBus.Properties"/>
  </policy>
  <include>$policy</include>
EOF
else
        cat <<EOF
  <policy context="default">
    <allow user="*"/>
    <allow send_destination="*" eavesdrop="true"/>
    <allow eavesdrop="true"/>
    <allow own="*"/>
  </policy>
EOF
        if [ -n "$policy" ] && [ -e "$policy" ]; then
                echo "  <include>$policy</include>"
        fi
fi
echo "</busconfig>"
