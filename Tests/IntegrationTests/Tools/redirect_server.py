#!/usr/bin/env python3
"""An HTTP server on 127.0.0.1 that answers with redirects and records what each request carried.

    redirect_server.py

Prints "listening PORT" as the first line of stdout; runs until killed. Routes:
  GET  /cross        302 to http://localhost:PORT/final   (another host name for the same server)
  GET  /same         302 to /final                        (the same host)
  GET  /final        200 "final"
  GET  /downgrade    302 to http://127.0.0.1:PORT/final   (used behind TLS only; here a plain hop)
  POST /temporary    307 to /stored                       (the body must be sent again)
  POST /moved        302 to /stored                       (must not be followed with the body)
  POST /see-other    303 to /result                       (answer fetched with GET)
  POST /stored       200 {"errorCode":0,"data":{"fileId":"r1","bytes":N}}
  GET  /result       200 {"errorCode":0,"data":{"fileId":"r2"}}
  POST /interim      104 Upload Resumption Supported (Location: /uploads/7), then 201 {"id":"u7"}
  GET  /log          200 JSON list of {"method","path","host","proxied","authorization","cookie","bytes"}

A request in absolute form (`GET http://files.invalid/final`, as clients send to a proxy) is served by
its path and recorded as proxied: the server doubles as a plain HTTP proxy for tests of proxy settings.
"""
import json
import sys
import urllib.parse
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

seen = []
lock = threading.Lock()


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def parse_request(self):
        if not super().parse_request():
            return False
        self.proxied = self.path.startswith("http://")
        if self.proxied:
            self.path = urllib.parse.urlsplit(self.path).path or "/"
        return True

    def record(self, length):
        with lock:
            seen.append({
                "method": self.command,
                "path": self.path,
                "proxied": self.proxied,
                "host": self.headers.get("Host", ""),
                "authorization": self.headers.get("Authorization") is not None,
                "cookie": self.headers.get("Cookie") is not None,
                "bytes": length,
            })

    def answer(self, status, body=b"", location=None, content_type="application/json"):
        self.send_response(status)
        if location:
            self.send_header("Location", location)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)

    def do_GET(self):
        port = self.server.server_address[1]
        if self.path == "/log":
            with lock:
                body = json.dumps(seen).encode()
            return self.answer(200, body)
        self.record(0)
        if self.path == "/cross":
            return self.answer(302, location=f"http://localhost:{port}/final")
        if self.path == "/same":
            return self.answer(302, location="/final")
        if self.path == "/final":
            return self.answer(200, b"final", content_type="text/plain")
        if self.path == "/result":
            return self.answer(200, b'{"errorCode":0,"data":{"fileId":"r2"}}')
        return self.answer(404, b"not found", content_type="text/plain")

    def do_POST(self):
        length = int(self.headers.get("Content-Length", "0"))
        body = self.rfile.read(length) if length else b""
        self.record(len(body))
        if self.path == "/temporary":
            return self.answer(307, location="/stored")
        if self.path == "/moved":
            return self.answer(302, location="/stored")
        if self.path == "/see-other":
            return self.answer(303, location="/result")
        if self.path == "/interim":
            self.send_response_only(104, "Upload Resumption Supported")
            self.send_header("Location", "/uploads/7")
            self.end_headers()
            self.wfile.flush()
            return self.answer(201, b'{"id":"u7"}')
        if self.path == "/stored":
            return self.answer(200, json.dumps({"errorCode": 0, "data": {"fileId": "r1", "bytes": len(body)}}).encode())
        return self.answer(404, b"not found", content_type="text/plain")


server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
print("listening %d" % server.server_address[1], flush=True)
server.serve_forever()
