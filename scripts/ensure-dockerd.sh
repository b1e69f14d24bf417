#!/usr/bin/env bash
# Makes sure the Docker engine answers; starts dockerd only when none is running.
#
# A slow engine is not a missing one: when `docker version` does not answer in time but
# a dockerd process holds its pid file, or something accepts connections on its socket,
# this waits for it (WORKCELL_DOCKER_WAIT_SECONDS) and never starts a second daemon
# (issue 32 (5): a second dockerd after a 5 s timeout truncated the running engine's log).
# A started dockerd runs in a session of its own (setsid), so stopping whatever ran this
# script (the local Workcell, a terminal's Ctrl-C) never stops Docker, and its log is
# appended to, never truncated.
#
# Overrides (tests use them to point at a fake engine; never needed otherwise):
#   DOCKER_HOST                  unix://<socket> (default unix:///var/run/docker.sock)
#   WORKCELL_DOCKERD_PIDFILE     dockerd's pid file (default /var/run/docker.pid)
#   WORKCELL_DOCKERD_LOG         its log (default /var/log/workcell-dockerd.log)
#   WORKCELL_DOCKERD             the daemon to start (default dockerd)
#   WORKCELL_DOCKER_WAIT_SECONDS how long to wait for an engine to answer (default 120)
set -euo pipefail

host="${DOCKER_HOST:-unix:///var/run/docker.sock}"
sock="${host#unix://}"
pidfile="${WORKCELL_DOCKERD_PIDFILE:-/var/run/docker.pid}"
log="${WORKCELL_DOCKERD_LOG:-/var/log/workcell-dockerd.log}"
dockerd="${WORKCELL_DOCKERD:-dockerd}"
wait_seconds="${WORKCELL_DOCKER_WAIT_SECONDS:-120}"

docker_answers() { DOCKER_HOST="$host" timeout 10 docker version >/dev/null 2>&1; }

# The pid of a live daemon named by the pid file, if any.
daemon_pid() {
  [ -r "$pidfile" ] || return 1
  local pid
  pid="$(tr -dc 0-9 <"$pidfile")"
  [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null && echo "$pid"
}

# Something accepts connections on the socket (a slow engine, not a stale file).
socket_accepts() {
  [ -S "$sock" ] || return 1
  timeout 5 python3 -c 'import socket,sys; s=socket.socket(socket.AF_UNIX); s.settimeout(4); s.connect(sys.argv[1])' "$sock" 2>/dev/null
}

wait_for_engine() {
  local deadline=$((SECONDS + wait_seconds))
  while [ "$SECONDS" -lt "$deadline" ]; do
    docker_answers && return 0
    sleep 1
  done
  return 1
}

docker_answers && exit 0

if pid="$(daemon_pid)" || socket_accepts; then
  echo "ensure-dockerd: a Docker engine is running (${pid:+pid $pid, }socket $sock) but does not answer yet; waiting up to ${wait_seconds} s, starting no other"
  wait_for_engine && exit 0
  echo "ensure-dockerd: the running Docker engine did not answer within ${wait_seconds} s; not starting a second one. See $log, or restart it yourself." >&2
  exit 1
fi

if [ "$(id -u)" -ne 0 ]; then
  echo "ensure-dockerd: the Docker daemon does not answer and only root can start it" >&2
  exit 1
fi
# No iptables and no bridge: sandboxes run with NetworkMode none, and this machine has no
# network to bridge to.
echo "ensure-dockerd: starting dockerd (log: $log)"
setsid nohup "$dockerd" --iptables=false --bridge=none --host="$host" --pidfile="$pidfile" \
  >>"$log" 2>&1 </dev/null &
wait_for_engine || { echo "ensure-dockerd: dockerd did not come up within ${wait_seconds} s; see $log" >&2; exit 1; }
