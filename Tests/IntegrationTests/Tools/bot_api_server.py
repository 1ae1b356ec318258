#!/usr/bin/env python3
"""A server that answers like the Telegram Bot API's sendDocument, for the telegram answer profile.

POST /bot/sendDocument with a multipart body and `Authorization: Bearer TOKEN` (the token the server
expects comes from BOT_TOKEN in the environment):
  - a wrong or missing token: 401 {"ok":false,"error_code":401,"description":"Unauthorized"};
  - the first request for each file (by its content's SHA-256): 429 with parameters.retry_after 1;
  - then 200 {"ok":true,"result":{"message_id":N,"document":{"file_id":...,...}}}.
GET /attempts prints, per file, the times its requests arrived (seconds, monotonic), so a test can see
how long the client waited between a 429 and its retry. GET /requests prints every request's headers.

Prints "listening PORT" once it accepts connections.
"""
import hashlib
import io
import json
import os
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from werkzeug.formparser import parse_form_data

TOKEN = os.environ.get("BOT_TOKEN", "")
RETRY_AFTER = 1
lock = threading.Lock()
attempts = {}
requests = []
messages = [100]


class Bot(BaseHTTPRequestHandler):
    def answer(self, status, value):
        body = json.dumps(value).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self):
        with lock:
            self.answer(200, attempts if self.path == "/attempts" else requests)

    def do_POST(self):
        arrived = time.monotonic()
        body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
        with lock:
            requests.append(dict(self.headers.items()))
        if self.headers.get("Authorization") != "Bearer " + TOKEN:
            return self.answer(401, {"ok": False, "error_code": 401, "description": "Unauthorized"})
        environ = {"wsgi.input": io.BytesIO(body), "CONTENT_LENGTH": str(len(body)),
                   "CONTENT_TYPE": self.headers.get("Content-Type", ""), "REQUEST_METHOD": "POST"}
        _, form, files = parse_form_data(environ)
        part = files.get("document")
        if part is None:
            return self.answer(400, {"ok": False, "error_code": 400, "description": "Bad Request: there is no document in the request"})
        data = part.read()
        digest = hashlib.sha256(data).hexdigest()
        with lock:
            seen = attempts.setdefault(digest, [])
            seen.append(arrived)
            first = len(seen) == 1
            messages[0] += 1
            message_id = messages[0]
        if first:
            return self.answer(429, {"ok": False, "error_code": 429,
                                     "description": "Too Many Requests: retry after %d" % RETRY_AFTER,
                                     "parameters": {"retry_after": RETRY_AFTER}})
        self.answer(200, {"ok": True, "result": {
            "message_id": message_id, "from": {"id": 6123456789, "is_bot": True, "first_name": "Files"},
            "chat": {"id": -1001234567890, "title": "Team", "type": "supergroup"}, "date": int(time.time()),
            "document": {"file_name": part.filename, "mime_type": part.mimetype or "application/octet-stream",
                         "file_id": "BQACAgQAAx0" + digest[:24], "file_unique_id": "AgAD" + digest[:8],
                         "file_size": len(data)}}})

    def log_message(self, *args):
        pass


def main():
    server = ThreadingHTTPServer(("127.0.0.1", 0), Bot)
    print("listening %d" % server.server_address[1], flush=True)
    server.serve_forever()


if __name__ == "__main__":
    sys.exit(main())
