#!/bin/sh
# The Debian package in a fresh Debian 12, with systemd as init: builds
# the package from this checkout, installs it in a
# root made by mmdebstrap from Debian's archive and run by podman
# (--systemd=always, no network), and checks that
#   - systemctl says velocity is active, with vc up's status line;
#   - a PHP page is served on port 80 (HTTP/1.1) and 443 (HTTP/2);
#   - journalctl -u velocity has the daemons' lines; reload works;
#   - an upgrade to the second version under a load of new connections
#     fails no request, keeps the configuration (an edited conffile) and
#     the state (the session ticket keys), and runs the new daemons;
#   - with velocity.socket enabled, the first connection starts the
#     service, vc up takes the ports systemd bound, and a restart of the
#     whole service under load fails no request;
#   - remove stops every process; purge leaves none of the package's files.
# Needs root (podman with runc; Debian's podman, runc, mmdebstrap, debhelper
# and lintian: ops/install-deps.sh). About 75 s with the package built.
# Usage: ops/package-test.sh [VELOCITY.deb]   (default: built here as 0.1.0)
#        VC_DEBIAN_ROOT=DIR ops/package-test.sh ...   also leaves the root in DIR
set -eu
cd "$(dirname "$0")/.."
[ "$(id -u)" -eq 0 ] || { echo "package-test: needs root (podman with systemd as init)"; exit 1; }
work=$(mktemp -d)
name="vc-package-test-$$"
image="localhost/vc-package-test:$$"
export CONTAINERS_CONF="$PWD/ops/containers.conf"
cleanup() {
    podman rm -f "$name" >/dev/null 2>&1 || true
    podman rmi -f "$image" >/dev/null 2>&1 || true
    rm -rf "$work"
}
trap cleanup EXIT
fail() {
    echo "package-test: FAILED: $*"
    podman exec "$name" journalctl -u velocity --no-pager 2>/dev/null | tail -30 || true
    exit 1
}
in_box() { podman exec "$name" "$@"; }
# Polls a command in the container for up to $1 seconds.
wait_for() {
    t=$1
    shift
    i=0
    while ! in_box sh -c "$*" >/dev/null 2>&1; do
        i=$((i + 1))
        [ "$i" -le $((t * 10)) ] || return 1
        sleep 0.1
    done
}

if [ $# -ge 1 ]; then
    echo "== package-test: $1, and a newer version of it for the upgrade"
    mkdir "$work/v1"
    cp "$1" "$work/v1/"
else
    echo "== package-test: building 0.1.0, and a newer version of it for the upgrade"
    ./ops/package.sh "$work/v1" 0.1.0 >"$work/build1.log" 2>&1 || { tail -20 "$work/build1.log"; exit 1; }
fi
v1=$(ls "$work"/v1/velocity_*.deb)
old_version=$(dpkg-deb -f "$v1" Version)
new_version="$old_version+upgrade1"
# The newer version is the same build with a newer version in its control file: what
# an upgrade does (maintainer scripts, conffiles, the running daemons
# replaced by the files on disk) does not depend on the bytes differing,
# and a second build would cost the suite's CI a minute.
mkdir "$work/v2" "$work/v2/tree"
dpkg-deb -R "$v1" "$work/v2/tree"
sed -i "s/^Version: .*/Version: $new_version/" "$work/v2/tree/DEBIAN/control"
v2="$work/v2/velocity_${new_version}_amd64.deb"
dpkg-deb -b --root-owner-group "$work/v2/tree" "$v2" >/dev/null
chmod 0755 "$work" "$work/v1" "$work/v2"
chmod 0644 "$v1" "$v2"

echo "== package-test: a Debian 12 root with systemd and velocity $old_version (mmdebstrap)"
# The host's own Debian sources (its mirror), and the package installed by
# apt from its file, with its dependencies from the archive.
# VC_DEBIAN_ROOT=DIR keeps the root there too, for deploy/images/build.sh
# (VC_IMAGES_ROOT), with what the images add: ops/test.sh makes one root
# for both tests, not two.
extra=${VC_DEBIAN_ROOT:+,tzdata,netbase}
mmdebstrap --variant=minbase --include=systemd-sysv,curl,procps,ca-certificates$extra --include="$v1" \
    --hook-dir=/usr/share/mmdebstrap/hooks/file-mirror-automount \
    bookworm "$work/root.tar" - </etc/apt/sources.list.d/debian.sources >"$work/mmdebstrap.log" 2>&1 ||
    { tail -20 "$work/mmdebstrap.log"; exit 1; }
if [ -n "${VC_DEBIAN_ROOT:-}" ]; then
    mkdir -p "$VC_DEBIAN_ROOT"
    tar -C "$VC_DEBIAN_ROOT" --numeric-owner -xf "$work/root.tar"
fi
# An imported root has no PATH in its image configuration.
podman import --change 'CMD ["/sbin/init"]' \
    --change 'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' \
    "$work/root.tar" "$image" >/dev/null
rm -f "$work/root.tar"
podman run -d --name "$name" --systemd=always --network=none "$image" >/dev/null

# New connections, one after another, until load_check: each one's status
# in /tmp/codes (a refused connection is 000).
load_start() {
    in_box sh -c 'rm -f /tmp/codes /tmp/load.stop /tmp/load.done; (while [ ! -e /tmp/load.stop ]; do
        curl -s -o /dev/null -m 20 -w "%{http_code}\n" http://127.0.0.1/ >>/tmp/codes; done; touch /tmp/load.done) \
        >/dev/null 2>&1 &'
    wait_for 10 'test -s /tmp/codes' || fail "the load did not start"
}
# The load goes on until 50 more requests were answered, then stops; any
# answer but 200 fails. $1: what it ran through.
load_check() {
    after=$(in_box sh -c 'wc -l </tmp/codes')
    wait_for 30 "[ \$(wc -l </tmp/codes) -ge $((after + 50)) ]" || fail "no requests answered after the $1"
    in_box touch /tmp/load.stop
    wait_for 30 'test -e /tmp/load.done' || fail "the load did not stop"
    codes=$(in_box sh -c 'sort /tmp/codes | uniq -c')
    echo "   requests during the $1: $codes"
    if echo "$codes" | grep -v ' 200$' | grep -q .; then fail "requests failed during the $1: $codes"; fi
}

echo "== package-test: installed: systemctl, a PHP page, journalctl, reload"
wait_for 60 'systemctl is-active --quiet velocity' || fail "velocity is not active"
in_box systemctl status velocity --no-pager | grep -q 'Status: "serving http :80, https :443"' ||
    fail "systemctl status has no status line from vc up"
wait_for 10 'curl -sf http://127.0.0.1/?name=pkg | grep -q "Hello, pkg!"' || fail "no PHP page on port 80"
in_box curl -sfk --http2 -o /dev/null -w '%{http_version}' https://127.0.0.1/ | grep -qx 2 ||
    fail "no HTTP/2 page on port 443"
in_box journalctl -u velocity --no-pager | grep -q 'vc-front.* ready' || fail "journalctl has no daemon lines"
in_box systemctl reload velocity || fail "systemctl reload failed"
in_box systemctl status velocity --no-pager | grep -q 'Status: "configuration version' || fail "no reload status"
in_box vc status >/dev/null || fail "vc status (default /etc/vc, /var/lib/vc) failed"
# The default pool is walled off: by its own mount namespace where the
# machine lets the unit make one (CAP_SYS_ADMIN; this container gives
# none), else by its user, www-data, which is not the suite's.
in_box vc workers | grep -Eq '^pool default \(user www-data, walled by (namespace|user)\)' ||
    fail "the default pool is not walled off: $(in_box vc workers | head -1)"
echo "   $(in_box vc workers | head -1 | cut -d: -f1); $(in_box systemd-analyze security velocity --no-pager | tail -1)"
# An administrator's change to a conffile, kept by the upgrade.
in_box sed -i 's/^admin_listen = .*/admin_listen = "127.0.0.1:8082";   # edited/' /etc/vc/vc.conf
in_box systemctl reload velocity
tickets_before=$(in_box sha256sum /var/lib/vc/tls/tickets)
pids_before=$(in_box pgrep -d, -x 'vc-front|vc-php|vc-bus')

echo "== package-test: upgrade to $new_version under load"
podman cp "$v2" "$name:/tmp/velocity-new.deb"
load_start
in_box env DEBIAN_FRONTEND=noninteractive dpkg -i --force-confold /tmp/velocity-new.deb >"$work/upgrade.log" 2>&1 ||
    { cat "$work/upgrade.log"; fail "dpkg -i of the new version failed"; }
load_check upgrade
in_box dpkg-query -W -f '${Version}' velocity | grep -qxF "$new_version" || fail "$new_version is not installed"
in_box grep -q 'admin_listen = "127.0.0.1:8082";   # edited' /etc/vc/vc.conf || fail "the edited conffile was replaced"
[ "$(in_box sha256sum /var/lib/vc/tls/tickets)" = "$tickets_before" ] || fail "the state was not kept"
pids_after=$(in_box pgrep -d, -x 'vc-front|vc-php|vc-bus')
[ "$pids_after" != "$pids_before" ] || fail "the daemons were not replaced by the new binaries"
in_box systemctl is-active --quiet velocity || fail "velocity is not active after the upgrade"
in_box curl -sf http://127.0.0.1/ | grep -q "Hello, world!" || fail "no page after the upgrade"

echo "== package-test: socket activation (velocity.socket)"
in_box systemctl stop velocity
in_box systemctl enable --now velocity.socket >/dev/null 2>&1 || fail "velocity.socket did not start"
in_box systemctl is-active --quiet velocity && fail "velocity runs before any connection"
wait_for 20 'curl -sf -m 20 http://127.0.0.1/ | grep -q "Hello, world!"' || fail "a connection did not start velocity"
in_box systemctl is-active --quiet velocity || fail "velocity is not active after the first connection"
in_box journalctl -u velocity --no-pager | grep -q '":80": the socket handed over for \[::\]:80 (IPv4 too)' ||
    fail "vc up did not take the port systemd bound"
# The whole service restarted under load: the port stays open, held by
# systemd, and what arrives meanwhile waits in its queue.
load_start
in_box systemctl restart velocity || fail "systemctl restart velocity failed"
load_check "restart of velocity.service"

echo "== package-test: remove, then purge"
in_box env DEBIAN_FRONTEND=noninteractive apt-get remove -y -q velocity >"$work/remove.log" 2>&1 ||
    { cat "$work/remove.log"; fail "apt-get remove failed"; }
# By name (-x): a pattern given with -f would find the sh running it.
suite='vc|vc-front|vc-php|vc-bus|vc-cache|vc-acme|vc-fed|vc-mesh|vc-nats|vc-panel'
wait_for 30 "! pgrep -x '$suite'" || fail "processes left after remove: $(in_box pgrep -a -x "$suite")"
in_box env DEBIAN_FRONTEND=noninteractive apt-get purge -y -q velocity >"$work/purge.log" 2>&1 ||
    { cat "$work/purge.log"; fail "apt-get purge failed"; }
left=$(in_box sh -c 'ls -d /etc/vc /var/lib/vc /var/log/vc /usr/bin/vc* /usr/share/velocity \
    /lib/systemd/system/velocity.service /etc/logrotate.d/velocity /etc/systemd/system/multi-user.target.wants/velocity.service \
    /lib/systemd/system/velocity.socket /etc/systemd/system/sockets.target.wants/velocity.socket 2>/dev/null' || true)
[ -z "$left" ] || fail "left after purge: $left"
in_box systemctl is-active --quiet velocity.socket && fail "velocity.socket still holds the ports after purge"
echo "package-test: all passed"
