#!/usr/bin/env python3
"""An HTTP proxy in front of an S3 server that counts request body bytes and injects faults into parts.

  s3_fault_proxy.py TARGET_PORT STATS_FILE [--faults] [--complete-error] [--complete-lost STATUS]

Listens on 127.0.0.1 on a free port and prints `listening PORT`. Every request is forwarded as it came
(its Host header too, so SigV4 signatures still match), and its body bytes are counted as they pass. After
each request STATS_FILE holds {"bodyBytes": N, "requests": [[method, partNumber or null, outcome], ...]}.

A test that wants its client killed at a byte count writes "BYTES" to STATS_FILE.kill before it starts the
client and "PID BYTES" once it has: the proxy SIGKILLs PID itself before it forwards the byte that would pass
BYTES (and forwards nothing of that chunk). A count reached before the pid is known holds every transfer
until it is, so that no client can pass the count, however late the test writes.

With --faults, the first attempt of every part whose number ends in 3 is cut mid-body (the connection
closed with no answer), and of every part whose number ends in 7 is answered 500 InternalError, its second
attempt 503 SlowDown: about 20 % of the parts fail at least once, each with S3's own retryable answers.
With --complete-error, the first CompleteMultipartUpload is answered 200 with S3's <Error> InvalidPart.
With --complete-lost STATUS, the first CompleteMultipartUpload goes to the server, which completes the upload,
but its answer is lost (the connection closed with no answer); every later one is answered STATUS as a store
may answer a completion sent again: 500 InternalError (moto while the first still stores the object), 404
NoSuchUpload (S3 once the upload is gone) or 412 PreconditionFailed (If-None-Match: * and the object exists).
"""
import http.client
import json
import os
import signal
import socketserver
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler
from urllib.parse import parse_qs, urlsplit

TARGET = int(sys.argv[1])
STATS = sys.argv[2]
FAULTS = "--faults" in sys.argv[3:]
COMPLETE_ERROR = "--complete-error" in sys.argv[3:]
COMPLETE_LOST = int(sys.argv[sys.argv.index("--complete-lost") + 1]) if "--complete-lost" in sys.argv else None
# STATS + ".kill", when a test writes "[PID] BYTES" there: the proxy itself SIGKILLs PID before it forwards the
# body byte that would pass BYTES, then removes the file. The moment is the proxy's, not the test process's,
# which may be starved on a loaded machine while the client sends on.
KILL_FILE = STATS + ".kill"
ANSWERS_AGAIN = {500: "InternalError", 404: "NoSuchUpload", 412: "PreconditionFailed"}
completes = []
lock = threading.Lock()
state = {"bodyBytes": 0, "requests": []}
attempts = {}


def save():
    with open(STATS + ".tmp", "w") as out:
        json.dump(state, out)
    os.replace(STATS + ".tmp", STATS)


def count(body_bytes):
    # Bytes are counted as they pass, so a run killed mid-part has its partial part counted.
    with lock:
        state["bodyBytes"] += body_bytes
        save()


def read_order():
    """The kill asked for, as (pid, bytes); pid is None while the order names only the byte count (the test
    writes it before it starts the client, whose pid it then adds)."""
    try:
        with open(KILL_FILE) as order:
            words = [int(word) for word in order.read().split()]
    except (OSError, ValueError):
        return None
    if len(words) == 1:
        return None, words[0]
    return (words[0], words[1]) if len(words) == 2 else None


def kill_before(body_bytes):
    """True when forwarding body_bytes more would pass the byte count of a kill asked for: the client is then
    killed, and nothing of the chunk is forwarded. Reaching the count before the order names the pid holds
    every transfer (the lock is kept) until it does."""
    with lock:
        order = read_order()
        if order is None or state["bodyBytes"] + body_bytes < order[1]:
            return False
        waited = 0
        while order is not None and order[0] is None and waited < 120:
            time.sleep(0.02)
            waited += 0.02
            order = read_order()
        if order is None or order[0] is None:
            return False
        pid = order[0]
        # Recorded before the signal: the test reads the stats as soon as the child has died, which can be
        # before a save made after the kill (seen once: a killed child, and no KILL in the stats yet).
        os.unlink(KILL_FILE)
        state["requests"].append(["KILL", None, state["bodyBytes"]])
        save()
        try:
            os.kill(pid, signal.SIGKILL)
        except OSError:
            pass
        return True


def record(method, part, outcome, body_bytes):
    with lock:
        state["bodyBytes"] += body_bytes
        state["requests"].append([method, part, outcome])
        save()


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def handle_any(self):
        query = parse_qs(urlsplit(self.path).query)
        part = int(query["partNumber"][0]) if "partNumber" in query else None
        length = int(self.headers.get("Content-Length") or 0)
        fault = None
        if FAULTS and part is not None and self.command == "PUT":
            with lock:
                attempt = attempts.get(part, 0) + 1
                attempts[part] = attempt
            if part % 10 == 3 and attempt == 1:
                fault = "cut"
            elif part % 10 == 7 and attempt <= 2:
                fault = "500" if attempt == 1 else "503"
        if COMPLETE_ERROR and self.command == "POST" and "uploadId" in query and not completes:
            completes.append(1)
            got = len(self.rfile.read(length))
            body = b"<?xml version='1.0' encoding='UTF-8'?>\n<Error><Code>InvalidPart</Code><Message>injected: one or more of the parts could not be found</Message></Error>"
            self.send_response(200)
            self.send_header("Content-Type", "application/xml")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)
            record(self.command, None, "200-error", got)
            return
        if COMPLETE_LOST and self.command == "POST" and "uploadId" in query:
            with lock:
                first = not completes
                completes.append(1)
            if not first:
                got = len(self.rfile.read(length))
                code = ANSWERS_AGAIN[COMPLETE_LOST]
                body = f"<Error><Code>{code}</Code><Message>injected</Message></Error>".encode()
                self.send_response(COMPLETE_LOST)
                self.send_header("Content-Type", "application/xml")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)
                record(self.command, None, str(COMPLETE_LOST), got)
                return
            fault = "lost"
        if fault == "cut":
            got = len(self.rfile.read(length // 2))
            record(self.command, part, "cut", got)
            self.close_connection = True
            self.connection.shutdown(2)
            return
        if fault in ("500", "503"):
            got = len(self.rfile.read(length))
            code = "InternalError" if fault == "500" else "SlowDown"
            body = f"<Error><Code>{code}</Code><Message>injected</Message></Error>".encode()
            self.send_response(int(fault))
            self.send_header("Content-Type", "application/xml")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)
            record(self.command, part, fault, got)
            return
        upstream = http.client.HTTPConnection("127.0.0.1", TARGET, timeout=300)
        upstream.putrequest(self.command, self.path, skip_host=True, skip_accept_encoding=True)
        for name, value in self.headers.items():
            upstream.putheader(name, value)
        upstream.endheaders()
        remaining = length
        try:
            while remaining > 0:
                chunk = self.rfile.read(min(remaining, 256 << 10))
                if not chunk or kill_before(len(chunk)):
                    break
                upstream.send(chunk)
                count(len(chunk))
                remaining -= len(chunk)
        except OSError:
            pass
        if remaining > 0:
            # The client went away mid-body (killed): the store sees its connection end too, as it would with no
            # proxy between, rather than wait for the rest of the body until a timeout.
            upstream.close()
            record(self.command, part, "client-gone", 0)
            self.close_connection = True
            return
        answer = upstream.getresponse()
        body = answer.read()
        if fault == "lost":
            upstream.close()
            record(self.command, None, f"lost-{answer.status}", 0)
            self.close_connection = True
            self.connection.shutdown(2)
            return
        self.send_response(answer.status)
        for name, value in answer.getheaders():
            if name.lower() not in ("content-length", "transfer-encoding", "connection", "date", "server"):
                self.send_header(name, value)
        # A HEAD answer has no body but the object's length, as the server gave it.
        head_length = answer.getheader("Content-Length") if self.command == "HEAD" else None
        self.send_header("Content-Length", head_length or str(len(body)))
        self.end_headers()
        self.wfile.write(body)
        upstream.close()
        record(self.command, part, answer.status, 0)

    do_GET = do_PUT = do_POST = do_DELETE = do_HEAD = handle_any


class Server(socketserver.ThreadingMixIn, socketserver.TCPServer):
    daemon_threads = True
    allow_reuse_address = True


def main():
    server = Server(("127.0.0.1", 0), Handler)
    record("START", None, "listening", 0)
    print(f"listening {server.server_address[1]}", flush=True)
    server.serve_forever()


if __name__ == "__main__":
    main()
