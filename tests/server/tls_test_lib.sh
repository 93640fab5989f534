# Shared by the shell tests that run nodefl-server over TLS against
# nodefl-emulate or other clients (server_restart_tls.sh,
# lumos_train_faults.sh, tests/examples/device_client_job.sh,
# tests/capi/capi_test.sh); sourced, not run.

# check DESCRIPTION COMMAND...: runs COMMAND, prints "ok:" or "FAIL:" with
# DESCRIPTION, and sets failed=1 when it fails.
failed=0
check() {
  local what=$1
  shift
  if "$@"; then echo "ok:   $what"; else echo "FAIL: $what"; failed=1; fi
}

# wait_server_exit PID: waits up to 30 s for a server that was told to
# exit (exit_after_jobs) and sets server_status to its exit status.
wait_server_exit() {
  server_status=0
  for _ in $(seq 300); do kill -0 "$1" 2>/dev/null || break; sleep 0.1; done
  wait "$1" || server_status=$?
}

# wait_listening PID LOG: true once LOG says the server listens (within
# 10 s), false if it exits or stays silent.
wait_listening() {
  for _ in $(seq 100); do
    grep -q 'event=listening' "$2" 2>/dev/null && return 0
    kill -0 "$1" 2>/dev/null || return 1
    sleep 0.1
  done
  return 1
}

# make_pki BIN DIR DEVICES: a deployment's credentials in DIR with BIN's
# nodefl-ca: the CA, a server certificate for localhost (DIR/server.crt,
# .key) and devices 0..DEVICES-1 (DIR/devices: PEM files and
# devices.bundle).
make_pki() {
  "$1/nodefl-ca" init --dir "$2" >/dev/null
  "$1/nodefl-ca" server --dir "$2" --out "$2/server" --name localhost >/dev/null
  "$1/nodefl-ca" devices --dir "$2" --out "$2/devices" --first-id 0 --count "$3" >/dev/null 2>&1
}
