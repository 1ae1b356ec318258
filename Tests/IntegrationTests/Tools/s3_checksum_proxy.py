#!/usr/bin/env python3
"""An HTTP proxy in front of an S3 server that records how each part carries its checksum, and can change a
part on its way.

  s3_checksum_proxy.py TARGET_PORT STATS_FILE [--corrupt-trailer N] [--corrupt-body N] [--refuse-chunked]

Listens on 127.0.0.1 on a free port and prints `listening PORT`. Every request is forwarded as it came (its
Host header too, so SigV4 signatures still match). After each part (a PUT with partNumber) STATS_FILE holds
{"parts": [{"part", "contentEncoding", "contentSha256", "trailer", "trailerValue", "checksumHeaders",
"status"}, ...]}: trailerValue is the checksum line found after the last chunk of an aws-chunked body,
checksumHeaders the x-amz-checksum-* request headers.

--corrupt-trailer N: the first attempt of part N goes on with another checksum in its trailer (same length,
  valid base64): the trailer is not signed, so only the checksum check can notice.
--corrupt-body N: the first attempt of part N goes on with one byte of its data changed (the checksum, in
  a header or a trailer, left as it was sent).
--refuse-chunked: every aws-chunked part is answered 501 NotImplemented, as a store that does not take
  aws-chunked bodies answers.
"""
import base64
import http.client
import json
import os
import re
import socketserver
import sys
import threading
from http.server import BaseHTTPRequestHandler
from urllib.parse import parse_qs, urlsplit

TARGET = int(sys.argv[1])
STATS = sys.argv[2]
ARGS = sys.argv[3:]


def option(name):
    return int(ARGS[ARGS.index(name) + 1]) if name in ARGS else None


CORRUPT_TRAILER = option("--corrupt-trailer")
CORRUPT_BODY = option("--corrupt-body")
REFUSE_CHUNKED = "--refuse-chunked" in ARGS
lock = threading.Lock()
state = {"parts": []}
attempts = {}
TRAILER = re.compile(rb"\r\n0\r\n(x-amz-checksum-[a-z0-9]+):([A-Za-z0-9+/=]+)\r\n\r\n$")


def save():
    with open(STATS + ".tmp", "w") as out:
        json.dump(state, out)
    os.replace(STATS + ".tmp", STATS)


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def answer(self, status, body, headers=()):
        self.send_response(status)
        for name, value in headers:
            self.send_header(name, value)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def handle_any(self):
        query = parse_qs(urlsplit(self.path).query)
        part = int(query["partNumber"][0]) if "partNumber" in query and self.command == "PUT" else None
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length) if length else b""
        chunked = "aws-chunked" in (self.headers.get("Content-Encoding") or "")
        record = None
        if part is not None:
            with lock:
                attempt = attempts.get(part, 0) + 1
                attempts[part] = attempt
            found = TRAILER.search(body) if chunked else None
            record = {
                "part": part, "attempt": attempt, "contentEncoding": self.headers.get("Content-Encoding"),
                "contentSha256": self.headers.get("x-amz-content-sha256"), "trailer": self.headers.get("x-amz-trailer"),
                "trailerValue": found.group(1).decode() + ":" + found.group(2).decode() if found else None,
                "checksumHeaders": sorted(
                    name.lower() for name in self.headers.keys() if name.lower().startswith("x-amz-checksum-")),
            }
            if REFUSE_CHUNKED and chunked:
                record["status"] = 501
                with lock:
                    state["parts"].append(record)
                    save()
                self.answer(501, b"<Error><Code>NotImplemented</Code><Message>A header you provided implies "
                            b"functionality that is not implemented</Message></Error>",
                            [("Content-Type", "application/xml")])
                return
            if part == CORRUPT_TRAILER and attempt == 1 and found:
                digest = bytearray(base64.b64decode(found.group(2)))
                digest[0] ^= 0xFF
                body = body[:found.start(2)] + base64.b64encode(bytes(digest)) + body[found.end(2):]
            if part == CORRUPT_BODY and attempt == 1 and body:
                # Past the first chunk's size line in an aws-chunked body: a data byte either way.
                at = body.index(b"\r\n") + 2 + 10 if chunked else 10
                body = body[:at] + bytes([body[at] ^ 0xFF]) + body[at + 1:]
        upstream = http.client.HTTPConnection("127.0.0.1", TARGET, timeout=300)
        upstream.putrequest(self.command, self.path, skip_host=True, skip_accept_encoding=True)
        for name, value in self.headers.items():
            upstream.putheader(name, value)
        upstream.endheaders()
        if body:
            upstream.send(body)
        answer = upstream.getresponse()
        reply = answer.read()
        if record is not None:
            record["status"] = answer.status
            with lock:
                state["parts"].append(record)
                save()
        headers = [(name, value) for name, value in answer.getheaders()
                   if name.lower() not in ("content-length", "transfer-encoding", "connection", "date", "server")]
        if self.command == "HEAD":
            self.send_response(answer.status)
            for name, value in headers:
                self.send_header(name, value)
            self.send_header("Content-Length", answer.getheader("Content-Length") or "0")
            self.end_headers()
        else:
            self.answer(answer.status, reply, headers)
        upstream.close()

    do_GET = do_PUT = do_POST = do_DELETE = do_HEAD = handle_any


class Server(socketserver.ThreadingMixIn, socketserver.TCPServer):
    daemon_threads = True
    allow_reuse_address = True


def main():
    server = Server(("127.0.0.1", 0), Handler)
    save()
    print(f"listening {server.server_address[1]}", flush=True)
    server.serve_forever()


if __name__ == "__main__":
    main()
