#!/usr/bin/env python3
"""Reproduces, with upstream code only (dynamo.nixl_connect 1.6.1 on NIXL 1.5.1 and its UCX 1.23; no Java), the abort
that the NIXL soak's Python pass over UCX_TLS=tcp,self meets (docs/reliability.md): a process serving READs over TCP
dies when a reader dies mid-read.

Over TCP a READ is UCX's software GET: the reader sends a GET request and the serving process's UCX worker sends the
bytes back in fragments as it progresses. When the reader dies (SIGKILL, or SIGSTOP and then SIGKILL) with fragments
still to send, UCX aborts the serving process: "ucp_request.inl:356 Fatal: unexpected error: Endpoint timeout" (the
GET reply's send fails inside the request handler) or "stubs.c:107 Assertion `0' failed" (a TCP endpoint destroyed
with GET replies still pending on it).

Here the serving process is this script: a dynamo.nixl_connect readable over 64 MiB, read by
interop/dynamo_soak_consumer.py readers that post the read and stop progressing (as the soak's do), each killed at
once or stopped for 2.5 s and then killed. Prints "survived N rounds" at the end; an abort ends it before that.

With "write" the direction is the other one, the one docs/nixl.md weighs as the way around it: this process WRITEs
64 MiB into a writable of a target process (this script with "target") that is killed or stopped mid-write.

  python3 interop/ucx_tcp_get_abort.py [ROUNDS [read|write]]   # benchmarks/run-ucx-tcp-get-abort.sh sets the environment
"""

import asyncio
import os
import random
import signal
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.append(os.path.join(HERE, "torch_stand_in"))  # the module imports torch for isinstance checks only

import numpy as np  # noqa: E402

import dynamo.nixl_connect as nc  # noqa: E402


def start_reader():
    reader = subprocess.Popen([sys.executable, "-u", os.path.join(HERE, "dynamo_soak_consumer.py"), "reader"],
                              stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    return reader


def next_line(reader, prefix):
    """The reader's next line starting with prefix (the module logs to stdout too); None if it died."""
    while True:
        line = reader.stdout.readline()
        if not line or line.startswith(prefix):
            return line or None


def disturb(process):
    """Kills the peer at once, or stops it for 2.5 s and then kills it; returns what it did."""
    stopped = random.random() < 0.5
    if stopped:
        process.send_signal(signal.SIGSTOP)
        time.sleep(2.5)
    else:
        time.sleep(random.random() * 0.05)
    process.kill()
    process.wait()
    return "stopped, then killed" if stopped else "killed"


def target():
    """A writable over 64 MiB: prints "META JSON", then waits to be killed."""
    loop = asyncio.new_event_loop()
    connector = nc.Connector(worker_id="tcp-write-target-%d" % os.getpid())
    memory = np.zeros(64 << 20, dtype=np.uint8)
    writable = loop.run_until_complete(connector.create_writable(nc.Descriptor((memory, "cpu"))))
    print("META " + writable.metadata().model_dump_json(), flush=True)
    for _ in sys.stdin:
        pass  # until killed


def writes(rounds):
    """This process writes into targets that die mid-write; each write must end (with an error), not abort it."""
    loop = asyncio.new_event_loop()
    connector = nc.Connector(worker_id="tcp-writer-%d" % os.getpid())
    memory = np.ones(64 << 20, dtype=np.uint8)
    random.seed(os.getpid())
    for index in range(1, rounds + 1):
        peer = subprocess.Popen([sys.executable, "-u", os.path.abspath(__file__), "1", "target"],
                                stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        line = next_line(peer, "META ")
        if line is None:
            sys.exit("round %d: the target died before META" % index)
        metadata = nc.RdmaMetadata.model_validate_json(line.split(maxsplit=1)[1])
        write = loop.run_until_complete(connector.begin_write(nc.Descriptor((memory, "cpu")), metadata))
        write.status  # the first status read posts the transfer
        what = disturb(peer)
        try:
            loop.run_until_complete(asyncio.wait_for(write.wait_for_completion(), 10))
            ended = "completed"
        except Exception as error:  # the target died: any error is what a caller meets
            ended = type(error).__name__
        try:
            write.__exit__(None, None, None)
        except Exception:  # the module's release reads the status once more, which raises for a dead target
            pass
        print("round %d: target %s, write %s, this process alive" % (index, what, ended), flush=True)
    print("survived %d rounds" % rounds, flush=True)


def main():
    rounds = int(sys.argv[1]) if len(sys.argv) > 1 else 200
    mode = sys.argv[2] if len(sys.argv) > 2 else "read"
    if mode == "target":
        target()
        return
    if mode == "write":
        writes(rounds)
        return
    loop = asyncio.new_event_loop()
    connector = nc.Connector(worker_id="tcp-get-abort-%d" % os.getpid())
    memory = np.ones(64 << 20, dtype=np.uint8)
    random.seed(os.getpid())
    for index in range(1, rounds + 1):
        reader = start_reader()
        if next_line(reader, "READY") is None:
            sys.exit("round %d: the reader died before READY" % index)
        readable = loop.run_until_complete(connector.create_readable(nc.Descriptor((memory, "cpu"))))
        reader.stdin.write("read " + readable.metadata().model_dump_json() + "\n")
        reader.stdin.flush()
        if next_line(reader, "STARTED") is None:
            sys.exit("round %d: the reader died before STARTED" % index)
        what = disturb(reader)
        time.sleep(0.2)  # this process's NIXL progress thread serves (and fails) what is left
        readable.__exit__(None, None, None)
        print("round %d: reader %s, this process alive" % (index, what), flush=True)
    print("survived %d rounds" % rounds, flush=True)


if __name__ == "__main__":
    main()
