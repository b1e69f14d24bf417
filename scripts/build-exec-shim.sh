#!/usr/bin/env bash
# Builds the process tier's exec shim (agent-host/sandbox/process/native/exec-shim.c,
# decision 0088) as a static binary and installs it root-owned and read-only (0555) at
# $1 (default /usr/local/libexec/workcell/exec-shim, where agent-host's preflight looks).
# Preflight refuses the tier when it is missing, not root's, writable, or reachable
# through a directory someone else can write. Idempotent and atomic: an identical binary
# is left alone; a new one replaces the old with a rename (execs in flight keep theirs).
# Needs gcc and libc6-dev (scripts/ensure-system.sh installs them) and root.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
out="${1:-/usr/local/libexec/workcell/exec-shim}"
source="$root/agent-host/sandbox/process/native/exec-shim.c"
dir="$(dirname "$out")"
mkdir -p "$dir"
chmod 0755 "$dir"
staging="$(mktemp "$dir/.exec-shim.XXXXXX")"
trap 'rm -f "$staging"' EXIT
cc -static -O2 -s -Wall -Werror -o "$staging" "$source" || {
  echo "build-exec-shim: cannot compile $source: apt-get install -y gcc libc6-dev (scripts/ensure-system.sh)" >&2
  exit 1
}
chown 0:0 "$staging"
chmod 0555 "$staging"
if [ -f "$out" ] && cmp -s "$staging" "$out" && [ "$(stat -c %u:%a "$out")" = "0:555" ]; then
  exit 0
fi
mv -f "$staging" "$out"
trap - EXIT
echo "build-exec-shim: installed $out"
