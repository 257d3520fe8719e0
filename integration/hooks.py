"""An app's webhook endpoint for the tests: a real HTTP server, as a
Laravel app's webhook route would be (test_25_webhooks, test_34_mesh)."""
import json
import queue
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


class Receiver:
    """An app's webhook endpoint: each POST's events, in order, with the
    headers they came with; answers 500 to the next `fail` POSTs."""

    def __init__(self):
        self.events = queue.Queue()
        self.posts = []
        self.fail = 0
        rx = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self):
                body = self.rfile.read(int(self.headers["Content-Length"]))
                rx.posts.append((self.path, dict(self.headers), body))
                if rx.fail > 0:
                    rx.fail -= 1
                    self.send_response(500)
                    self.end_headers()
                    return
                for e in json.loads(body)["events"]:
                    rx.events.put((self.path, e))
                self.send_response(200)
                self.end_headers()

            def log_message(self, *a):
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.port = self.server.server_address[1]
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def url(self, path="/hooks"):
        return f"http://127.0.0.1:{self.port}{path}"

    def next(self, timeout=10):
        """The next event (path, event) that arrived."""
        try:
            return self.events.get(timeout=timeout)
        except queue.Empty:
            raise AssertionError("no webhook came") from None

    def next_event(self, timeout=10):
        return self.next(timeout)[1]

    def close(self):
        self.server.shutdown()
        self.server.server_close()
