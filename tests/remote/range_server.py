"""A small HTTP server with Range support for the remote-model tests, on loopback.

The first path segment picks a behaviour, the rest names a file under --root:
  /ok/PATH            206 for ranges (200 without Range), ETag and Last-Modified
  /ignore-range/PATH  200 with the whole file even to a ranged request
  /wrong-range/PATH   206 whose Content-Range starts one byte later than asked
  /short/PATH         206 whose body stops halfway (then the connection closes)
  /grow/PATH          the total size in Content-Range grows by one on every request
  /etag/PATH          a new ETag on every request
  /loop/PATH          redirects to itself
  /hop/PATH           redirects once to /ok/PATH on host "localhost" (another host name)
  /to-http/PATH       redirects to http://127.0.0.1:HTTP_PORT/ok/PATH (a downgrade under TLS)
  /missing/PATH       404
  /hang/PATH          never answers (the client must time out)
  /quiet/             204 once every request being answered (but /hang/ ones) is logged; not
                      logged itself. A test asks it before reading or clearing the log.
  /auth/PATH          like ok, but 401 unless "Authorization: Bearer $TOKEN" (--token)
  /hub/ORG/REPO/resolve/REVISION/PATH
                      like the Hugging Face Hub: 302 (with X-Linked-Etag and X-Linked-Size) to
                      http://localhost:PORT/cdn/ORG/REPO/PATH?X-Amz-Signature=...&Expires=...
                      (another host name, a signed query); 404 for a revision other than main
                      or --revision; for ORG "private", 401 unless "Authorization: Bearer $TOKEN"
  /cdn/PATH?QUERY     like ok, but 403 unless the query holds the signature /hub/ made for PATH
--latency-ms adds a delay before every answer. Every request is logged to --log as one JSON
line: method, path, range, status, bytes of body sent, and the client's port (its connection).
The first line on stdout is the port.

Faults, for every request but /quiet/ and /hang/ ones (counted 1, 2, 3, ... over the server's
life, and logged as "fault"), whatever the mode (/hub/ and /cdn/ included):
  --fail-every N        request N, 2N, ... answers --fail-status (503) with S3's SlowDown body;
                        N = 1: every request. --retry-after S adds "Retry-After: S", or with
                        --retry-after-date an HTTP-date S seconds ahead
  --cut-every N         a 206 of request N, 2N, ... sends half its body, then the connection
                        closes
  --stall-every N       request N, 2N, ... waits --stall-seconds (3) before its answer
  --change-after N      requests after the Nth see the file changed: another ETag and
                        Last-Modified (the bytes are the same; a client must refuse to mix)
--upstream URL makes the server a proxy: every request (but /quiet/) goes to URL with its path,
query and headers (Host and a signature included), the answer comes back with the faults above
(tests/remote/s3_test.py puts it in front of the S3 server).
"""

import argparse
import datetime
import email.utils
import hashlib
import hmac
import http.client
import http.server
import json
import os
import re
import socket
import ssl
import sys
import threading
import time
import urllib.parse

ARGS = None
LOCK = threading.Lock()
# What /hub/ signs its redirects with, and /cdn/ checks.
CDN_KEY = os.urandom(16)
COUNTS = {}
FAULT_COUNT = 0


# Requests being answered and not yet logged (/hang/ ones left out: they never finish).
ANSWERING = threading.Condition()
ANSWERING_COUNT = 0


def log(entry):
    with LOCK:
        with open(ARGS.log, "a") as f:
            f.write(json.dumps(entry) + "\n")


def count_answering(change):
    global ANSWERING_COUNT
    with ANSWERING:
        ANSWERING_COUNT += change
        ANSWERING.notify_all()


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def setup(self):
        super().setup()
        # Headers and body go out in separate writes: without this, Nagle's algorithm and the
        # client's delayed ACK add 40 ms to every small answer.
        self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

    def do_GET(self):
        parts = self.path.split("?", 1)[0].split("/", 2)  # a query is ignored (but by /cdn/)
        mode, rel = (parts[1], parts[2]) if len(parts) == 3 else ("", "")
        if mode == "quiet":
            with ANSWERING:
                ANSWERING.wait_for(lambda: ANSWERING_COUNT == 0, timeout=30)
            return self.status({"sent": 0}, 204)
        counted = mode != "hang"
        if counted:
            count_answering(+1)
        try:
            self.answer_and_log(mode, rel)
        finally:
            if counted:
                count_answering(-1)

    def answer_and_log(self, mode, rel):
        if ARGS.latency_ms:
            time.sleep(ARGS.latency_ms / 1000.0)
        entry = {"method": "GET", "path": self.path, "range": self.headers.get("Range"),
                 "port": self.client_address[1], "status": 0, "sent": 0,
                 "host": self.headers.get("Host"),
                 "auth": self.headers.get("Authorization") is not None}
        try:
            faults = self.faults(mode)
            if "stall" in faults:
                entry["fault"] = "stall"
                time.sleep(ARGS.stall_seconds)
            if "fail" in faults:
                entry["fault"] = "fail"
                self.fail(entry)
            elif ARGS.upstream:
                self.proxy(entry, faults)
            else:
                self.answer(mode, rel, entry, faults)
        except (BrokenPipeError, ConnectionResetError):
            entry["aborted"] = True
        log(entry)

    def status(self, entry, code, headers=(), body=b""):
        entry["status"] = code
        self.send_response(code)
        for k, v in headers:
            self.send_header(k, v)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)
        entry["sent"] += len(body)

    def faults(self, mode):
        """The faults this request meets: of "fail", "cut", "stall", "changed"."""
        global FAULT_COUNT
        if mode == "hang":
            return set()
        with LOCK:
            FAULT_COUNT += 1
            n = FAULT_COUNT
        every = {"fail": ARGS.fail_every, "cut": ARGS.cut_every, "stall": ARGS.stall_every}
        out = {fault for fault, k in every.items() if k and n % k == 0}
        if ARGS.change_after and n > ARGS.change_after:
            out.add("changed")
        return out

    def fail(self, entry):
        headers = []
        if ARGS.retry_after is not None:
            headers.append(("Retry-After", email.utils.formatdate(
                time.time() + ARGS.retry_after, usegmt=True) if ARGS.retry_after_date
                else "%g" % ARGS.retry_after))
        body = b"<Error><Code>SlowDown</Code><Message>Please reduce your request rate.</Message>" \
               b"</Error>"
        self.status(entry, ARGS.fail_status, headers, body)

    def proxy(self, entry, faults):
        """The request sent on to --upstream, its answer sent back (cut in half for "cut")."""
        upstream = urllib.parse.urlsplit(ARGS.upstream)
        connection = http.client.HTTPConnection(upstream.hostname, upstream.port, timeout=60)
        try:
            connection.putrequest("GET", self.path, skip_host=True, skip_accept_encoding=True)
            for name, value in self.headers.items():
                connection.putheader(name, value)
            connection.endheaders()
            answer = connection.getresponse()
            body = answer.read()
        finally:
            connection.close()
        entry["status"] = answer.status
        self.send_response(answer.status)
        for name, value in answer.getheaders():
            if name.lower() in ("connection", "content-length", "date", "server",
                                "transfer-encoding", "keep-alive"):
                continue
            if "changed" in faults and name.lower() == "etag":
                value, entry["fault"] = value.rstrip('"') + '-v2"', "changed"
            if "changed" in faults and name.lower() == "last-modified":
                value = email.utils.format_datetime(
                    email.utils.parsedate_to_datetime(value) + datetime.timedelta(minutes=1),
                    usegmt=True)
            self.send_header(name, value)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        send = len(body) // 2 if "cut" in faults and answer.status == 206 else len(body)
        entry["fault"] = "cut" if send < len(body) else entry.get("fault")
        self.wfile.write(body[:send])
        self.wfile.flush()
        entry["sent"] += send
        if send < len(body):
            self.close_connection = True
            self.connection.shutdown(socket.SHUT_RDWR)

    def answer(self, mode, rel, entry, faults):
        host = "127.0.0.1:%d" % self.server.server_address[1]
        if mode == "loop":
            return self.status(entry, 302, [("Location", "/loop/" + rel)])
        if mode == "hop":
            port = self.server.server_address[1]
            return self.status(entry, 302, [("Location", "http://localhost:%d/ok/%s" % (port, rel))])
        if mode == "to-http":
            return self.status(entry, 302, [("Location", "http://127.0.0.1:%d/ok/%s" % (ARGS.http_port, rel))])
        if mode == "missing":
            return self.status(entry, 404, body=b"not here")
        if mode == "hang":
            time.sleep(60)
            return
        if mode == "auth" and self.headers.get("Authorization") != "Bearer " + (ARGS.token or ""):
            return self.status(entry, 401, body=b"who are you")
        if mode == "hub":
            return self.hub(rel, entry)
        if mode == "cdn":
            fields = urllib.parse.parse_qs(urllib.parse.urlsplit(self.path).query)
            if fields.get("X-Amz-Signature") != [cdn_signature(rel)]:
                return self.status(entry, 403, body=b"<Error><Code>AccessDenied</Code></Error>")
        path = os.path.join(ARGS.root, urllib.parse.unquote(rel))
        if not os.path.isfile(path):
            return self.status(entry, 404)
        with LOCK:
            COUNTS[self.path] = COUNTS.get(self.path, 0) + 1
            count = COUNTS[self.path]
        st = os.stat(path)
        size = st.st_size
        etag = '"%x-%x"' % (st.st_mtime_ns, size)
        if mode == "etag":
            etag = '"%d"' % count
        modified = st.st_mtime
        if "changed" in faults:
            etag, modified = '"%x-%x-v2"' % (st.st_mtime_ns, size), modified + 60
            entry["fault"] = "changed"
        headers = [("ETag", etag), ("Last-Modified", email.utils.formatdate(modified, usegmt=True)),
                   ("Accept-Ranges", "bytes")]
        ranged = self.headers.get("Range")
        m = re.fullmatch(r"bytes=(\d+)-(\d*)", ranged or "")
        if not m or mode == "ignore-range":
            return self.send_file(entry, path, 0, size, 200, headers)
        first = int(m.group(1))
        last = min(int(m.group(2)) if m.group(2) else size - 1, size - 1)
        if first >= size:
            return self.status(entry, 416, headers + [("Content-Range", "bytes */%d" % size)])
        total = size + (count - 1 if mode == "grow" else 0)
        shown = first + 1 if mode == "wrong-range" else first
        headers.append(("Content-Range", "bytes %d-%d/%d" % (shown, last, total)))
        length = last - first + 1
        send = length // 2 if mode == "short" or "cut" in faults else length
        if "cut" in faults:
            entry["fault"] = "cut"
        self.send_file(entry, path, first, length, 206, headers, send)
        if send < length:
            self.close_connection = True
            self.connection.shutdown(socket.SHUT_RDWR)

    def hub(self, rel, entry):
        """/hub/ORG/REPO/resolve/REVISION/PATH: the Hub's redirect to its storage."""
        parts = rel.split("/", 4)
        if len(parts) != 5 or parts[2] != "resolve":
            return self.status(entry, 404, body=b"Entry not found")
        org, repo, _, revision, name = parts
        if org == "private" and self.headers.get("Authorization") != "Bearer " + (ARGS.token or ""):
            return self.status(entry, 401, [("X-Error-Code", "GatedRepo")], b"Access restricted")
        if urllib.parse.unquote(revision) not in ("main", ARGS.revision):
            return self.status(entry, 404, [("X-Error-Code", "RevisionNotFound")], b"Invalid rev")
        target = "/".join((org, repo, name))
        path = os.path.join(ARGS.root, urllib.parse.unquote(target))
        if not os.path.isfile(path):
            return self.status(entry, 404, [("X-Error-Code", "EntryNotFound")], b"Entry not found")
        st = os.stat(path)
        query = urllib.parse.urlencode({"X-Amz-Signature": cdn_signature(target),
                                        "Expires": int(time.time()) + 3600})
        location = "http://localhost:%d/cdn/%s?%s" % (self.server.server_address[1], target, query)
        return self.status(entry, 302, [("Location", location),
                                         ("X-Linked-Etag", '"%x"' % st.st_mtime_ns),
                                         ("X-Linked-Size", str(st.st_size))])

    def send_file(self, entry, path, offset, length, code, headers, send=None):
        send = length if send is None else send
        entry["status"] = code
        self.send_response(code)
        for k, v in headers:
            self.send_header(k, v)
        self.send_header("Content-Length", str(length))
        self.end_headers()
        self.wfile.flush()
        with open(path, "rb") as f:
            # In pieces, so that a client hanging up is seen (and logged) after little was sent.
            at, end = offset, offset + send
            while at < end:
                done = self.connection.sendfile(f, at, min(end - at, 1 << 20))
                if done == 0:
                    break
                entry["sent"] += done
                at += done


def cdn_signature(rel):
    return hmac.new(CDN_KEY, rel.encode(), hashlib.sha256).hexdigest()


def main():
    global ARGS
    parser = argparse.ArgumentParser()
    parser.add_argument("--root", required=True)
    parser.add_argument("--log", required=True)
    parser.add_argument("--latency-ms", type=float, default=0)
    parser.add_argument("--token")
    parser.add_argument("--revision", default="main", help="a revision /hub/ knows besides main")
    parser.add_argument("--tls-cert", help="serve https with this PEM (certificate and key)")
    parser.add_argument("--http-port", type=int, default=0, help="where /to-http/ redirects")
    parser.add_argument("--fail-every", type=int, default=0)
    parser.add_argument("--fail-status", type=int, default=503)
    parser.add_argument("--retry-after", type=float)
    parser.add_argument("--retry-after-date", action="store_true")
    parser.add_argument("--cut-every", type=int, default=0)
    parser.add_argument("--stall-every", type=int, default=0)
    parser.add_argument("--stall-seconds", type=float, default=3)
    parser.add_argument("--change-after", type=int, default=0)
    parser.add_argument("--upstream", help="a proxy to this http://HOST:PORT")
    ARGS = parser.parse_args()
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.handle_error = lambda request, address: None  # clients that hang up are expected
    server.daemon_threads = True
    if ARGS.tls_cert:
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.load_cert_chain(ARGS.tls_cert)
        server.socket = context.wrap_socket(server.socket, server_side=True)
    print(server.server_address[1], flush=True)
    server.serve_forever()


if __name__ == "__main__":
    main()
