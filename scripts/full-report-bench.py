#!/usr/bin/env python3
"""Wall time of a full `jarvis report TRACE --out DIR` (every file written) for several builds,
runs interleaved so the machine's drift hits every build alike; prints each build's median and
quartiles (a benchmark, not a test).

Usage: python3 scripts/full-report-bench.py BIN[,BIN...] TRACE RUNS THREADS
Example: python3 scripts/full-report-bench.py /tmp/jarvis_before,target/release/jarvis owl_h100.json 11 1
"""
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

builds = sys.argv[1].split(",")
trace, runs, threads = sys.argv[2], int(sys.argv[3]), sys.argv[4]
walls = {b: [] for b in builds}
out = tempfile.mkdtemp(prefix="full-report-bench-")
for _ in range(runs):
    for b in builds:
        shutil.rmtree(out, ignore_errors=True)
        start = time.perf_counter()
        subprocess.run([b, "report", trace, "--out", out, "--threads", threads],
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)
        walls[b].append((time.perf_counter() - start) * 1000)
shutil.rmtree(out, ignore_errors=True)
for b in builds:
    q = statistics.quantiles(walls[b], n=4)
    print(f"{b}: median {statistics.median(walls[b]):.1f} ms "
          f"(quartiles {q[0]:.1f}-{q[2]:.1f}), {runs} runs, --threads {threads}")
