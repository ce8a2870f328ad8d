#!/bin/sh
# Entrypoint of the gateway image (deploy/Dockerfile): one image, three programs, chosen by the first
# argument. `exec` replaces this shell with node, so SIGTERM from `docker stop` or the kubelet
# reaches the service's graceful drain directly. GATEWAY_APP_DIR (default /app) lets the image test
# (deploy/src/checks/image.test.ts) run this script against a replay of the image in a temp dir.
set -eu
cd "${GATEWAY_APP_DIR:-/app}"
program=${1:-proxy}
[ "$#" -gt 0 ] && shift
case "$program" in
  proxy) exec node apps/proxy/dist/main.js "$@" ;;
  controller) exec node apps/controller/dist/main.js "$@" ;;
  gwctl) exec node apps/cli/dist/main.js "$@" ;;
  *)
    echo "usage: gateway proxy|controller|gwctl [args]  (got: $program)" >&2
    exit 64
    ;;
esac
