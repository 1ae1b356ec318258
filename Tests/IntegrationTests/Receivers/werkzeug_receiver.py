"""A multipart receiver built on Werkzeug's form parser, for the upload tests.

Listens on 127.0.0.1 at a free port, prints `listening PORT werkzeug VERSION` once it accepts
connections, and answers every POST with what Werkzeug saw, as
{"errorCode":0,"message":"ok","data":{"receiver":…,"files":[…],"fields":[…]}}. Names are hex of their
UTF-8 bytes so that nothing is lost or normalised on the way back. Runs until it is killed.
"""
import hashlib
import json
import sys
from importlib.metadata import version

from werkzeug.serving import make_server
from werkzeug.wrappers import Request, Response


def hexname(text):
    return text.encode("utf-8", "surrogateescape").hex()


@Request.application
def application(request):
    files = []
    for field, storage in request.files.items(multi=True):
        data = storage.read()
        files.append({
            "field": hexname(field),
            "filename": None if storage.filename is None else hexname(storage.filename),
            "size": len(data),
            "sha256": hashlib.sha256(data).hexdigest(),
        })
    fields = [hexname(name) for name, _ in request.form.items(multi=True)]
    report = {"receiver": "werkzeug " + version("werkzeug"), "files": files, "fields": fields}
    body = json.dumps({"errorCode": 0, "message": "ok", "data": report})
    return Response(body, content_type="application/json")


server = make_server("127.0.0.1", 0, application, threaded=True)
print("listening", server.server_port, "werkzeug", version("werkzeug"), flush=True)
server.serve_forever()
