# Source this file: it puts Node 24 first on PATH.
#
# These machines ship Node 20, which is past end of life, and npm under Node 20
# silently resolves older releases of our dependencies. So when the system Node is
# older than the version pinned in .node-version, we install the official Node
# binary that the npm registry publishes as `node-linux-<arch>` into .tools/ and
# put it first on PATH. npm itself is a JavaScript program, so the system npm then
# runs on Node 24 too.
_wc_root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
_wc_want="$(cat "$_wc_root/.node-version")"
_wc_major="${_wc_want%%.*}"
_wc_have="$(node -p 'process.versions.node.split(".")[0]' 2>/dev/null || echo 0)"
if [ "$_wc_have" -lt "$_wc_major" ]; then
  case "$(uname -m)" in
    x86_64) _wc_arch=x64 ;;
    aarch64 | arm64) _wc_arch=arm64 ;;
    *) echo "node24.sh: unsupported machine $(uname -m); install Node $_wc_major yourself" >&2; return 1 ;;
  esac
  _wc_tools="$_wc_root/.tools/node-$_wc_want"
  _wc_bin="$_wc_tools/node_modules/node-linux-$_wc_arch/bin"
  if [ ! -x "$_wc_bin/node" ]; then
    command -v npm >/dev/null || { echo "node24.sh: npm is missing; apt-get install -y npm" >&2; return 1; }
    echo "node24.sh: installing Node $_wc_want from the npm registry into .tools/" >&2
    npm install --prefix "$_wc_tools" --no-save --no-package-lock --no-audit --no-fund --loglevel=error \
      "node-linux-$_wc_arch@$_wc_want" >&2 || return 1
  fi
  export PATH="$_wc_bin:$PATH"
fi
unset _wc_root _wc_want _wc_major _wc_have _wc_arch _wc_tools _wc_bin
