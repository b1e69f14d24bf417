#!/usr/bin/env bash
# Installs (from Debian's packages) and starts what Workcell's tests and the local
# stack need on this machine: PostgreSQL binaries (tests start throw-away clusters
# from them), the Docker engine (dockerd) and the offline sandbox test image.
# Idempotent and quick when everything is already there. Needs root for installs and
# for starting dockerd; says what is missing otherwise.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"

want=()
ls -d /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1 || want+=(postgresql)
command -v dockerd >/dev/null 2>&1 || want+=(docker.io)
command -v docker >/dev/null 2>&1 || want+=(docker.io)
command -v shellcheck >/dev/null 2>&1 || want+=(shellcheck)
command -v systemd-analyze >/dev/null 2>&1 || want+=(systemd)
# Debian's chromium: the web console's browser tests drive it with playwright-core.
[ -x /usr/bin/chromium ] || want+=(chromium)
[ -x /bin/busybox ] && { ldd /bin/busybox 2>&1 || true; } | grep -q "not a dynamic" || want+=(busybox-static)
# The process sandbox tier (agent-host/sandbox/process/): bubblewrap, and util-linux's
# unshare for each generation's user namespace and setpriv for each trampoline's uid.
command -v bwrap >/dev/null 2>&1 || want+=(bubblewrap)
{ command -v unshare && command -v setpriv; } >/dev/null 2>&1 || want+=(util-linux)
# The process-sandbox bench compares with @anthropic-ai/sandbox-runtime (srt), which
# needs socat and ripgrep on Linux (decision 0028).
command -v socat >/dev/null 2>&1 || want+=(socat)
command -v rg >/dev/null 2>&1 || want+=(ripgrep)
# The egress tests run Debian's sshd (only the binary, started by the test inside a network
# namespace) as the fake internet's SSH server (decision 0126).
[ -x /usr/sbin/sshd ] || want+=(openssh-server)
# Checkpoints' reflink mode is tested on an XFS loop filesystem with reflink=1 (issue 39),
# and snapshots of subvolume Workdirs on a btrfs one (decision 0190).
command -v mkfs.xfs >/dev/null 2>&1 || want+=(xfsprogs)
command -v mkfs.btrfs >/dev/null 2>&1 || want+=(btrfs-progs)
# Runtime Assets (infra/runtime-assets/) are built from Debian packages by mmdebstrap.
command -v mmdebstrap >/dev/null 2>&1 || want+=(mmdebstrap)
# The kernel-budget test (#13) builds a static C helper that opens inotify instances, and
# the process tier's exec shim is one too (scripts/build-exec-shim.sh, decision 0088).
{ command -v cc >/dev/null 2>&1 && ls /usr/lib/*-linux-gnu/libc.a >/dev/null 2>&1; } || want+=(gcc libc6-dev)
# The metrics tests parse /metrics with Prometheus' reference parser (its Python client).
/usr/bin/python3 -c "import prometheus_client.parser" >/dev/null 2>&1 || want+=(python3-prometheus-client)

if [ "${#want[@]}" -gt 0 ]; then
  if [ "$(id -u)" -ne 0 ]; then
    echo "ensure-system: missing ${want[*]}; run as root or: sudo apt-get install -y ${want[*]}" >&2
    exit 1
  fi
  echo "ensure-system: installing ${want[*]} from Debian's packages"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends "${want[@]}" >/dev/null
fi

# The process tier's exec shim, root's and read-only where preflight looks for it.
if [ "$(id -u)" -eq 0 ]; then
  bash "$root/scripts/build-exec-shim.sh"
else
  echo "ensure-system: the process tier's exec shim needs root: sudo bash scripts/build-exec-shim.sh" >&2
fi

# The Docker engine: waits for a slow one, starts one only when none runs (in its own
# session, log appended).
bash "$root/scripts/ensure-dockerd.sh"

"$root/infra/sandbox-image/build-test-image.sh"
# The Runtime Assets at /runtime (both tiers) and the container image from the same
# packages; cached by their key, so this is instant once built (a few minutes the first time).
"$root/infra/runtime-assets/build-runtime-assets.sh"
"$root/infra/runtime-assets/import-sandbox-image.sh"
