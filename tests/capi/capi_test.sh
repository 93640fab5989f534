#!/usr/bin/env bash
# The C API's test (capi_test.c) with real credentials and a real server:
# makes a two-device PKI with nodefl-ca, runs the network-free checks, then
# starts nodefl-server (neighbour-echo, both devices' credentials, exit
# after the job) and runs the job mode against it. The server must verify
# the job and exit 0.
#
# Usage: capi_test.sh HOST_BIN CAPI_TEST OUT
#   HOST_BIN   folder with nodefl-server and nodefl-ca
#   CAPI_TEST  the capi_test binary
#   OUT        scratch folder (recreated)
# Exit status 0 when every check passed, 1 when one failed, 2 for bad arguments.
set -euo pipefail
# shellcheck source=../server/tls_test_lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/../server/tls_test_lib.sh"

[[ $# -eq 3 ]] || { echo "usage: $0 HOST_BIN CAPI_TEST OUT" >&2; exit 2; }
bin=$1
capi_test=$2
out=$3
for tool in nodefl-server nodefl-ca; do
  [[ -x $bin/$tool ]] || { echo "$0: $bin/$tool not built" >&2; exit 2; }
done
rm -rf "$out"
mkdir -p "$out"
pki=$out/pki
make_pki "$bin" "$pki" 2

"$capi_test" checks "$pki" || failed=1

server_pid=
trap '[[ -n $server_pid ]] && kill -9 "$server_pid" 2>/dev/null || true' EXIT
for attempt in 1 2 3; do  # a random port may be taken
  port=$((20000 + RANDOM % 12000))
  $bin/nodefl-server --tls_ca_cert "$pki/ca.crt" --tls_server_cert "$pki/server.crt" \
    --tls_server_key "$pki/server.key" --credentials_dir "$pki/devices" --listen_port "$port" \
    --job neighbour-echo --exit_after_jobs 1 --heartbeat_interval_ms 2000 >/dev/null 2>"$out/server.log" &
  server_pid=$!
  wait_listening "$server_pid" "$out/server.log" && break
  server_pid=
done
[[ -n $server_pid ]] || { echo "FAIL: the server did not start"; cat "$out/server.log"; exit 1; }

"$capi_test" job "$port" "$pki" || failed=1
wait_server_exit "$server_pid"
check "the server verified the neighbour-echo job and exited 0 ($server_status)" test "$server_status" = 0
resumes=$(grep -E 'event=stopped' "$out/server.log" | grep -oE ' resumes=[0-9]+' | cut -d= -f2 || true)
check "... and counted device 0's resumed session (resumes=${resumes:-none})" test "${resumes:-0}" -ge 1
check "... and the devices' Goodbyes" grep -qE 'event=goodbye .*device=(0|1) ' "$out/server.log"
server_pid=
if ((failed)); then
  grep -E 'level=(warn|error)|event=job_finished' "$out/server.log" | cut -c1-300 | tail -n 20 || true
  echo "C API test: FAIL (logs in $out)"
  exit 1
fi
echo "C API test: OK"
