#!/bin/sh
# Builds one container image per daemon (localhost/velocity-bus, -cache,
# -php, -front, -acme), from Debian 12 and the Debian package, with no
# registry: mmdebstrap makes one root with every daemon's dependencies
# installed from Debian's archive; slice.py cuts each daemon's image out of
# it (its binary, the packages it needs, its configuration); podman build
# adds the metadata (user, entrypoint, health check, stop signal).
#
# Each image runs its daemon in the foreground as the user vc (uid 999),
# alone (--conf /etc/vc, no `vc up`), with its state under /var/lib/vc (a
# volume the daemons share) and a read-only root filesystem.
#
# Usage: deploy/images/build.sh [VELOCITY.deb]   (needs root and podman)
#   Without a .deb, ops/package.sh builds one from this checkout.
#   VC_IMAGE_TAG names the tag (default: the package's version).
#   VC_IMAGES_ROOT keeps the Debian root there and uses it again next time
#   (for its dependencies; the daemons always come from the .deb given).
set -eu
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
[ "$(id -u)" -eq 0 ] || { echo "images: needs root (mmdebstrap and podman build)"; exit 1; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
if [ $# -ge 1 ]; then
    deb=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
else
    "$repo/ops/package.sh" "$work/deb" >"$work/package.log" 2>&1 || { tail -20 "$work/package.log"; exit 1; }
    deb=$(ls "$work"/deb/velocity_*.deb)
fi
version=$(dpkg-deb -f "$deb" Version)
tag=${VC_IMAGE_TAG:-$version}
chmod 0755 "$work"
cp "$deb" "$work/velocity.deb"
chmod 0644 "$work/velocity.deb"

root=${VC_IMAGES_ROOT:-$work/root}
if [ -d "$root/usr" ]; then
    echo "== images: the Debian 12 root in $root"
else
    echo "== images: a Debian 12 root with every daemon's dependencies (mmdebstrap)"
    # essential: no apt in the root; the package's Depends bring the
    # libraries; dash for PHP's shell_exec() and the probes; tzdata for
    # PHP's dates.
    mmdebstrap --variant=essential --include="$work/velocity.deb" --include=dash,tzdata,netbase \
        --dpkgopt='path-exclude=/usr/share/doc/*' --dpkgopt='path-exclude=/usr/share/man/*' \
        --dpkgopt='path-exclude=/usr/share/locale/*' --dpkgopt='path-exclude=/usr/share/info/*' \
        --hook-dir=/usr/share/mmdebstrap/hooks/file-mirror-automount \
        bookworm "$root" - </etc/apt/sources.list.d/debian.sources >"$work/mmdebstrap.log" 2>&1 ||
        { tail -20 "$work/mmdebstrap.log"; exit 1; }
fi

dpkg-deb -x "$work/velocity.deb" "$work/pkg"

# Each daemon's packages: what its binary links (dpkg-shlibdeps), plus what
# it reads at run time.
mkdir -p "$work/shlibs/debian"
printf 'Source: velocity\n\nPackage: velocity\nArchitecture: any\n' >"$work/shlibs/debian/control"
needs() {
    (cd "$work/shlibs" && dpkg-shlibdeps -O "$work/pkg/usr/bin/$1" 2>/dev/null) |
        sed 's/^shlibs:Depends=//; s/([^)]*)//g; s/,/ /g'
}

# The files every image has: the user, the configuration for a daemon
# run alone, the state directory (a volume in a pod), /tmp.
mkdir -p "$work/common/etc/vc/sites-enabled" "$work/common/var/lib/vc" "$work/common/tmp"
printf 'root:x:0:0:root:/root:/usr/sbin/nologin\nvc:x:999:999:Velocity:/var/lib/vc:/usr/sbin/nologin\n' \
    >"$work/common/etc/passwd"
printf 'root:x:0:\nvc:x:999:\n' >"$work/common/etc/group"
cp "$here/vc.conf" "$work/common/etc/vc/vc.conf"
cp "$repo/debian/conf/sites-available/default.conf" "$work/common/etc/vc/sites-enabled/default.conf"
chown 999:999 "$work/common/var/lib/vc"
chmod 1777 "$work/common/tmp"
tar -C "$work/common" --numeric-owner -cf "$work/common.tar" .

for daemon in bus cache php front acme; do
    bin="vc-$daemon"
    # dash: podman kube play runs a pod's exec probes with /bin/sh -c.
    pkgs="$(needs "$bin") base-files netbase dash"
    extra="/etc/ld.so.cache /etc/nsswitch.conf /usr/bin/sh"
    ours="./usr/bin/$bin"
    case $daemon in
    php) pkgs="$pkgs libphp8.2-embed php8.2-opcache tzdata"
         extra="$extra /etc/php"
         ours="$ours ./usr/share/velocity/examples/hello" ;;
    front) ours="$ours ./usr/share/velocity/examples/hello" ;;
    bus | acme) pkgs="$pkgs ca-certificates"
         extra="$extra /etc/ssl/certs" ;;
    esac
    # shellcheck disable=SC2086
    /usr/bin/python3 "$here/slice.py" "$root" "$work/$daemon.tar" $pkgs --extra $extra >"$work/$daemon.slice" ||
        { cat "$work/$daemon.slice"; exit 1; }
    # The daemon itself from the package given (the root may be older).
    # shellcheck disable=SC2086
    tar -C "$work/pkg" --numeric-owner -rf "$work/$daemon.tar" $ours
    ports=""
    [ "$daemon" = front ] && ports="EXPOSE 8080 8443"
    cat >"$work/Containerfile.$daemon" <<EOF
FROM scratch
ADD $daemon.tar /
ADD common.tar /
ENV PATH=/usr/bin VC_DATA=/var/lib/vc
USER 999:999
WORKDIR /var/lib/vc
VOLUME /var/lib/vc
$ports
STOPSIGNAL SIGTERM
HEALTHCHECK --interval=10s --timeout=5s --start-period=5s CMD ["/usr/bin/$bin", "--data", "/var/lib/vc", "--conf", "/etc/vc", "--health"]
ENTRYPOINT ["/usr/bin/$bin", "--data", "/var/lib/vc", "--conf", "/etc/vc"]
LABEL org.opencontainers.image.title="$bin" org.opencontainers.image.version="$version"
EOF
    podman build -q --format docker -f "$work/Containerfile.$daemon" -t "localhost/velocity-$daemon:$tag" "$work" \
        >"$work/$daemon.build" 2>&1 || { cat "$work/$daemon.build"; exit 1; }
    size=$(podman image inspect --format '{{.Size}}' "localhost/velocity-$daemon:$tag")
    echo "images: localhost/velocity-$daemon:$tag $((size / 1000000)) MB ($(sed 's/.*: \([0-9]*\) packages.*/\1/' "$work/$daemon.slice") packages)"
done
