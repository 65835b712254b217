#!/usr/bin/env python3
"""Two or more builds of `jarvis` timed on one trace at 1 and 2 threads, interleaved per round
(build A at 1 and 2 threads, build B at 1 and 2, ...) so the machine's drift hits every build
alike; prints each build's medians and its 1-thread / 2-thread ratio (a benchmark, not a test).

Usage: python3 scripts/interleaved-ab.py FILE RUNS JARVIS_A JARVIS_B [...]
Example: python3 scripts/interleaved-ab.py bench-out/synth_1g.json 6 /tmp/jarvis_before target/release/jarvis
"""
import statistics
import subprocess
import sys
import time

trace, runs, bins = sys.argv[1], int(sys.argv[2]), sys.argv[3:]
if not bins:
    sys.exit(__doc__)
walls = {(b, t): [] for b in bins for t in (1, 2)}
for _ in range(runs):
    for b in bins:
        for t in (1, 2):
            start = time.perf_counter()
            subprocess.run([b, "report", trace, "--no-files", "--threads", str(t)],
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)
            walls[(b, t)].append((time.perf_counter() - start) * 1000)
for b in bins:
    one, two = statistics.median(walls[(b, 1)]), statistics.median(walls[(b, 2)])
    print(f"{b}: 1 thread {one:.1f} ms, 2 threads {two:.1f} ms, ratio {one / two:.3f} ({runs} rounds)")
