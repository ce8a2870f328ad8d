#!/bin/sh
# Entrypoint of the gateway image (deploy/Dockerfile): one image, three programs, chosen by the first
# argument. `exec` makes node PID 1's only child-free process, so SIGTERM from `docker stop` or the
# kubelet reaches the service's graceful drain directly.
set -eu
cd /app
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
