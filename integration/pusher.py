"""Test helpers for the Pusher protocol: a connection that subscribes, and
signed HTTP API calls made the way Pusher's server libraries make them."""
import hashlib
import hmac
import json
import os
import re
import signal
import subprocess
import time
from urllib.parse import urlencode

import requests

from wsclient import OP_TEXT, Conn, frame


def app_of(suite):
    """(id, key, secret) of the default site's app, made at first start."""
    with open(suite.data + "/state/realtime-app") as f:
        return tuple(f.read().split())


class Client:
    def __init__(self, suite, key=None, tls=False, protocol=7, timeout=5.0):
        self.suite = suite
        key = key or app_of(suite)[1]
        port = suite.https if tls else suite.http
        q = f"?protocol={protocol}&client=js&version=8.4.0" if protocol else "?client=js"
        self.ws = Conn("127.0.0.1", port, f"/app/{key}{q}", tls=tls, timeout=timeout)
        assert self.ws.status == 101, self.ws.head
        self.hello = self.ws.recv_json()
        if self.hello["event"] == "pusher:connection_established":
            self.socket_id = json.loads(self.hello["data"])["socket_id"]

    def send(self, event, data=None, channel=None):
        msg = {"event": event, "data": {} if data is None else data}
        if channel:
            msg["channel"] = channel
        self.ws.send(frame(OP_TEXT, json.dumps(msg)))

    def recv(self):
        return self.ws.recv_json()

    def recv_event(self, name):
        """The next message named name, skipping others (pusher:ping...)."""
        while True:
            m = self.recv()
            if m["event"] == name:
                return m

    def auth(self, channel, user=None):
        """What the app's auth endpoint says for channel (pusher-js posts
        socket_id and channel_name to it)."""
        url = self.suite.url("/pusher_auth.php" + (f"?user={user}" if user else ""))
        r = requests.post(url, data={"socket_id": self.socket_id, "channel_name": channel}, timeout=10)
        assert r.status_code == 200, r.text
        return r.json()

    def subscribe(self, channel, user=None, auth=None):
        data = {"channel": channel}
        if channel.startswith(("private-", "presence-")):
            a = auth or self.auth(channel, user)
            data["auth"] = a["auth"]
            if "channel_data" in a:
                data["channel_data"] = a["channel_data"]
        self.send("pusher:subscribe", data)
        m = self.recv()
        return m

    def ping(self):
        t = time.monotonic()
        self.send("pusher:ping")
        self.recv_event("pusher:pong")
        return time.monotonic() - t

    def close(self):
        self.ws.close()


def sign(secret, method, path, params):
    q = "&".join(f"{k}={params[k]}" for k in sorted(params))
    return hmac.new(secret.encode(), f"{method}\n{path}\n{q}".encode(), hashlib.sha256).hexdigest()


def api(suite, method, call, body=None, app=None, ts=None, tamper=None, params=None):
    """A signed call to /apps/ID/CALL; tamper(params) may spoil it after
    signing. Returns the requests response."""
    app_id, key, secret = app or app_of(suite)
    path = f"/apps/{app_id}/{call}"
    data = json.dumps(body).encode() if body is not None else b""
    p = {"auth_key": key, "auth_timestamp": str(int(ts if ts is not None else time.time())), "auth_version": "1.0"}
    if data:
        p["body_md5"] = hashlib.md5(data).hexdigest()
    p.update(params or {})
    p["auth_signature"] = sign(secret, method, path, p)
    if tamper:
        tamper(p)
    return requests.request(method, suite.url(path) + "?" + urlencode(p), data=data or None,
                            headers={"Content-Type": "application/json"}, timeout=10)


def trigger(suite, channel, name, data, socket_id=None):
    body = {"name": name, "channel": channel, "data": data if isinstance(data, str) else json.dumps(data)}
    if socket_id:
        body["socket_id"] = socket_id
    r = api(suite, "POST", "events", body)
    assert r.status_code == 200, r.text
    return r


def client_away_from(s, pid):
    """A client on a front process other than pid. The fronts share one
    listening socket and the kernel hands a connection to whichever wakes
    first, which can be the same one forty times running: so pid is
    stopped while the client connects, and the other process must take it."""
    os.kill(pid, signal.SIGSTOP)
    try:
        c = Client(s)
    finally:
        os.kill(pid, signal.SIGCONT)
    assert front_pid_of(c) != pid
    return c


def front_pid_of(c):
    """The pid of the front process holding client c's connection."""
    port = c.ws.sock.getsockname()[1]
    out = subprocess.run(["ss", "-Htnp", "state", "established", f"( dport = :{port} )"], capture_output=True,
                         text=True).stdout
    return int(re.search(r"pid=(\d+)", out).group(1))
