#!/usr/bin/env bash
# Type-checks sst.config.ts against SST's own platform types, from the npm registry only:
# the SST CLI package for this machine (its binary embeds the platform sources, which
# extract-sst-platform.ts copies out) and the platform's npm dependencies (@pulumi/aws and
# the other providers' SDKs: TypeScript types and JS, no provider plugin). Nothing runs
# `sst install`, which would download Pulumi and the provider plugins from outside the
# registry. If .sst/platform was made by a real `sst install`, it is used as it is.
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
npx tsc -p infra/sst/tsconfig.json
echo "typecheck-sst: sst.config.ts type-checks against SST $version"
