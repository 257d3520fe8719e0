#!/bin/sh
# Installs the Debian packages Velocity needs. Idempotent: packages already
# present are left alone, and apt is only asked when something is missing.
#   ops/install-deps.sh run   what building and running need (ops/run.sh)
#   ops/install-deps.sh       that, and what testing and benchmarking need:
#                             the reference stacks, browsers, databases,
#                             applications, container tools (ops/test.sh)
set -eu
profile=${1:-all}
case $profile in
run | all) ;;
*) echo "usage: ops/install-deps.sh [run]" >&2; exit 2 ;;
esac

# Build: compilers, generators and the -dev packages we link against.
BUILD="build-essential cmake pkg-config
  libphp8.2-embed php8.2-dev
  libh2o-evloop-dev libuv1-dev libzmq3-dev libsodium-dev libssl-dev libpcre2-dev
  libnghttp2-dev liblmdb-dev lmdb-utils libprotobuf-c-dev protobuf-c-compiler
  libconfig-dev libseccomp-dev libcurl4-openssl-dev libxml2-dev libjansson-dev
  libsystemd-dev libnats-dev librsync-dev libqrencode-dev"
# Run: the PHP extensions the example app and the conformance apps load.
RUN="php8.2-opcache php8.2-cli openssl ca-certificates"
# Tests and benchmarks: the format check and the file lists (git), the
# compiler cache the test builds use (ccache), pytest and its xdist (the
# integration tests, several at once), the
# reference stack and real clients, newuidmap for `vc up --userns`, and
# the NATS server the cluster tests run on each node, valgrind for
# bench/instructions, SQLite for PHP and Debian's Illuminate queue,
# database and events (the queues the background tests run,
# integration/test_57_background.py).
TEST="clang-format git ccache nginx-light php8.2-fpm varnish curl nghttp2-client wrk
  python3 python3-pytest python3-pytest-xdist python3-h2 python3-websockets python3-requests
  python3-zmq python3-protobuf chromium
  clang libclang-rt-14-dev procps psmisc iproute2
  pebble certbot python3-cryptography uidmap nats-server valgrind php8.2-sqlite3
  php-illuminate-queue php-illuminate-database php-illuminate-events"
# The Debian package and its test in a fresh Debian 12 booted by podman
# with systemd (ops/package.sh, ops/package-test.sh); the pod test
# (ops/pod-test.sh): `podman kube play` builds its pause image around
# catatonit (podman only recommends it), and pods find each other by name
# through CNI's dnsname plugin (Debian 12's podman uses CNI networks).
TEST="$TEST debhelper lintian mmdebstrap podman runc catatonit
  golang-github-containernetworking-plugin-dnsname"
# Real applications the conformance suite runs under both stacks: DokuWiki,
# WordPress on MariaDB, and Symfony 5.4 for examples/symfony (also a
# benchmark scenario).
TEST="$TEST dokuwiki
  wordpress wordpress-theme-twentytwentythree php8.2-mysql mariadb-server
  php-symfony-framework-bundle php-symfony-twig-bundle php-symfony-twig-bridge
  php-symfony-form php-symfony-validator php-symfony-security-csrf"
# Debian's packaged applications, served where Debian puts them with a
# default pool (integration/test_37_debian_apps.py): MediaWiki,
# phpMyAdmin and Adminer beside DokuWiki and WordPress.
TEST="$TEST mediawiki phpmyadmin adminer"
# Apache 2.4 with mod_rewrite and php-fpm, the reference for .htaccess and
# X-Sendfile (mod_xsendfile): run by the tests on their own ports.
TEST="$TEST apache2 libapache2-mod-xsendfile"
# bench/deploy: what teams do without a cluster, rsync over ssh to each
# node (sshd in each node's network namespace).
TEST="$TEST rsync openssh-client openssh-server"

PKGS="$BUILD $RUN"
[ "$profile" = run ] || PKGS="$PKGS $TEST"
missing=""
for p in $PKGS; do
    if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed'; then
        missing="$missing $p"
    fi
done
# Node.js runs the real browser-side clients of the realtime tests
# (pusher-js, laravel-echo, from npm): Debian's, unless one is installed.
if [ "$profile" = all ] && { ! command -v node >/dev/null 2>&1 || ! command -v npm >/dev/null 2>&1; }; then
    missing="$missing nodejs npm"
fi
SUDO=""
[ "$(id -u)" -eq 0 ] || SUDO="sudo"

# The suite's own system user: started as root, `vc up` runs its daemons
# as "vc" (docs/SECURITY.md); the Debian package makes it the same way.
if ! getent passwd vc >/dev/null; then
    echo "install-deps: adding the system user vc"
    $SUDO adduser --system --group --no-create-home --home /nonexistent --quiet vc
fi

# The npm packages at the versions each package-lock.json pins, again only
# when the lock changed: the panel's terminal widget (panel/npm; the build
# copies it into the pages, and builds without it if npm is missing), and
# the clients the tests drive (integration/node).
npm_ci() {
    dir="$(cd "$(dirname "$0")/.." && pwd)/$1"
    if [ ! -d "$dir/node_modules" ] || [ "$dir/package-lock.json" -nt "$dir/node_modules" ]; then
        echo "install-deps: npm ci in $1"
        (cd "$dir" && npm ci --no-audit --no-fund --loglevel=error && touch node_modules)
    fi
}
npm_clients() {
    if command -v npm >/dev/null 2>&1; then npm_ci panel/npm; fi
    [ "$profile" = all ] || return 0
    npm_ci integration/node
}

if [ -z "$missing" ]; then
    echo "install-deps: all packages present ($profile)"
    npm_clients
    exit 0
fi
echo "install-deps: installing$missing"
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
# phpMyAdmin's package would make its own database with dbconfig-common
# and configure Apache: neither, the test sets its database up itself.
if echo "$missing" | grep -qw phpmyadmin; then
    printf '%s\n' "phpmyadmin phpmyadmin/dbconfig-install boolean false" \
        "phpmyadmin phpmyadmin/reconfigure-webserver multiselect" | $SUDO debconf-set-selections
fi
# Services the packages would start (Apache on port 80, beside nginx) stay
# stopped while they install: a policy-rc.d of our own says so, only if
# the machine has none, and goes again after.
policy=/usr/sbin/policy-rc.d
own_policy=""
if [ ! -e $policy ]; then
    printf '#!/bin/sh\nexit 101\n' | $SUDO tee $policy >/dev/null
    $SUDO chmod 755 $policy
    own_policy=1
fi
# shellcheck disable=SC2086
$SUDO apt-get install -y -qq --no-install-recommends $missing || { [ -z "$own_policy" ] || $SUDO rm -f $policy; exit 1; }
[ -z "$own_policy" ] || $SUDO rm -f $policy
# The Debian packages start nginx, php-fpm and MariaDB as system services;
# the tests and benchmarks run their own instances on loopback ports, so the
# system copies are stopped to keep port 80 and the CPU free.
for svc in nginx php8.2-fpm mariadb nats-server apache2; do
    if command -v systemctl >/dev/null 2>&1 && systemctl is-active --quiet "$svc" 2>/dev/null; then
        $SUDO systemctl stop "$svc" || true
    fi
done
npm_clients
