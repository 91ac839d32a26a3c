#!/usr/bin/env bash
# Starts a throwaway Ceph cluster on loopback — one monitor, one OSD, one
# RADOS Gateway — for casket's tests and benchmarks against a real S3
# implementation. No systemd, no cephadm: every daemon's data, log, socket
# and pid file lives under DIR, and scripts/ceph-rgw-down.sh DIR stops
# exactly those daemons.
#
#   usage: scripts/ceph-rgw-up.sh DIR [PORT]      (PORT: the gateway's, default 18080)
#   env:   ACCESS / SECRET   the S3 user's keys (default test / test)
#          OBJSTORE          memstore (default: RAM, fast, gone at stop) or bluestore (a file under DIR)
#          MEM_BYTES         memstore's size (default 4 GiB); RGW frees deleted objects only at garbage collection
#   needs: apt-get install ceph-mon ceph-osd radosgw ceph-common uuid-runtime iproute2 curl
#
# Auth is off (auth_*_required = none): the cluster listens on 127.0.0.1 only
# and lives as long as a test run. The monitor's ports are PORT+100 and
# PORT+101, so clusters on different PORTs can run side by side.
set -euo pipefail
DIR=${1:?usage: $0 DIR [PORT]}
PORT=${2:-18080}
ACCESS=${ACCESS:-test}
SECRET=${SECRET:-test}
OBJSTORE=${OBJSTORE:-memstore}
MEM_BYTES=${MEM_BYTES:-4294967296}
MON_V2=$((PORT + 100))
MON_V1=$((PORT + 101))
started=$SECONDS
say() { echo "[$((SECONDS - started))s] $*"; }

[ -e "$DIR/pids" ] && { echo "$DIR holds a running cluster: scripts/ceph-rgw-down.sh $DIR first" >&2; exit 1; }
for p in "$PORT" "$MON_V2" "$MON_V1"; do
  if ss -Hltn "sport = :$p" | grep -q .; then echo "port $p is in use" >&2; exit 1; fi
done
rm -rf "$DIR"
mkdir -p "$DIR"/{mon,osd,run,log,rgw}
DIR=$(cd "$DIR" && pwd)
CONF="$DIR/ceph.conf"
FSID=$(uuidgen)
cat > "$CONF" <<CONF
[global]
fsid = $FSID
mon host = [v2:127.0.0.1:$MON_V2,v1:127.0.0.1:$MON_V1]
public addr = 127.0.0.1
ms bind ipv6 = false
auth cluster required = none
auth service required = none
auth client required = none
keyring = $DIR/keyring
run dir = $DIR/run
admin socket = $DIR/run/\$name.asok
pid file = $DIR/run/\$name.pid
log file = $DIR/log/\$name.log
log to stderr = false
mon cluster log file = $DIR/log/cluster.log
# One OSD: every pool has one copy, and the warnings about it are expected.
osd pool default size = 1
osd pool default min size = 1
osd pool default pg num = 8
osd pool default pgp num = 8
osd pool default pg autoscale mode = off
osd crush chooseleaf type = 0
mon allow pool size one = true
mon warn on pool no redundancy = false
mon max pg per osd = 1000
mon data avail warn = 1
mon data avail crit = 0

[mon]
mon data = $DIR/mon/\$name

[osd]
osd data = $DIR/osd/\$name
osd objectstore = $OBJSTORE
memstore device bytes = $MEM_BYTES
bluestore block path = $DIR/osd/\$name/block
bluestore block create = true
bluestore block size = 21474836480
# S3 keys up to 1024 bytes become long RADOS object names.
osd max object name len = 460
osd max object namespace len = 64
osd check max object name len on startup = false

[client.rgw.casket]
# radosgw asks the monitor for a secure session by default, which auth = none cannot give.
ms mon client mode = crc
rgw frontends = beast endpoint=127.0.0.1:$PORT
rgw data = $DIR/rgw
rgw dns name = localhost
rgw enable usage log = false
# Garbage collection every 10 s, so deleted objects free memstore during a run.
rgw gc obj min wait = 10
rgw gc processor period = 10
# SSE-C over plain HTTP: the cluster answers only on loopback, and the hop
# where a customer key could be seen is the client's to casket, which casket
# refuses over plain HTTP as AWS does (test/integration/sse-c-upstream.test.ts).
rgw crypt require ssl = false
CONF
touch "$DIR/keyring"

say "monitor"
monmaptool --create --fsid "$FSID" --addv a "[v2:127.0.0.1:$MON_V2,v1:127.0.0.1:$MON_V1]" "$DIR/monmap" >/dev/null
ceph-mon -c "$CONF" --mkfs -i a --monmap "$DIR/monmap"
ceph-mon -c "$CONF" -i a
for _ in $(seq 1 150); do timeout 5 ceph -c "$CONF" mon stat >/dev/null 2>&1 && break; sleep 0.2; done
timeout 5 ceph -c "$CONF" mon stat >/dev/null 2>&1 || { echo "the monitor did not answer" >&2; exit 1; }

say "OSD ($OBJSTORE)"
OSD_UUID=$(uuidgen)
OSD_ID=$(ceph -c "$CONF" osd new "$OSD_UUID")
mkdir -p "$DIR/osd/osd.$OSD_ID"
ceph-osd -c "$CONF" -i "$OSD_ID" --mkfs --osd-uuid "$OSD_UUID" >"$DIR/log/osd-mkfs.log" 2>&1
ceph-osd -c "$CONF" -i "$OSD_ID"
for _ in $(seq 1 300); do ceph -c "$CONF" osd dump 2>/dev/null | grep -q "^osd.$OSD_ID up" && break; sleep 0.2; done
ceph -c "$CONF" osd dump | grep -q "^osd.$OSD_ID up" || { echo "the OSD did not come up" >&2; tail -n 20 "$DIR/log/osd.$OSD_ID.log" >&2; exit 1; }

say "gateway on 127.0.0.1:$PORT"
radosgw -c "$CONF" -n client.rgw.casket
for _ in $(seq 1 600); do curl -s -o /dev/null "http://127.0.0.1:$PORT/" && break; sleep 0.2; done
curl -s -o /dev/null "http://127.0.0.1:$PORT/" || { echo "the gateway did not answer" >&2; tail -n 20 "$DIR/log/client.rgw.casket.log" >&2; exit 1; }
radosgw-admin -c "$CONF" user create --uid=casket-test --display-name=casket-test --access-key="$ACCESS" --secret-key="$SECRET" >"$DIR/user.json" 2>"$DIR/log/user-create.log"
cat "$DIR"/run/*.pid > "$DIR/pids"
say "ready: http://127.0.0.1:$PORT, keys $ACCESS/$SECRET, CASKET_TEST_RGW_CONF=$CONF"
