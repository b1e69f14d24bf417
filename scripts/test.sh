#!/usr/bin/env bash
# The whole test suite on a fresh Debian machine: installs what is missing (Node 24,
# npm dependencies, PostgreSQL, dockerd, the sandbox test image), then runs
# `npm test` (lint, type-check, every vitest project). Extra arguments go to vitest.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/bootstrap.sh
bash scripts/ensure-system.sh
report=.test-results/vitest.json
rm -f "$report"
status=0
npm test -- --reporter=default --reporter=json --outputFile.json="$report" "$@" || status=$?
node scripts/test-summary.ts "$report"
exit "$status"
