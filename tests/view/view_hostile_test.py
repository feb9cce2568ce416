"""`onnxmap view` against hostile and clumsy clients: paths out of its files, bad parameters,
oversized requests, malformed box ids, paths and nodes on the graph page's /api/graph, slow and
vanishing clients, a flood of idle connections, a foreign Host
header, a second viewer on the same port, a network bind. The server must answer each with a
clear refusal and keep serving: one viewer serves every case of this file up to the last, which
checks that it still serves and stops cleanly (the cases run in file order)."""
import json
import socket
import subprocess
import threading
import urllib.parse

import pytest

from viewer import Viewer


@pytest.fixture(scope="module")
def model(onnxmap, tmp_path_factory):
    path = tmp_path_factory.mktemp("hostile") / "model.onnx"
    subprocess.run([onnxmap.path, "synth", path, "--layers", "2", "--hidden", "64"], check=True,
                   capture_output=True)
    return path


@pytest.fixture(scope="module")
def v(onnxmap, model):
    """The viewer every hostile client of this file talks to."""
    with Viewer(onnxmap.path, model) as viewer:
        yield viewer


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


@pytest.mark.parametrize("target", [b"/../../../../etc/passwd", b"/%2e%2e/%2e%2e/etc/passwd",
                                    b"/..%2fmodel.onnx", b"/model.onnx", b"/api/../../etc/passwd",
                                    b"//etc/passwd"], ids=bytes.decode)
def test_path_out_of_the_pages_404_nothing_from_the_disk(v, target):
    answer = raw(v, request_line(v, target))
    assert status_of(answer) == 404 and b"root:" not in answer, answer[:80]


def test_the_page_itself(v):
    assert status_of(raw(v, request_line(v, b"/"))) == 200


@pytest.mark.parametrize("path, status", [
    ("/api/tensors?limit=1000000", 400), ("/api/tensors?limit=-1", 400),
    ("/api/tensors?offset=abc", 400), ("/api/tensors?sort=evil", 400),
    ("/api/values?name=lm_head.weight&count=99999999", 400),
    ("/api/heatmap?name=lm_head.weight&width=100000", 400),
    ("/api/stats?name=lm_head.weight", 400),
    ("/api/tensor?name=%zz", 400), ("/api/tensor?name=nope", 404),
    ("/api/node?id=99999999999", 404), ("/api/nope", 404),
    ("/api/stats?job=12345", 404)])
def test_bad_parameter(v, path, status):
    got, body = v.request("GET", path)
    assert got == status, (got, body[:120])


def answers_json_error(v, query, statuses=(400, 404)):
    """GET /api/graph?QUERY is refused with one of `statuses` and a JSON {"error"}; the viewer
    answers the next request."""
    got, body = v.request("GET", "/api/graph?" + query)
    assert got in statuses and set(json.loads(body)) == {"error"}, (got, body[:160])
    assert v.get("/api/graph")["boxes"], "still drawing after the refusal"


# Box ids of synth's model (units n:0, model.layers.0., model.layers.1., n:37, n:38 at the top,
# its wrappers model. and model.layers. opened; model.layers. has two):
# malformed ones, and well-formed ones naming nothing (out of range, no such prefix or node).
MALFORMED_IDS = ["r:", "r:1:2", "r:1:2:3:4", "r:0:1:2:0", "r:99999999999999999999999:1:2:0:",
                 "r:-1:1:2:0:", "r:0:1:2:x:", "k:0:1", "k:0:2", "k:-1:2:", "k:1e3:2:", "x:1",
                 "zz", ":", "g", "G:", " g:", "n:", "n:x", "n:-1", "\x00"]
NAMING_NOTHING = ["r:0:0:5:0:x", "r:0:0:2:0:model.layers.", "r:0:1:0:0:model.layers.",
                  "r:0:1:2:2:model.layers.", "r:1:1:2:0:model.layers.", "r:0:1:2:0:\x00",
                  "r:18446744073709551615:1:2:0:model.layers.", "k:5:2:", "k:0:0:", "k:0:99:",
                  "g:nonexistent.", "g:\x00", "g:model.\n", "g:%zz", "g:" + "a" * 7000,
                  "n:3", "n:99999", ""]


@pytest.mark.parametrize("box", MALFORMED_IDS + NAMING_NOTHING, ids=lambda x: repr(x[:24]))
def test_graph_level_bad_id(v, box):
    """`level` naming a malformed id (400) or no box (400 out of range, 404 no such prefix)."""
    answers_json_error(v, urllib.parse.urlencode({"level": box}))


@pytest.mark.parametrize("box", MALFORMED_IDS, ids=lambda x: repr(x[:24]))
def test_graph_open_malformed_id_400(v, box):
    """`open` naming a malformed id is a bad request (api.md: 400 for a malformed id)."""
    answers_json_error(v, urllib.parse.urlencode({"open": "g:model.layers.0.\n" + box}),
                       (400,))


@pytest.mark.parametrize("box", NAMING_NOTHING[:-1] + ["n:0", "g:model.", "g:model.layers.0.q"],
                         ids=lambda x: repr(x[:24]))
def test_graph_open_id_naming_no_box_is_left_out(v, box):
    """An id of `open` that is no box of the drawing (a stale URL's) unfolds nothing."""
    d = v.get("/api/graph", open="g:model.layers.0.\n" + box)
    assert d["open"] == ["g:model.layers.0."] and len(d["clusters"]) == 1, d["open"]


def test_graph_id_past_the_header_limit_431(v):
    """An id of 10,000 characters takes the request line past the server's 8 KiB of headers."""
    got, _ = v.request("GET", "/api/graph?level=g:" + "a" * 10000)
    assert got == 431 and v.get("/api/graph")["boxes"]


def test_graph_open_257_ids_400_256_drawn(v):
    """At most 256 ids in `open`: 257 are refused, 256 (repeated ones) drawn."""
    ids = [f"g:model.layers.{k % 2}." for k in range(256)]
    answers_json_error(v, urllib.parse.urlencode({"open": "\n".join(ids + ["n:0"])}), (400,))
    d = v.get("/api/graph", open="\n".join(ids))
    assert d["open"] == ["g:model.layers.0.", "g:model.layers.1."], d["open"]


def test_graph_open_repeated_id_unfolds_once(v):
    """An id named three times (and an empty line) in `open` unfolds one cluster."""
    layer = "g:model.layers.0."
    d = v.get("/api/graph", open=f"{layer}\n{layer}\n\n{layer}")
    assert d["open"] == [layer] and len(d["clusters"]) == 1, d["open"]


@pytest.mark.parametrize("node", ["99999", "-1", "abc", "4294967296", "1e3", "0x10", " 1",
                                  "99999999999999999999999"])
def test_graph_node_bad(v, node):
    """`node` past the graph's nodes (404) or not a number in [0, 2^32) (400)."""
    answers_json_error(v, "node=" + urllib.parse.quote(node))


@pytest.mark.parametrize("path", ["x", "0.", "99999.body", "0.nonexistent", "/", "0.body",
                                  "0.a" + "/0.a" * 100, "-1.body", ".body", "0", "0.body.0",
                                  "0.body.99999999999999999999", "0.body/", "%00.body"])
def test_graph_bad_path(v, path):
    """`graph` malformed (400) or naming no subgraph of this model, which has none (404)."""
    answers_json_error(v, "graph=" + urllib.parse.quote(path, safe="%"))


def test_post_summary_405(v):
    got, _ = v.request("POST", "/api/summary")
    assert got == 405


def test_bins_past_the_bound_400(v):
    got, body = v.request("POST", "/api/stats?name=lm_head.weight&bins=1000000")
    assert got == 400, body


def test_offset_past_the_end_is_an_empty_page(v):
    got, body = v.request("GET", "/api/tensors?offset=18446744073709551615&limit=1000")
    assert got == 200 and b'"rows":[]' in body, body


def test_header_past_8_kib_431(v):
    answer = raw(v, request_line(v, b"/api/summary", b"X-Big: " + b"a" * 20000 + b"\r\n"))
    assert status_of(answer) == 431, answer[:80]


def test_body_past_4_kib_413(v):
    body = b"x" * 10000
    answer = raw(v, b"POST /api/stats HTTP/1.1\r\nHost: 127.0.0.1:%d\r\nContent-Length: %d\r\n\r\n"
                 % (v.port, len(body)) + body)
    assert status_of(answer) == 413, answer[:80]


def test_not_http_400(v):
    answer = raw(v, b"NOT HTTP AT ALL\r\n\r\n")
    assert status_of(answer) == 400, answer[:80]


def test_host_header_naming_another_port_403(v):
    answer = raw(v, request_line(v, b"/api/summary").replace(f":{v.port}".encode(), b":1"))
    assert status_of(answer) == 403, answer[:80]


def test_foreign_host_header_dns_rebinding_403(v):
    answer = raw(v, request_line(v, b"/api/summary").replace(b"127.0.0.1", b"evil.example"))
    assert status_of(answer) == 403, answer[:80]


class TestWhileAClientStalls:
    """A client that sent half a request and never more stays connected through these cases."""

    @pytest.fixture(scope="class")
    def stalled(self, v):
        slow = socket.create_connection(("127.0.0.1", v.port))
        slow.sendall(b"GET /api/summary HTTP/1.1\r\nHost: 127.0.0.1")  # and never more
        yield slow
        slow.close()

    def test_served_while_others_vanish(self, v, stalled):
        for _ in range(50):  # vanishing clients: a request, then gone before the answer
            with socket.create_connection(("127.0.0.1", v.port)) as s:
                s.sendall(request_line(v, b"/api/tensors?limit=1000"))
        assert v.get("/api/summary")["tensors"] > 0

    def test_connections_past_the_limit_are_closed_at_once(self, v, stalled):
        idle = [socket.create_connection(("127.0.0.1", v.port)) for _ in range(80)]
        closed = 0
        try:
            for s in idle:
                s.settimeout(2)
                try:
                    closed += s.recv(1) == b""
                except (socket.timeout, ConnectionResetError):
                    pass
        finally:
            for s in idle:
                s.close()
        assert closed >= 80 - 64, closed


def test_8_clients_at_once_after_the_flood(v):
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
    assert not errors, errors[:2]


def test_still_serving_at_the_end_and_stops_with_status_0(v):
    assert v.get("/api/summary")["tensors"] == 21, "still serving at the end"
    code = v.stop()
    assert code == 0, f"stops with status 0: {v.stderr}"


def test_second_viewer_on_a_taken_port_exits_1_saying_why(onnxmap, model):
    with Viewer(onnxmap.path, model) as first:
        r = onnxmap("view", model, "--no-browser", "--port", first.port, text=True, timeout=30)
    assert r.returncode == 1 and f"cannot listen on 127.0.0.1:{first.port}" in r.stderr \
        and "in use" in r.stderr, r.stderr


def test_network_bind_warns(onnxmap, model):
    with Viewer(onnxmap.path, model, "--host", "0.0.0.0") as network:
        code = network.stop()
    assert code == 0 and "anyone who can reach" in network.stderr, network.stderr


def test_host_not_an_address_exits_1(onnxmap, model):
    r = onnxmap("view", model, "--no-browser", "--host", "not-an-address", text=True, timeout=30)
    assert r.returncode == 1 and "not an IP address" in r.stderr, r.stderr


def test_missing_model_exits_1_before_listening(onnxmap):
    r = onnxmap("view", "missing.onnx", "--no-browser", text=True, timeout=30)
    assert r.returncode == 1 and r.stdout == "", r.stderr
