# Source this file: Node 24 first on PATH (scripts/node24.sh), then the project's
# npm dependencies installed from package-lock.json under that Node, once per
# lockfile version (a stamp in node_modules records which lockfile was installed).
_wcb_root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
source "$_wcb_root/scripts/node24.sh" || return 1
_wcb_stamp="$_wcb_root/node_modules/.workcell-installed"
_wcb_want="$(node -p 'process.version')-$(sha256sum "$_wcb_root/package-lock.json" | cut -c1-64)"
if [ "$(cat "$_wcb_stamp" 2>/dev/null)" != "$_wcb_want" ]; then
  # `npm install` rather than `npm ci`: vite lists a Windows-only optional dependency
  # (napi-windows-process-start-time) that the registry reachable here does not serve,
  # and npm ci refuses a lockfile without it. npm install still takes the locked versions.
  echo "bootstrap: npm install under Node $(node --version)" >&2
  (cd "$_wcb_root" && npm install --no-audit --no-fund --loglevel=error) >&2 || return 1
  echo "$_wcb_want" >"$_wcb_stamp"
fi
unset _wcb_root _wcb_stamp _wcb_want
