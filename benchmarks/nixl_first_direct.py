#!/usr/bin/env python3
"""The first operation to a new peer with NIXL driven directly through its Python API: the floor for
FirstOperationBenchmark's NIXL figures (io.nixlconnect.benchmarks.FirstOperationBenchmark), in the same shape.

One process, as the Java benchmark runs both connectors in one JVM: a long-lived reader, warmed up on another
producer first; per round a producer with a fresh agent (NIXL's progress thread off, as the Java agents). Each round
times the first complete 4 KiB READ with a notification (the producer's metadata, the reader loads it, creates and
posts the request, polls it, and the producer polls until the notification arrived), then 50 more (steady state).
One thread progresses both sides in turn, so nothing here waits for a parked peer: what remains is NIXL's and UCX's.

BENCH_FIRST_WARM_PRODUCER=1: each round's producer first serves one READ to a second reader, so that the timed
operation is between two agents that have each connected before (a new pair of warm agents), as
-Dbench.first.warmProducer=true does for the Java benchmark. BENCH_FIRST_PHASES=1 prints each first operation's phases.

Usage: PYTHONPATH=$NIXL_PYTHON_PATH python3 benchmarks/nixl_first_direct.py [rounds]   (default 15)
"""

import os
import sys
import time

try:
    from nixl._api import nixl_agent, nixl_agent_config
except ImportError:
    from nixl_cu12._api import nixl_agent, nixl_agent_config

import numpy as np

SIZE = 4096
STEADY = 50
WARMUP = int(os.environ.get("BENCH_FIRST_WARMUP", "2000"))
CONFIG = dict(enable_prog_thread=False, backends=["UCX"])


class Side:
    """An agent with one registered 4 KiB buffer."""

    def __init__(self, name, fill):
        self.agent = nixl_agent(name, nixl_agent_config(**CONFIG))
        self.buffer = np.full(SIZE, fill, dtype=np.uint8)
        self.agent.register_memory([(self.buffer.ctypes.data, SIZE, 0, "")], "DRAM")
        self.local = self.agent.get_xfer_descs([(self.buffer.ctypes.data, SIZE, 0)], "DRAM")


def operation(producer, reader, key, phases=None):
    """One complete READ of the producer's buffer into the reader's; returns nanoseconds."""
    start = time.perf_counter_ns()
    metadata = producer.agent.get_agent_metadata()
    remote = reader.agent.add_remote_agent(metadata)  # NIXL merges a reload of a known peer
    loaded = time.perf_counter_ns()
    remote_descs = reader.agent.get_xfer_descs([(producer.buffer.ctypes.data, SIZE, 0)], "DRAM")
    handle = reader.agent.initialize_xfer("READ", reader.local, remote_descs, remote, key)
    state = reader.agent.transfer(handle)
    posted = time.perf_counter_ns()
    notified = False
    while state == "PROC" or not notified:
        if state == "PROC":
            state = reader.agent.check_xfer_state(handle)
        if not notified:
            for messages in producer.agent.get_new_notifs().values():
                notified |= key in (bytes(message) for message in messages)
    end = time.perf_counter_ns()
    reader.agent.release_xfer_handle(handle)
    if state != "DONE":
        raise RuntimeError("transfer ended " + state)
    if phases is not None:
        phases.append((loaded - start, posted - loaded, end - posted))
    return end - start


def p50(values):
    return sorted(values)[len(values) // 2]


def main():
    rounds = int(sys.argv[1]) if len(sys.argv) > 1 else 15
    warm_producer = os.environ.get("BENCH_FIRST_WARM_PRODUCER") == "1"
    print_phases = os.environ.get("BENCH_FIRST_PHASES") == "1"
    reader = Side("first-reader", 0)
    other_reader = Side("first-other-reader", 0) if warm_producer else None
    warm = Side("first-warmup", 1)
    for i in range(WARMUP):
        operation(warm, reader, b"warm-%d" % i)
        if other_reader is not None and i % 10 == 0:
            operation(warm, other_reader, b"warm-other-%d" % i)
    first, steady, phases = [], [], []
    for round_ in range(rounds):
        name = "first-producer-%d" % round_
        producer = Side(name, 1)
        if other_reader is not None:
            operation(producer, other_reader, b"other-%d" % round_)
        first.append(operation(producer, reader, b"first-%d" % round_, phases))
        if print_phases:
            print("  load %.3f ms, create and post %.3f ms, both sides complete %.3f ms"
                  % tuple(p / 1e6 for p in phases[-1]), flush=True)
        for i in range(STEADY):
            steady.append(operation(producer, reader, b"steady-%d-%d" % (round_, i)))
        reader.agent.remove_remote_agent(name)
        if other_reader is not None:
            other_reader.agent.remove_remote_agent(name)
    print("NIXL direct (Python) first operation to a new peer%s: p50 %.3f ms, max %.3f ms (%d rounds); steady p50 "
          "%.3f ms (%d); first/steady %.2fx" % (" (warm producer)" if warm_producer else "", p50(first) / 1e6,
                                               max(first) / 1e6, rounds, p50(steady) / 1e6, len(steady),
                                               p50(first) / p50(steady)))
    print("  phase p50, first: load %.3f ms, create and post %.3f ms, both sides complete %.3f ms"
          % tuple(p50([p[i] for p in phases]) / 1e6 for i in range(3)), flush=True)
    # Skip interpreter teardown: with the wheel's UCX, exit-time destructors can crash (docs/nixl.md).
    os._exit(0)


if __name__ == "__main__":
    main()
