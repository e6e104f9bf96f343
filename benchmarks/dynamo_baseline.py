#!/usr/bin/env python3
"""Dynamo request-plane baselines (issue 33), Python <-> Python with the real ai-dynamo-runtime 1.6.1, file discovery,
loopback: the figures a Java client or worker is held to. Driven by benchmarks/run-dynamo-baseline.sh (which sets
up the environment); each measurement starts its own worker (interop/dynamo_worker.py) and client
(interop/dynamo_client.py) and parses the client's SUMMARY line.

  roundtrip  an empty request ({}) to an echo worker, one caller, CALLS calls after WARMUP: p50/p90 of the call
             (request sent to the end of its stream)
  encode     a call to the encode-shaped worker (a fresh tensor of BYTES random bytes per call, its SHA-256, the
             TRT-LLM encode worker's reply) plus the dynamo.nixl_connect read of that tensor: p50/p90 from the call
             to the read's completion (the caller has the data), and to the end of the stream
  hash       a hash worker (HASH_ROUNDS chained SHA-256 per request), CONCURRENCY callers in one client process:
             requests per second the worker serves

Against something else (the Java side):
  --external-worker     start no worker: an instance of each endpoint (--endpoint-prefix NS, endpoints
                        NS.echo.generate, NS.encoder.generate, NS.hash.generate) must already be in the file store
                        --file-kv DIR, doing the same work (echo; encode with BYTES; hash with HASH_ROUNDS)
  --client-cmd TEMPLATE run this command instead of the Python client (a Java caller); it must print a line
                        "SUMMARY ... p50_ms=.. p90_ms=.. rps=.." (read_p50_ms/read_p90_ms for encode) like
                        interop/dynamo_client.py. Placeholders: {endpoint} {file_kv} {requests} {warmup}
                        {concurrency} {read} (true/false) {request} (the JSON request, with {i} for the
                        call's index: quote it, '{request}'; the template is split like a shell line)
Environment equivalents: DYNAMO_BASELINE_EXTERNAL_WORKER=1, DYNAMO_BASELINE_CLIENT_CMD, DYNAMO_BASELINE_FILE_KV.
Prints "RESULT name=... key=value ..." lines, one per measurement, and a human summary.
"""

import argparse
import os
import shlex
import subprocess
import sys
import tempfile
import time

from dynamo_process import CLIENT, WORKER, Process


def parse_args(argv):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("measurements", nargs="*", help="roundtrip, encode, hash (default: all three)")
    parser.add_argument("--calls", type=int, default=500, help="roundtrip calls")
    parser.add_argument("--warmup", type=int, default=50, help="roundtrip warm-up calls")
    parser.add_argument("--bytes", type=int, default=16 << 20, help="encode tensor size")
    parser.add_argument("--encode-calls", type=int, default=30)
    parser.add_argument("--encode-warmup", type=int, default=3)
    parser.add_argument("--hash-rounds", type=int, default=2000)
    parser.add_argument("--hash-requests", type=int, default=2000)
    parser.add_argument("--concurrency", type=int, default=4, help="hash callers")
    parser.add_argument("--endpoint-prefix", default="bench")
    parser.add_argument("--file-kv", default=os.environ.get("DYNAMO_BASELINE_FILE_KV"))
    parser.add_argument("--external-worker", action="store_true",
                        default=os.environ.get("DYNAMO_BASELINE_EXTERNAL_WORKER", "") not in ("", "0"))
    parser.add_argument("--client-cmd", default=os.environ.get("DYNAMO_BASELINE_CLIENT_CMD"))
    parser.add_argument("--python", default=os.environ.get("DYNAMO_RUNTIME_PYTHON", sys.executable))
    args = parser.parse_args(argv)
    args.measurements = args.measurements or ["roundtrip", "encode", "hash"]
    unknown = set(args.measurements) - {"roundtrip", "encode", "hash"}
    if unknown:
        parser.error("unknown measurement(s): %s" % ", ".join(sorted(unknown)))
    return args


def run_client(args, endpoint, requests, warmup, concurrency, read, request="{}"):
    if args.client_cmd:
        command = shlex.split(args.client_cmd.format(endpoint=endpoint, file_kv=args.file_kv, requests=requests,
                                                     warmup=warmup, concurrency=concurrency,
                                                     read=str(read).lower(), request=request))
    else:
        command = [args.python, CLIENT, "--endpoint", endpoint, "--file-kv", args.file_kv, "--requests",
                   str(requests), "--warmup", str(warmup), "--concurrency", str(concurrency), "--request", request,
                   "--quiet", "--timeout", "120"] + (["--read"] if read else [])
    started = time.time()
    result = subprocess.run(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, timeout=1800)
    summary = [line for line in result.stdout.splitlines() if line.startswith("SUMMARY")]
    errors = [line for line in result.stdout.splitlines() if line.startswith("ERROR")]
    if not summary:
        raise RuntimeError("client printed no SUMMARY (exit %d):\n%s\n%s" % (
            result.returncode, result.stdout[-3000:], result.stderr[-3000:]))
    figures = dict(word.split("=", 1) for word in summary[-1].split()[1:] if "=" in word)
    if errors or figures.get("errors", "0") != "0":
        raise RuntimeError("client reported errors:\n%s" % "\n".join(errors[:10]))
    figures["wall_s"] = "%.1f" % (time.time() - started)
    return figures


def measure(args, name, endpoint, mode, worker_extra, **client):
    worker = None if args.external_worker else Process(
        [args.python, WORKER, "--endpoint", endpoint, "--mode", mode, "--file-kv", args.file_kv, "--quiet"]
        + worker_extra, "worker %s" % endpoint)
    try:
        return run_client(args, endpoint, **client)
    finally:
        if worker is not None:
            worker.stop()


def main(argv):
    args = parse_args(argv)
    if args.external_worker and not args.file_kv:
        sys.exit("dynamo_baseline: --external-worker needs --file-kv, the store its workers registered in")
    own_store = None
    if not args.file_kv:
        own_store = tempfile.TemporaryDirectory(prefix="dynamo-baseline-kv-")
        args.file_kv = own_store.name
    prefix = args.endpoint_prefix
    worker_side = "external worker" if args.external_worker else "Python worker"
    client_side = "external client" if args.client_cmd else "Python client"
    print("dynamo_baseline: %s -> %s, file discovery in %s" % (client_side, worker_side, args.file_kv), flush=True)
    for name in args.measurements:
        if name == "roundtrip":
            figures = measure(args, name, prefix + ".echo.generate", "echo", [],
                              requests=args.calls, warmup=args.warmup, concurrency=1, read=False)
            print("RESULT name=roundtrip calls=%d p50_ms=%s p90_ms=%s p99_ms=%s mean_ms=%s"
                  % (args.calls, figures["p50_ms"], figures["p90_ms"], figures["p99_ms"], figures["mean_ms"]),
                  flush=True)
        elif name == "encode":
            figures = measure(args, name, prefix + ".encoder.generate", "encode", ["--bytes", str(args.bytes)],
                              requests=args.encode_calls, warmup=args.encode_warmup, concurrency=1, read=True,
                              request='{"request": {i}}')
            print("RESULT name=encode bytes=%d calls=%d read_p50_ms=%s read_p90_ms=%s stream_p50_ms=%s stream_p90_ms=%s"
                  % (args.bytes, args.encode_calls, figures.get("read_p50_ms"), figures.get("read_p90_ms"),
                     figures["p50_ms"], figures["p90_ms"]), flush=True)
        else:
            figures = measure(args, name, prefix + ".hash.generate", "hash", ["--hash-rounds", str(args.hash_rounds)],
                              requests=args.hash_requests, warmup=min(200, args.hash_requests // 10),
                              concurrency=args.concurrency, read=False, request='{"n": {i}}')
            print("RESULT name=hash rounds=%d requests=%d concurrency=%d rps=%s p50_ms=%s p90_ms=%s"
                  % (args.hash_rounds, args.hash_requests, args.concurrency, figures["rps"], figures["p50_ms"],
                     figures["p90_ms"]), flush=True)
    if own_store is not None:
        own_store.cleanup()


if __name__ == "__main__":
    main(sys.argv[1:])
