#!/usr/bin/env python3
"""What a local S3 server says of an object's checksums, asked with boto3 (never with Attache).

Credentials come from AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY in the environment, never argv.

  s3_checksums.py ENDPOINT BUCKET KEY PART_SIZE ALGORITHM

Prints {"head": {...}, "attributes": {...}, "expected": "BASE64-N"}: head_object(ChecksumMode="ENABLED")'s
Checksum* fields, get_object_attributes(Checksum, ObjectParts)'s, and the composite checksum (crc32c or
sha256) computed here from the object's bytes read back in parts of PART_SIZE bytes.
"""
import base64
import hashlib
import json
import sys

import boto3
import crc32c
from botocore.config import Config


def main():
    endpoint, bucket, key, part_size, algorithm = sys.argv[1:6]
    part_size = int(part_size)
    s3 = boto3.client(
        "s3", endpoint_url=endpoint, region_name="us-east-1",
        config=Config(signature_version="s3v4", s3={"addressing_style": "path"}))
    head = s3.head_object(Bucket=bucket, Key=key, ChecksumMode="ENABLED")
    attributes = s3.get_object_attributes(Bucket=bucket, Key=key, ObjectAttributes=["Checksum", "ObjectParts", "ObjectSize"])
    body = s3.get_object(Bucket=bucket, Key=key)["Body"].read()
    digests = b""
    count = 0
    for start in range(0, len(body), part_size):
        piece = body[start:start + part_size]
        if algorithm == "crc32c":
            digests += crc32c.crc32c(piece).to_bytes(4, "big")
        else:
            digests += hashlib.sha256(piece).digest()
        count += 1
    whole = crc32c.crc32c(digests).to_bytes(4, "big") if algorithm == "crc32c" else hashlib.sha256(digests).digest()
    print(json.dumps({
        "head": {name: value for name, value in head.items() if name.startswith("Checksum")},
        "attributes": attributes.get("Checksum", {}),
        "expected": base64.b64encode(whole).decode() + f"-{count}",
    }))
    return 0


if __name__ == "__main__":
    sys.exit(main())
