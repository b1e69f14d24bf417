#!/usr/bin/env bash
# Imports the Runtime Assets build's tree as the container tier's image,
# workcell-sandbox:<key> (the default SANDBOX_IMAGE: agent-host/runtime/sandbox-image.ts),
# when a Docker engine answers and the image is not there yet. build-runtime-assets.sh
# imports it when it builds; this covers a build made while Docker was down, or an engine
# that lost its images. Idempotent and instant when the image exists.
# Usage: import-sandbox-image.sh [out dir, default /var/lib/workcell/runtime-assets]
set -euo pipefail
out="${1:-/var/lib/workcell/runtime-assets}"
manifest="$out/current/manifest.json"
[ -f "$manifest" ] || { echo "import-sandbox-image: no Runtime Assets build at $out/current: run build-runtime-assets.sh first" >&2; exit 1; }
key="$(sed -n 's/.*"key":"\([0-9a-f]*\)".*/\1/p' "$manifest")"
[ -n "$key" ] || { echo "import-sandbox-image: $manifest names no key" >&2; exit 1; }
image="workcell-sandbox:$key"
if ! timeout 5 docker version >/dev/null 2>&1; then
  echo "import-sandbox-image: no Docker engine answers; $image not imported (the process tier needs no image)"
  exit 0
fi
if docker image inspect "$image" >/dev/null 2>&1; then
  echo "container tier image $image already present"
  exit 0
fi
tar -C "$out/current/tree" -c . | docker import -c 'ENV PATH=/usr/local/bin:/usr/bin:/bin' -c 'CMD ["/bin/bash"]' - "$image" >/dev/null
echo "container tier image $image imported from $out/current/tree"
