#!/usr/bin/env bash
# Makes sure the real services the tests talk to are up on loopback: PostgreSQL 15 on 5432 and
# NATS with JetStream on 4222. Starts them with the machine's own commands when they are down.
# Also the openssl command, which the TLS end-to-end test makes its certificates with, and
# Debian's Chromium, which the dashboard's browser tests drive (playwright-core downloads none).
set -uo pipefail

wait_for() { # name, check command
  for _ in $(seq 1 50); do
    if eval "$2" >/dev/null 2>&1; then return 0; fi
    sleep 0.2
  done
  echo "ensure-services: $1 did not come up" >&2
  return 1
}

port_open() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

if ! pg_isready -h 127.0.0.1 -p 5432 -q 2>/dev/null; then
  echo "ensure-services: starting PostgreSQL"
  if ! command -v pg_ctlcluster >/dev/null; then
    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq postgresql >/dev/null
  fi
  pg_ctlcluster --skip-systemctl-redirect "$(ls /etc/postgresql | head -n1)" main start || true
  wait_for PostgreSQL "pg_isready -h 127.0.0.1 -p 5432 -q" || exit 1
fi

if ! port_open 4222; then
  echo "ensure-services: starting NATS with JetStream"
  if ! command -v nats-server >/dev/null && [ ! -x /usr/sbin/nats-server ]; then
    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq nats-server >/dev/null
  fi
  mkdir -p /var/lib/nats-server
  start-stop-daemon --start --oknodo --background --exec /usr/sbin/nats-server -- \
    -a 127.0.0.1 -p 4222 -js -sd /var/lib/nats-server -l /var/log/nats-server.log
  wait_for NATS "port_open 4222" || exit 1
fi
if ! command -v openssl >/dev/null; then
  echo "ensure-services: installing openssl"
  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq openssl >/dev/null
fi
if ! command -v chromium >/dev/null; then
  echo "ensure-services: installing chromium"
  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null
fi
exit 0
