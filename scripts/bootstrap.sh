# Sourced by ./start and ./test: makes a fresh machine ready. Node 20+, pnpm (installed from the
# npm registry if missing: corepack may not be able to download), dependencies from the lockfile,
# and Postgres + Redis answering (scripts/local-services.sh: started when stopped, installed from
# the distribution's packages when missing, or the command to install them printed).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

PNPM_VERSION=10.34.9
say() { printf '==> %s\n' "$*" >&2; }

node_major=$(node -p 'process.versions.node.split(".")[0]' 2>/dev/null || echo 0)
if [ "$node_major" -lt 20 ]; then
  echo "Node.js 20 or newer is required (found: $(node -v 2>/dev/null || echo none))" >&2
  exit 1
fi

if ! command -v pnpm >/dev/null 2>&1 || [ "$(pnpm -v 2>/dev/null)" != "$PNPM_VERSION" ]; then
  say "installing pnpm $PNPM_VERSION"
  npm install -g "pnpm@$PNPM_VERSION" >/dev/null
fi

# CI=true keeps pnpm non-interactive (it can otherwise abort without a TTY).
if [ ! -f node_modules/.modules.yaml ] || [ pnpm-lock.yaml -nt node_modules/.modules.yaml ]; then
  say "installing dependencies"
  CI=true pnpm install --frozen-lockfile
fi

# shellcheck source=scripts/local-services.sh
source scripts/local-services.sh
ensure_postgres
ensure_redis
