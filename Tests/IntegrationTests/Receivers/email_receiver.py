"""A multipart receiver built on Python's `email` package, for the upload tests.

The body is parsed as a MIME message (email.parser.BytesParser, policy email.policy.HTTP) and each
part's name and filename are read with `get_param("name", header="content-disposition")` and
`get_filename()`, as a CGI-style application would. Listens on 127.0.0.1 at a free port, prints
`listening PORT email` once it accepts connections, and answers every POST with what it saw, in the
same JSON shape as werkzeug_receiver.py. Runs until it is killed.
"""
import email.parser
import email.policy
import hashlib
import json
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


def hexname(text):
    return text.encode("utf-8", "surrogateescape").hex()


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def do_POST(self):
        length = int(self.headers["Content-Length"])
        body = self.rfile.read(length)
        head = b"Content-Type: " + self.headers["Content-Type"].encode("latin-1") + b"\r\n\r\n"
        message = email.parser.BytesParser(policy=email.policy.HTTP).parsebytes(head + body)
        files, fields = [], []
        for part in message.iter_parts():
            name = part.get_param("name", header="content-disposition")
            filename = part.get_filename()
            if filename is None:
                fields.append(hexname(name or ""))
                continue
            data = part.get_payload(decode=True) or b""
            files.append({
                "field": hexname(name or ""),
                "filename": hexname(filename),
                "size": len(data),
                "sha256": hashlib.sha256(data).hexdigest(),
            })
        report = {"receiver": "email", "files": files, "fields": fields}
        answer = json.dumps({"errorCode": 0, "message": "ok", "data": report}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(answer)))
        self.end_headers()
        self.wfile.write(answer)

    def log_message(self, *args):
        pass


server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
print("listening", server.server_port, "email", flush=True)
server.serve_forever()
