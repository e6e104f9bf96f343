#!/usr/bin/env python3
"""KV-cache shape driven directly through NIXL's Python API: the baseline for KvBenchmark's NIXL rows.

One process, two agents (like KvBenchmark's two connectors in one JVM), NIXL's progress thread off, the caller
polls both. Per shape N x B: both agents register a pool of 2N blocks once and load each other's metadata once;
the active agent moves every other block (shuffled) with a notification, and an operation ends when the transfer is
DONE and the passive agent has received the notification. Three modes, iterations alternating:
  plain      - descriptor lists built per operation, initialize_xfer (what a one-off caller does)
  prepared   - both pools prepared once with prep_xfer_dlist; per operation make_prepped_xfer with index lists
  contiguous - one descriptor of the same bytes per side, initialize_xfer
No metadata crosses per operation here (NIXL's Python API has no such step): this is the transport's floor.

Usage: PYTHONPATH=$NIXL_PYTHON_PATH python3 benchmarks/nixl_kv_direct.py [NxB,...]
"""

import os
import random
import resource
import sys
import time

try:
    from nixl._api import nixl_agent, nixl_agent_config
except ImportError:
    from nixl_cu12._api import nixl_agent, nixl_agent_config

import numpy as np

ITERATIONS = int(os.environ.get("BENCH_KV_ITERATIONS", "200"))
WARMUP = int(os.environ.get("BENCH_KV_WARMUP", "300"))
CONFIG = dict(enable_prog_thread=False, backends=["UCX"])


def cpu_seconds():
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def main():
    shapes = sys.argv[1] if len(sys.argv) > 1 else "128x65536,1024x16384,4096x4096"
    active = nixl_agent("kv-direct-active", nixl_agent_config(**CONFIG))
    passive = nixl_agent("kv-direct-passive", nixl_agent_config(**CONFIG))
    print(f"{'backend':<20} {'op':<5} {'shape':<12} {'mode':<10} {'p50 ms':>9} {'p99 ms':>9} {'GB/s':>8} "
          f"{'GB/CPU-second':>14} {'p50 ratio':>9}")
    loaded = False
    for shape in shapes.split(","):
        blocks, block_size = (int(x) for x in shape.strip().split("x"))
        pool_size = 2 * blocks * block_size
        active_pool = np.full(pool_size, 2, dtype=np.uint8)
        passive_pool = np.full(pool_size, 1, dtype=np.uint8)
        active_reg = active.register_memory([(active_pool.ctypes.data, pool_size, 0, "")], "DRAM")
        passive_reg = passive.register_memory([(passive_pool.ctypes.data, pool_size, 0, "")], "DRAM")
        if not loaded:
            active.add_remote_agent(passive.get_agent_metadata())
            passive.add_remote_agent(active.get_agent_metadata())
            loaded = True
        else:  # the passive pool is new: NIXL merges a reload of a known peer
            active.add_remote_agent(passive.get_agent_metadata())
        rng = random.Random(blocks)
        passive_idx = [2 * i + 1 for i in range(blocks)]
        active_idx = [2 * i + 1 for i in range(blocks)]
        rng.shuffle(passive_idx)
        rng.shuffle(active_idx)
        a_base = active_pool.ctypes.data
        p_base = passive_pool.ctypes.data
        pool_list = lambda base: [(base + i * block_size, block_size, 0) for i in range(2 * blocks)]
        active_prepped = active.prep_xfer_dlist("NIXL_INIT_AGENT", pool_list(a_base), "DRAM")
        remote_prepped = active.prep_xfer_dlist("kv-direct-passive", pool_list(p_base), "DRAM")
        a_idx = np.array(active_idx, dtype=np.int32)
        p_idx = np.array(passive_idx, dtype=np.int32)
        counter = [0]

        def finish(handle, tag):
            while True:
                state = active.check_xfer_state(handle)
                if state == "DONE":
                    break
                if state == "ERR":
                    raise RuntimeError("transfer failed")
                passive.get_new_notifs()  # the passive side progresses too (no progress thread)
            while True:
                notes = passive.update_notifs()
                if tag in notes.get("kv-direct-active", []):
                    notes["kv-direct-active"].remove(tag)
                    break
            active.release_xfer_handle(handle)

        def plain(op):
            counter[0] += 1
            tag = b"kv%d" % counter[0]
            start = time.perf_counter_ns()
            local = active.get_xfer_descs([(a_base + i * block_size, block_size, 0) for i in active_idx], "DRAM")
            remote = active.get_xfer_descs([(p_base + i * block_size, block_size, 0) for i in passive_idx], "DRAM")
            handle = active.initialize_xfer(op, local, remote, "kv-direct-passive", tag)
            active.transfer(handle)
            finish(handle, tag)
            return time.perf_counter_ns() - start

        def prepared(op):
            counter[0] += 1
            tag = b"kv%d" % counter[0]
            start = time.perf_counter_ns()
            handle = active.make_prepped_xfer(op, active_prepped, a_idx, remote_prepped, p_idx, tag)
            active.transfer(handle)
            finish(handle, tag)
            return time.perf_counter_ns() - start

        def contiguous(op):
            counter[0] += 1
            tag = b"kv%d" % counter[0]
            start = time.perf_counter_ns()
            local = active.get_xfer_descs([(a_base, blocks * block_size, 0)], "DRAM")
            remote = active.get_xfer_descs([(p_base, blocks * block_size, 0)], "DRAM")
            handle = active.initialize_xfer(op, local, remote, "kv-direct-passive", tag)
            active.transfer(handle)
            finish(handle, tag)
            return time.perf_counter_ns() - start

        modes = [("plain", plain), ("prepared", prepared), ("contiguous", contiguous)]
        label = f"{blocks}x{block_size >> 10}K"
        for op in ("READ", "WRITE"):
            for _ in range(WARMUP):
                for _, run in modes:
                    run(op)
            times = {name: [] for name, _ in modes}
            cpu = {name: 0.0 for name, _ in modes}
            for _ in range(ITERATIONS):
                for name, run in modes:
                    before = cpu_seconds()
                    times[name].append(run(op))
                    cpu[name] += cpu_seconds() - before
            contiguous_p50 = sorted(times["contiguous"])[ITERATIONS // 2]
            for name, _ in modes:
                ordered = sorted(times[name])
                p50 = ordered[ITERATIONS // 2]
                p99 = ordered[min(ITERATIONS - 1, -(-ITERATIONS * 99 // 100) - 1)]
                nbytes = blocks * block_size
                per_cpu = nbytes * ITERATIONS / max(cpu[name], 1e-9) / 1e9
                ratio = "" if name == "contiguous" else f"{p50 / contiguous_p50:.2f}x"
                print(f"{'nixl-direct':<20} {op:<5} {label:<12} {name:<10} {p50 / 1e6:9.3f} {p99 / 1e6:9.3f} "
                      f"{nbytes / p50:8.2f} {per_cpu:14.2f} {ratio:>9}", flush=True)
        active.release_dlist_handle(active_prepped)
        active.release_dlist_handle(remote_prepped)
        active.deregister_memory(active_reg)
        passive.deregister_memory(passive_reg)


if __name__ == "__main__":
    main()
