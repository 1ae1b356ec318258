"""A third-party tus 1.0 server for the conformance tests: tuspyserver (a FastAPI router, PyPI) under
uvicorn on 127.0.0.1, on a port the kernel picks. Prints `listening PORT` when ready.

Usage: tus_server.py FILES_DIR [LOG]
  FILES_DIR  where tuspyserver keeps uploads (and their .info files)
  LOG        optional: one JSON line per request (method, path, Upload-Offset, body bytes, status)
"""
import json
import socket
import sys

import uvicorn
from fastapi import FastAPI, Request
from tuspyserver import create_tus_router

files_dir = sys.argv[1]
log_path = sys.argv[2] if len(sys.argv) > 2 else None

app = FastAPI()
app.include_router(create_tus_router(prefix="files", files_dir=files_dir, strict_offset_validation=True))


@app.middleware("http")
async def log_requests(request: Request, call_next):
    response = await call_next(request)
    if log_path:
        entry = {
            "method": request.method,
            "path": request.url.path,
            "offset": request.headers.get("upload-offset"),
            "length": request.headers.get("content-length"),
            "checksum": request.headers.get("upload-checksum") is not None,
            "status": response.status_code,
        }
        with open(log_path, "a") as log:
            log.write(json.dumps(entry) + "\n")
    return response


sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
sock.bind(("127.0.0.1", 0))
port = sock.getsockname()[1]
config = uvicorn.Config(app, log_level="warning")
server = uvicorn.Server(config)
print(f"listening {port}", flush=True)
server.run(sockets=[sock])
