#!/usr/bin/env bash
# Makes .sst/platform: SST's platform sources and their npm dependencies, from the npm
# registry only (typecheck.sh explains how). Used by typecheck.sh and by the offline
# graph test of the node group (tests/unit/infra/sst-graph/), which runs the providers'
# npm SDKs under Pulumi's mocks. Instant when the platform of this SST version is there.
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
cd "$root"
version="$(cat infra/sst/sst-version)"
case "$(uname -m)" in
  x86_64) arch=x64 ;;
  aarch64) arch=arm64 ;;
  *) echo "typecheck-sst: no SST CLI package for $(uname -m)" >&2; exit 1 ;;
esac
cli="$root/.tools/sst-$version"
platform="$root/.sst/platform"
marker="$platform/.extracted-from-sst-$version"
npm_quiet=(--ignore-scripts --no-audit --no-fund --loglevel=error)

if [ ! -f "$platform/config.d.ts" ] || { [ -f "$platform/.extracted-from-sst" ] && [ ! -f "$marker" ]; }; then
  if [ ! -x "$cli/node_modules/sst-linux-$arch/bin/sst" ]; then
    echo "typecheck-sst: fetching the SST $version CLI package (npm)"
    mkdir -p "$cli"
    npm install --prefix "$cli" --no-save "${npm_quiet[@]}" "sst-linux-$arch@$version" >/dev/null
  fi
  rm -rf "$platform.tmp"
  node infra/sst/extract-sst-platform.ts "$cli/node_modules/sst-linux-$arch/bin/sst" "$platform.tmp"
  echo "typecheck-sst: installing the platform's npm dependencies (types; no provider plugins)"
  (cd "$platform.tmp" && npm install --omit=dev "${npm_quiet[@]}" >/dev/null &&
    npm install --no-save "${npm_quiet[@]}" "@types/archiver@$(node -p 'require("./package.json").devDependencies["@types/archiver"]')" >/dev/null)
  touch "$platform.tmp/.extracted-from-sst" "$platform.tmp/.extracted-from-sst-$version"
  rm -rf "$platform"
  mv "$platform.tmp" "$platform"
fi
