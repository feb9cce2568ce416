#!/usr/bin/python3
"""`onnxmap view` against hostile and clumsy clients: paths out of its files, bad parameters,
oversized requests, slow and vanishing clients, a flood of idle connections, a foreign Host
header, a second viewer on the same port, a network bind. The server must answer each with a
clear refusal and keep serving.

    view_hostile_test.py PATH/TO/onnxmap
"""
import pathlib
import socket
import subprocess
import sys
import tempfile
import threading

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
from viewer import Viewer  # noqa: E402

ONNXMAP = sys.argv[1]
results = {"passed": 0, "failed": 0}


def check(name, condition, detail=""):
    results["passed" if condition else "failed"] += 1
    print(("ok   " if condition else "FAIL ") + name + ("" if condition else ": " + str(detail)))


def raw(v, data, read=True):
    """Sends `data` on a new connection; returns what came back (b"" when closed unanswered)."""
    with socket.create_connection(("127.0.0.1", v.port), timeout=10) as s:
        s.sendall(data)
        if not read:
            return b""
        chunks = []
        while chunk := s.recv(65536):
            chunks.append(chunk)
        return b"".join(chunks)


def status_of(answer):
    return int(answer.split(b" ", 2)[1]) if answer.startswith(b"HTTP/1.1 ") else None


def request_line(v, target, extra=b""):
    host = f"127.0.0.1:{v.port}".encode()
    return b"GET " + target + b" HTTP/1.1\r\nHost: " + host + b"\r\nConnection: close\r\n" + \
        extra + b"\r\n"


def check_paths(v):
    for target in (b"/../../../../etc/passwd", b"/%2e%2e/%2e%2e/etc/passwd", b"/..%2fmodel.onnx",
                   b"/model.onnx", b"/api/../../etc/passwd", b"//etc/passwd"):
        answer = raw(v, request_line(v, target))
        check(f"{target.decode()}: 404, nothing from the disk", status_of(answer) == 404 and
              b"root:" not in answer, answer[:80])
    check("the page itself", status_of(raw(v, request_line(v, b"/"))) == 200)


def check_parameters(v):
    for path, status in (("/api/tensors?limit=1000000", 400), ("/api/tensors?limit=-1", 400),
                         ("/api/tensors?offset=abc", 400), ("/api/tensors?sort=evil", 400),
                         ("/api/values?name=lm_head.weight&count=99999999", 400),
                         ("/api/heatmap?name=lm_head.weight&width=100000", 400),
                         ("/api/stats?name=lm_head.weight", 400),
                         ("/api/tensor?name=%zz", 400), ("/api/tensor?name=nope", 404),
                         ("/api/node?id=99999999999", 404), ("/api/nope", 404),
                         ("/api/stats?job=12345", 404)):
        got, body = v.request("GET", path)
        check(f"{path}: {status}", got == status, (got, body[:120]))
    got, _ = v.request("POST", "/api/summary")
    check("POST /api/summary: 405", got == 405)
    got, body = v.request("POST", "/api/stats?name=lm_head.weight&bins=1000000")
    check("bins past the bound: 400", got == 400, body)
    got, body = v.request("GET", "/api/tensors?offset=18446744073709551615&limit=1000")
    check("an offset past the end: an empty page", got == 200 and b'"rows":[]' in body, body)


def check_oversized(v):
    answer = raw(v, request_line(v, b"/api/summary", b"X-Big: " + b"a" * 20000 + b"\r\n"))
    check("a header past 8 KiB: 431", status_of(answer) == 431, answer[:80])
    body = b"x" * 10000
    answer = raw(v, b"POST /api/stats HTTP/1.1\r\nHost: 127.0.0.1:%d\r\nContent-Length: %d\r\n\r\n"
                 % (v.port, len(body)) + body)
    check("a body past 4 KiB: 413", status_of(answer) == 413, answer[:80])
    answer = raw(v, b"NOT HTTP AT ALL\r\n\r\n")
    check("not HTTP: 400", status_of(answer) == 400, answer[:80])
    answer = raw(v, request_line(v, b"/api/summary").replace(f":{v.port}".encode(), b":1"))
    check("a Host header naming another port: 403", status_of(answer) == 403, answer[:80])
    answer = raw(v, request_line(v, b"/api/summary").replace(b"127.0.0.1", b"evil.example"))
    check("a foreign Host header (DNS rebinding): 403", status_of(answer) == 403, answer[:80])


def check_slow_and_vanishing(v):
    slow = socket.create_connection(("127.0.0.1", v.port))
    slow.sendall(b"GET /api/summary HTTP/1.1\r\nHost: 127.0.0.1")  # and never more
    for _ in range(50):  # vanishing clients: a request, then gone before the answer
        with socket.create_connection(("127.0.0.1", v.port)) as s:
            s.sendall(request_line(v, b"/api/tensors?limit=1000"))
    check("served while a client stalls and others vanish", v.get("/api/summary")["tensors"] > 0)
    idle = [socket.create_connection(("127.0.0.1", v.port)) for _ in range(80)]
    closed = 0
    for s in idle:
        s.settimeout(2)
        try:
            closed += s.recv(1) == b""
        except (socket.timeout, ConnectionResetError):
            pass
    check("connections past the limit are closed at once", closed >= 80 - 64, closed)
    for s in idle + [slow]:
        s.close()
    errors = []

    def client():
        try:
            for _ in range(20):
                v.get("/api/tensors", limit=50, sort="name")
        except Exception as e:  # noqa: BLE001 - reported below
            errors.append(e)
    threads = [threading.Thread(target=client) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    check("8 clients at once after the flood", not errors, errors[:2])


def check_ports(model):
    with Viewer(ONNXMAP, model) as first:
        r = subprocess.run([ONNXMAP, "view", model, "--no-browser", "--port", str(first.port)],
                           capture_output=True, text=True, timeout=30)
        check("a second viewer on a taken --port: exit 1, says why", r.returncode == 1 and
              f"cannot listen on 127.0.0.1:{first.port}" in r.stderr and "in use" in r.stderr,
              r.stderr)
    with Viewer(ONNXMAP, model, "--host", "0.0.0.0") as network:
        code = network.stop()
        check("a network bind warns", code == 0 and "anyone who can reach" in network.stderr,
              network.stderr)
    r = subprocess.run([ONNXMAP, "view", model, "--no-browser", "--host", "not-an-address"],
                       capture_output=True, text=True, timeout=30)
    check("--host not an address: exit 1", r.returncode == 1 and "not an IP address" in r.stderr,
          r.stderr)
    r = subprocess.run([ONNXMAP, "view", "missing.onnx", "--no-browser"], capture_output=True,
                       text=True, timeout=30)
    check("a missing model: exit 1 before listening", r.returncode == 1 and r.stdout == "",
          r.stderr)


def main():
    with tempfile.TemporaryDirectory() as tmp:
        model = pathlib.Path(tmp) / "model.onnx"
        subprocess.run([ONNXMAP, "synth", model, "--layers", "2", "--hidden", "64"], check=True,
                       capture_output=True)
        with Viewer(ONNXMAP, model) as v:
            check_paths(v)
            check_parameters(v)
            check_oversized(v)
            check_slow_and_vanishing(v)
            check("still serving at the end", v.get("/api/summary")["tensors"] == 21)
            code = v.stop()
            check("stops with status 0", code == 0, v.stderr)
        check_ports(model)
    print(f"{results['passed']} passed, {results['failed']} failed")
    return 1 if results["failed"] else 0


if __name__ == "__main__":
    sys.exit(main())
