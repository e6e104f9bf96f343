#!/usr/bin/env python3
"""NIXL's own Python API reading from a fleet of Java producers: the baseline for PeerFleetBenchmark's NIXL numbers
(issue 32: "NIXL 64 KiB complete ops/s at concurrency 8 ... ahead of NIXL's own Python API doing the same
per-operation work").

The producers are the Java benchmark's own: `PeerFleetBenchmark producers nixl PER_JVM SIZE` JVMs, each PER_JVM
connectors (one NIXL agent, one peer each) publishing readables of SIZE bytes, 4 ahead per peer, as
`META <peer> <RdmaMetadata JSON>` lines, and a fresh one on the same buffer as each completes (a readable completes
only when the reader's notification arrives). They end when their stdin closes.

Per operation this consumer does what the Java consumer (Connector.read) does: take the next published metadata of
peer (i mod peers), parse the JSON, decode its nixl_metadata ("b64:" + base64(zlib), or the legacy hex of the zlib
bytes; inflation bounded), load the agent (add_remote_agent: NIXL merges a reload of an agent it knows), build the
remote descriptor list from the metadata's descriptors and the local one over a registered buffer, READ with the
metadata's notification key as the notification, poll until DONE, release the handle. Operation i is timed from the
JSON parse to the release, as the Java consumer times from RdmaMetadata.fromJson to read's return.

Concurrency C: C operations in flight from one Python thread (post up to C, poll each with check_xfer_state
round-robin, no sleep), as a Python service would with NIXL's Python API. Phases as PeerFleetBenchmark: every peer
read once, WARMUP more reads, then OPS measured reads. A failed or timed-out operation is counted (by cause) and
reported, never skipped; at the end the producers' republished readables are counted: each successful read must have
completed its readable on the producer (the line "producers completed").

Usage: PYTHONPATH=$NIXL_PYTHON_PATH python3 benchmarks/nixl_fleet_direct.py [--progress-thread on|off]
           JVMS PER_JVM SIZE CONCURRENCY OPS [WARMUP]
  --progress-thread on   nixl_agent(name): the library's defaults (its progress thread on, polling with no pause)
  --progress-thread off  nixl_agent(name, nixl_agent_config(enable_prog_thread=False)): the caller's polls progress
Producers: `java` (JAVA_HOME/bin/java if set), class path nixl-connect-benchmarks/target/classes and target/lib/*
(override with BENCH_CLASSPATH), -Dnixl.library.path=$NIXL_LIBRARY_DIR; UCX settings come from the environment
(.ci/nixl-setup.sh sets UCX_NET_DEVICES=lo). Exit status 1 when any operation failed or a producer did not see a
successful read complete. BENCH_OP_TIMEOUT_SECONDS (default 60): how long an operation may stay in flight, and how
long to wait for a peer's next readable, before it counts as failed.
"""

import argparse
import base64
import binascii
import json
import os
import queue
import signal
import subprocess
import sys
import threading
import time
import traceback
import zlib

try:  # the plain `nixl` wheel, or the CUDA-12 build `nixl-cu12` that carries the same API
    from nixl._api import nixl_agent, nixl_agent_config
except ImportError:
    from nixl_cu12._api import nixl_agent, nixl_agent_config

import numpy as np

AHEAD = 4  # PeerFleetBenchmark.AHEAD: readables each peer keeps published
READ_KIND = 1
MAX_METADATA_BYTES = 64 * 1024 * 1024  # RdmaMetadata.MAX_NIXL_METADATA_BYTES
# How long an operation may stay in flight, and how long to wait for a peer's next readable (BENCH_OP_TIMEOUT_SECONDS).
TRANSFER_TIMEOUT_SECONDS = PUBLISH_TIMEOUT_SECONDS = float(os.environ.get("BENCH_OP_TIMEOUT_SECONDS", "60"))
READY_TIMEOUT_SECONDS = 600.0
TICKS = os.sysconf("SC_CLK_TCK")
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


class OperationFailed(Exception):
    def __init__(self, cause, detail):
        super().__init__("%s: %s" % (cause, detail))
        self.cause = cause


def decode_metadata(text):
    """The nixl_metadata envelope to the agent's metadata bytes, inflating at most MAX_METADATA_BYTES."""
    if not text:
        raise OperationFailed("invalid metadata", "nixl_metadata is empty")
    try:
        # A prefix, not str.lstrip's character set (Dynamo's lstrip("b64:") can eat leading base64 characters).
        packed = base64.b64decode(text[4:], validate=True) if text.startswith("b64:") else bytes.fromhex(text)
        inflater = zlib.decompressobj()
        raw = inflater.decompress(packed, MAX_METADATA_BYTES)
    except (binascii.Error, ValueError, zlib.error) as e:
        raise OperationFailed("invalid metadata", "nixl_metadata does not decode: %s" % e)
    if inflater.unconsumed_tail:
        raise OperationFailed("invalid metadata", "nixl_metadata inflates beyond %d bytes" % MAX_METADATA_BYTES)
    if not raw:
        raise OperationFailed("invalid metadata", "nixl_metadata holds no data")
    return raw


def memory_of(device):
    """A SerializedDescriptor's device to NIXL's memory type and device id."""
    device = device.strip().lower()
    if device in ("cpu", "host"):
        return "DRAM", 0
    if device.startswith("cuda") or device.startswith("gpu"):
        _, _, index = device.partition(":")
        return "VRAM", int(index) if index else 0
    raise OperationFailed("invalid metadata", "unknown device %r" % device)


class Producers:
    """The producer JVMs and a reader thread per JVM that queues each peer's published metadata."""

    def __init__(self, jvms, per_jvm, size):
        self.per_jvm = per_jvm
        self.peers = jvms * per_jvm
        self.published = [queue.SimpleQueue() for _ in range(self.peers)]
        self.published_count = [0] * self.peers  # readables each peer published: AHEAD + reads it saw complete
        self.ready = threading.Semaphore(0)
        self.gone = [False] * jvms  # a JVM whose stdout ended publishes nothing more
        self.processes = []
        java = os.path.join(os.environ["JAVA_HOME"], "bin", "java") if os.environ.get("JAVA_HOME") else "java"
        benchmarks = os.path.join(ROOT, "nixl-connect-benchmarks", "target")
        classpath = os.environ.get("BENCH_CLASSPATH") or "%s/classes:%s/lib/*" % (benchmarks, benchmarks)
        command = [java, "-Xmx512m"]
        if os.environ.get("NIXL_LIBRARY_DIR"):  # BenchmarkOptions.FORWARDED, as the Java consumer forwards it
            command.append("-Dnixl.library.path=" + os.environ["NIXL_LIBRARY_DIR"])
        command += ["-cp", classpath, "io.nixlconnect.benchmarks.PeerFleetBenchmark", "producers", "nixl",
                    str(per_jvm), str(size)]
        for jvm in range(jvms):
            process = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, bufsize=1 << 16)
            self.processes.append(process)
            threading.Thread(target=self.read_lines, args=(jvm, process), name="fleet-producer-%d" % jvm,
                             daemon=True).start()

    def read_lines(self, jvm, process):
        for line in process.stdout:
            if line.startswith(b"META "):
                space = line.index(b" ", 5)
                peer = jvm * self.per_jvm + int(line[5:space])
                self.published_count[peer] += 1  # this thread alone writes this JVM's peers
                self.published[peer].put(line[space + 1:].rstrip(b"\n").decode("utf-8"))
            elif line.rstrip(b"\n") == b"READY":
                self.ready.release()
        self.gone[jvm] = True

    def next_published(self, peer, block):
        """The peer's next published metadata, or None: at once, or (block) once it is published, its JVM has exited
        or PUBLISH_TIMEOUT_SECONDS have passed."""
        published = self.published[peer]
        try:
            return published.get_nowait()
        except queue.Empty:
            pass
        deadline = time.monotonic() + PUBLISH_TIMEOUT_SECONDS
        while block and not self.gone[peer // self.per_jvm] and time.monotonic() < deadline:
            try:
                return published.get(timeout=0.05)
            except queue.Empty:
                pass
        return None

    def await_ready(self):
        deadline = time.monotonic() + READY_TIMEOUT_SECONDS
        for jvm in range(len(self.processes)):
            if not self.ready.acquire(timeout=max(0.0, deadline - time.monotonic())):
                raise RuntimeError("producer JVMs did not start (%d of %d ready)" % (jvm, len(self.processes)))

    def completed(self):
        return sum(self.published_count) - AHEAD * self.peers

    def close(self):
        for process in self.processes:
            try:
                process.stdin.close()
            except OSError:
                pass
        for process in self.processes:
            try:
                process.wait(30)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()


class Consumer:
    """One NIXL agent reading with `concurrency` operations in flight from the calling thread."""

    def __init__(self, progress_thread, size, concurrency):
        name = "fleet-python-consumer-%d" % os.getpid()
        if progress_thread:
            self.agent = nixl_agent(name)  # the library's defaults
        else:
            self.agent = nixl_agent(name, nixl_agent_config(enable_prog_thread=False))
        self.size = size
        self.targets = []
        for _ in range(concurrency):
            target = np.zeros(size, dtype=np.uint8)
            self.agent.register_memory([(target.ctypes.data, size, 0, "")], "DRAM")
            self.targets.append(target)
        self.loaded = set()
        self.loads = 0

    def begin(self, text, target):
        """Parse, decode, load, describe, create and post one READ; returns (handle, state)."""
        try:
            metadata = json.loads(text)
        except ValueError as e:
            raise OperationFailed("invalid metadata", "not JSON: %s" % e)
        if metadata.get("operation_kind") != READ_KIND:
            raise OperationFailed("invalid metadata", "operation_kind %r is not READ" % metadata.get("operation_kind"))
        raw = decode_metadata(metadata.get("nixl_metadata", ""))
        try:
            remote_name = self.agent.add_remote_agent(raw)
        except Exception as e:
            raise OperationFailed("load failed", e)
        remote_name = remote_name.decode() if isinstance(remote_name, bytes) else remote_name
        self.loads += 1
        self.loaded.add(remote_name)
        remote, local, offset, kind = [], [], 0, None
        base = target.ctypes.data
        for descriptor in metadata.get("descriptors", []):
            memory, device = memory_of(descriptor["device"])
            ptr, size = int(descriptor["ptr"]), int(descriptor["size"])
            if ptr == 0 or size < 0:
                raise OperationFailed("invalid metadata", "descriptor %r" % descriptor)
            if kind not in (None, memory):
                raise OperationFailed("invalid metadata", "descriptors of more than one memory kind")
            kind = memory
            if size > 0:  # NIXL refuses empty regions
                remote.append((ptr, size, device))
                local.append((base + offset, size, 0))
            offset += size
        if offset != target.nbytes:
            raise OperationFailed("invalid metadata", "%d bytes described, the target holds %d" % (offset, target.nbytes))
        key = metadata.get("notification_key", "").encode("utf-8")
        try:
            remote_descs = self.agent.get_xfer_descs(remote, kind)
            local_descs = self.agent.get_xfer_descs(local, "DRAM")
            handle = self.agent.initialize_xfer("READ", local_descs, remote_descs, remote_name, key)
        except Exception as e:
            raise OperationFailed("create failed", e)
        try:
            state = self.agent.transfer(handle)
        except Exception as e:
            self.release(handle)
            raise OperationFailed("post failed", e)
        return handle, state

    def release(self, handle):
        try:
            self.agent.release_xfer_handle(handle)
        except Exception as e:
            raise OperationFailed("release failed", e)

    def run(self, producers, first, count, latencies):
        """Operations first .. first + count - 1, operation i from peer i mod peers, len(targets) in flight.
        Appends each successful read's nanoseconds to latencies (when given); returns (successes, failures by cause,
        first failure)."""
        peers = producers.peers
        slots = [None] * len(self.targets)  # (handle, start_ns, deadline) per target
        in_flight = 0
        next_op = 0
        finished = 0
        successes = 0
        failures = {}
        first_failure = [None]
        waiting_since = None

        def fail(error):
            cause = error.cause if isinstance(error, OperationFailed) else type(error).__name__
            failures[cause] = failures.get(cause, 0) + 1
            if first_failure[0] is None:
                first_failure[0] = error

        while finished < count:
            for s, slot in enumerate(slots):
                if slot is None:
                    if next_op >= count:
                        continue
                    peer = (first + next_op) % peers
                    text = producers.next_published(peer, block=not in_flight)
                    if text is None:
                        gone = producers.gone[peer // producers.per_jvm]
                        now = time.monotonic()
                        waiting_since = waiting_since or now
                        if in_flight and not gone and now - waiting_since < PUBLISH_TIMEOUT_SECONDS:
                            continue  # poll what is in flight meanwhile
                        waiting_since = None
                        next_op += 1
                        finished += 1
                        fail(OperationFailed("producer gone", "the JVM of peer %d exited" % peer) if gone
                             else OperationFailed("nothing published", "peer %d published nothing" % peer))
                        continue
                    waiting_since = None
                    next_op += 1
                    start = time.perf_counter_ns()
                    try:
                        handle, state = self.begin(text, self.targets[s])
                    except Exception as e:
                        fail(e)
                        finished += 1
                        continue
                    slot = (handle, start, time.monotonic() + TRANSFER_TIMEOUT_SECONDS)
                    slots[s] = slot
                    in_flight += 1
                else:
                    try:
                        state = self.agent.check_xfer_state(slot[0])
                    except Exception as e:  # nixlRemoteDisconnectError and the like
                        state = type(e).__name__
                if state == "PROC":
                    if time.monotonic() < slot[2]:
                        continue
                    state = "timed out"
                slots[s] = None
                in_flight -= 1
                finished += 1
                try:
                    self.release(slot[0])
                except Exception as e:
                    fail(e)
                    continue
                if state == "DONE":
                    successes += 1
                    if latencies is not None:
                        latencies.append(time.perf_counter_ns() - slot[1])
                else:
                    fail(OperationFailed("transfer " + state, "operation ended %s" % state))
        return successes, failures, first_failure[0]

    def forget(self):
        for name in self.loaded:
            try:
                self.agent.remove_remote_agent(name)
            except Exception:
                pass


def sockets(pid):
    count = 0
    try:
        for fd in os.listdir("/proc/%d/fd" % pid):
            try:
                if os.readlink("/proc/%d/fd/%s" % (pid, fd)).startswith("socket:"):
                    count += 1
            except OSError:
                pass
    except OSError:
        return -1
    return count


def cpu_ticks(pid):
    """User + system CPU time of process pid (this process: all its threads), in clock ticks."""
    try:
        with open("/proc/%d/stat" % pid) as f:
            stat = f.read()
        fields = stat[stat.rindex(")") + 2:].split(" ")
        return int(fields[11]) + int(fields[12])  # utime, stime (fields 14 and 15)
    except (OSError, ValueError):
        return 0


def load_average():
    with open("/proc/loadavg") as f:
        return " ".join(f.read().split()[:3])


def percentile(sorted_nanos, fraction):
    return sorted_nanos[min(len(sorted_nanos) - 1, int(len(sorted_nanos) * fraction))] / 1e6 if sorted_nanos else float("nan")


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--progress-thread", choices=("on", "off"), default="on")
    parser.add_argument("jvms", type=int)
    parser.add_argument("per_jvm", type=int)
    parser.add_argument("size", type=int)
    parser.add_argument("concurrency", type=int)
    parser.add_argument("ops", type=int)
    parser.add_argument("warmup", type=int, nargs="?", default=2000)
    args = parser.parse_args()
    # A signal ends the run through the finally blocks below (the producer JVMs are ended, not left behind).
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))

    producers = None
    status = 0
    try:
        consumer = Consumer(args.progress_thread == "on", args.size, args.concurrency)
        producers = Producers(args.jvms, args.per_jvm, args.size)
        producers.await_ready()
        peers = producers.peers
        total_failures = {}
        total_successes = 0
        for first, count, latencies in ((0, peers, None), (peers, args.warmup, None)):  # every peer once; warm-up
            successes, failures, first_failure = consumer.run(producers, first, count, latencies)
            total_successes += successes
            for cause, n in failures.items():
                total_failures[cause] = total_failures.get(cause, 0) + n
            if first_failure is not None:
                print("first warm-up failure: %s" % first_failure, file=sys.stderr)
        me = os.getpid()
        pids = [p.pid for p in producers.processes]
        consumer_before = sockets(me)
        producers_before = [sockets(pid) for pid in pids]
        consumer_cpu_before = cpu_ticks(me)
        producers_cpu_before = sum(cpu_ticks(pid) for pid in pids)
        latencies = []
        start = time.perf_counter_ns()
        successes, failures, first_failure = consumer.run(producers, peers + args.warmup, args.ops, latencies)
        seconds = (time.perf_counter_ns() - start) / 1e9
        consumer_cpu = (cpu_ticks(me) - consumer_cpu_before) / TICKS
        producers_cpu = (sum(cpu_ticks(pid) for pid in pids) - producers_cpu_before) / TICKS
        consumer_after = sockets(me)
        producers_after = [sockets(pid) for pid in pids]
        total_successes += successes
        failed = sum(failures.values())
        latencies.sort()
        label = "nixl-py/pt-" + args.progress_thread
        print("%-8s %d peers (%d JVMs x %d), %d B, concurrency %d: %.0f ops/s over %d ops (%.1f s), read p50 %.3f ms"
              " p99 %.3f ms, %d failed%s" % (label, peers, args.jvms, args.per_jvm, args.size, args.concurrency,
                                             args.ops / seconds, args.ops, seconds, percentile(latencies, 0.5),
                                             percentile(latencies, 0.99), failed,
                                             " %s" % failures if failures else ""))
        print("  sockets: consumer %d -> %d (%+d); producer JVMs %s -> %s (%s)"
              % (consumer_before, consumer_after, consumer_after - consumer_before, producers_before, producers_after,
                 ", ".join("%+d" % (a - b) for a, b in zip(producers_after, producers_before))))
        print("  CPU over the measured reads: consumer %.1f s, producer JVMs %.1f s (%.2f cores together)"
              % (consumer_cpu, producers_cpu, (consumer_cpu + producers_cpu) / seconds))
        # Each successful read completes its readable on the producer, which then publishes the next: wait (bounded)
        # until every one has been seen there.
        deadline = time.monotonic() + 10
        while producers.completed() < total_successes and time.monotonic() < deadline:
            time.sleep(0.01)
        completed = producers.completed()
        print("  consumer: NIXL Python API, progress thread %s, %d agents loaded, %d loads; producers completed %d of"
              " %d successful reads; load average %s" % (args.progress_thread, len(consumer.loaded), consumer.loads,
                                                        completed, total_successes, load_average()))
        if first_failure is not None:
            print("first failure: %s" % first_failure, file=sys.stderr)
        for cause, n in failures.items():
            total_failures[cause] = total_failures.get(cause, 0) + n
        if total_failures or completed < total_successes:
            status = 1
        consumer.forget()
    except BaseException:
        status = 1
        traceback.print_exc()
    finally:
        if producers is not None:
            producers.close()
        sys.stdout.flush()
        sys.stderr.flush()
        # Skip interpreter teardown: with the wheel's UCX, exit-time destructors can crash (docs/nixl.md).
        os._exit(status)


if __name__ == "__main__":
    main()
