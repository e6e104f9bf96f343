#!/usr/bin/env python3
"""NIXL driven directly through its Python API: the baseline for TransferBenchmark's NIXL numbers.

Same shape as io.nixlconnect.benchmarks.TransferBenchmark: two processes on one host (this one reads,
a child publishes), READ with a notification. First, after the warm-up, the latency of one small (4 KiB)
READ: create + post + wait. Then the bandwidth of sizes 4 KiB .. 1 GiB. Each size: both sides register
one buffer once; each iteration the reader creates the transfer request, posts it and waits for DONE
(timed), then waits, untimed, until the publisher reports the notification (as the Java reader waits
for the peer's DONE).

Usage: PYTHONPATH=$NIXL_PYTHON_PATH python3 benchmarks/nixl_direct.py [maxSizeBytes]

numpy gives large arrays huge-page advice (MADV_HUGEPAGE) unless NUMPY_MADVISE_HUGEPAGE=0; the Java
benchmark matches it with -Dbench.hugepages (benchmarks/run-nixl.sh sets both from BENCH_HUGEPAGES).
"""

import collections
import multiprocessing as mp
import os
import sys
import time

try:
    from nixl._api import nixl_agent, nixl_agent_config
except ImportError:
    from nixl_cu12._api import nixl_agent, nixl_agent_config

import numpy as np

SIZES = [4 << 10, 64 << 10, 1 << 20, 16 << 20, 64 << 20, 256 << 20, 1 << 30]
LATENCY_SIZE, LATENCY_ITERATIONS = 4096, 3000
# TransferBenchmark's WARMUP_OPERATIONS: complete 4 KiB operations before anything is measured (the JVMs need
# them to reach compiled code; run here too so that both sides do the same work first).
WARMUP_OPERATIONS = int(os.environ.get("BENCH_WARMUP", "20000"))
# TransferBenchmark's SIZE_WARMUP_NANOS: each bandwidth size also warms up for at least this long before it is
# measured (the JVMs recompile the operation path when a size brings new profiles; the same work here).
SIZE_WARMUP_SECONDS = int(os.environ.get("BENCH_SIZE_WARMUP_MILLIS", "2000")) / 1000
# Like the Java agents: NIXL's own progress thread off, the caller polls.
CONFIG = dict(enable_prog_thread=False, backends=["UCX"])


def iterations_for(size):
    iterations = max(20, min(2000, (4 << 30) // size))
    return iterations, max(2, iterations // 10)


def publisher(conn):
    """The passive side: registers a buffer per size, answers each awaited notification with 'DONE'.

    It drains notifications all the time, not only while awaiting one: with NIXL's progress thread off,
    that is what makes its side progress (connection set-up included), as the Java agent's loop does.
    """
    agent = nixl_agent("direct-publisher", nixl_agent_config(**CONFIG))
    buffer = registration = None
    received = collections.Counter()
    awaited = None
    while True:
        for messages in agent.get_new_notifs().values():
            received.update(bytes(message) for message in messages)
        if awaited is not None and received[awaited] > 0:
            received[awaited] -= 1
            awaited = None
            conn.send("DONE")
        if not conn.poll(0):  # poll(timeout) would round a timeout up to whole milliseconds
            time.sleep(0.00002)
            continue
        command = conn.recv()
        if command[0] == "alloc":
            if registration is not None:
                agent.deregister_memory(registration)
            buffer = np.ones(command[1], dtype=np.uint8)
            registration = agent.register_memory([(buffer.ctypes.data, buffer.nbytes, 0, "")], "DRAM")
            conn.send((agent.get_agent_metadata(), buffer.ctypes.data))
        elif command[0] == "await":
            awaited = command[1]
        elif command[0] == "exit":
            return


class Reader:
    def __init__(self, conn):
        self.conn = conn
        self.agent = nixl_agent("direct-reader", nixl_agent_config(**CONFIG))
        self.registration = None

    def prepare(self, size):
        self.conn.send(("alloc", size))
        metadata, remote_ptr = self.conn.recv()
        remote = self.agent.add_remote_agent(metadata)  # NIXL merges a reload of a known peer
        if self.registration is not None:
            self.agent.deregister_memory(self.registration)
        self.target = np.zeros(size, dtype=np.uint8)
        self.registration = self.agent.register_memory([(self.target.ctypes.data, size, 0, "")], "DRAM")
        self.local = self.agent.get_xfer_descs([(self.target.ctypes.data, size, 0)], "DRAM")
        self.remote_descs = self.agent.get_xfer_descs([(remote_ptr, size, 0)], "DRAM")
        self.remote = remote

    def read_once(self, key):
        """create + post + wait: one operation, as the Java reader's beginRead + waitForCompletion."""
        start = time.perf_counter_ns()
        handle = self.agent.initialize_xfer("READ", self.local, self.remote_descs, self.remote, key)
        state = self.agent.transfer(handle)
        while state == "PROC":
            state = self.agent.check_xfer_state(handle)
        elapsed = time.perf_counter_ns() - start
        self.agent.release_xfer_handle(handle)
        if state != "DONE":
            raise RuntimeError("transfer ended " + state)
        return elapsed

    def notified(self, key):
        self.conn.send(("await", key))
        self.conn.recv()

    def bandwidth(self, size):
        self.prepare(size)
        iterations, warmup = iterations_for(size)
        gbps = []
        warmup_start, i = time.monotonic(), 0
        while i < warmup or time.monotonic() - warmup_start < SIZE_WARMUP_SECONDS:
            key = b"warm-%d" % i
            self.read_once(key)
            self.notified(key)
            i += 1
        for i in range(iterations):
            key = b"bw-%d" % i
            elapsed = self.read_once(key)
            self.notified(key)
            gbps.append(size / elapsed)
        gbps.sort()
        print("%-10s %6d %12.2f %12.2f" % (human(size), iterations, gbps[iterations // 2], gbps[-1]), flush=True)

    def latency(self, warmup, iterations=LATENCY_ITERATIONS):
        self.prepare(LATENCY_SIZE)
        nanos = []
        for i in range(-warmup, iterations):
            key = b"lat-%d" % i
            elapsed = self.read_once(key)
            self.notified(key)
            if i >= 0:
                nanos.append(elapsed)
        nanos.sort()
        print("latency of one %s READ (create + post + wait; NIXL direct): p50 %.1f us, p99 %.1f us (%d iterations)"
              % (human(LATENCY_SIZE), nanos[len(nanos) // 2] / 1e3, nanos[int(len(nanos) * 0.99)] / 1e3,
                 len(nanos)), flush=True)


def huge_page_advice():
    core = getattr(np, "_core", None) or np.core  # numpy 2 renamed np.core
    return core.multiarray._get_madvise_hugepage()


def human(size):
    if size >= 1 << 30:
        return "%d GiB" % (size >> 30)
    if size >= 1 << 20:
        return "%d MiB" % (size >> 20)
    return "%d KiB" % (size >> 10)


def main():
    max_size = int(sys.argv[1]) if len(sys.argv) > 1 else 1 << 30
    ours, theirs = mp.Pipe()
    child = mp.get_context("spawn").Process(target=publisher, args=(theirs,), daemon=True)
    child.start()
    try:
        reader = Reader(ours)
        print("NIXL direct (Python API), two processes, READ with notification; huge-page advice: %s"
              % huge_page_advice())
        reader.latency(WARMUP_OPERATIONS)  # first, straight after the warm-up, as TransferBenchmark does
        print("%-10s %6s %12s %12s" % ("size", "iters", "median GB/s", "best GB/s"), flush=True)
        for size in SIZES:
            if size > max_size:
                break
            reader.bandwidth(size)
        ours.send(("exit",))
        child.join(10)
    finally:
        if child.is_alive():
            child.kill()
    sys.stdout.flush()
    # Skip interpreter teardown: with the wheel's UCX, exit-time destructors can crash (docs/nixl.md).
    os._exit(0)


if __name__ == "__main__":
    main()
