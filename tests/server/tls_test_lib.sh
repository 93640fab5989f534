# Shared by the shell tests that run nodefl-server against nodefl-emulate
# over TLS (server_restart_tls.sh, lumos_train_faults.sh); sourced, not run.

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
