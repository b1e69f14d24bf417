#!/usr/bin/env bash
# Type-checks sst.config.ts against SST's own platform types, from the npm registry only:
# the SST CLI package for this machine (its binary embeds the platform sources, which
# extract-sst-platform.ts copies out) and the platform's npm dependencies (@pulumi/aws and
# the other providers' SDKs: TypeScript types and JS, no provider plugin). Nothing runs
# `sst install`, which would download Pulumi and the provider plugins from outside the
# registry. If .sst/platform was made by a real `sst install`, it is used as it is.
set -euo pipefail
bash "$(dirname "$0")/ensure-platform.sh"
cd "$(dirname "$0")/../.."
npx tsc -p infra/sst/tsconfig.json
echo "typecheck-sst: sst.config.ts type-checks against SST $(cat infra/sst/sst-version)"
