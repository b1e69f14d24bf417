#!/usr/bin/env bash
# Builds the agent-host container image offline, with the same technique as the sandbox
# image (docs/testing.md): a Debian rootfs from Debian's packages (mmdebstrap), Node 24 from the
# npm registry (scripts/node24.sh), the code with production dependencies only (npm ci
# --omit=dev). No registry, no base image from elsewhere.
#
# Two layers, the first cached in the engine under a tag named after what it is made of,
# so a rebuild with unchanged dependencies redoes only the code layer (a few seconds):
#   workcell/agent-host-deps:<key>  rootfs, Node and node_modules of `npm ci --omit=dev`, one
#                                   `docker import`; key: suite, packages, Node, package.json, package-lock.json,
#                                   scripts/patch-postgres.mjs, scripts/patch-fauxqs.mjs
#   <tag>                           + the code (docker build, no network)
# One import rather than a base layer plus a node_modules layer: a fresh CI machine builds
# both anyway, and a second `docker build` layer of node_modules cost ~1-2 min there.
# Usage: build-image.sh [tag]   (default workcell/agent-host:<version from package.json>)
# How to run it (mounts and privileges): docs/deploy/nodes.md, "The agent-host as a container".
set -euo pipefail
root="$(cd "$(dirname "$0")/../../.." && pwd)"
# Pinned package set: what Node needs (libstdc++, libgcc via the essential set), TLS roots,
# and mount/umount: the container tier stages each sandbox's binds from the directories
# agent-host opened (agent-host/sandbox/container/staged-binds.ts, decision 0055).
packages=ca-certificates,libstdc++6,mount
suite=bookworm
tag="${1:-workcell/agent-host:$(sed -n 's/^  "version": "\(.*\)",$/\1/p' "$root/package.json")}"
# shellcheck source=/dev/null
source "$root/scripts/node24.sh"
# Bump when the rootfs section below changes in a way its inputs do not show.
recipe=1
hash() { sha256sum | cut -c1-16; }
deps_key="$({ echo "$recipe $suite $packages $(node --version)"; cat "$root/package.json" "$root/package-lock.json" "$root/scripts/patch-postgres.mjs" "$root/scripts/patch-fauxqs.mjs"; } | hash)"
deps="workcell/agent-host-deps:$deps_key"
# The legacy builder: FROM an image of this engine, no BuildKit front-end to fetch.
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
# Its deprecation notice is noise here; its errors are printed when it fails.
build() {
  DOCKER_BUILDKIT=0 docker build --quiet --network none -t "$1" "$2" >/dev/null 2>"$work/build.err" || {
    cat "$work/build.err" >&2
    return 1
  }
}

if docker image inspect "$deps" >/dev/null 2>&1; then
  echo "build-image: $deps cached"
else
  command -v mmdebstrap >/dev/null || { echo "build-image: apt-get install -y mmdebstrap" >&2; exit 1; }
  echo "build-image: $deps: Debian $suite rootfs ($packages), Node $(node --version), npm ci --omit=dev"
  rootfs="$work/rootfs"
  mmdebstrap --quiet --variant=essential --include="$packages" "$suite" "$rootfs"
  install -m 0755 "$(command -v node)" "$rootfs/usr/local/bin/node"
  mkdir -p "$rootfs/opt/workcell" "$rootfs/srv/workcell"
  cp "$root/package.json" "$root/package-lock.json" "$rootfs/opt/workcell/"
  # npm ci runs the postinstall patches: the database driver's (decision 0111) and the
  # local SQS emulator's (0182; it skips itself: fauxqs is a dev dependency).
  mkdir -p "$rootfs/opt/workcell/scripts" && cp "$root/scripts/patch-postgres.mjs" "$root/scripts/patch-fauxqs.mjs" "$rootfs/opt/workcell/scripts/"
  (cd "$rootfs/opt/workcell" && npm ci --omit=dev --no-audit --no-fund --loglevel=error --prefer-offline)
  chown -R root:root "$rootfs/opt/workcell"
  tar -C "$rootfs" -c . | docker import - "$deps" >/dev/null
  rm -rf "$rootfs"
fi

echo "build-image: $tag: the code"
mkdir -p "$work/code/src"
tar -C "$root" \
  --exclude=./node_modules --exclude=./.data --exclude=./.tools --exclude=./.git \
  --exclude=./.sst --exclude=./.wrangler --exclude=./tests --exclude=./coverage \
  --exclude=./.test-results --exclude=./web/dist \
  -c . | tar -C "$work/code/src" -x --no-same-owner
# The process tier's exec shim (decision 0088), static, built here with this host's
# compiler (scripts/ensure-system.sh installs it); root's and 0555 in the image.
bash "$root/scripts/build-exec-shim.sh" "$work/code/exec-shim" >/dev/null
cat >"$work/code/Dockerfile" <<EOF
FROM $deps
COPY exec-shim /usr/local/libexec/workcell/exec-shim
COPY src /opt/workcell
WORKDIR /opt/workcell
ENV PATH=/usr/local/bin:/usr/bin:/bin NODE_ENV=production
ENTRYPOINT ["/usr/local/bin/node", "agent-host/main.ts"]
EOF
build "$tag" "$work/code"
echo "build-image: built $tag"
