#!/usr/bin/env bash
# Builds the agent-host container image offline, with the same technique as the sandbox
# image (TESTING.md): a Debian rootfs from Debian's packages (mmdebstrap), Node 24 from the
# npm registry (scripts/node24.sh), the code with production dependencies only (npm ci
# --omit=dev), fed to `docker import`. No registry, no Dockerfile base image.
# Usage: build-image.sh [tag]   (default workcell/agent-host:<version from package.json>)
# How to run it (mounts and privileges): docs/deploy/nodes.md, "The agent-host as a container".
set -euo pipefail
root="$(cd "$(dirname "$0")/../../.." && pwd)"
# Pinned package set: what Node needs (libstdc++, libgcc via the essential set) and TLS roots.
packages=ca-certificates,libstdc++6
suite=bookworm
tag="${1:-workcell/agent-host:$(sed -n 's/^  "version": "\(.*\)",$/\1/p' "$root/package.json")}"
command -v mmdebstrap >/dev/null || { echo "build-image: apt-get install -y mmdebstrap" >&2; exit 1; }
# shellcheck source=/dev/null
source "$root/scripts/node24.sh"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
rootfs="$work/rootfs"
echo "build-image: Debian $suite rootfs ($packages)"
mmdebstrap --quiet --variant=essential --include="$packages" "$suite" "$rootfs"
install -m 0755 "$(command -v node)" "$rootfs/usr/local/bin/node"
mkdir -p "$rootfs/opt/workcell" "$rootfs/srv/workcell"
tar -C "$root" \
  --exclude=./node_modules --exclude=./.data --exclude=./.tools --exclude=./.git \
  --exclude=./.sst --exclude=./.wrangler --exclude=./tests --exclude=./coverage \
  -c . | tar -C "$rootfs/opt/workcell" -x --no-same-owner
echo "build-image: npm ci --omit=dev"
(cd "$rootfs/opt/workcell" && npm ci --omit=dev --no-audit --no-fund --loglevel=error --prefer-offline)
chown -R root:root "$rootfs/opt/workcell"
tar -C "$rootfs" -c . | docker import \
  -c 'WORKDIR /opt/workcell' \
  -c 'ENV PATH=/usr/local/bin:/usr/bin:/bin NODE_ENV=production' \
  -c 'ENTRYPOINT ["/usr/local/bin/node", "agent-host/main.ts"]' \
  - "$tag" >/dev/null
echo "build-image: built $tag"
