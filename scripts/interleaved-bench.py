#!/usr/bin/env python3
"""Wall time of `jarvis report FILE --no-files` at 1 and 2 threads (or the counts given), the
runs of each count interleaved so that the machine's drift hits every count alike; prints the
median, quartiles, minimum and 10th percentile of each and the speed-up of the medians (not a
test: a benchmark).
With several builds (JARVIS=A,B) each round runs every build at every count, so builds are
compared in the same rounds.

Usage: [JARVIS=BIN[,BIN...]] python3 scripts/interleaved-bench.py FILE [RUNS] [THREADS ...]
Example: python3 scripts/interleaved-bench.py bench-out/h100_owlv2.json 30 1 2
         JARVIS=/tmp/jarvis_before,target/release/jarvis python3 scripts/interleaved-bench.py bench-out/synth_1g.json 7
Environment: JARVIS (default target/release/jarvis).
"""
import os
import statistics
import subprocess
import sys
import time

trace = sys.argv[1]
runs = int(sys.argv[2]) if len(sys.argv) > 2 else 30
counts = [int(t) for t in sys.argv[3:]] or [1, 2]
builds = os.environ.get("JARVIS", "target/release/jarvis").split(",")
walls = {(b, t): [] for b in builds for t in counts}
for _ in range(runs):
    for b in builds:
        for t in counts:
            start = time.perf_counter()
            subprocess.run([b, "report", trace, "--no-files", "--threads", str(t)],
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)
            walls[(b, t)].append((time.perf_counter() - start) * 1000)
for b in builds:
    if len(builds) > 1:
        print(b)
    base = statistics.median(walls[(b, counts[0])])
    for t in counts:
        q = statistics.quantiles(walls[(b, t)], n=4)
        m = statistics.median(walls[(b, t)])
        ordered = sorted(walls[(b, t)])
        # On a noisy machine the quietest runs tell builds apart better than the median.
        print(f"--threads {t}: median {m:.1f} ms (quartiles {q[0]:.1f}-{q[2]:.1f}; "
              f"min {ordered[0]:.1f}, p10 {ordered[len(ordered) // 10]:.1f}), "
              f"{base / m:.2f}x the first count, {runs} runs")
