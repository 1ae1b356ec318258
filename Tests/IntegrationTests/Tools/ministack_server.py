"""Runs MiniStack (as `python -m ministack` does) with its CRC-32C summed in C rather than in Python.

MiniStack checks every part's `x-amz-checksum-crc32c` with a byte-at-a-time table in pure Python, and
sums it a second time for `x-amz-sdk-checksum-algorithm`: about 0.6 µs a byte, so the 1 GiB multipart
test spent five minutes of MiniStack's CPU in that loop alone. Here the same function is replaced by the
`crc32c` module's (the one moto uses, pinned by bootstrap), after both are shown to agree on the
algorithm's check value and on random data. MiniStack still recomputes and compares every checksum it is
sent; only the arithmetic is faster. Everything else (environment, arguments, output) is MiniStack's.
"""
import os
import sys

import crc32c

from ministack.services import s3


def main():
    samples = [b"", b"123456789", os.urandom(1), os.urandom(4099), os.urandom(65536 + 7)]
    for sample in samples:
        if s3._crc32c(sample) != crc32c.crc32c(sample):
            print(f"ministack_server.py: the crc32c module and MiniStack disagree on {len(sample)} bytes",
                  file=sys.stderr)
            return 1
    if crc32c.crc32c(b"123456789") != 0xE3069283:
        print("ministack_server.py: the crc32c module fails the CRC-32C check value", file=sys.stderr)
        return 1
    s3._crc32c = crc32c.crc32c

    from ministack.app import main as ministack_main
    ministack_main()
    return 0


if __name__ == "__main__":
    sys.exit(main())
