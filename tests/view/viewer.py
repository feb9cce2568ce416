"""Starts `onnxmap view` on loopback for a test or a benchmark and talks to it.

    with Viewer(onnxmap, model) as v:
        v.get("/api/summary")          # parsed JSON; raises HttpError on a status >= 400
"""
import http.client
import json
import signal
import subprocess
import urllib.parse


# The arguments of a viewer whose drawings are judged whole (graph_checks.check_drawing): a layout
# past the default 5 s limit becomes the column drawing (no dot's drawing to judge), and on a
# loaded machine under ASan a large layout can take that long. The limit itself is
# view_layout_test's.
PATIENT = ("--layout-time-limit", "600")


class HttpError(Exception):
    def __init__(self, status, body):
        super().__init__(f"{status}: {body[:200]!r}")
        self.status = status
        self.body = body


class Viewer:
    def __init__(self, onnxmap, model, *args, env=None):
        self.command = [onnxmap, "view", str(model), "--no-browser", "--port", "0", *args]
        self.env = env  # the viewer's environment (None: this process's)
        self.process = None
        self.url = None
        self.port = None
        self.stderr = ""

    def __enter__(self):
        self.process = subprocess.Popen(self.command, stdout=subprocess.PIPE,
                                        stderr=subprocess.PIPE, text=True, env=self.env)
        line = self.process.stdout.readline()
        if " at http://" not in line:
            self.process.wait(timeout=30)
            raise RuntimeError(f"onnxmap view did not start: {line!r} {self.process.stderr.read()}")
        self.url = line.split(" at ")[1].split()[0]
        self.port = urllib.parse.urlsplit(self.url).port
        return self

    def stop(self):
        """Stops the server as Ctrl-C would; returns its exit status."""
        self.process.send_signal(signal.SIGINT)
        code = self.process.wait(timeout=30)
        self.stderr = self.process.stderr.read()
        return code

    def __exit__(self, *exc):
        if self.process.poll() is None:
            self.stop()

    def request(self, method, path, headers=None):
        """(status, body bytes) of one request on a new connection."""
        connection = http.client.HTTPConnection("127.0.0.1", self.port, timeout=60)
        connection.request(method, path, headers=headers or {})
        response = connection.getresponse()
        body = response.read()
        connection.close()
        return response.status, body

    def get(self, path, method="GET", **query):
        if query:
            path += "?" + urllib.parse.urlencode(query)
        status, body = self.request(method, path)
        if status >= 400:
            raise HttpError(status, body)
        return json.loads(body)
