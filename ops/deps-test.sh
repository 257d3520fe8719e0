#!/bin/sh
# Guards the README's promise that its two commands work on a fresh
# Debian 12 machine: makes one (a Debian 12 root by mmdebstrap, with what
# a new machine has: the "important" variant), copies the checkout in, and
# installs there in two steps, as a new user meets them:
#   - the run command's (ops/install-deps.sh run): what ops/run.sh and
#     ops/build.sh call must be there, and it must be enough to build the
#     suite (every library, header and generator) and serve the example
#     app (vc up as root, daemons as vc and PHP as www-data, in a network
#     namespace of its own, one PHP page over HTTP);
#   - the test command's (ops/install-deps.sh): every program the
#     project's scripts call (or say they need though another program
#     calls it: "# deps-test needs: ..."), and every Python module its
#     tests import, must be there.
# The lists are read from the scripts themselves (ops/deps_called.py),
# never kept by hand: a script that starts calling a program
# install-deps.sh does not install fails here.
# Needs root (mmdebstrap, chroot, unshare). Downloads from the host's
# Debian mirror, like a new machine. Usage: ops/deps-test.sh
set -eu
cd "$(dirname "$0")/.."
[ "$(id -u)" -eq 0 ] || { echo "deps-test: needs root (mmdebstrap, chroot)"; exit 1; }
work=$(mktemp -d)
root="$work/root"
cleanup() { rm -rf "$work"; }
trap cleanup EXIT
trap 'exit 143' TERM INT
fail() {
    echo "deps-test: FAILED: $*"
    exit 1
}
# Inside the root, in a mount and PID namespace of its own: /proc is its
# own, and whatever was started there (a package's service, the suite)
# ends with the namespace.
in_root() { unshare --mount --pid --fork --mount-proc="$root/proc" chroot "$root" /bin/sh -c "$*"; }

echo "== deps-test: a fresh Debian 12 (mmdebstrap --variant=important)"
t0=$(date +%s)
mmdebstrap --variant=important bookworm "$root" - </etc/apt/sources.list.d/debian.sources \
    >"$work/mmdebstrap.log" 2>&1 || { tail -20 "$work/mmdebstrap.log"; fail "mmdebstrap"; }
# The checkout as a clone has it: the files git tracks.
mkdir "$root/src"
git ls-files -z | tar --null -T - -cf - | tar -C "$root/src" -xf -
chmod 0755 "$root/src"
# A package's service is not started in the root (it has no init), as in
# a container build; the suite is started by the test itself.
printf '#!/bin/sh\nexit 101\n' >"$root/usr/sbin/policy-rc.d"
chmod 0755 "$root/usr/sbin/policy-rc.d"
# The root is thrown away: dpkg need not fsync each file it unpacks (most
# of the install's time). Which packages get installed is unchanged.
echo force-unsafe-io >"$root/etc/dpkg/dpkg.cfg.d/vc-deps-test"
cp /etc/resolv.conf "$root/etc/resolv.conf" 2>/dev/null || true
# The machine's own trusted CAs (a site's proxy, say) come with a new
# machine there too: installing ca-certificates adds them to its store.
if [ -d /usr/local/share/ca-certificates ]; then
    mkdir -p "$root/usr/local/share/ca-certificates"
    cp -r /usr/local/share/ca-certificates/. "$root/usr/local/share/ca-certificates/"
fi
echo "deps-test: the root in $(($(date +%s) - t0)) s"

# Whether what the scripts call (ops/deps_called.py's lines, those of the
# files named, or all) is in the root; prints what is missing.
missing_of() {
    while read -r kind name file; do
        if [ $# -gt 0 ] && ! echo " $* " | grep -q " $file "; then
            continue
        fi
        if [ "$kind" = program ]; then
            chroot "$root" /bin/sh -c "command -v '$name'" >/dev/null 2>&1 || echo "  program $name (called by $file)"
        elif [ "$kind" = file ]; then
            [ -e "$root$name" ] || echo "  file $name (needed by $file)"
        else
            chroot "$root" /usr/bin/python3 -c "import $name" >/dev/null 2>&1 || echo "  module $name (imported by $file)"
        fi
    done <"$work/called"
}
/usr/bin/python3 ops/deps_called.py --root "$PWD" >"$work/called"
packages() { chroot "$root" dpkg-query -W -f='${Status}\n' | grep -c 'install ok installed'; }
# ops/install-deps.sh [PROFILE] in the root; says how many packages it
# added, and how long it took.
install_profile() {
    t0=$(date +%s)
    before=$(packages)
    # The .deb files this machine's own install fetched, linked into the
    # root's cache: apt uses one only if its size and hash are the index's,
    # so what is installed, and whether it can be, is unchanged; only the
    # download is saved. (Hard links: none if /tmp is another file system.)
    mkdir -p "$root/var/cache/apt/archives"
    find /var/cache/apt/archives -maxdepth 1 -name '*.deb' -exec ln -f -t "$root/var/cache/apt/archives" {} + \
        2>/dev/null || true
    in_root "cd /src && ./ops/install-deps.sh $*" >"$work/install.log" 2>&1 ||
        { tail -30 "$work/install.log"; fail "ops/install-deps.sh $* failed in a fresh Debian 12"; }
    echo "deps-test: $(($(packages) - before)) packages in $(($(date +%s) - t0)) s"
}

echo "== deps-test: the run command's install (ops/install-deps.sh run), the build and the example app"
install_profile run
missing=$(missing_of ops/run.sh ops/build.sh)
[ -z "$missing" ] || fail "ops/install-deps.sh run does not install what the run command needs:
$missing"
t0=$(date +%s)
in_root "cd /src && ./ops/build.sh build" >"$work/build.log" 2>&1 || { tail -30 "$work/build.log"; fail "the build"; }
echo "deps-test: built in $(($(date +%s) - t0)) s"
# Its own network namespace: port 8080 of the host is not ours to take.
# No HTTP client comes with the run command's install: bash's /dev/tcp.
page=$(unshare --net --mount --pid --fork --mount-proc="$root/proc" chroot "$root" /bin/bash -c '
    ip link set lo up 2>/dev/null || true
    cd /src && ./build/bin/vc up -d --listen 127.0.0.1:8080 --tls-listen 127.0.0.1:8443 >/tmp/up.log 2>&1 &&
        ./build/bin/vc status --wait 20 >/dev/null 2>&1 && exec 3<>/dev/tcp/127.0.0.1/8080 &&
        printf "GET / HTTP/1.0\r\nHost: localhost\r\n\r\n" >&3 && timeout 10 cat <&3
    ./build/bin/vc stop >/dev/null 2>&1') || true
echo "$page" | grep -q "Hello, world!" || { tail -20 "$root/tmp/up.log" 2>/dev/null; fail "the example app was not served: $page"; }

echo "== deps-test: the test command's install (ops/install-deps.sh)"
install_profile
missing=$(missing_of)
[ -z "$missing" ] || fail "ops/install-deps.sh does not install what these need:
$missing"
echo "deps-test: $(awk '$1 == "program"' "$work/called" | cut -d' ' -f2 | sort -u | wc -l) programs," \
    "$(awk '$1 == "file"' "$work/called" | cut -d' ' -f2 | sort -u | wc -l) files and" \
    "$(awk '$1 == "module"' "$work/called" | cut -d' ' -f2 | sort -u | wc -l) modules present"
echo "deps-test: passed"
