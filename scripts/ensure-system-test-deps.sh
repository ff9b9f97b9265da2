#!/usr/bin/env bash
# What the system tests (npm run test:system) need beyond scripts/ensure-services.sh: debootstrap
# for the Debian trees, systemd-container for systemd-nspawn, Docker with docker-compose for the
# compose stack (scripts/compose-images.sh starts dockerd and makes the images). Installs Debian's
# packages when a command is missing.
set -uo pipefail
bash "$(dirname "$0")/ensure-services.sh" || exit 1
missing=()
command -v debootstrap >/dev/null || missing+=(debootstrap)
command -v systemd-nspawn >/dev/null || missing+=(systemd-container)
command -v dockerd >/dev/null || missing+=(docker.io)
command -v docker-compose >/dev/null || missing+=(docker-compose)
if [ ${#missing[@]} -gt 0 ]; then
  echo "ensure-system-test-deps: installing ${missing[*]}"
  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/dev/null || exit 1
fi
exit 0
