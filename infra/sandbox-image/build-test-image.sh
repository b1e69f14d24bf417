#!/usr/bin/env bash
# Builds the offline sandbox test image: no registry is reachable here, so the rootfs
# is Debian's busybox-static plus the minimum a sandbox expects (a gem user 1000:1000,
# /home/gem and /tmp as mount points), imported with `docker import`. Idempotent: an
# existing image of the same name is kept.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
image="$(sed -n 's/.*"name": *"\([^"]*\)".*/\1/p' "$here/test-image.json")"
if docker image inspect "$image" >/dev/null 2>&1; then
  echo "sandbox test image $image already present"
  exit 0
fi
busybox=/bin/busybox
if [ ! -x "$busybox" ] || ! { ldd "$busybox" 2>&1 || true; } | grep -q "not a dynamic"; then
  echo "build-test-image: $busybox is missing or not static; apt-get install -y busybox-static" >&2
  exit 1
fi
rootfs="$(mktemp -d)"
trap 'rm -rf "$rootfs"' EXIT
mkdir -p "$rootfs"/{bin,etc,tmp,home/gem,proc,sys,dev,usr/bin,sbin,usr/sbin}
cp "$busybox" "$rootfs/bin/busybox"
# One symlink per applet, created by busybox itself (the list matches this build).
chroot "$rootfs" /bin/busybox --install -s
printf 'root:x:0:0:root:/root:/bin/sh\ngem:x:1000:1000:gem:/home/gem:/bin/sh\n' >"$rootfs/etc/passwd"
printf 'root:x:0:\ngem:x:1000:\n' >"$rootfs/etc/group"
chmod 1777 "$rootfs/tmp"
chown 1000:1000 "$rootfs/home/gem"
tar -C "$rootfs" -c . | docker import \
  -c 'ENV PATH=/usr/sbin:/usr/bin:/sbin:/bin' \
  -c 'CMD ["/bin/sh"]' \
  - "$image" >/dev/null
echo "built sandbox test image $image"
