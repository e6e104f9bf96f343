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

  python3 interop/ucx_tcp_get_abort.py [ROUNDS]      # benchmarks/run-ucx-tcp-get-abort.sh sets the environment
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


def main():
    rounds = int(sys.argv[1]) if len(sys.argv) > 1 else 200
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
        stopped = random.random() < 0.5
        if stopped:
            reader.send_signal(signal.SIGSTOP)
            time.sleep(2.5)
        else:
            time.sleep(random.random() * 0.05)
        reader.kill()
        reader.wait()
        time.sleep(0.2)  # this process's NIXL progress thread serves (and fails) what is left
        readable.__exit__(None, None, None)
        print("round %d: reader %s, this process alive" % (index, "stopped, then killed" if stopped else "killed"),
              flush=True)
    print("survived %d rounds" % rounds, flush=True)


if __name__ == "__main__":
    main()
