#!/usr/bin/env python3
"""Runs a command under GNU time (its standard output to $BENCH_STDOUT, else nowhere) and writes one
line to the file named first: its wall seconds, its peak RSS in KiB and its CPU seconds (user + system).

The CPU time is the kernel's account of the children (getrusage), in microseconds: GNU time prints it in
steps of 10 ms, which is 7 % of a 0.14 s run of 5,000 requests and hid any difference under 3 %. It
includes GNU time's own, about a millisecond (the same in every run). The peak RSS is GNU time's: a child of this script would
count the interpreter's pages it was forked with.

    measure.py OUT COMMAND [ARGUMENT...]
"""
import os
import resource
import subprocess
import sys
import tempfile
import time

out, command = sys.argv[1], sys.argv[2:]
with tempfile.NamedTemporaryFile("r") as rss, open(os.environ.get("BENCH_STDOUT") or os.devnull, "wb") as stdout:
    start = time.monotonic()
    status = subprocess.call(["/usr/bin/time", "-f", "%M", "-o", rss.name, *command], stdout=stdout)
    wall = time.monotonic() - start
    lines = rss.read().split()
usage = resource.getrusage(resource.RUSAGE_CHILDREN)
peak = lines[-1] if lines else "0"
with open(out, "w") as f:
    f.write(f"{wall:.6f} {peak} {usage.ru_utime + usage.ru_stime:.6f}\n")
sys.exit(status if status >= 0 else 128 - status)
