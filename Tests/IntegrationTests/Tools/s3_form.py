#!/usr/bin/env python3
"""Makes presigned POST forms for a local S3 emulator, with boto3 (buckets and objects: s3_objects.py).

Credentials come from AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY in the environment, never argv: a test
that signs with another secret runs this with another environment.

  s3_form.py ENDPOINT presign BUCKET KEY [--expires-in S] [--max-size N] [--success-status 201] [--tamper]
      prints {"url": ..., "fields": {...}} on one line; --tamper changes the signed policy after signing
"""
import argparse
import base64
import json
import sys

import boto3
from botocore.config import Config


def client(endpoint):
    return boto3.client(
        "s3", endpoint_url=endpoint, region_name="us-east-1",
        config=Config(signature_version="s3v4", s3={"addressing_style": "path"}))


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("endpoint")
    sub = parser.add_subparsers(dest="command", required=True)
    presign = sub.add_parser("presign")
    presign.add_argument("bucket")
    presign.add_argument("key")
    presign.add_argument("--expires-in", type=int, default=600)
    presign.add_argument("--max-size", type=int, default=10 * 1024 * 1024)
    presign.add_argument("--success-status")
    presign.add_argument("--tamper", action="store_true")
    args = parser.parse_args()
    s3 = client(args.endpoint)

    if args.command == "presign":
        fields = {}
        conditions = [["content-length-range", 1, args.max_size]]
        if args.key.endswith("${filename}"):
            conditions.append(["starts-with", "$key", args.key[: -len("${filename}")]])
        if args.success_status:
            fields["success_action_status"] = args.success_status
            conditions.append({"success_action_status": args.success_status})
        form = s3.generate_presigned_post(
            Bucket=args.bucket, Key=args.key, Fields=fields, Conditions=conditions, ExpiresIn=args.expires_in)
        if args.tamper:
            # A bigger size limit than the one signed: the signature no longer matches the policy.
            policy = json.loads(base64.b64decode(form["fields"]["policy"]))
            for condition in policy["conditions"]:
                if isinstance(condition, list) and condition[0] == "content-length-range":
                    condition[2] = args.max_size * 100
            form["fields"]["policy"] = base64.b64encode(json.dumps(policy).encode()).decode()
        print(json.dumps(form))
    return 0


if __name__ == "__main__":
    sys.exit(main())
