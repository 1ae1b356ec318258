#!/usr/bin/env python3
"""Checks presigned POST forms the way S3 does, then hands them to an S3 emulator that does not.

moto stores whatever a POST form carries: it checks neither the policy's expiration, nor its signature,
nor that every form field is covered by a condition. This front checks those rules as S3 documents them
and answers with S3's own XML errors (AccessDenied "Policy expired.", SignatureDoesNotMatch,
"Extra input fields", EntityTooLarge, one file per request); a form that passes goes to the emulator
byte for byte, and its answer comes back as it is.

  s3_policy_gate.py --upstream PORT     prints "listening PORT" once it accepts connections
The secret key comes from AWS_SECRET_ACCESS_KEY in the environment.
"""
import argparse
import base64
import datetime
import hashlib
import hmac
import http.client
import io
import json
import os
import sys
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from werkzeug.formparser import parse_form_data

SECRET = os.environ.get("AWS_SECRET_ACCESS_KEY", "")
IGNORED = {"x-amz-signature", "file", "policy"}


def error(status, code, message):
    body = ('<?xml version="1.0" encoding="UTF-8"?>\n<Error><Code>%s</Code><Message>%s</Message>'
            '<RequestId>0A1B2C3D4E5F6A7B</RequestId><HostId>gate</HostId></Error>' % (code, escape(message)))
    return status, body.encode()


def escape(text):
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;").replace('"', "&quot;")


def check(form, files):
    fields = {name.lower(): value for name, value in form.items()}
    if len(files) != 1:
        return error(400, "InvalidArgument", "POST requires exactly one file upload per request.")
    if "policy" not in fields:
        return error(403, "AccessDenied", "Bucket POST must contain a field named 'policy'.")
    policy_text = fields["policy"]
    policy = json.loads(base64.b64decode(policy_text))
    expiration = datetime.datetime.strptime(policy["expiration"], "%Y-%m-%dT%H:%M:%SZ")
    if expiration.replace(tzinfo=datetime.timezone.utc) < datetime.datetime.now(datetime.timezone.utc):
        return error(403, "AccessDenied", "Invalid according to Policy: Policy expired.")
    _, date, region, service, _ = fields.get("x-amz-credential", "////").split("/")
    key = ("AWS4" + SECRET).encode()
    for part in (date, region, service, "aws4_request"):
        key = hmac.new(key, part.encode(), hashlib.sha256).digest()
    expected = hmac.new(key, policy_text.encode(), hashlib.sha256).hexdigest()
    if not hmac.compare_digest(expected, fields.get("x-amz-signature", "")):
        return error(403, "SignatureDoesNotMatch",
                     "The request signature we calculated does not match the signature you provided. "
                     "Check your key and signing method.")
    covered = set()
    size = len(next(iter(files.values())).read())
    for condition in policy["conditions"]:
        if isinstance(condition, dict):
            for name, value in condition.items():
                covered.add(name.lower())
                if name.lower() != "bucket" and fields.get(name.lower()) != value:
                    return error(403, "AccessDenied",
                                 'Invalid according to Policy: Policy Condition failed: ["eq", "$%s", "%s"]' % (name, value))
        elif condition[0] == "content-length-range":
            if size > int(condition[2]):
                return error(400, "EntityTooLarge", "Your proposed upload exceeds the maximum allowed size")
            if size < int(condition[1]):
                return error(400, "EntityTooSmall", "Your proposed upload is smaller than the minimum allowed size")
        else:
            operator, name, value = condition
            name = name.lstrip("$").lower()
            covered.add(name)
            actual = fields.get(name, "")
            if (operator == "eq" and actual != value) or (operator == "starts-with" and not actual.startswith(value)):
                return error(403, "AccessDenied",
                             'Invalid according to Policy: Policy Condition failed: ["%s", "$%s", "%s"]' % (operator, name, value))
    extra = [name for name in form.keys()
             if name.lower() not in covered and name.lower() not in IGNORED and not name.lower().startswith("x-ignore-")]
    if extra:
        return error(403, "AccessDenied", "Invalid according to Policy: Extra input fields: " + ", ".join(extra))
    return None


class Gate(BaseHTTPRequestHandler):
    upstream = 0

    def do_POST(self):
        body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
        environ = {"wsgi.input": io.BytesIO(body), "CONTENT_LENGTH": str(len(body)),
                   "CONTENT_TYPE": self.headers.get("Content-Type", ""), "REQUEST_METHOD": "POST"}
        _, form, files = parse_form_data(environ)
        refused = check(form, files)
        if refused:
            status, answer = refused
            self.send_response(status)
            self.send_header("Content-Type", "application/xml")
            self.send_header("Content-Length", str(len(answer)))
            self.end_headers()
            self.wfile.write(answer)
            return
        connection = http.client.HTTPConnection("127.0.0.1", self.upstream)
        connection.request("POST", self.path, body=body, headers={
            "Content-Type": self.headers["Content-Type"], "Content-Length": str(len(body))})
        response = connection.getresponse()
        answer = response.read()
        self.send_response(response.status)
        for name, value in response.getheaders():
            if name.lower() not in ("content-length", "transfer-encoding", "connection", "date", "server"):
                self.send_header(name, value)
        self.send_header("Content-Length", str(len(answer)))
        self.end_headers()
        self.wfile.write(answer)

    def log_message(self, *args):
        pass


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--upstream", type=int, required=True)
    args = parser.parse_args()
    Gate.upstream = args.upstream
    server = ThreadingHTTPServer(("127.0.0.1", 0), Gate)
    print("listening %d" % server.server_address[1], flush=True)
    server.serve_forever()


if __name__ == "__main__":
    sys.exit(main())
