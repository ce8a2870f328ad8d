# Sourced by ./start and ./test: makes a fresh machine ready. Node 20+, pnpm (installed from the
# npm registry if missing: corepack may not be able to download), dependencies from the lockfile,
# and Postgres + Redis answering (started when installed but stopped).
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

port_open() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }
wait_port() { for _ in $(seq 1 50); do port_open "$1" && return 0; sleep 0.2; done; return 1; }

if [ -z "${TEST_DATABASE_URL:-}${DATABASE_URL:-}" ] && ! port_open 5432; then
  if command -v pg_ctlcluster >/dev/null 2>&1 && [ -d /etc/postgresql ]; then
    say "starting PostgreSQL"
    pg_ctlcluster --skip-systemctl-redirect "$(ls /etc/postgresql | head -n 1)" main start || true
    wait_port 5432 || say "PostgreSQL did not come up"
  else
    say "PostgreSQL is not answering on 127.0.0.1:5432 and is not installed here"
  fi
fi
if [ -z "${TEST_REDIS_URL:-}${REDIS_URL:-}" ] && ! port_open 6379; then
  if command -v redis-server >/dev/null 2>&1; then
    say "starting Redis"
    redis-server --daemonize yes --bind 127.0.0.1 --port 6379 --save "" --appendonly no >/dev/null || true
    wait_port 6379 || say "Redis did not come up"
  else
    say "Redis is not answering on 127.0.0.1:6379 and is not installed here"
  fi
fi
