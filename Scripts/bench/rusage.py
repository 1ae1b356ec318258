#!/usr/bin/env python3
"""Runs a command and prints "cpu_seconds wall_seconds max_rss_kib" for it (children included).

GNU time prints user and system time in 10 ms steps, too coarse for a 0.1 s job compared at a 0.5 ratio;
wait4's rusage has microsecond resolution. Output of the command goes to /dev/null.
"""
import os
import subprocess
import sys
import time

start = time.monotonic()
child = subprocess.Popen(sys.argv[1:], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
_, status, usage = os.wait4(child.pid, 0)
wall = time.monotonic() - start
if os.waitstatus_to_exitcode(status) != 0:
    sys.exit(f"rusage.py: {sys.argv[1]} exited with {os.waitstatus_to_exitcode(status)}")
print(f"{usage.ru_utime + usage.ru_stime:.4f} {wall:.4f} {usage.ru_maxrss}")
