"""A receiver that checks credentials, for the config-file tests of the command line.

Usage: header_check_receiver.py EXPECTED_AUTHORIZATION EXPECTED_API_KEY
Listens on 127.0.0.1 at a free port, prints `listening PORT` once it accepts connections, and answers
every POST: 401 {"errorCode":401,"message":"wrong credentials"} unless both the Authorization and the
X-Api-Key headers are the expected ones; otherwise {"errorCode":0,"message":"ok","data":{…}} with the
X-Tenant header, the form names of the body's parts and a file id. Credentials are never echoed.
Standard library only. Runs until it is killed.
"""
import json
import re
import sys
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

EXPECTED_AUTHORIZATION, EXPECTED_API_KEY = sys.argv[1], sys.argv[2]


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def do_POST(self):
        body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
        if (self.headers.get("Authorization") != EXPECTED_AUTHORIZATION
                or self.headers.get("X-Api-Key") != EXPECTED_API_KEY):
            self.answer(401, {"errorCode": 401, "message": "wrong credentials"})
            return
        names = [name.decode("utf-8", "replace") for name in re.findall(rb'form-data; name="([^"]*)"', body)]
        self.answer(200, {"errorCode": 0, "message": "ok", "data": {
            "fileId": "f-%d" % len(body), "tenant": self.headers.get("X-Tenant"), "parts": names}})

    def answer(self, status, document):
        data = json.dumps(document).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)


server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
print("listening", server.server_address[1], flush=True)
server.serve_forever()
