#!/usr/bin/env bash
# Stops the cluster scripts/ceph-rgw-up.sh started in DIR: exactly the
# daemons whose pid files are under DIR/run (gateway first, monitor last),
# then removes DIR unless --keep.
#   usage: scripts/ceph-rgw-down.sh DIR [--keep]
set -uo pipefail
DIR=${1:?usage: $0 DIR [--keep]}
for f in "$DIR"/run/client.rgw.*.pid "$DIR"/run/osd.*.pid "$DIR"/run/mon.*.pid; do
  [ -f "$f" ] || continue
  pid=$(cat "$f")
  kill "$pid" 2>/dev/null || continue
  for _ in $(seq 1 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
  kill -0 "$pid" 2>/dev/null && kill -9 "$pid"
  echo "stopped $(basename "$f" .pid) ($pid)"
done
rm -f "$DIR/pids"
[ "${2:-}" = --keep ] || rm -rf "$DIR"
