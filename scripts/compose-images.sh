#!/usr/bin/env bash
# Makes `docker-compose up` work on a machine that reaches no image registry (CI, the build
# machines): installs Debian's docker.io and docker-compose when missing, starts dockerd when none
# answers, and builds every image docker-compose.yml names from Debian packages, tagged with
# exactly those names, so the SAME compose file a user runs starts unchanged:
#
#   postgres:15          Debian bookworm minbase + postgresql-15, with an entrypoint that honours
#                        POSTGRES_USER / POSTGRES_PASSWORD / POSTGRES_DB as the official image does
#   nats:2.10-alpine     minbase + Debian's nats-server (2.9, JetStream) + wget for the healthcheck
#   gantry:latest        minbase + python3 + this machine's Node.js and npm + this checkout (with its
#                        node_modules, the agent and the dashboard built), as the Dockerfile makes it
#
# The Debian tree comes from scripts/fixtures/debian-tree.sh minbase (debootstrap, cached under
# /var/cache/gantry-test). postgres and nats are rebuilt only when their recipe changes; gantry
# whenever this checkout changed since the image was made (a label records what it was made from).
#
#   bash scripts/compose-images.sh            # then: docker-compose up -d (see README)
set -euo pipefail
cd "$(dirname "$0")/.."
repo=$(pwd)
cache="${GANTRY_FIXTURE_CACHE:-/var/cache/gantry-test}"
recipe=1
say() { printf 'compose-images: %s\n' "$*" >&2; }

# ---- Docker ----------------------------------------------------------------------------------
need=()
command -v dockerd >/dev/null || need+=(docker.io)
command -v docker-compose >/dev/null || need+=(docker-compose)
if [ ${#need[@]} -gt 0 ]; then
  say "installing ${need[*]} (Debian packages)"
  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need[@]}" >/dev/null
fi
if ! docker info >/dev/null 2>&1; then
  say "starting dockerd (log: $cache/dockerd.log)"
  mkdir -p "$cache"
  nohup dockerd >"$cache/dockerd.log" 2>&1 &
  for _ in $(seq 1 60); do
    docker info >/dev/null 2>&1 && break
    sleep 1
  done
  docker info >/dev/null 2>&1 || {
    tail -20 "$cache/dockerd.log" >&2
    exit 1
  }
fi

fixture_of() { docker image inspect --format '{{ index .Config.Labels "gantry.fixture" }}' "$1" 2>/dev/null || true; }

base=$(bash scripts/fixtures/debian-tree.sh minbase)
exec 9>"$cache/.compose-images.lock"
flock 9

# A throw-away copy of the Debian tree, packages installed with chroot apt-get, imported into Docker.
build_from_tree() { # image, fixture label, packages, setup function, docker import --change…
  local image=$1 label=$2 packages=$3 setup=$4
  shift 4
  local tree
  tree=$(mktemp -d "$cache/image-tree.XXXXXX")
  cp -a "$base/." "$tree/"
  mount -t proc proc "$tree/proc"
  # shellcheck disable=SC2064
  trap "umount '$tree/proc' 2>/dev/null || true; rm -rf '$tree'" RETURN
  printf '#!/bin/sh\nexit 101\n' >"$tree/usr/sbin/policy-rc.d" # no service starts in the chroot
  chmod 0755 "$tree/usr/sbin/policy-rc.d"
  cp /etc/resolv.conf "$tree/etc/resolv.conf"
  "$setup" "$tree" pre
  chroot "$tree" sh -c "apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $packages" \
    >"$cache/apt-$(echo "$image" | tr ':/' '__').log" 2>&1 || {
    tail -20 "$cache/apt-$(echo "$image" | tr ':/' '__').log" >&2
    return 1
  }
  "$setup" "$tree" post
  chroot "$tree" apt-get clean
  rm -rf "$tree/var/lib/apt/lists/"* "$tree/usr/sbin/policy-rc.d"
  umount "$tree/proc"
  local changes=(--change "LABEL gantry.fixture=$label")
  for change in "$@"; do changes+=(--change "$change"); done
  tar -C "$tree" -c . | docker import "${changes[@]}" - "$image" >/dev/null
  say "built $image"
}

postgres_setup() {
  local tree=$1
  if [ "$2" = pre ]; then
    # postgresql-common would create and start a cluster at install: the entrypoint makes one per volume.
    mkdir -p "$tree/etc/postgresql-common"
    echo 'create_main_cluster = false' >"$tree/etc/postgresql-common/createcluster.conf"
    return
  fi
  ln -sf /usr/lib/postgresql/15/bin/pg_isready "$tree/usr/local/bin/pg_isready"
  cat >"$tree/usr/local/bin/docker-entrypoint.sh" <<'ENTRY'
#!/bin/sh
# What the official postgres image's entrypoint does that docker-compose.yml relies on: a cluster
# in PGDATA made on first start with POSTGRES_USER (password POSTGRES_PASSWORD) and POSTGRES_DB,
# password logins over the network, then the server in the foreground.
set -eu
PGDATA=${PGDATA:-/var/lib/postgresql/data}
user=${POSTGRES_USER:-postgres}
db=${POSTGRES_DB:-$user}
bin=/usr/lib/postgresql/15/bin
mkdir -p "$PGDATA" /var/run/postgresql
chown -R postgres:postgres "$PGDATA" /var/run/postgresql
chmod 0700 "$PGDATA"
if [ ! -s "$PGDATA/PG_VERSION" ]; then
  pwfile=$(mktemp)
  printf '%s\n' "${POSTGRES_PASSWORD:?POSTGRES_PASSWORD is required}" >"$pwfile"
  chown postgres "$pwfile"
  runuser -u postgres -- "$bin/initdb" -D "$PGDATA" -U "$user" --pwfile="$pwfile" --auth-local=trust --auth-host=scram-sha-256 >/dev/null
  rm -f "$pwfile"
  echo "host all all all scram-sha-256" >>"$PGDATA/pg_hba.conf"
  echo "listen_addresses = '*'" >>"$PGDATA/postgresql.conf"
  if [ "$db" != postgres ]; then
    runuser -u postgres -- "$bin/pg_ctl" -D "$PGDATA" -o "-c listen_addresses=''" -w start >/dev/null
    runuser -u postgres -- "$bin/psql" -v ON_ERROR_STOP=1 -U "$user" -d postgres -c "CREATE DATABASE \"$db\"" >/dev/null
    runuser -u postgres -- "$bin/pg_ctl" -D "$PGDATA" -m fast -w stop >/dev/null
  fi
fi
exec runuser -u postgres -- "$bin/postgres" -D "$PGDATA" "$@"
ENTRY
  chmod 0755 "$tree/usr/local/bin/docker-entrypoint.sh"
}

nats_setup() { :; }

node_setup() {
  local tree=$1
  [ "$2" = post ] || return 0
  # npm as the host has it (Node.js itself was copied in by debian-tree.sh).
  cp -a "$(dirname "$(dirname "$(readlink -f "$(command -v npm)")")")" "$tree/usr/lib/node_modules-npm"
  mkdir -p "$tree/usr/lib/node_modules"
  rm -rf "$tree/usr/lib/node_modules/npm"
  mv "$tree/usr/lib/node_modules-npm" "$tree/usr/lib/node_modules/npm"
  ln -sf ../lib/node_modules/npm/bin/npm-cli.js "$tree/usr/bin/npm"
  ln -sf ../lib/node_modules/npm/bin/npx-cli.js "$tree/usr/bin/npx"
  # The Dockerfile's base image has the unprivileged user `node` (uid 1000) it runs as.
  chroot "$tree" useradd --uid 1000 --user-group --create-home --shell /bin/bash node
  mkdir -p "$tree/data" "$tree/var/lib/gantry-agent" "$tree/app"
  chroot "$tree" chown node:node /data /var/lib/gantry-agent /app
}

if [ "$(fixture_of postgres:15)" != "postgres-$recipe" ]; then
  build_from_tree postgres:15 "postgres-$recipe" postgresql-15 postgres_setup \
    'ENV PGDATA=/var/lib/postgresql/data' 'ENTRYPOINT ["/usr/local/bin/docker-entrypoint.sh"]' 'EXPOSE 5432'
fi
if [ "$(fixture_of nats:2.10-alpine)" != "nats-$recipe" ]; then
  build_from_tree nats:2.10-alpine "nats-$recipe" "nats-server wget" nats_setup \
    'ENTRYPOINT ["/usr/sbin/nats-server"]' 'EXPOSE 4222 8222'
fi
if [ "$(fixture_of gantry-test/node-base:bookworm)" != "node-$recipe" ]; then
  build_from_tree gantry-test/node-base:bookworm "node-$recipe" "python3-minimal bash" node_setup
fi

# ---- gantry:latest: this checkout on the node base --------------------------------------------
# As the Dockerfile does: the agent and the dashboard built into the image (npm start then finds
# them up to date), dev dependencies kept (tsx runs the TypeScript sources).
made_from="$recipe-$(git rev-parse HEAD 2>/dev/null || echo no-git)-$( (git status --porcelain 2>/dev/null; git diff 2>/dev/null) | sha256sum | cut -c 1-16)"
if [ "$(fixture_of gantry:latest)" != "$made_from" ]; then
  npx tsx scripts/build-agent.ts --if-stale >/dev/null
  npx tsx scripts/build-dashboard.ts --if-stale >/dev/null
  container=$(docker create gantry-test/node-base:bookworm /bin/true)
  # shellcheck disable=SC2064
  trap "docker rm -f '$container' >/dev/null 2>&1 || true" EXIT
  # What the Dockerfile's .dockerignore leaves out, except node_modules (the image's npm ci) and the tests.
  tar -C "$repo" -c --owner=1000 --group=1000 \
    --exclude=./.git --exclude=./.ci --exclude=./data --exclude=./coverage --exclude=./.vitest-tmp \
    --exclude='*.log' --exclude=./test --exclude=./bench . | docker cp - "$container:/app"
  docker commit \
    --change "LABEL gantry.fixture=$made_from" \
    --change 'WORKDIR /app' \
    --change 'USER node' \
    --change 'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin GANTRY_DATA_DIR=/data GANTRY_AGENT_HOME=/var/lib/gantry-agent GANTRY_HOST=0.0.0.0' \
    --change 'EXPOSE 8080 8081' \
    --change 'CMD ["npm", "start"]' \
    "$container" gantry:latest >/dev/null
  docker rm -f "$container" >/dev/null
  trap - EXIT
  say "built gantry:latest from this checkout"
fi
say "images ready: postgres:15 nats:2.10-alpine gantry:latest"
