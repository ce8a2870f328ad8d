# Sourced by ./start and ./test: makes a fresh machine ready. Node 24 (the machine's when it is 24 or
# newer, else the official build from the npm registry's node-linux-<arch> package, unpacked once into
# .cache/ and put first on PATH), pnpm (installed from the npm registry if missing: corepack may not
# be able to download), dependencies from the lockfile, and Postgres + Redis answering
# (scripts/local-services.sh: started when stopped, installed from the distribution's packages when
# missing, or the command to install them printed).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

PNPM_VERSION=10.34.9
say() { printf '==> %s\n' "$*" >&2; }

NODE_VERSION=24.21.0
node_major=$(node -p 'process.versions.node.split(".")[0]' 2>/dev/null || echo 0)
if [ "$node_major" -eq 0 ] || { [ "$node_major" -lt 24 ] && ! command -v npm >/dev/null 2>&1; }; then
  # Without node (or npm) nothing can be fetched from the npm registry.
  echo "Node.js with npm is required (found: $(node -v 2>/dev/null || echo no node)); install Node.js 24" \
    "(with an older Node.js and npm, Node $NODE_VERSION is fetched from the npm registry)" >&2
  exit 1
fi
if [ "$node_major" -lt 24 ]; then
  # The registry's node-linux-<arch> package is the official Linux build (bin/node). Unpacked into a
  # temporary directory and moved into place, so an interrupted download never leaves a broken cache.
  case "$(uname -m)" in
    x86_64 | amd64) node_arch=x64 ;;
    aarch64 | arm64) node_arch=arm64 ;;
    *) echo "no Node $NODE_VERSION package for $(uname -m); install Node.js 24" >&2; exit 1 ;;
  esac
  node_dir="$PWD/.cache/node-$NODE_VERSION-linux-$node_arch"
  if [ "$("$node_dir/bin/node" -v 2>/dev/null)" != "v$NODE_VERSION" ]; then
    mkdir -p .cache
    node_tmp=$(mktemp -d "$PWD/.cache/node-download.XXXXXX")
    if ! tarball=$(cd "$node_tmp" && npm pack --silent "node-linux-$node_arch@$NODE_VERSION" | tail -n 1) ||
      ! mkdir "$node_tmp/unpacked" ||
      ! tar -xzf "$node_tmp/$tarball" -C "$node_tmp/unpacked" --strip-components=1 ||
      [ "$("$node_tmp/unpacked/bin/node" -v 2>/dev/null)" != "v$NODE_VERSION" ]; then
      rm -rf "$node_tmp"
      echo "could not fetch and run node-linux-$node_arch@$NODE_VERSION from the npm registry; install Node.js 24" >&2
      exit 1
    fi
    # A concurrent bootstrap may have put a working copy in place first: keep that one.
    if ! mv -T "$node_tmp/unpacked" "$node_dir" 2>/dev/null &&
      [ "$("$node_dir/bin/node" -v 2>/dev/null)" != "v$NODE_VERSION" ]; then
      rm -rf "$node_dir"
      mv -T "$node_tmp/unpacked" "$node_dir"
    fi
    rm -rf "$node_tmp"
  fi
  say "using Node $NODE_VERSION from the npm registry (system node is $(node -v))"
  # Everything after (pnpm, whose shebang is `env node`, tsx, vitest, spawned children) runs on it.
  export PATH="$node_dir/bin:$PATH"
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
