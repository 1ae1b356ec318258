#!/usr/bin/env python3
"""moto's server as a plain `pip install 'moto[server]'` runs it: without its optional crc32c module.

  moto_without_crc32c.py -H 127.0.0.1 -p PORT

moto sums CRC-32C with the crc32c module when it can import it, else, silently, CRC-32
(moto/s3/utils.py, compute_checksum): a composite "CRC-32C" of a multipart object that is the CRC-32 of
the parts' CRC-32s, while every byte and every part's checksum (echoed as sent) is right. The test venv
has crc32c for the other S3 tests; this hides it from moto, so that moto sums as it does for a user who
installed it plainly. The moto imported is the first on sys.path: Scripts/bootstrap.sh keeps moto 5.2.1
in a folder of its own, which the tests put first on PYTHONPATH.
"""
import sys

# A None entry makes `import crc32c` raise ImportError, as when the module is not installed.
sys.modules["crc32c"] = None

from moto.server import main  # noqa: E402

if __name__ == "__main__":
    main(sys.argv[1:])
