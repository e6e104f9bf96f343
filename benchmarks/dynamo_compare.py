#!/usr/bin/env python3
"""Dynamo request plane, Java against Python in one run (issue 33), on the real ai-dynamo-runtime 1.6.1, file
discovery, loopback; driven by benchmarks/run-dynamo.sh (which builds the Java side and sets the environment up).
The figures are those of benchmarks/dynamo_baseline.py; what differs is that the two sides take turns in short
batches, so that a machine whose load swings between 15 and 50 within minutes (this one) loads both alike. The Python
client is a process per batch (each warmed up by WARMUP calls); the Java client one JVM per measurement, warmed up
by WARMUP calls once and kept between its batches, as a Java service's would be (a fresh JVM's JIT needs ~1,500
calls to reach its steady round trip):

  roundtrip  one Python echo worker; batches of CALLS calls of {} (after WARMUP), the Python client
             (interop/dynamo_client.py) and the Java client (DynamoBenchmark client) in turn: p50/p90 of every
             call of each side (the call to the end of its stream)
  encode     one Python encode worker (a fresh 16 MiB random tensor per call, the TRT-LLM encode reply); batches
             of ENCODE_CALLS calls plus the nixl_connect read of the tensor (and its SHA-256), each side in turn:
             p50/p90 of each side's calls to the read's end
  hash       a Python hash worker and a Java one (DynamoBenchmark worker), the same work (2,000 chained SHA-256
             per request), both registered; the Python client with 4 callers runs a batch against each in turn:
             requests per second of each worker (its requests over its batches' seconds)

Prints one "RESULT side=.. name=.. key=value ..." line per measurement, then the comparison with the targets.
"""

import argparse
import os
import shlex
import math
import subprocess
import sys
import tempfile
import time

from dynamo_process import CLIENT, WORKER, Process


def parse_args(argv):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("measurements", nargs="*", help="roundtrip, encode, hash (default: all three)")
    parser.add_argument("--java", required=True, help="the command line that runs DynamoBenchmark")
    parser.add_argument("--batches", type=int, default=5, help="turns each side takes per measurement")
    parser.add_argument("--calls", type=int, default=100, help="roundtrip calls per batch")
    parser.add_argument("--warmup", type=int, default=50, help="roundtrip warm-up calls per batch")
    parser.add_argument("--java-warmup", type=int, default=None,
                        help="roundtrip warm-up calls of the Java client's JVM, once (default: --warmup)")
    parser.add_argument("--bytes", type=int, default=16 << 20)
    parser.add_argument("--encode-calls", type=int, default=6, help="encode calls per batch")
    parser.add_argument("--encode-warmup", type=int, default=1)
    parser.add_argument("--hash-rounds", type=int, default=2000)
    parser.add_argument("--hash-requests", type=int, default=400, help="hash requests per batch")
    parser.add_argument("--hash-warmup", type=int, default=50)
    parser.add_argument("--concurrency", type=int, default=4, help="hash callers")
    parser.add_argument("--python", default=os.environ.get("DYNAMO_RUNTIME_PYTHON", sys.executable))
    args = parser.parse_args(argv)
    args.measurements = args.measurements or ["roundtrip", "encode", "hash"]
    return args


def loadavg():
    with open("/proc/loadavg") as f:
        return " ".join(f.read().split()[:3])


def python_client(args, endpoint, kv, requests, warmup, concurrency, request, read):
    """One batch of the Python client, a process of its own: (per-call ms, per-read ms, seconds)."""
    command = [args.python, CLIENT, "--endpoint", endpoint, "--file-kv", kv, "--requests", str(requests),
               "--warmup", str(warmup), "--concurrency", str(concurrency), "--request", request,
               "--timeout", "120"] + (["--read"] if read else [])
    result = subprocess.run(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, timeout=1800)
    return parse("python", result.stdout.splitlines(), requests, result.stderr)


class JavaClient:
    """The Java client as a service runs it: one JVM, warmed up once, running a batch per line it reads."""

    def __init__(self, args, endpoint, kv, requests, warmup, request, read):
        command = shlex.split(args.java) + ["client", "--endpoint", endpoint, "--file-kv", kv, "--requests",
                                            str(requests), "--warmup", str(warmup), "--request", request,
                                            "--read", str(read).lower(), "--verbose", "true",
                                            "--stdin-batches", "true"]
        self.requests = requests
        self.stderr = tempfile.TemporaryFile()
        self.process = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self.stderr,
                                        text=True)
        self.until("READY")

    def until(self, marker):
        lines = []
        for line in self.process.stdout:
            line = line.rstrip("\n")
            if line == marker:
                return lines
            lines.append(line)
        self.stderr.seek(0)
        raise RuntimeError("the Java client ended before %s:\n%s\n%s" % (
            marker, "\n".join(lines[-20:]), self.stderr.read().decode("utf-8", "replace")[-3000:]))

    def batch(self):
        self.process.stdin.write("batch\n")
        self.process.stdin.flush()
        return parse("java", self.until("BATCH_DONE"), self.requests, "")

    def close(self):
        if self.process.poll() is None:
            self.process.stdin.close()
            try:
                self.process.wait(60)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()


def parse(side, lines, requests, stderr):
    summary = [line for line in lines if line.startswith("SUMMARY")]
    errors = [line for line in lines if line.startswith("ERROR")]
    if not summary or errors:
        raise RuntimeError("%s client failed:\n%s\n%s" % (side, "\n".join(lines[-20:]), stderr[-3000:]))
    fields = dict(word.split("=", 1) for word in summary[-1].split()[1:] if "=" in word)
    if fields.get("errors", "0") != "0" or fields.get("ok") != str(requests):
        raise RuntimeError("%s client reported errors: %s" % (side, summary[-1]))

    def measured(prefix, key):
        """The key of each line of the measured calls (warm-up calls have indices below 0)."""
        values = []
        for line in lines:
            if line.startswith(prefix + " "):
                words = dict(word.split("=", 1) for word in line.split()[1:] if "=" in word)
                if int(words["i"]) >= 0:
                    values.append(float(words[key]))
        return values

    return measured("END", "ms"), measured("READ", "call_ms"), float(fields["seconds"])


def nearest_rank(values, fraction):
    """As interop/dynamo_client.py: the smallest value with at least that fraction at or below it."""
    values = sorted(values)
    if not values:
        return float("nan")
    return values[min(len(values) - 1, max(0, math.ceil(fraction * len(values)) - 1))]


def java_worker(args, kv):
    return Process(shlex.split(args.java) + ["worker", "--file-kv", kv, "--prefix", "java", "--bytes",
                                             str(args.bytes), "--hash-rounds", str(args.hash_rounds)],
                   "Java worker")


def python_worker(args, kv, endpoint, mode, extra):
    return Process([args.python, WORKER, "--endpoint", endpoint, "--mode", mode, "--file-kv", kv, "--quiet"] + extra,
                   "Python %s worker" % mode)


def main(argv):
    args = parse_args(argv)
    kv = tempfile.mkdtemp(prefix="dynamo-compare-kv-")
    results = {}
    print("dynamo_compare: file discovery in %s, %d batches per side, load average %s" % (kv, args.batches,
                                                                                        loadavg()), flush=True)
    if "roundtrip" in args.measurements:
        worker = python_worker(args, kv, "py.echo.generate", "echo", [])
        java = None
        try:
            java_warmup = args.warmup if args.java_warmup is None else args.java_warmup
            java = JavaClient(args, "py.echo.generate", kv, args.calls, java_warmup, "{}", False)
            calls = {"python": [], "java": []}
            for batch in range(args.batches):
                for side in ("python", "java") if batch % 2 == 0 else ("java", "python"):
                    ends, _, _ = (python_client(args, "py.echo.generate", kv, args.calls, args.warmup, 1, "{}", False)
                                  if side == "python" else java.batch())
                    calls[side] += ends
            for side in ("python", "java"):
                values = calls[side]
                p50, p90 = nearest_rank(values, 0.5), nearest_rank(values, 0.9)
                results[(side, "roundtrip")] = {"p50_ms": p50, "p90_ms": p90}
                print("RESULT side=%s name=roundtrip calls=%d warmup=%d p50_ms=%.3f p90_ms=%.3f load=%s"
                      % (side, len(values), args.warmup if side == "python" else java_warmup, p50, p90,
                         loadavg().replace(" ", "/")), flush=True)
        finally:
            if java is not None:
                java.close()
            worker.stop()
    if "encode" in args.measurements:
        worker = python_worker(args, kv, "py.encoder.generate", "encode", ["--bytes", str(args.bytes)])
        java = None
        try:
            java = JavaClient(args, "py.encoder.generate", kv, args.encode_calls, args.encode_warmup,
                              '{"request": {i}}', True)
            reads = {"python": [], "java": []}
            for batch in range(args.batches):
                for side in ("python", "java") if batch % 2 == 0 else ("java", "python"):
                    _, read_ms, _ = (python_client(args, "py.encoder.generate", kv, args.encode_calls,
                                                   args.encode_warmup, 1, '{"request": {i}}', True)
                                     if side == "python" else java.batch())
                    reads[side] += read_ms
            for side in ("python", "java"):
                values = reads[side]
                results[(side, "encode")] = {"read_p50_ms": nearest_rank(values, 0.5),
                                             "read_p90_ms": nearest_rank(values, 0.9)}
                print("RESULT side=%s name=encode bytes=%d calls=%d read_p50_ms=%.3f read_p90_ms=%.3f load=%s"
                      % (side, args.bytes, len(values), nearest_rank(values, 0.5), nearest_rank(values, 0.9),
                         loadavg().replace(" ", "/")), flush=True)
        finally:
            if java is not None:
                java.close()
            worker.stop()
    if "hash" in args.measurements:
        workers = [python_worker(args, kv, "py.hash.generate", "hash", ["--hash-rounds", str(args.hash_rounds)])]
        try:
            workers.append(java_worker(args, kv))
            totals = {"python": [0, 0.0], "java": [0, 0.0]}
            for batch in range(args.batches):
                for side in ("python", "java") if batch % 2 == 0 else ("java", "python"):
                    endpoint = "py.hash.generate" if side == "python" else "java.hash.generate"
                    _, _, seconds = python_client(args, endpoint, kv, args.hash_requests, args.hash_warmup,
                                                  args.concurrency, '{"n": {i}}', False)
                    totals[side][0] += args.hash_requests
                    totals[side][1] += seconds
            for side in ("python", "java"):
                rps = totals[side][0] / totals[side][1]
                results[(side, "hash")] = {"rps": rps}
                print("RESULT side=%s-worker name=hash rounds=%d requests=%d concurrency=%d rps=%.1f load=%s"
                      % (side, args.hash_rounds, totals[side][0], args.concurrency, rps,
                         loadavg().replace(" ", "/")), flush=True)
        finally:
            for worker in reversed(workers):
                worker.stop()
    print("\n== comparison (load average now %s)" % loadavg())
    rows = [("round trip p50 ms, Java client vs Python client", "roundtrip", "p50_ms", False),
            ("encode 16 MiB call + read p50 ms, Java caller vs Python caller", "encode", "read_p50_ms", False),
            ("hash requests/s, Java worker vs Python worker", "hash", "rps", True)]
    for title, name, key, higher in rows:
        if ("python", name) not in results:
            continue
        python_value = results[("python", name)][key]
        java_value = results[("java", name)][key]
        met = java_value >= python_value if higher else java_value <= python_value
        print("%-66s python %9.3f   java %9.3f   target %s" % (title, python_value, java_value,
                                                                 "met" if met else "MISSED"))


if __name__ == "__main__":
    main(sys.argv[1:])
