"""A second third-party tus 1.0 server for the conformance tests, one that checks checksums: tusfilter (a
WSGI filter from PyPI: creation, termination, expiration, `checksum` with sha1 and 460 on a mismatch)
in front of a trivial app, served by the standard library's wsgiref on 127.0.0.1, on a port the kernel
picks. Prints `listening PORT` when ready.

Usage: tusfilter_server.py FILES_DIR LOG [CORRUPT_PATCH]
  FILES_DIR      where tusfilter keeps uploads (one file per upload id)
  LOG            one JSON line per request: method, path, Upload-Offset, body length, whether an
                 Upload-Checksum came, the status
  CORRUPT_PATCH  optional N: one byte of the N-th PATCH body is flipped on its way in (the network
                 damaging a chunk), so the server's own checksum check answers 460
"""
import io
import json
import socket
import sys
from wsgiref.simple_server import WSGIRequestHandler, WSGIServer, make_server

from tusfilter import TusFilter

files_dir, log_path = sys.argv[1], sys.argv[2]
corrupt_patch = int(sys.argv[3]) if len(sys.argv) > 3 else 0
patches = 0


def finished(environ, start_response):
    start_response("200 OK", [("Content-Type", "text/plain")])
    return [b"ok"]


tus = TusFilter(finished, upload_path="/files", tmp_dir=files_dir)


def logged(environ, start_response):
    global patches
    method = environ.get("HTTP_X_HTTP_METHOD_OVERRIDE") or environ["REQUEST_METHOD"]
    # Read before the filter runs: WebOb rewrites CONTENT_LENGTH once it has read the body.
    length = environ.get("CONTENT_LENGTH")
    if method == "PATCH":
        patches += 1
        if patches == corrupt_patch:
            length = int(environ.get("CONTENT_LENGTH") or 0)
            body = bytearray(environ["wsgi.input"].read(length))
            if body:
                body[len(body) // 2] ^= 0xFF
            environ["wsgi.input"] = io.BytesIO(bytes(body))
    status = {}

    def recording(code, headers, exc_info=None):
        status["code"] = int(code.split()[0])
        return start_response(code, headers, exc_info)

    result = tus(environ, recording)
    entry = {
        "method": method,
        "path": environ.get("PATH_INFO"),
        "offset": environ.get("HTTP_UPLOAD_OFFSET"),
        "length": length,
        "checksum": environ.get("HTTP_UPLOAD_CHECKSUM", "").split(" ")[0] or None,
        "status": status.get("code"),
    }
    with open(log_path, "a") as log:
        log.write(json.dumps(entry) + "\n")
    return result


class QuietHandler(WSGIRequestHandler):
    def log_message(self, *args):
        pass


class ReusingServer(WSGIServer):
    allow_reuse_address = True


server = make_server("127.0.0.1", 0, logged, server_class=ReusingServer, handler_class=QuietHandler)
print(f"listening {server.server_port}", flush=True)
server.serve_forever()
