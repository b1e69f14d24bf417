#!/usr/bin/env bash
# Installs (or upgrades) the Workcell agent-host on a Debian compute node, as root, from a
# checkout of this repository (docs/deploy/nodes.md):
#   1. Debian packages: the Docker engine (container tier) unless --no-docker-engine;
#   2. the code under /opt/workcell (no tests, no local state) and Node 24 from the npm
#      registry (scripts/node24.sh), then production dependencies only: npm ci --omit=dev;
#   3. the Runtime Assets (infra/runtime-assets/build-runtime-assets.sh: mmdebstrap of the
#      pinned Debian packages into /var/lib/workcell/runtime-assets, instant when that
#      build is already there) unless --no-runtime-assets, and their sandbox image
#      workcell-sandbox:<key> (the default SANDBOX_IMAGE) into the local engine unless
#      --no-sandbox-image (an operator who sets SANDBOX_IMAGE to their own image);
#   4. the hardened systemd unit, /etc/workcell/agent-host.env (kept if present) and the
#      data root mount point /srv/workcell (the shared filesystem must be mounted there).
# Re-running upgrades in place; stop the service first (docs/deploy/nodes.md, "Upgrade").
set -euo pipefail

usage() {
  echo "usage: install.sh [--no-docker-engine] [--no-runtime-assets] [--no-sandbox-image] [--prefix DIR]" >&2
  exit 2
}
dest=/opt/workcell
docker_engine=yes
sandbox_image=yes
runtime_assets=yes
while [ $# -gt 0 ]; do
  case "$1" in
    --no-docker-engine) docker_engine=no ;;
    --no-sandbox-image) sandbox_image=no ;;
    --no-runtime-assets) runtime_assets=no ;;
    --prefix) [ $# -ge 2 ] || usage; dest="$2"; shift ;;
    *) usage ;;
  esac
  shift
done

[ "$(id -u)" -eq 0 ] || { echo "install.sh: run as root" >&2; exit 1; }
[ -r /etc/debian_version ] || { echo "install.sh: written for Debian (no /etc/debian_version)" >&2; exit 1; }
src="$(cd "$(dirname "$0")/../.." && pwd)"
say() { echo "install.sh: $*"; }

# 1. Debian packages. npm is only needed to fetch Node 24 when the system Node is older.
want=()
command -v tar >/dev/null || want+=(tar)
command -v npm >/dev/null || want+=(npm)
# bubblewrap: the process tier, and the sandbox the Runtime Assets' probes run in.
command -v bwrap >/dev/null || want+=(bubblewrap)
# A C compiler and static libc for the process tier's exec shim (decision 0088).
{ command -v cc >/dev/null && ls /usr/lib/*-linux-gnu/libc.a >/dev/null 2>&1; } || want+=(gcc libc6-dev)
if [ "$runtime_assets" = yes ]; then
  command -v mmdebstrap >/dev/null || want+=(mmdebstrap)
fi
if [ "$docker_engine" = yes ]; then
  command -v dockerd >/dev/null || want+=(docker.io)
fi
if [ "${#want[@]}" -gt 0 ]; then
  say "installing ${want[*]} from Debian's packages"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends "${want[@]}" >/dev/null
fi

# 2. The code: everything the daemon runs, nothing of the checkout's local state.
say "copying the code to $dest"
mkdir -p "$dest"
tar -C "$src" \
  --exclude=./node_modules --exclude=./.data --exclude=./.tools --exclude=./.git \
  --exclude=./.sst --exclude=./.wrangler --exclude=./tests --exclude=./coverage \
  -c . | tar -C "$dest" -x --no-same-owner
# Node 24 under $dest/.tools (from the npm registry, as scripts/node24.sh does everywhere),
# then the production dependencies only, exactly as locked.
# The copy under $dest is sourced (it installs into $dest/.tools), not the checkout's.
# shellcheck source=/dev/null
(cd "$dest" && source scripts/node24.sh &&
  mkdir -p .tools/bin && ln -sf "$(command -v node)" .tools/bin/node &&
  say "npm ci --omit=dev under Node $(node --version)" &&
  npm ci --omit=dev --no-audit --no-fund --loglevel=error)
# Root owns the code and nobody else may change it: the service runs it as root.
chown -R root:root "$dest"
chmod -R go-w "$dest"
# The process tier's exec shim (a static binary every exec's command starts from),
# where agent-host's preflight looks for it: /usr/local/libexec/workcell/exec-shim.
bash "$dest/scripts/build-exec-shim.sh"

# 3. The Runtime Assets (mounted at /runtime in both tiers; RUNTIME_ASSETS_DIR defaults to
# /var/lib/workcell/runtime-assets/current/tree) and their image, into this node's engine.
if [ "$runtime_assets" = yes ]; then
  "$dest/infra/runtime-assets/build-runtime-assets.sh" /var/lib/workcell/runtime-assets
fi
if [ "$sandbox_image" = yes ]; then
  if timeout 10 docker version >/dev/null 2>&1; then
    "$dest/infra/runtime-assets/import-sandbox-image.sh" /var/lib/workcell/runtime-assets
  else
    say "the Docker engine does not answer: start it, then run $dest/infra/runtime-assets/import-sandbox-image.sh"
  fi
fi

# 4. The unit, the env file (0600: it holds the database password) and the data root.
install -d -m 0755 /etc/workcell /srv/workcell
install -m 0644 "$src/infra/agent-host/workcell-agent-host.service" /etc/systemd/system/workcell-agent-host.service
if [ ! -f /etc/workcell/agent-host.env ]; then
  install -m 0600 "$src/infra/agent-host/agent-host.env.example" /etc/workcell/agent-host.env
fi
if [ -d /run/systemd/system ]; then
  systemctl daemon-reload
  systemd-analyze verify /etc/systemd/system/workcell-agent-host.service
  say "done; edit /etc/workcell/agent-host.env, mount the shared filesystem at /srv/workcell, then:"
  say "  systemctl enable --now workcell-agent-host"
else
  say "done (systemd is not running here: the unit is installed but not loaded)"
fi
