#!/bin/sh
# The suite as containers: builds the image of each daemon
# (deploy/images/build.sh), runs deploy/pod.yaml with `podman kube play`,
# and checks that
#   - every container is healthy (its probe: the daemon's --health), runs
#     as the user vc with a read-only root filesystem;
#   - a PHP page is served over HTTP/1.1 and HTTP/2 with TLS;
#   - the process of each container, killed (SIGKILL), is started again by
#     the pod's restart policy, healthy, and the page is served again;
#   - `podman kube down` stops everything and leaves no container behind;
#   - deploy/pods-tcp.yaml (the front's pod and the pool's, over TCP, on a
#     network the test makes) serves, with the link key checked and the
#     events on CurveZMQ; a front with another key is refused by the pool
#     and serves no PHP, and one with none refuses to start (a request
#     link over TCP off loopback without link_key is a configuration
#     error).
# The images are tagged for this test only and removed after it; the
# manifest is run as written, with free host ports instead of 8080/8443.
# Needs root (podman with runc). Usage: ops/pod-test.sh [VELOCITY.deb]
# What podman runs for this test, which no line here names (checked by
# ops/deps-test.sh): the pause process `kube play` builds each pod around,
# and the CNI plugin that resolves one pod's name in another.
# deps-test needs: program catatonit
# deps-test needs: file /usr/lib/cni/dnsname
set -eu
cd "$(dirname "$0")/.."
[ "$(id -u)" -eq 0 ] || { echo "pod-test: needs root (podman)"; exit 1; }
export CONTAINERS_CONF="$PWD/ops/containers.conf"
work=$(mktemp -d)
tag="pod-test-$$"
pod="velocity-pod-test-$$"
net="velocity-pod-test-$$"
daemons="bus cache php front acme"
cleanup() {
    [ ! -f "$work/pod.yaml" ] || podman kube down "$work/pod.yaml" >/dev/null 2>&1 || true
    [ ! -f "$work/pods-tcp.yaml" ] || podman kube down "$work/pods-tcp.yaml" >/dev/null 2>&1 || true
    podman rm -f "$pod-other-key" "$pod-no-key" >/dev/null 2>&1 || true
    podman network rm -f "$net" >/dev/null 2>&1 || true
    podman pod rm -f "$pod" >/dev/null 2>&1 || true
    for d in $daemons; do podman rmi -f "localhost/velocity-$d:$tag" >/dev/null 2>&1 || true; done
    rm -rf "$work"
}
trap cleanup EXIT
fail() {
    echo "pod-test: FAILED: $*"
    for d in $daemons; do
        echo "-- $d"
        podman logs "$pod-$d" 2>&1 | tail -8
    done
    exit 1
}
# ms since the epoch, for the start time.
now_ms() { date +%s%3N; }
healthy() { podman healthcheck run "$pod-$1" >/dev/null 2>&1; }
pid_of() { podman inspect --format '{{.State.Pid}}' "$pod-$1"; }
free_port() { /usr/bin/python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }

echo "== pod-test: the images"
VC_IMAGE_TAG=$tag ./deploy/images/build.sh "$@" | tee "$work/images.log" | grep -v '^==' || exit 1

echo "== pod-test: podman kube play deploy/pod.yaml"
http=$(free_port)
https=$(free_port)
sed -e "s/^  name: velocity$/  name: $pod/" -e "s/:0\.1\.0$/:$tag/" \
    -e "s/hostPort: 8080/hostPort: $http/" -e "s/hostPort: 8443/hostPort: $https/" deploy/pod.yaml >"$work/pod.yaml"
grep -q "name: $pod" "$work/pod.yaml" && [ "$(grep -c ":$tag\$" "$work/pod.yaml")" -eq 5 ] ||
    fail "the manifest's pod name or image tags did not take the test's"
# Its own network (kube play would make a default one and keep it).
podman network create "$net" >/dev/null || fail "podman network create"
start=$(now_ms)
podman kube play --network "$net" "$work/pod.yaml" >"$work/play.log" 2>&1 || { cat "$work/play.log"; fail "kube play failed"; }
i=0
until curl -sf -o /dev/null "http://127.0.0.1:$http/"; do
    i=$((i + 1))
    [ $i -le 300 ] || fail "no page in 30 s"
    sleep 0.1
done
echo "   first PHP page $(($(now_ms) - start)) ms after kube play"
for d in $daemons; do
    healthy "$d" || fail "$d is not healthy: $(podman inspect --format '{{json .State.Health}}' "$pod-$d")"
    [ "$(podman inspect --format '{{.HostConfig.ReadonlyRootfs}}' "$pod-$d")" = true ] || fail "$d's root is writable"
    # The user vc is 999 in the images; this podman maps no user namespace.
    [ "$(stat -c %u "/proc/$(pid_of "$d")")" = 999 ] || fail "$d does not run as vc (999)"
done
curl -sf "http://127.0.0.1:$http/?name=pod" | grep -q "Hello, pod!" || fail "no PHP page over HTTP"
[ "$(curl -sfk --http2 -o /dev/null -w '%{http_version}' "https://127.0.0.1:$https/")" = 2 ] ||
    fail "no page over HTTP/2 with TLS"

echo "== pod-test: each container's process killed, started again, serving"
for d in $daemons; do
    old=$(pid_of "$d")
    kill -KILL "$old"
    i=0
    until new=$(pid_of "$d") && [ "$new" != 0 ] && [ "$new" != "$old" ] && healthy "$d"; do
        i=$((i + 1))
        [ $i -le 300 ] || fail "$d was not started again in 30 s"
        sleep 0.1
    done
    # The front's port is closed while it starts again: new connections
    # are refused for that moment, and retried.
    code=$(curl -s -o /dev/null -w '%{http_code}' --max-time 10 --retry 50 --retry-connrefused --retry-delay 0 \
        "http://127.0.0.1:$http/?name=pod")
    [ "$code" = 200 ] || fail "no page after $d was killed (HTTP $code)"
    echo "   $d: pid $old killed, pid $new healthy, restarts $(podman inspect --format '{{.RestartCount}}' "$pod-$d"), page 200"
done

echo "== pod-test: podman kube down"
podman kube down "$work/pod.yaml" >/dev/null 2>&1 || fail "kube down failed"
left=$(podman ps -a --format '{{.Names}}' | grep "^$pod" || true)
[ -z "$left" ] || fail "containers left: $left"
echo "== pod-test: two pods over TCP (deploy/pods-tcp.yaml): the link key, CurveZMQ"
# The manifest's names, keys and ports made the test's (the placeholders
# are refused as they are).
http=$(free_port)
# A CurveZMQ secret key, as `vc keygen` makes it.
LINK_KEY=$(openssl rand -hex 32) CURVE_KEY=$(/usr/bin/python3 -c 'import zmq; print(zmq.curve_keypair()[1].decode())') \
    POD=$pod TAG=$tag HTTP=$http /usr/bin/python3 - deploy/pods-tcp.yaml "$work/pods-tcp.yaml" <<'PY'
import os, re, sys
s = open(sys.argv[1]).read()
e = os.environ
s = s.replace("CHANGE-ME: openssl rand -hex 32", e["LINK_KEY"]).replace("CHANGE-ME: vc keygen", e["CURVE_KEY"])
s = re.sub(r"(name: |//)velocity-(php|front)\b", lambda m: m.group(1) + e["POD"] + "-" + m.group(2), s)
s = re.sub(r":0\.1\.0$", ":" + e["TAG"], s, flags=re.M)
s = s.replace("hostPort: 8080", "hostPort: " + e["HTTP"]).replace("        - {containerPort: 8443, hostPort: 8443, protocol: TCP}\n", "")
open(sys.argv[2], "w").write(s)
PY
podman kube play --network "$net" "$work/pods-tcp.yaml" >"$work/play-tcp.log" 2>&1 ||
    { cat "$work/play-tcp.log"; fail "kube play of the two pods failed"; }
i=0
until curl -sf -o /dev/null "http://127.0.0.1:$http/"; do
    i=$((i + 1))
    [ $i -le 300 ] || fail "no page from the two pods in 30 s: $(podman logs "$pod-front-front" 2>&1 | tail -5)"
    sleep 0.1
done
curl -sf "http://127.0.0.1:$http/?name=tcp" | grep -q "Hello, tcp!" || fail "no PHP page from the two pods"
podman logs "$pod-php-php" 2>&1 | grep -q "a front linked (slot 0, from .*, the link key checked)" ||
    fail "the pool did not check the front's key"
podman logs "$pod-front-front" 2>&1 | grep -q "linked to the PHP pool at tcp://$pod-php:7001 (the link key checked)" ||
    fail "the front did not check the pool's key"
for d in php-php front-bus front-cache front-front front-acme; do
    healthy "$d" || fail "$d is not healthy in the two pods"
done
for who in other-key no-key; do
    key="VC_WORKERS=1"
    [ "$who" = other-key ] && key="VC_LINK_KEY=$(openssl rand -hex 32)"
    podman run -d --name "$pod-$who" --network "$net" --read-only -v /var/lib/vc \
        -e "VC_ENDPOINTS=php=tcp://$pod-php:7001" -e "$key" "localhost/velocity-front:$tag" >/dev/null ||
        fail "could not start the front with $who"
done
i=0
until podman logs "$pod-other-key" 2>&1 | grep -q "do both hold the same link_key" &&
    podman logs "$pod-no-key" 2>&1 | grep -q "endpoints.php is .* without link_key: any host"; do
    i=$((i + 1))
    [ $i -le 300 ] || fail "the fronts without the key were not refused in 30 s"
    sleep 0.1
done
podman logs "$pod-php-php" 2>&1 | grep -q "refused a link from .*: it does not hold the link key" ||
    fail "the pool did not log the refusal"
[ "$(podman logs "$pod-php-php" 2>&1 | grep -c "a front linked")" -eq 1 ] || fail "a front without the key linked"
curl -sf "http://127.0.0.1:$http/?name=tcp" | grep -q "Hello, tcp!" || fail "the real front stopped serving"
podman rm -f "$pod-other-key" "$pod-no-key" >/dev/null 2>&1
podman kube down "$work/pods-tcp.yaml" >/dev/null 2>&1 || fail "kube down of the two pods failed"
echo "pod-test: all passed"
