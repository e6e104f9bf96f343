#!/usr/bin/env python3
"""A Dynamo worker on the REAL dynamo.runtime (ai-dynamo-runtime 1.6.1, .ci/dynamo-runtime-setup.sh): serves one
endpoint NS.COMP.EP over Dynamo's own request plane (TCP) and discovery (file or etcd), for the request-plane tests
(a Java client calls it) and the baselines (benchmarks/run-dynamo-baseline.sh).

  PYTHONPATH="$NIXL_PYTHON_PATH:$DYNAMO_RUNTIME_PATH" "$DYNAMO_RUNTIME_PYTHON" interop/dynamo_worker.py \\
      --endpoint demo.encoder.generate --mode encode --bytes 16777216 --file-kv /tmp/kv

Modes (each request is answered by one handler call; a request is any JSON-like value):
  echo    one response: the request itself
  encode  shaped like Dynamo's TRT-LLM encode worker (dynamo/trtllm/encode_helper.py, embedding-path flow): a fresh
          tensor of --bytes random bytes made readable through dynamo.nixl_connect, one response
          {"nixl_readable_metadata": RdmaMetadata.model_dump(), "embeddings_shape": [...],
           "embeddings_dtype": "torch.uint8", "auxiliary_data": {}}
          then the handler waits for the reader (--read-timeout) before its stream ends
  kv      like encode, over a KV-cache block list: --blocks (default 1024) blocks of --block-bytes, one descriptor
          each; one response {"nixl_readable_metadata": ... (one descriptor per block), "block_ids": [0..N-1],
          "block_bytes": B, "kv_dtype": "torch.uint8"}; waits for the reader
  stream  --count responses {"index": i, "count": N}, --delay-ms apart
  error   --count responses like stream, then raises RuntimeError("dynamo_worker: error after K responses")
  slow    like stream with --delay-ms (default 200) before each response and --count (default 1000): for
          cancellation (stop/kill) and timeouts; prints CANCELLED when the caller stops it
  hash    fixed CPU work per request: d = str(request["n"]) (0 without one) as UTF-8; d = SHA-256(d) --hash-rounds
          times; one response {"n": n, "sha256": hex(d)} (the same work a Java worker does, for requests/s)
  die     --count responses like stream, then the process ends at once (os._exit(17)): a worker dying mid-stream
  refuse  the handler raises RuntimeError("dynamo_worker: refused <request id>") when called, before it has a
          stream: the runtime answers with an error prologue ({"error": "...", "typed_error": {...}})

Options: --discovery file|etcd (default: $DYN_DISCOVERY_BACKEND, else file), --file-kv DIR ($DYN_FILE_KV),
--etcd-endpoints URLS ($ETCD_ENDPOINTS), --codec msgpack|json (the payload codec this worker advertises in
discovery: DYN_REQUEST_PLANE_CODEC), --host (DYN_TCP_RPC_HOST, default 127.0.0.1), --requests N (serve N requests,
deregister, exit 0), --seed S (random tensors from numpy's PCG64 stream, default fresh entropy), --quiet (no
REQUEST lines). The runtime's own log: DYN_LOG (default here: error).

Prints one line per event on stdout (flushed), key=value, for tests to parse:
  READY endpoint=E instance=<id hex> mode=M codec=C discovery=D
  REQUEST n=K id=<request id> body=<JSON>
  SERVED n=K bytes=B sha256=<hex> id=<request id>    (encode/kv: once the reader completed)
  UNREAD n=K id=<request id> status=<status>          (encode/kv: no read within --read-timeout)
  CANCELLED n=K id=<request id> after=<responses sent> (the caller stopped or killed the stream)
  HANDLER_ERROR n=K id=<request id> type=T message=M  (an unexpected failure in this script)
  DONE requests=N                                      (after --requests N, or on SIGTERM/SIGINT)
The process ends with os._exit after DONE: where rdma-core is installed the upstream runtime can crash during
interpreter teardown (libnl rtnl_tc_unregister), so callers judge this worker by what it printed.
"""

import argparse
import asyncio
import hashlib
import json
import os
import signal
import sys
import threading

HERE = os.path.dirname(os.path.abspath(__file__))
MODES = ("echo", "encode", "kv", "stream", "error", "slow", "hash", "die", "refuse")

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
    parser.add_argument("--mode", choices=MODES, default="echo")
    parser.add_argument("--discovery", choices=("file", "etcd", "mem"),
                        default=os.environ.get("DYN_DISCOVERY_BACKEND", "file"))
    parser.add_argument("--file-kv", default=os.environ.get("DYN_FILE_KV"))
    parser.add_argument("--etcd-endpoints", default=os.environ.get("ETCD_ENDPOINTS"))
    parser.add_argument("--codec", choices=("msgpack", "json"),
                        default=os.environ.get("DYN_REQUEST_PLANE_CODEC", "msgpack"))
    parser.add_argument("--host", default=os.environ.get("DYN_TCP_RPC_HOST", "127.0.0.1"))
    parser.add_argument("--requests", type=int, default=0, help="serve N requests then exit (0: until signalled)")
    parser.add_argument("--bytes", type=int, default=1 << 20, help="encode: tensor size")
    parser.add_argument("--blocks", type=int, default=1024, help="kv: number of blocks")
    parser.add_argument("--block-bytes", type=int, default=4096, help="kv: bytes per block")
    parser.add_argument("--count", type=int, default=None, help="stream/error/slow/die: responses")
    parser.add_argument("--delay-ms", type=float, default=None, help="stream/error/slow/die: delay per response")
    parser.add_argument("--hash-rounds", type=int, default=2000, help="hash: SHA-256 rounds per request")
    parser.add_argument("--read-timeout", type=float, default=60.0, help="encode/kv: seconds to wait for the reader")
    parser.add_argument("--seed", type=int, default=None)
    parser.add_argument("--quiet", action="store_true", help="no REQUEST lines (benchmarks)")
    args = parser.parse_args(argv)
    if args.count is None:
        args.count = 1000 if args.mode == "slow" else 3
    if args.delay_ms is None:
        args.delay_ms = 200.0 if args.mode == "slow" else 0.0
    return args


def configure_environment(args):
    """The runtime reads its configuration from the environment (dynamo_worker() and the Rust side)."""
    os.environ["DYN_DISCOVERY_BACKEND"] = args.discovery
    if args.file_kv:
        os.environ["DYN_FILE_KV"] = args.file_kv
    if args.etcd_endpoints:
        os.environ["ETCD_ENDPOINTS"] = args.etcd_endpoints
    os.environ["DYN_REQUEST_PLANE_CODEC"] = args.codec
    os.environ["DYN_TCP_RPC_HOST"] = args.host
    os.environ.setdefault("DYN_TCP_RESPONSE_STREAM_HOST", args.host)
    os.environ.setdefault("DYN_REQUEST_PLANE", "tcp")
    # The runtime logs every routed request at INFO, and some at INFO even under "warn": quiet unless asked.
    os.environ.setdefault("DYN_LOG", "error")


def hash_work(n, rounds):
    digest = str(n).encode("utf-8")
    for _ in range(rounds):
        digest = hashlib.sha256(digest).digest()
    return digest.hex()


class Worker:
    def __init__(self, args, runtime, endpoint):
        self.args = args
        self.runtime = runtime
        self.endpoint = endpoint
        self.served = 0
        self.started = 0
        self.finished = asyncio.Event()
        self.connector = None
        self.rng = None

    async def nixl(self):
        # Imported on first use: echo/stream/hash workers need no NIXL.
        if self.connector is None:
            global nc, np
            try:
                import torch  # noqa: F401  (a real torch wins when installed)
                del torch
            except ImportError:
                sys.path.append(os.path.join(HERE, "torch_stand_in"))
            import numpy as np
            import dynamo.nixl_connect as nc
            self.rng = np.random.default_rng(self.args.seed)
            self.connector = nc.Connector()
        return self.connector

    async def handle(self, request, context):
        self.started += 1
        n = self.started
        request_id = context.id() if context is not None else "-"
        if not self.args.quiet:
            say("REQUEST n=%d id=%s body=%s" % (n, request_id, as_json(request)))
        sent = 0
        try:
            mode = self.args.mode
            if mode == "echo":
                yield request
                sent += 1
            elif mode == "hash":
                number = request.get("n", 0) if isinstance(request, dict) else 0
                yield {"n": number, "sha256": hash_work(number, self.args.hash_rounds)}
                sent += 1
            elif mode in ("encode", "kv"):
                async for response in self.readable(n, request_id, mode):
                    yield response
                    sent += 1
            else:
                for index in range(self.args.count):
                    if mode == "slow" or self.args.delay_ms > 0:
                        await asyncio.sleep(self.args.delay_ms / 1000.0)
                    if context is not None and (context.is_stopped() or context.is_killed()):
                        say("CANCELLED n=%d id=%s after=%d" % (n, request_id, sent))
                        return
                    yield {"index": index, "count": self.args.count}
                    sent += 1
                if mode == "error":
                    raise RuntimeError("dynamo_worker: error after %d responses" % sent)
                if mode == "die":
                    say("DYING n=%d id=%s after=%d" % (n, request_id, sent))
                    os._exit(17)
        except asyncio.CancelledError:
            say("CANCELLED n=%d id=%s after=%d" % (n, request_id, sent))
            raise
        except RuntimeError:
            raise
        except Exception as error:
            say("HANDLER_ERROR n=%d id=%s type=%s message=%s" % (n, request_id, type(error).__name__, error))
            raise
        finally:
            self.served += 1
            if self.args.requests and self.served >= self.args.requests:
                self.finished.set()

    async def readable(self, n, request_id, mode):
        connector = await self.nixl()
        if mode == "encode":
            tensor = np.frombuffer(self.rng.bytes(self.args.bytes), dtype=np.uint8).copy()
            parts = [tensor]
            descriptor = nc.Descriptor((tensor, "cpu"))
        else:
            pool = np.frombuffer(self.rng.bytes(self.args.blocks * self.args.block_bytes), dtype=np.uint8).copy()
            parts = [pool[i * self.args.block_bytes:(i + 1) * self.args.block_bytes] for i in range(self.args.blocks)]
            descriptor = [nc.Descriptor((part, "cpu")) for part in parts]
        digest = hashlib.sha256()
        for part in parts:
            digest.update(part.data)
        total = sum(part.nbytes for part in parts)
        operation = await connector.create_readable(descriptor)
        with operation:
            metadata = operation.metadata().model_dump()
            if mode == "encode":
                yield {
                    "nixl_readable_metadata": metadata,
                    "embeddings_shape": list(tensor.shape),
                    "embeddings_dtype": "torch.uint8",
                    "auxiliary_data": {},
                }
            else:
                yield {
                    "nixl_readable_metadata": metadata,
                    "block_ids": list(range(self.args.blocks)),
                    "block_bytes": self.args.block_bytes,
                    "kv_dtype": "torch.uint8",
                }
            try:
                await asyncio.wait_for(operation.wait_for_completion(), self.args.read_timeout)
            except asyncio.TimeoutError:
                say("UNREAD n=%d id=%s status=%s" % (n, request_id, operation.status.name))
                return
            if operation.status.name == "COMPLETE":
                say("SERVED n=%d bytes=%d sha256=%s id=%s" % (n, total, digest.hexdigest(), request_id))
            else:
                say("UNREAD n=%d id=%s status=%s" % (n, request_id, operation.status.name))


def done(worker):
    say("DONE requests=%d" % (worker.served if worker else 0))
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0)


def main(argv):
    args = parse_args(argv)
    configure_environment(args)
    import uvloop
    from dynamo.runtime import dynamo_worker

    state = {}

    @dynamo_worker()
    async def run(runtime):
        endpoint = runtime.endpoint(args.endpoint)
        worker = Worker(args, runtime, endpoint)
        state["worker"] = worker
        loop = asyncio.get_running_loop()
        for signum in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(signum, worker.finished.set)

        async def streaming_handler(request, context=None):
            async for response in worker.handle(request, context):
                yield response

        def refusing_handler(request, context=None):
            """Not a generator: it fails before any stream exists (the runtime sends an error prologue)."""
            worker.served += 1
            request_id = context.id() if context is not None else "-"
            if not args.quiet:
                say("REQUEST n=%d id=%s body=%s" % (worker.served, request_id, as_json(request)))
            if args.requests and worker.served >= args.requests:
                worker.finished.set()
            raise RuntimeError("dynamo_worker: refused %s" % request_id)

        handler = refusing_handler if args.mode == "refuse" else streaming_handler

        serving = asyncio.ensure_future(endpoint.serve_endpoint(handler))
        # serve_endpoint registers in discovery before it starts accepting: wait until this instance is listed.
        client = await endpoint.client()
        instance = endpoint.connection_id()
        while instance not in client.instance_ids():
            if serving.done():
                serving.result()  # raises what made serving fail
            await asyncio.sleep(0.01)
        say("READY endpoint=%s instance=%x mode=%s codec=%s discovery=%s"
            % (args.endpoint, instance, args.mode, args.codec, args.discovery))
        await worker.finished.wait()
        # Leave discovery first, so callers stop routing here, then end.
        try:
            await asyncio.wait_for(endpoint.unregister_endpoint_instance(), 5)
        except Exception as error:  # the process ends either way; say so for whoever reads the log
            say("UNREGISTER_FAILED type=%s message=%s" % (type(error).__name__, error))
        done(worker)

    try:
        uvloop.run(run())
    except BaseException as error:  # noqa: BLE001 (report anything that stops the worker, then end)
        say("FAILED type=%s message=%s" % (type(error).__name__, error))
        sys.stdout.flush()
        os._exit(1)
    done(state.get("worker"))


if __name__ == "__main__":
    main(sys.argv[1:])
