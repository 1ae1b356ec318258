#!/usr/bin/env python3
"""Buckets, presigned PUT URLs and object checks on a local S3 server, with boto3 (never with Attache).

Credentials come from AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY in the environment, never argv.

  s3_objects.py ENDPOINT make-bucket BUCKET
  s3_objects.py ENDPOINT presign-put BUCKET KEY [--content-type TYPE]   prints the URL
  s3_objects.py ENDPOINT presign-get BUCKET KEY       prints a presigned GET URL
  s3_objects.py ENDPOINT presign METHOD BUCKET KEY [--query NAME=VALUE]... [--header NAME=VALUE]...
                [--expires-in S] [--signed-ago S]
                                                     prints a presigned URL for the S3 operation the method,
                                                     the query and the key name (KEY "" for the bucket): its
                                                     parameters from the query, the headers S3 has parameters
                                                     for signed with it; --signed-ago S signs as of S seconds
                                                     ago (a URL expired already when S > the lifetime)
  s3_objects.py ENDPOINT get BUCKET KEY OUT          writes the object's bytes to OUT
  s3_objects.py ENDPOINT put BUCKET KEY FILE         stores FILE's bytes as the object (boto3's upload_file)
  s3_objects.py ENDPOINT get-all BUCKET PREFIX DIR   writes every object under PREFIX to DIR/KEY (each / of
                                                     the key as %2F), prints the keys
  s3_objects.py ENDPOINT head BUCKET KEY             prints {"size","etag","contentType","versionId"}
  s3_objects.py ENDPOINT list BUCKET [PREFIX]        prints [{"key","size","etag"}, ...]
  s3_objects.py ENDPOINT uploads BUCKET              prints the incomplete multipart uploads' keys
  s3_objects.py ENDPOINT upload-ids BUCKET           prints them as [key, UploadId] pairs
  s3_objects.py ENDPOINT create-upload BUCKET KEY    starts a multipart upload, prints its UploadId
  s3_objects.py ENDPOINT iam-user NAME               makes an IAM user allowed s3:*, prints its
                                                     {"id","secret"} (an emulator checks the signatures of
                                                     such keys; its root key it takes unchecked)
  s3_objects.py ENDPOINT serve                       runs the commands above read from stdin, one JSON
                                                     array of arguments per line, and answers each with one
                                                     JSON line {"status", "out", "err"}: boto3 is imported
                                                     once for a whole test instead of once per command
"""
import argparse
import contextlib
import datetime
import io
import json
import os
import sys
import traceback

import boto3
import botocore.auth
from botocore.config import Config


def client(endpoint):
    return boto3.client(
        "s3", endpoint_url=endpoint, region_name="us-east-1",
        config=Config(signature_version="s3v4", s3={"addressing_style": "path"}))


# The S3 operation of a request, by method and by the query parameter that names it (checked in order),
# for an object (True) or a bucket (False).
OPERATIONS = [
    ("GET", False, "uploads", "list_multipart_uploads"),
    ("GET", True, "uploadId", "list_parts"),
    ("GET", True, None, "get_object"),
    ("HEAD", True, None, "head_object"),
    ("POST", True, "uploads", "create_multipart_upload"),
    ("POST", True, "uploadId", "complete_multipart_upload"),
    ("PUT", True, "uploadId", "upload_part"),
    ("PUT", True, None, "put_object"),
    ("DELETE", True, "uploadId", "abort_multipart_upload"),
    ("DELETE", True, None, "delete_object"),
]
# Query parameters and the boto3 parameters they are (flags such as `uploads` are the operation's name).
QUERY_PARAMETERS = {
    "uploads": None, "prefix": "Prefix", "key-marker": "KeyMarker", "upload-id-marker": "UploadIdMarker",
    "uploadId": "UploadId", "partNumber": "PartNumber", "part-number-marker": "PartNumberMarker",
}
# Headers S3 has parameters for, and the operations that take them; a presigned URL signs them, so the request
# must send them with these values. Other headers go unsigned; an x-amz-* header not listed is an error, since S3
# refuses a presigned request with an x-amz-* header it did not sign.
HEADER_PARAMETERS = {
    "content-type": ({"put_object", "create_multipart_upload"}, "ContentType"),
    "x-amz-checksum-algorithm": ({"create_multipart_upload"}, "ChecksumAlgorithm"),
    "x-amz-sdk-checksum-algorithm": ({"put_object", "upload_part"}, "ChecksumAlgorithm"),
    "x-amz-checksum-crc32c": ({"put_object", "upload_part"}, "ChecksumCRC32C"),
    "x-amz-checksum-crc32": ({"put_object", "upload_part"}, "ChecksumCRC32"),
    "x-amz-checksum-sha256": ({"put_object", "upload_part"}, "ChecksumSHA256"),
    "x-amz-checksum-mode": ({"head_object", "get_object"}, "ChecksumMode"),
    "if-none-match": ({"put_object", "complete_multipart_upload"}, "IfNoneMatch"),
}


def presigned(s3, args):
    """The URL boto3's generate_presigned_url makes for the request `args` describes."""
    query = dict(pair.split("=", 1) if "=" in pair else (pair, "") for pair in args.query or [])
    method = args.method.upper()
    operation = next(
        (name for (verb, on_object, flag, name) in OPERATIONS
         if verb == method and on_object == bool(args.key) and (flag is None or flag in query)), None)
    if operation is None:
        raise ValueError(f"presign: no S3 operation for {method} with query {sorted(query)}")
    params = {"Bucket": args.bucket}
    if args.key:
        params["Key"] = args.key
    for name, value in query.items():
        if name not in QUERY_PARAMETERS:
            raise ValueError(f"presign: {operation} with an unknown query parameter {name}")
        if QUERY_PARAMETERS[name]:
            params[QUERY_PARAMETERS[name]] = int(value) if name == "partNumber" else value
    for pair in args.header or []:
        name, value = pair.split("=", 1)
        operations, parameter = HEADER_PARAMETERS.get(name.lower(), (set(), None))
        if operation in operations:
            params[parameter] = value
        elif name.lower().startswith("x-amz-"):
            raise ValueError(f"presign: {operation} with the header {name}, which a presigned URL would not sign")
    real_now = botocore.auth.get_current_datetime
    if args.signed_ago:
        botocore.auth.get_current_datetime = lambda: real_now() - datetime.timedelta(seconds=args.signed_ago)
    try:
        return s3.generate_presigned_url(operation, Params=params, ExpiresIn=args.expires_in)
    finally:
        botocore.auth.get_current_datetime = real_now


def make_parser():
    parser = argparse.ArgumentParser()
    parser.add_argument("endpoint")
    sub = parser.add_subparsers(dest="command", required=True)
    sub.add_parser("make-bucket").add_argument("bucket")
    presign = sub.add_parser("presign-put")
    presign.add_argument("bucket")
    presign.add_argument("key")
    presign.add_argument("--content-type")
    presign.add_argument("--expires-in", type=int, default=600)
    presign_any = sub.add_parser("presign")
    presign_any.add_argument("method")
    presign_any.add_argument("bucket")
    presign_any.add_argument("key")
    presign_any.add_argument("--query", action="append")
    presign_any.add_argument("--header", action="append")
    presign_any.add_argument("--expires-in", type=int, default=600)
    presign_any.add_argument("--signed-ago", type=int, default=0)
    presign_get = sub.add_parser("presign-get")
    presign_get.add_argument("bucket")
    presign_get.add_argument("key")
    get = sub.add_parser("get")
    get.add_argument("bucket")
    get.add_argument("key")
    get.add_argument("out")
    put = sub.add_parser("put")
    put.add_argument("bucket")
    put.add_argument("key")
    put.add_argument("file")
    get_all = sub.add_parser("get-all")
    get_all.add_argument("bucket")
    get_all.add_argument("prefix")
    get_all.add_argument("dir")
    head = sub.add_parser("head")
    head.add_argument("bucket")
    head.add_argument("key")
    listing = sub.add_parser("list")
    listing.add_argument("bucket")
    listing.add_argument("prefix", nargs="?", default="")
    sub.add_parser("uploads").add_argument("bucket")
    sub.add_parser("upload-ids").add_argument("bucket")
    create_upload = sub.add_parser("create-upload")
    create_upload.add_argument("bucket")
    create_upload.add_argument("key")
    sub.add_parser("iam-user").add_argument("name")
    return parser


def run(args, s3):
    if args.command == "make-bucket":
        s3.create_bucket(Bucket=args.bucket)
    elif args.command == "presign-put":
        params = {"Bucket": args.bucket, "Key": args.key}
        if args.content_type:
            params["ContentType"] = args.content_type
        print(s3.generate_presigned_url("put_object", Params=params, ExpiresIn=args.expires_in))
    elif args.command == "presign":
        print(presigned(s3, args))
    elif args.command == "presign-get":
        print(s3.generate_presigned_url("get_object", Params={"Bucket": args.bucket, "Key": args.key}, ExpiresIn=600))
    elif args.command == "get":
        body = s3.get_object(Bucket=args.bucket, Key=args.key)["Body"]
        with open(args.out, "wb") as out:
            for chunk in body.iter_chunks(4 << 20):
                out.write(chunk)
    elif args.command == "put":
        s3.upload_file(args.file, args.bucket, args.key)
    elif args.command == "get-all":
        keys = []
        for page in s3.get_paginator("list_objects_v2").paginate(Bucket=args.bucket, Prefix=args.prefix):
            for item in page.get("Contents", []):
                body = s3.get_object(Bucket=args.bucket, Key=item["Key"])["Body"].read()
                with open(os.path.join(args.dir, item["Key"].replace("/", "%2F")), "wb") as out:
                    out.write(body)
                keys.append(item["Key"])
        print(json.dumps(keys))
    elif args.command == "head":
        head = s3.head_object(Bucket=args.bucket, Key=args.key)
        print(json.dumps({
            "size": head["ContentLength"], "etag": head["ETag"].strip('"'),
            "contentType": head.get("ContentType"), "versionId": head.get("VersionId")}))
    elif args.command == "list":
        found = []
        for page in s3.get_paginator("list_objects_v2").paginate(Bucket=args.bucket, Prefix=args.prefix):
            for item in page.get("Contents", []):
                found.append({"key": item["Key"], "size": item["Size"], "etag": item["ETag"].strip('"')})
        print(json.dumps(found))
    elif args.command == "uploads":
        answer = s3.list_multipart_uploads(Bucket=args.bucket)
        print(json.dumps([upload["Key"] for upload in answer.get("Uploads", [])]))
    elif args.command == "upload-ids":
        answer = s3.list_multipart_uploads(Bucket=args.bucket)
        print(json.dumps([[upload["Key"], upload["UploadId"]] for upload in answer.get("Uploads", [])]))
    elif args.command == "create-upload":
        print(s3.create_multipart_upload(Bucket=args.bucket, Key=args.key)["UploadId"])
    elif args.command == "iam-user":
        iam = boto3.client("iam", endpoint_url=args.endpoint, region_name="us-east-1")
        iam.create_user(UserName=args.name)
        iam.put_user_policy(
            UserName=args.name, PolicyName="s3-all",
            PolicyDocument=json.dumps({"Version": "2012-10-17", "Statement": [
                {"Effect": "Allow", "Action": "s3:*", "Resource": "*"}]}))
        key = iam.create_access_key(UserName=args.name)["AccessKey"]
        print(json.dumps({"id": key["AccessKeyId"], "secret": key["SecretAccessKey"]}))
    return 0


def serve(endpoint, parser):
    s3 = client(endpoint)
    for line in sys.stdin:
        out, err = io.StringIO(), io.StringIO()
        status = 0
        try:
            with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
                run(parser.parse_args([endpoint] + json.loads(line)), s3)
        except SystemExit as stop:  # argparse's usage errors
            status = stop.code if isinstance(stop.code, int) and stop.code else 2
        except Exception:
            status = 1
            err.write(traceback.format_exc())
        sys.stdout.write(json.dumps({"status": status, "out": out.getvalue(), "err": err.getvalue()}) + "\n")
        sys.stdout.flush()
    return 0


def main():
    parser = make_parser()
    if len(sys.argv) == 3 and sys.argv[2] == "serve":
        return serve(sys.argv[1], parser)
    args = parser.parse_args()
    return run(args, client(args.endpoint))


if __name__ == "__main__":
    sys.exit(main())
