#!/usr/bin/env bash
# Installs the Workcell agent-host on a Debian compute node (as root), from a checkout
# of this repository: Node 24 from the npm registry, the npm dependencies, the Docker
# engine from Debian, the code under /opt/workcell and a systemd unit. The shared POSIX
# filesystem for DATA_ROOT (EFS/NFS) must already be mounted. Re-running upgrades.
set -euo pipefail
[ "$(id -u)" -eq 0 ] || { echo "install.sh: run as root" >&2; exit 1; }
src="$(cd "$(dirname "$0")/../.." && pwd)"
dest=/opt/workcell

command -v dockerd >/dev/null || { apt-get update -qq && apt-get install -y -qq docker.io; }
mkdir -p "$dest" /etc/workcell
# The code (not local state) goes to /opt/workcell.
tar -C "$src" --exclude=./node_modules --exclude=./.data --exclude=./.tools --exclude=./.git -c . | tar -C "$dest" -x
(cd "$dest" && source scripts/bootstrap.sh && mkdir -p .tools/bin && ln -sf "$(command -v node)" .tools/bin/node)
install -m 0644 "$src/infra/agent-host/workcell-agent-host.service" /etc/systemd/system/
[ -f /etc/workcell/agent-host.env ] || install -m 0600 "$src/infra/agent-host/agent-host.env.example" /etc/workcell/agent-host.env
systemctl daemon-reload
echo "edit /etc/workcell/agent-host.env, then: systemctl enable --now workcell-agent-host"
