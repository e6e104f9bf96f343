#!/usr/bin/env python3
"""Summarises benchmarks/run-nixl.sh output (read from stdin).

Per size: the median over rounds of each side's median GB/s, Java's share of direct NIXL from those two
medians, and the paired share: the median over rounds of Java / direct within the same round. For the
4 KiB READ latency: the median over rounds of each side's p50, and the paired difference (median over
rounds of Java - direct within a round). A round runs Java, then direct, back to back, so the paired
figures cancel most of the drift that this shared machine shows between rounds (20-30%, more than the
gaps being measured). The Java section of a round starts at "== Java", the direct one at "== NIXL direct".
"""

import re
import statistics
import sys

# size, iterations, median, best; the Java harness adds GB per CPU-second and the path the reads took.
SIZE_ROW = re.compile(r"^(\d+ (?:KiB|MiB|GiB))\s+\d+\s+([\d.]+)\s+([\d.]+)(?:\s+[\d.]+\s+\S+)?$")
JAVA_LATENCY = re.compile(r"latency of one 4 KiB ReadOperation .*: p50 ([\d.]+) us")
DIRECT_LATENCY = re.compile(r"latency of one 4 KiB READ .*NIXL direct\): p50 ([\d.]+) us")


def main():
    side = None
    bandwidth = {"java": {}, "direct": {}}
    latency = {"java": [], "direct": []}
    for line in sys.stdin:
        line = line.strip()
        if line.startswith("== Java"):
            side = "java"
        elif line.startswith("== NIXL direct"):
            side = "direct"
        elif side and (match := SIZE_ROW.match(line)):
            bandwidth[side].setdefault(match.group(1), []).append(float(match.group(2)))
        elif match := JAVA_LATENCY.search(line):
            latency["java"].append(float(match.group(1)))
        elif match := DIRECT_LATENCY.search(line):
            latency["direct"].append(float(match.group(1)))
    rounds = len(latency["java"])
    print("== summary over %d round(s): median of the per-round medians; paired: median of per-round ratios"
          % rounds)
    print("%-8s %12s %12s %8s %14s" % ("size", "Java GB/s", "direct GB/s", "Java %", "Java % paired"))
    for size, java in bandwidth["java"].items():
        direct = bandwidth["direct"].get(size)
        if not direct:
            continue
        j, d = statistics.median(java), statistics.median(direct)
        paired = statistics.median(a / b for a, b in zip(java, direct) if b)
        print("%-8s %12.2f %12.2f %7.0f%% %13.0f%%" % (size, j, d, 100 * j / d if d else float("nan"), 100 * paired))
    if latency["java"] and latency["direct"]:
        j, d = statistics.median(latency["java"]), statistics.median(latency["direct"])
        added = statistics.median(a - b for a, b in zip(latency["java"], latency["direct"]))
        print("4 KiB READ p50: Java %.1f us, direct %.1f us, Java adds %.1f us (paired: %.1f us; per round: Java %s; direct %s)"
              % (j, d, j - d, added, " ".join("%.0f" % v for v in latency["java"]),
                 " ".join("%.0f" % v for v in latency["direct"])))


if __name__ == "__main__":
    main()
