#!/usr/bin/env bash
# Builds the Runtime Assets (docs/architecture.md §3) offline of anything but Debian's own
# package mirror: the pinned packages of packages.txt installed by mmdebstrap into a
# tree, reduced to /usr, /etc and the dpkg database, with a gem user (1000:1000), then
# checksummed file by file. Root owns every entry and no file keeps a setuid or setgid bit
# (su, newgrp, …): nothing in the tree or the image can raise privileges even where
# nosuid or no-new-privs were missing (issue 37, decision 0105; verification refuses a
# tree that breaks this). The result is cached by its key (a hash of packages.txt and
# this script), so a second run is instant:
#
#   <out>/<key>/tree/            mounted read-only at /runtime in every sandbox
#   <out>/<key>/manifest.json    {version, key, suite, packages: {name: version}}
#   <out>/<key>/files.sha256     sha256sum of every regular file of tree/
#   <out>/current -> <key>       what agent-hosts use (RUNTIME_ASSETS_DIR=<out>/current/tree)
#
# With a Docker engine answering, the same tree also becomes the container tier's image
# (workcell-sandbox:<key>), so both tiers carry the same tools.
# Usage: build-runtime-assets.sh [out dir, default /var/lib/workcell/runtime-assets]
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
out="${1:-/var/lib/workcell/runtime-assets}"
suite=bookworm
packages="$(grep -v '^\s*#' "$here/packages.txt" | grep -v '^\s*$' | tr '\n' ',' | sed 's/,$//')"
# The sandbox's Node is the project's own (.node-version), the official binary the npm
# registry publishes as node-linux-<arch>: Debian bookworm's nodejs is 18, past its end of
# life and blind to the proxy variables (NODE_USE_ENV_PROXY). Its version is in the key.
node_version="$(cat "$here/../../.node-version")"
case "$(uname -m)" in
  x86_64) node_arch=x64 ;;
  aarch64 | arm64) node_arch=arm64 ;;
  *) echo "build-runtime-assets: no Node binary for $(uname -m)" >&2; exit 1 ;;
esac
key="$(cat "$here/packages.txt" "$0" "$here/../../.node-version" | sha256sum | cut -c1-16)"
dest="$out/$key"

if [ -f "$dest/manifest.json" ]; then
  ln -sfn "$key" "$out/current"
  echo "runtime assets $key already built ($dest)"
  exit 0
fi
command -v npm >/dev/null || { echo "build-runtime-assets: npm is missing (it fetches Node from the npm registry): apt-get install -y npm" >&2; exit 1; }
command -v mmdebstrap >/dev/null || { echo "build-runtime-assets: mmdebstrap is missing: apt-get install -y mmdebstrap" >&2; exit 1; }
[ "$(id -u)" -eq 0 ] || { echo "build-runtime-assets: run as root (files must belong to root)" >&2; exit 1; }

mkdir -p "$out"
work="$(mktemp -d "$out/.build-XXXXXX")"
trap 'rm -rf "$work"' EXIT
echo "building runtime assets $key (Debian $suite, $(echo "$packages" | tr ',' '\n' | wc -l) pinned packages)"
# Docs, man pages and locales are dropped: an agent does not read them, and they are
# half of the size. SOURCE_DATE_EPOCH makes the tree's timestamps reproducible.
SOURCE_DATE_EPOCH=1700000000 mmdebstrap --quiet --variant=essential --include="$packages" \
  --dpkgopt='path-exclude=/usr/share/man/*' --dpkgopt='path-exclude=/usr/share/doc/*' \
  --dpkgopt='path-exclude=/usr/share/locale/*' --dpkgopt='path-exclude=/usr/share/info/*' \
  "$suite" "$work/rootfs.tar"
mkdir "$work/tree"
tar -C "$work/tree" -xf "$work/rootfs.tar" ./usr ./etc ./var/lib/dpkg
rm "$work/rootfs.tar"
# The merged-/usr links, so the tree is also a complete root for `docker import`.
for l in bin sbin lib lib64; do [ -e "$work/tree/usr/$l" ] && ln -sfn "usr/$l" "$work/tree/$l"; done
# Node from the npm registry at /usr/bin (where Debian puts its own), with a file
# list beside dpkg's so verification knows the binary is the `node` asset's.
npm install --prefix "$work/npm" --no-save --no-package-lock --no-audit --no-fund --loglevel=error \
  "node-linux-$node_arch@$node_version" >&2
install -D -m 0755 "$work/npm/node_modules/node-linux-$node_arch/bin/node" "$work/tree/usr/bin/node"
touch -d @1700000000 "$work/tree/usr/bin/node"
rm -rf "$work/npm"
mkdir -p "$work/tree/var/lib/workcell/npm"
echo /usr/bin/node >"$work/tree/var/lib/workcell/npm/node-npm.list"
grep -q '^gem:' "$work/tree/etc/passwd" || echo 'gem:x:1000:1000:gem:/home/gem:/bin/bash' >>"$work/tree/etc/passwd"
grep -q '^gem:' "$work/tree/etc/group" || echo 'gem:x:1000:' >>"$work/tree/etc/group"
mkdir -p "$work/tree/home/gem" "$work/tree/tmp" "$work/tree/runtime" "$work/tree/proc" "$work/tree/dev" "$work/tree/sys"
chmod 1777 "$work/tree/tmp"
# /home/gem stays root's: both tiers mount gem's own home over it (a tmpfs or a host dir).
chmod 0755 "$work/tree/home/gem"
chown -hR 0:0 "$work/tree"
find "$work/tree" -xdev -type f -perm /6000 -exec chmod ug-s {} +
(cd "$work/tree" && find usr etc var -type f -print0 | sort -z | xargs -0 sha256sum) >"$work/files.sha256"
{
  printf '{"version":"%s-%s","key":"%s","suite":"%s","packages":{' "$suite" "$key" "$key" "$suite"
  chroot "$work/tree" dpkg-query -W -f='"${Package}":"${Version}",'
  printf '"node-npm":"%s"' "$node_version"
  printf '}}\n'
} >"$work/manifest.json"
chmod -R go-w "$work/tree"
chmod 755 "$work"
if timeout 5 docker version >/dev/null 2>&1; then
  tar -C "$work/tree" -c . | docker import -c 'ENV PATH=/usr/local/bin:/usr/bin:/bin' -c 'CMD ["/bin/bash"]' - "workcell-sandbox:$key" >/dev/null
  echo "container tier image workcell-sandbox:$key built from the same tree"
fi
mv "$work" "$dest"
trap - EXIT
ln -sfn "$key" "$out/current"
echo "runtime assets $key built ($dest, $(du -sh "$dest/tree" | cut -f1))"
