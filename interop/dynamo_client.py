#!/usr/bin/env python3
"""A Dynamo client on the REAL dynamo.runtime (ai-dynamo-runtime 1.6.1, .ci/dynamo-runtime-setup.sh): calls an
endpoint NS.COMP.EP over Dynamo's own request plane, found through its own discovery (file or etcd), for the
request-plane tests (Python calls a Java worker) and the baselines (benchmarks/run-dynamo-baseline.sh).

  PYTHONPATH="$NIXL_PYTHON_PATH:$DYNAMO_RUNTIME_PATH" "$DYNAMO_RUNTIME_PYTHON" interop/dynamo_client.py \\
      --endpoint demo.encoder.generate --requests 10 --read --file-kv /tmp/kv

Each request is --request (JSON; every "{i}" in it becomes the request's index; default {"request": i}), sent
--requests times, --concurrency at a time, routed --router round-robin (default) | random | direct (--instance
<id hex>; default the first instance listed). The codec is the worker's: Dynamo's client encodes each request as
the instance's discovery entry says (request_plane_codec).
--read: a response with "nixl_readable_metadata" (the TRT-LLM encode-worker shape, or a KV block list) is read
through dynamo.nixl_connect into fresh host memory while its stream is open, as Dynamo's readers do.
--cancel-after K: after K responses the caller stops the stream (--cancel-how stop: context.stop_generating(),
Dynamo's "stop", then leaves the stream; stop-drain: stops, then reads the stream to its end; drop: the caller
leaves the stream, nothing said).
--timeout S: the whole call, responses included, in seconds (default 60).
--wait-instances N: wait until discovery lists N instances first (default 1); --list: print them and exit;
--watch: print them, then again each time the set changes (polled every 20 ms), until --wait-timeout has passed
(a discovery snapshot taken once at least N are listed can miss instances whose records had not come yet: a test
that must know an instance is gone watches for its removal after having seen it).

Prints one line per event on stdout (flushed), key=value:
  INSTANCES ids=<hex,hex,...>                        (--watch: once, then on every change, sorted)
  RESPONSE i=I k=K data=<JSON>                       (not with --quiet)
  READ i=I bytes=B sha256=<hex> ms=<the read> call_ms=<the call to this read's completion>   (--read)
  STOPPED i=I after=K how=HOW                       (--cancel-after)
  END i=I responses=K ms=<call time: the call to the stream's end, reads included>   (not with --quiet)
  ERROR i=I type=T message=M                         (the call failed: the runtime's exception or an error event)
  SUMMARY requests=N ok=K errors=E p50_ms=.. p90_ms=.. p99_ms=.. mean_ms=.. seconds=.. rps=..
          [read_p50_ms=.. read_p90_ms=..]   (p*_ms: calls to their stream's end; read_*: to the first read's end)
Ends with os._exit (0 when every call succeeded, 1 otherwise; 2 when no instance appeared): the upstream runtime
can crash during interpreter teardown where rdma-core is installed, so callers judge the client by what it printed.
"""

import argparse
import asyncio
import hashlib
import json
import math
import os
import sys
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
_out = threading.Lock()


def say(line):
    with _out:
        sys.stdout.write(line + "\n")
        sys.stdout.flush()


def as_json(value):
    return json.dumps(value, separators=(",", ":"), sort_keys=True, default=repr)


def parse_args(argv):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--endpoint", required=True, help="NS.COMP.EP")
    parser.add_argument("--discovery", choices=("file", "etcd", "mem"),
                        default=os.environ.get("DYN_DISCOVERY_BACKEND", "file"))
    parser.add_argument("--file-kv", default=os.environ.get("DYN_FILE_KV"))
    parser.add_argument("--etcd-endpoints", default=os.environ.get("ETCD_ENDPOINTS"))
    parser.add_argument("--host", default=os.environ.get("DYN_TCP_RESPONSE_STREAM_HOST", "127.0.0.1"),
                        help="the address workers call home to (DYN_TCP_RESPONSE_STREAM_HOST)")
    parser.add_argument("--router", choices=("round-robin", "random", "direct"), default="round-robin")
    parser.add_argument("--instance", default=None, help="direct: instance id (hex)")
    parser.add_argument("--requests", type=int, default=1)
    parser.add_argument("--concurrency", type=int, default=1)
    parser.add_argument("--request", default='{"request": {i}}')
    parser.add_argument("--warmup", type=int, default=0, help="calls made first and left out of the figures")
    parser.add_argument("--read", action="store_true")
    parser.add_argument("--cancel-after", type=int, default=0)
    parser.add_argument("--cancel-how", choices=("stop", "stop-drain", "drop"), default="stop",
                        help="stop: context.stop_generating() and leave the stream; stop-drain: stop and read the "
                             "stream to its end; drop: leave the stream unread (no stop)")
    parser.add_argument("--timeout", type=float, default=60.0)
    parser.add_argument("--wait-instances", type=int, default=1)
    parser.add_argument("--wait-timeout", type=float, default=30.0)
    parser.add_argument("--list", action="store_true")
    parser.add_argument("--watch", action="store_true")
    parser.add_argument("--quiet", action="store_true", help="no RESPONSE or END lines")
    return parser.parse_args(argv)


def configure_environment(args):
    os.environ["DYN_DISCOVERY_BACKEND"] = args.discovery
    if args.file_kv:
        os.environ["DYN_FILE_KV"] = args.file_kv
    if args.etcd_endpoints:
        os.environ["ETCD_ENDPOINTS"] = args.etcd_endpoints
    os.environ["DYN_TCP_RESPONSE_STREAM_HOST"] = args.host
    os.environ.setdefault("DYN_TCP_RPC_HOST", args.host)
    os.environ.setdefault("DYN_REQUEST_PLANE", "tcp")
    # The runtime logs every routed request at INFO, and some at INFO even under "warn": quiet unless asked.
    os.environ.setdefault("DYN_LOG", "error")


def percentile(sorted_values, fraction):
    if not sorted_values:
        return float("nan")
    # nearest rank: the smallest value with at least that fraction of the values at or below it
    return sorted_values[min(len(sorted_values) - 1, max(0, math.ceil(fraction * len(sorted_values)) - 1))]


class Reader:
    """Reads a readable's tensor through dynamo.nixl_connect, as the TRT-LLM prefill worker does."""

    def __init__(self):
        try:
            import torch  # noqa: F401  (a real torch wins when installed)
            del torch
        except ImportError:
            sys.path.append(os.path.join(HERE, "torch_stand_in"))
        import numpy
        import dynamo.nixl_connect
        self.np = numpy
        self.nc = dynamo.nixl_connect
        self.connector = dynamo.nixl_connect.Connector()

    async def read(self, reply):
        metadata = self.nc.RdmaMetadata.model_validate(reply["nixl_readable_metadata"])
        parts = [self.np.zeros(d.size, dtype=self.np.uint8) for d in metadata.descriptors]
        descriptors = [self.nc.Descriptor((part, "cpu")) for part in parts]
        operation = await self.connector.begin_read(
            metadata, descriptors[0] if len(descriptors) == 1 else descriptors)
        with operation:
            await operation.wait_for_completion()
            status = operation.status.name
        if status != "COMPLETE":
            raise RuntimeError("nixl_connect read ended %s" % status)
        digest = hashlib.sha256()
        for part in parts:
            digest.update(part.data)
        return sum(part.nbytes for part in parts), digest.hexdigest()


class Calls:
    def __init__(self, args, client, instance):
        self.args = args
        self.client = client
        self.instance = instance
        self.reader = Reader() if args.read else None
        self.latencies = []       # the call to its stream's end
        self.read_latencies = []  # the call to its first read's completion (--read): when the caller has the data
        self.errors = 0

    def request(self, index):
        return json.loads(self.args.request.replace("{i}", str(index)))

    async def stream(self, request, context):
        if self.args.router == "direct":
            return await self.client.direct(request, self.instance, context=context)
        if self.args.router == "random":
            return await self.client.random(request, context=context)
        return await self.client.round_robin(request, context=context)

    async def call(self, index, record):
        # A Context only where the caller cancels: with one, the runtime logs each request at INFO whatever DYN_LOG says.
        context = None
        if self.args.cancel_after:
            from dynamo.runtime import Context
            context = Context()
        started = time.perf_counter()
        responses = 0
        read_done = None
        try:
            async def run():
                nonlocal responses, read_done
                async for annotated in await self.stream(self.request(index), context):
                    data, event = annotated.data(), annotated.event()
                    if annotated.is_error() or event == "error":
                        raise RuntimeError("error event: %s %s" % (as_json(data), as_json(annotated.comments())))
                    responses += 1
                    if not self.args.quiet:
                        say("RESPONSE i=%d k=%d data=%s" % (index, responses, as_json(data)))
                    if self.reader is not None and isinstance(data, dict) and "nixl_readable_metadata" in data:
                        read_started = time.perf_counter()
                        size, digest = await self.reader.read(data)
                        now = time.perf_counter()
                        read_done = read_done or now
                        say("READ i=%d bytes=%d sha256=%s ms=%.3f call_ms=%.3f"
                            % (index, size, digest, (now - read_started) * 1000, (now - started) * 1000))
                    if self.args.cancel_after and responses == self.args.cancel_after:
                        if self.args.cancel_how != "drop":
                            context.stop_generating()
                        say("STOPPED i=%d after=%d how=%s" % (index, responses, self.args.cancel_how))
                        if self.args.cancel_how != "stop-drain":
                            break

            await asyncio.wait_for(run(), self.args.timeout)
        except BaseException as error:  # noqa: BLE001 (every failure is reported, the run goes on)
            if isinstance(error, (KeyboardInterrupt, SystemExit)):
                raise
            if isinstance(error, asyncio.TimeoutError):
                error = TimeoutError("no end of stream within %.1f s" % self.args.timeout)
            self.errors += record
            say("ERROR i=%d type=%s message=%s" % (index, type(error).__name__, str(error).replace("\n", " | ")))
            return
        elapsed = (time.perf_counter() - started) * 1000
        if not self.args.quiet:
            say("END i=%d responses=%d ms=%.3f" % (index, responses, elapsed))
        if record:
            self.latencies.append(elapsed)
            if read_done is not None:
                self.read_latencies.append((read_done - started) * 1000)

    async def run_all(self, count, first_index, record):
        queue = iter(range(first_index, first_index + count))

        async def lane():
            for index in queue:
                await self.call(index, record)

        await asyncio.gather(*(lane() for _ in range(max(1, self.args.concurrency))))


def finish(code):
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)


def main(argv):
    args = parse_args(argv)
    configure_environment(args)
    import uvloop
    from dynamo.runtime import dynamo_worker

    @dynamo_worker()
    async def run(runtime):
        client = await runtime.endpoint(args.endpoint).client()
        deadline = time.monotonic() + args.wait_timeout
        while len(client.instance_ids()) < args.wait_instances:
            if time.monotonic() > deadline:
                say("INSTANCES ids=%s" % ",".join("%x" % i for i in client.instance_ids()))
                say("ERROR i=-1 type=NoInstances message=fewer than %d instances of %s within %.0f s"
                    % (args.wait_instances, args.endpoint, args.wait_timeout))
                finish(2)
            await asyncio.sleep(0.02)
        ids = client.instance_ids()
        if args.watch:
            seen = sorted(ids)
            say("INSTANCES ids=%s" % ",".join("%x" % i for i in seen))
            while time.monotonic() < deadline:
                await asyncio.sleep(0.02)
                now = sorted(client.instance_ids())
                if now != seen:
                    seen = now
                    say("INSTANCES ids=%s" % ",".join("%x" % i for i in seen))
            finish(0)
        say("INSTANCES ids=%s" % ",".join("%x" % i for i in ids))
        if args.list:
            finish(0)
        instance = int(args.instance, 16) if args.instance else ids[0]
        calls = Calls(args, client, instance)
        if args.warmup:
            await calls.run_all(args.warmup, -args.warmup, record=False)
        started = time.perf_counter()
        await calls.run_all(args.requests, 0, record=True)
        seconds = time.perf_counter() - started
        values = sorted(calls.latencies)
        reads = sorted(calls.read_latencies)
        read_figures = (" read_p50_ms=%.3f read_p90_ms=%.3f" % (percentile(reads, 0.5), percentile(reads, 0.9))
                        if reads else "")
        say("SUMMARY requests=%d ok=%d errors=%d p50_ms=%.3f p90_ms=%.3f p99_ms=%.3f mean_ms=%.3f seconds=%.3f rps=%.1f%s"
            % (args.requests, len(values), calls.errors, percentile(values, 0.5), percentile(values, 0.9),
               percentile(values, 0.99), (sum(values) / len(values)) if values else float("nan"), seconds,
               args.requests / seconds if seconds > 0 else float("nan"), read_figures))
        finish(0 if calls.errors == 0 and len(values) == args.requests else 1)

    try:
        uvloop.run(run())
    except BaseException as error:  # noqa: BLE001
        say("ERROR i=-1 type=%s message=%s" % (type(error).__name__, error))
        finish(1)
    finish(1)


if __name__ == "__main__":
    main(sys.argv[1:])
