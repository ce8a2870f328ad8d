# Sourced by scripts/bootstrap.sh (./start and ./test): PostgreSQL and Redis answering at the default
# URLs (README). Each one is, in order: left alone when it answers; started when installed but
# stopped; installed from the distribution's packages on Debian/Ubuntu when missing, as root or with
# passwordless sudo; otherwise the one command that installs it is printed. Nothing is installed
# when it is already there, CI or not, and nothing when DATABASE_URL / REDIS_URL (or the TEST_
# variants) point elsewhere. The probes and `run` are functions, so a test can source this file,
# replace them, and check every decision without touching the machine
# (tests/processes/local-services.test.ts).

PG_PORT=5432
REDIS_PORT=6379

say() { printf '==> %s\n' "$*" >&2; }
run() { "$@"; }
have() { command -v "$1" >/dev/null 2>&1; }
is_root() { [ "$(id -u)" = 0 ]; }
can_sudo() { have sudo && sudo -n true >/dev/null 2>&1; }
port_open() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }
wait_port() { for _ in $(seq 1 50); do port_open "$1" && return 0; sleep 0.2; done; return 1; }
postgres_installed() { have pg_ctlcluster && [ -d /etc/postgresql ] && [ -n "$(ls /etc/postgresql 2>/dev/null)" ]; }
redis_installed() { have redis-server; }

yn() { if "$@"; then echo yes; else echo no; fi; }
privilege() { if is_root; then echo root; elif can_sudo; then echo sudo; else echo none; fi; }

# service_plan REACHABLE INSTALLED APT PRIVILEGE -> ok | start | install | advise
service_plan() {
  if [ "$1" = yes ]; then echo ok
  elif [ "$2" = yes ]; then echo start
  elif [ "$3" = yes ] && [ "$4" != none ]; then echo install
  else echo advise
  fi
}

as_root() { if is_root; then run "$@"; else run sudo -n "$@"; fi; }

apt_install() {
  as_root apt-get update -q >/dev/null
  as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -q "$@" >/dev/null
}

# The one command that installs (and starts) a service here, for when this script may not.
install_hint() {
  local service=$1
  if have apt-get; then
    case $service in
      postgres) echo 'sudo apt-get install -y postgresql' ;;
      redis) echo 'sudo apt-get install -y redis-server' ;;
    esac
  elif have brew; then
    case $service in
      postgres) echo 'brew install postgresql@15 && brew services start postgresql@15' ;;
      redis) echo 'brew install redis && brew services start redis' ;;
    esac
  else
    case $service in
      postgres) echo 'docker run -d --name gateway-postgres -p 127.0.0.1:5432:5432 -e POSTGRES_HOST_AUTH_METHOD=trust postgres:15' ;;
      redis) echo 'docker run -d --name gateway-redis -p 127.0.0.1:6379:6379 redis:7' ;;
    esac
  fi
}

start_postgres() {
  local version
  version=$(ls /etc/postgresql | sort -V | tail -n 1)
  as_root pg_ctlcluster --skip-systemctl-redirect "$version" main start || true
  wait_port "$PG_PORT" || say "PostgreSQL did not come up"
}

# A fresh cluster refuses password-less TCP logins; the default URL (postgres@127.0.0.1, README)
# needs them for the postgres user from this machine only.
trust_local_postgres() {
  local version hba
  version=$(ls /etc/postgresql | sort -V | tail -n 1)
  hba=/etc/postgresql/$version/main/pg_hba.conf
  say "allowing password-less logins of the postgres user from 127.0.0.1 and ::1 ($hba)"
  as_root sed -i '1i host all postgres 127.0.0.1/32 trust\nhost all postgres ::1/128 trust' "$hba"
}

start_redis() {
  as_root redis-server --daemonize yes --bind 127.0.0.1 --port "$REDIS_PORT" --save "" --appendonly no >/dev/null || true
  wait_port "$REDIS_PORT" || say "Redis did not come up"
}

ensure_postgres() {
  [ -n "${TEST_DATABASE_URL:-}${DATABASE_URL:-}" ] && return 0
  case $(service_plan "$(yn port_open "$PG_PORT")" "$(yn postgres_installed)" "$(yn have apt-get)" "$(privilege)") in
    ok) ;;
    start) say "starting PostgreSQL"; start_postgres ;;
    install)
      say "installing PostgreSQL from the distribution's packages (apt-get install -y postgresql)"
      apt_install postgresql
      trust_local_postgres
      start_postgres
      ;;
    advise) say "PostgreSQL is not answering on 127.0.0.1:$PG_PORT and cannot be installed from here; install it with: $(install_hint postgres)" ;;
  esac
}

ensure_redis() {
  [ -n "${TEST_REDIS_URL:-}${REDIS_URL:-}" ] && return 0
  case $(service_plan "$(yn port_open "$REDIS_PORT")" "$(yn redis_installed)" "$(yn have apt-get)" "$(privilege)") in
    ok) ;;
    start) say "starting Redis"; start_redis ;;
    install)
      say "installing Redis from the distribution's packages (apt-get install -y redis-server)"
      apt_install redis-server
      start_redis
      ;;
    advise) say "Redis is not answering on 127.0.0.1:$REDIS_PORT and cannot be installed from here; install it with: $(install_hint redis)" ;;
  esac
}
