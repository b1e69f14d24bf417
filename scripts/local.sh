#!/usr/bin/env bash
# Workcell on this machine in one process: installs what is missing (Node 24, npm
# dependencies, dockerd and the sandbox image), then starts the functions app, an
# agent-host, PostgreSQL (the Debian server, run by the process) and emulated SQS/S3 (fauxqs), with all
# state under ./.data. Ctrl-C stops it; starting again keeps the data.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/bootstrap.sh
# Docker is the sandbox; without it Workcell still starts but refuses runs clearly.
bash scripts/ensure-system.sh || echo "local: no Docker engine; runs will be refused (no isolation available)" >&2
# The web console (web/ → web/dist), served by the local Workcell at /.
npm run -s build:web
exec node infra/local/main.ts "$@"
