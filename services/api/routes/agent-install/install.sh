#!/bin/sh
# Gantry agent installer, served by the control plane at GET /api/agent/install.sh. It holds no
# secret: the token comes on the command line. One line on a Linux host with Node.js >= 20:
#
#   curl -fsSL @@GANTRY_URL@@/api/agent/install.sh | sudo sh -s -- --server HOST:PORT --token TOKEN
#
# Options:
#   --server HOST:PORT[,HOST:PORT]  the control plane's agent (gRPC) address; kept from the last install when omitted
#   --token TOKEN                   one-time registration token from POST /api/machine (first install only)
#   --enrollment-key KEY            a fleet's enrollment key instead of a token; --name NAME names the machine
#   --ca-file FILE                  PEM CA the control plane's certificate is signed by (copied to /etc/gantry-agent)
#   --ca-fingerprint SHA256         pin the control plane's CA by its sha256 fingerprint
#   --no-systemd                    install only and print the command that runs the agent in the foreground
#   --uninstall                     stop and remove the agent, its user, its configuration and its home
#
# Running it again upgrades in place: the agent's home (its identity) is kept, the new bundle is
# unpacked beside the old one and swapped in with one rename, and the service restarted. The
# control plane can do the same without a shell on the host (POST /api/machine/upgrade): the agent
# swaps its own `current` link and exits, and systemd (Restart=always) starts the new release.
set -eu

GANTRY_URL='@@GANTRY_URL@@'
AGENT_VERSION='@@AGENT_VERSION@@'
BUNDLE_NAME='@@BUNDLE_NAME@@'
BUNDLE_SHA256='@@BUNDLE_SHA256@@'

SERVICE_USER=gantry-agent
PREFIX=/opt/gantry-agent
HOME_DIR=/var/lib/gantry-agent
CONF_DIR=/etc/gantry-agent
ENV_FILE=$CONF_DIR/agent.env
UNIT_FILE=/etc/systemd/system/gantry-agent.service
MIN_NODE_MAJOR=20

say() { printf 'gantry-agent: %s\n' "$*"; }
die() {
  printf 'gantry-agent: %s\n' "$*" >&2
  exit 1
}
# Values end up in a systemd EnvironmentFile and a sourced shell file: only plain characters.
NL='
'
check_value() { # option, value, extended regex (grep matches per line: a second line is refused first)
  case "$2" in *"$NL"*) die "$1 is not valid: it spans several lines" ;; esac
  printf '%s' "$2" | grep -Eqx "$3" || die "$1 '$2' is not valid"
}

server=''
token=''
enrollment_key=''
name=''
ca_file=''
ca_fingerprint=''
mode=install
use_systemd=yes
while [ $# -gt 0 ]; do
  case "$1" in
    --server | --token | --enrollment-key | --name | --ca-file | --ca-fingerprint)
      [ $# -ge 2 ] || die "$1 needs a value"
      case "$1" in
        --server) server=$2 ;;
        --token) token=$2 ;;
        --enrollment-key) enrollment_key=$2 ;;
        --name) name=$2 ;;
        --ca-file) ca_file=$2 ;;
        --ca-fingerprint) ca_fingerprint=$2 ;;
      esac
      shift 2
      ;;
    --uninstall) mode=uninstall && shift ;;
    --no-systemd) use_systemd=no && shift ;;
    -h | --help)
      sed -n '2,20p' "$0" 2>/dev/null || true
      exit 0
      ;;
    *) die "unknown option '$1' (options: --server --token --enrollment-key --name --ca-file --ca-fingerprint --no-systemd --uninstall)" ;;
  esac
done
[ -z "$server" ] || check_value --server "$server" '(\[?[A-Za-z0-9.:-]+\]?:[0-9]{1,5})(,\[?[A-Za-z0-9.:-]+\]?:[0-9]{1,5})*'
[ -z "$token" ] || check_value --token "$token" '[A-Za-z0-9._~+/=-]{8,512}'
[ -z "$enrollment_key" ] || check_value --enrollment-key "$enrollment_key" '[A-Za-z0-9._~+/=-]{8,512}'
[ -z "$name" ] || check_value --name "$name" '[A-Za-z0-9._-]{1,100}'
[ -z "$ca_fingerprint" ] || check_value --ca-fingerprint "$ca_fingerprint" '(sha256:)?[A-Fa-f0-9:]{64,95}'

systemd_running() { [ -d /run/systemd/system ] && command -v systemctl >/dev/null 2>&1; }

# ---- what this host lacks, all of it at once ------------------------------------------------
missing=''
lack() { missing="$missing
  - $*"; }
if [ "$(id -u)" != 0 ]; then
  if command -v sudo >/dev/null 2>&1; then
    lack "root: run it as root (… | sudo sh -s -- …)"
  else
    lack "root: run it as root (sudo is not installed: su -c, or log in as root)"
  fi
fi
if [ "$mode" = install ]; then
  NODE=$(command -v node 2>/dev/null || true)
  if [ -z "$NODE" ]; then
    lack "Node.js >= $MIN_NODE_MAJOR: 'node' is not on PATH (Debian/Ubuntu: apt-get install nodejs; or https://nodejs.org)"
  else
    NODE=$(readlink -f "$NODE")
    node_version=$("$NODE" -p 'process.versions.node' 2>/dev/null || echo 0)
    if [ "${node_version%%.*}" -lt "$MIN_NODE_MAJOR" ] 2>/dev/null; then
      lack "Node.js >= $MIN_NODE_MAJOR: $NODE is version $node_version"
    fi
  fi
  if [ "$use_systemd" = yes ] && ! systemd_running; then
    lack "systemd: it is not running here (a container?); re-run with --no-systemd to install without a service"
  fi
  command -v curl >/dev/null 2>&1 || command -v wget >/dev/null 2>&1 || lack "curl or wget, to download the agent"
  command -v tar >/dev/null 2>&1 || lack "tar, to unpack the agent"
  command -v useradd >/dev/null 2>&1 || id -u "$SERVICE_USER" >/dev/null 2>&1 || lack "useradd (Debian: the passwd package), to create the $SERVICE_USER user"
fi
[ -z "$missing" ] || die "cannot $mode here; missing:$missing"

# ---- uninstall -------------------------------------------------------------------------------
if [ "$mode" = uninstall ]; then
  if systemd_running && [ -f "$UNIT_FILE" ]; then
    systemctl disable --now gantry-agent.service >/dev/null 2>&1 || true
  fi
  rm -f "$UNIT_FILE"
  if systemd_running; then
    systemctl daemon-reload
    systemctl reset-failed gantry-agent.service >/dev/null 2>&1 || true
  fi
  rm -rf "$PREFIX" "$CONF_DIR" "$HOME_DIR"
  if id -u "$SERVICE_USER" >/dev/null 2>&1; then
    userdel "$SERVICE_USER" >/dev/null 2>&1 || die "could not remove the user $SERVICE_USER (userdel failed)"
  fi
  say "uninstalled (the machine stays in Gantry until it is deleted there: DELETE /api/machine)"
  exit 0
fi

# ---- install or upgrade ----------------------------------------------------------------------
existing() { # KEY: its value in the current agent.env, if any
  [ -f "$ENV_FILE" ] && sed -n "s/^$1=//p" "$ENV_FILE" | tail -n 1
  return 0
}
[ -n "$server" ] || server=$(existing GANTRY_SERVER)
[ -n "$server" ] || die "--server HOST:PORT is needed (the control plane's agent address)"
registered=no
[ -f "$HOME_DIR/identity.json" ] && registered=yes
[ -n "$enrollment_key" ] || enrollment_key=$(existing GANTRY_AGENT_ENROLLMENT_KEY)
[ -n "$name" ] || name=$(existing GANTRY_AGENT_NAME)
[ -n "$ca_fingerprint" ] || ca_fingerprint=$(existing GANTRY_AGENT_CA_FINGERPRINT)
if [ "$registered" = no ] && [ -z "$token" ] && [ -z "$enrollment_key" ]; then
  token=$(existing GANTRY_AGENT_TOKEN)
  [ -n "$token" ] || die "first install needs --token (from POST /api/machine) or --enrollment-key"
fi
if [ -n "$ca_file" ] && [ ! -r "$ca_file" ]; then die "--ca-file $ca_file cannot be read"; fi

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT INT TERM
say "downloading $BUNDLE_NAME from $GANTRY_URL"
url="$GANTRY_URL/api/agent/bundle/$BUNDLE_NAME"
if command -v curl >/dev/null 2>&1; then
  curl -fsSL --retry 3 -o "$work/$BUNDLE_NAME" "$url" || die "download of $url failed"
else
  wget -q -O "$work/$BUNDLE_NAME" "$url" || die "download of $url failed"
fi
if command -v sha256sum >/dev/null 2>&1; then
  actual=$(sha256sum "$work/$BUNDLE_NAME" | cut -d ' ' -f 1)
else
  actual=$("$NODE" -e 'process.stdout.write(require("crypto").createHash("sha256").update(require("fs").readFileSync(process.argv[1])).digest("hex"))' "$work/$BUNDLE_NAME")
fi
[ "$actual" = "$BUNDLE_SHA256" ] || die "$BUNDLE_NAME failed its checksum (expected sha256 $BUNDLE_SHA256, got $actual); nothing was changed"

if ! id -u "$SERVICE_USER" >/dev/null 2>&1; then
  nologin=/usr/sbin/nologin
  [ -x "$nologin" ] || nologin=/bin/false
  useradd --system --user-group --home-dir "$HOME_DIR" --no-create-home --shell "$nologin" \
    --comment 'Gantry deployment agent' "$SERVICE_USER"
  say "created the system user $SERVICE_USER"
fi
# The agent's own releases are its user's: an upgrade from the control plane (POST
# /api/machine/upgrade) unpacks the new one beside the running one and renames `current` itself.
install -d -m 0755 -o "$SERVICE_USER" -g "$SERVICE_USER" "$PREFIX" "$PREFIX/releases"
chown "$SERVICE_USER:$SERVICE_USER" "$PREFIX" "$PREFIX/releases"
install -d -m 0700 -o "$SERVICE_USER" -g "$SERVICE_USER" "$HOME_DIR"
chown "$SERVICE_USER:$SERVICE_USER" "$HOME_DIR"
chmod 0700 "$HOME_DIR"
install -d -m 0750 -o root -g "$SERVICE_USER" "$CONF_DIR"

# Unpack beside the running release, then swap the `current` link with one rename.
release="$PREFIX/releases/$AGENT_VERSION-$(printf '%s' "$BUNDLE_SHA256" | cut -c 1-12)"
rm -rf "$release.new"
mkdir -p "$release.new"
tar -xzf "$work/$BUNDLE_NAME" -C "$release.new" --no-same-owner
chmod -R a+rX,go-w "$release.new"
chown -R "$SERVICE_USER:$SERVICE_USER" "$release.new"
rm -rf "$release"
mv "$release.new" "$release"
ln -sfn "$release" "$PREFIX/current.new"
chown -h "$SERVICE_USER:$SERVICE_USER" "$PREFIX/current.new"
mv -T "$PREFIX/current.new" "$PREFIX/current"
for old in "$PREFIX"/releases/*; do
  [ "$old" = "$release" ] || rm -rf "$old"
done

if ! runuser -u "$SERVICE_USER" -- "$NODE" -e 0 >/dev/null 2>&1; then
  die "the $SERVICE_USER user cannot run $NODE (is Node.js installed under a private home folder?): install it system-wide"
fi

if [ -n "$ca_file" ]; then
  install -m 0640 -o root -g "$SERVICE_USER" "$ca_file" "$CONF_DIR/ca.pem"
fi
umask 077
{
  echo "# Written by the Gantry agent installer; re-run it to change these (it keeps what you do not pass)."
  echo "GANTRY_SERVER=$server"
  echo "GANTRY_AGENT_HOME=$HOME_DIR"
  # Once the agent has its identity, the token (worthless now) and the fleet's key are dropped.
  if [ "$registered" = no ] && [ -n "$token" ]; then echo "GANTRY_AGENT_TOKEN=$token"; fi
  if [ "$registered" = no ] && [ -n "$enrollment_key" ]; then echo "GANTRY_AGENT_ENROLLMENT_KEY=$enrollment_key"; fi
  if [ -n "$name" ]; then echo "GANTRY_AGENT_NAME=$name"; fi
  if [ -f "$CONF_DIR/ca.pem" ]; then echo "GANTRY_AGENT_CA_FILE=$CONF_DIR/ca.pem"; fi
  if [ -n "$ca_fingerprint" ]; then echo "GANTRY_AGENT_CA_FINGERPRINT=$ca_fingerprint"; fi
} >"$ENV_FILE.new"
chown root:root "$ENV_FILE.new"
chmod 0600 "$ENV_FILE.new"
mv "$ENV_FILE.new" "$ENV_FILE"
umask 022

start_command="set -a; . $ENV_FILE; set +a; exec runuser -u $SERVICE_USER -- $NODE $PREFIX/current/gantry-agent.mjs"
if [ "$use_systemd" = no ]; then
  say "installed $AGENT_VERSION (no service). Run the agent in the foreground, as root:"
  printf '  sh -c '\''%s'\''\n' "$start_command"
  exit 0
fi

# KillMode=mixed: SIGTERM reaches the agent alone, which stops its scripts with TERM and then
# KILL after its grace period and reports them; whatever is left gets SIGKILL at TimeoutStopSec.
cat >"$UNIT_FILE.new" <<UNIT
[Unit]
Description=Gantry deployment agent
Documentation=$GANTRY_URL/api/agent/install.sh
Wants=network-online.target
After=network-online.target

[Service]
Type=simple
User=$SERVICE_USER
Group=$SERVICE_USER
EnvironmentFile=$ENV_FILE
WorkingDirectory=$HOME_DIR
ExecStart=$NODE $PREFIX/current/gantry-agent.mjs
Restart=always
RestartSec=5
KillMode=mixed
TimeoutStopSec=30
NoNewPrivileges=yes
ProtectSystem=strict
ReadWritePaths=$HOME_DIR $PREFIX
PrivateTmp=yes
UMask=0077

[Install]
WantedBy=multi-user.target
UNIT
chmod 0644 "$UNIT_FILE.new"
mv "$UNIT_FILE.new" "$UNIT_FILE"
systemctl daemon-reload
systemctl enable gantry-agent.service >/dev/null 2>&1
systemctl restart gantry-agent.service
sleep 2
if ! systemctl is-active --quiet gantry-agent.service; then
  journalctl -u gantry-agent.service -n 20 --no-pager >&2 2>/dev/null || true
  die "installed, but the service did not stay up: systemctl status gantry-agent"
fi
say "installed $AGENT_VERSION and started it (systemctl status gantry-agent; journalctl -u gantry-agent -f)"
