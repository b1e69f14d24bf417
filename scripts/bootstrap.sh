# Source this file: Node 24 first on PATH (scripts/node24.sh), then the project's
# npm dependencies installed from package-lock.json under that Node, once per
# lockfile version (a stamp in node_modules records which lockfile was installed).
_wc_root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
source "$_wc_root/scripts/node24.sh" || return 1
_wc_stamp="$_wc_root/node_modules/.workcell-installed"
_wc_want="$(node -p 'process.version')-$(sha256sum "$_wc_root/package-lock.json" | cut -c1-64)"
if [ "$(cat "$_wc_stamp" 2>/dev/null)" != "$_wc_want" ]; then
  echo "bootstrap: npm ci under Node $(node --version)" >&2
  (cd "$_wc_root" && npm ci --no-audit --no-fund --loglevel=error) >&2 || return 1
  echo "$_wc_want" >"$_wc_stamp"
fi
unset _wc_root _wc_stamp _wc_want
