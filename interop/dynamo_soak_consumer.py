#!/usr/bin/env python3
"""The Python consumer of the NIXL soak's second pass (io.nixlconnect.benchmarks.NixlSoak python; issue 22): the
REAL dynamo.nixl_connect (ai-dynamo-runtime, fetched by .ci/dynamo-setup.sh) reads and writes a Java producer's
KV-cache shaped windows through its public API as a Dynamo worker does: begin_read / begin_write over a list of
Descriptors (numpy views of one 64 MiB pool, each registered by the module for its operation), wait_for_completion,
the operation released with `with`. Driven line by line over stdin:

  read JSON [again]    -> "RESULT ok MICROS" or "RESULT failed MICROS TYPE: MESSAGE" (or "RESULT wrong ...": a
  write JSON [again]      block's first 8 bytes are not its source address); with "again" a second RESULT line for
                          the same metadata once more (the module keeps no record of spent metadata: it tries)
  stats                -> "STATS RSS_KIB ALLOCATED_BLOCKS PEERS REGISTRATIONS_LEFT IN_FLIGHT FDS SOCKETS" (FDS: open
                          file descriptors other than sockets; SOCKETS: open sockets)
  exit

With the argument "reader" it is the reader that the soak kills or stops mid-read: "READY", then on
"read JSON" it begins the read of the whole window, posts it (the first status read), says "STARTED", and waits.
A transfer that does not end within TIMEOUT_S seconds is cancelled and reported as a TimeoutError.
"""

import asyncio
import os
import sys
import time

try:
    import torch  # noqa: F401  (a real torch wins when installed)
except ImportError:
    # The module imports torch but uses it only for isinstance checks: see interop/torch_stand_in/.
    sys.path.append(os.path.join(os.path.dirname(os.path.abspath(__file__)), "torch_stand_in"))

import numpy as np

import dynamo.nixl_connect as nc

POOL = 64 << 20
TIMEOUT_S = 10.0


def say(line):
    sys.stdout.write(line + "\n")
    sys.stdout.flush()


def open_fds():
    """(file descriptors other than sockets, sockets) this process holds open."""
    sockets = others = 0
    for fd in os.listdir("/proc/self/fd"):
        try:
            target = os.readlink("/proc/self/fd/" + fd)
        except OSError:
            continue  # the listing's own descriptor, closed by now
        if target.startswith("socket:"):
            sockets += 1
        else:
            others += 1
    return others, sockets


def rss_kib():
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return -1


class Consumer:
    def __init__(self):
        self.connector = nc.Connector(worker_id="soak-python-consumer-%d" % os.getpid())
        self.pool = np.zeros(POOL, dtype=np.uint8)
        self.rng = np.random.default_rng(os.getpid())
        self.registrations_left = 0  # descriptors still registered after their operation was released
        self.in_flight = 0

    def blocks(self, sizes):
        """Distinct blocks of the pool in random order, one per remote descriptor (all the same size)."""
        size = sizes[0]
        slots = self.rng.choice(POOL // size, size=len(sizes), replace=False)
        return [self.pool[slot * size:(slot + 1) * size] for slot in slots]

    async def attempt(self, metadata, parts, read):
        descriptors = [nc.Descriptor((part, "cpu")) for part in parts]
        began = time.monotonic()
        self.in_flight += 1
        try:
            if read:
                for part in parts:
                    part[:8] = 0
                op = await self.connector.begin_read(metadata, descriptors)
            else:
                op = await self.connector.begin_write(descriptors, metadata)
            with op:
                try:
                    await asyncio.wait_for(op.wait_for_completion(), TIMEOUT_S)
                except asyncio.TimeoutError:
                    op.cancel()
                    raise
            micros = int((time.monotonic() - began) * 1e6)
            if read:
                for part, remote in zip(parts, metadata.descriptors):
                    if int(part[:8].view("<u8")[0]) != remote.ptr:
                        return "wrong %d block at %d" % (micros, remote.ptr)
            return "ok %d" % micros
        except Exception as error:  # the module raises RuntimeError on ERRORED; NIXL its own errors
            micros = int((time.monotonic() - began) * 1e6)
            message = " ".join(str(error).split())[:200]
            return "failed %d %s: %s" % (micros, type(error).__name__, message)
        finally:
            self.in_flight -= 1
            self.registrations_left += sum(1 for d in descriptors if d.is_registered)

    async def transfer(self, json_text, read, again):
        metadata = nc.RdmaMetadata.model_validate_json(json_text)
        parts = self.blocks([d.size for d in metadata.descriptors])
        say("RESULT " + await self.attempt(metadata, parts, read))
        if again:
            say("RESULT " + await self.attempt(metadata, parts, read))

    def stats(self):
        connection = self.connector._shared_connection  # observing only: the module's one agent
        peers = len(connection._remote_refs) if connection is not None else 0
        say("STATS %d %d %d %d %d %d %d" % ((rss_kib(), sys.getallocatedblocks(), peers, self.registrations_left,
                                             self.in_flight) + open_fds()))


def consume(loop):
    consumer = Consumer()
    say("READY " + consumer.connector.name)
    for line in sys.stdin:
        words = line.split()
        if not words:
            continue
        if words[0] in ("read", "write"):
            again = words[-1] == "again"
            json_text = line.strip()[len(words[0]):].strip()
            if again:
                json_text = json_text[:-len("again")].strip()
            loop.run_until_complete(consumer.transfer(json_text, words[0] == "read", again))
        elif words[0] == "stats":
            consumer.stats()
        elif words[0] == "exit":
            break
        else:
            say("ERROR unknown command " + words[0])


def doomed_reader(loop):
    connector = nc.Connector(worker_id="soak-python-reader-%d" % os.getpid())
    say("READY " + connector.name)
    line = sys.stdin.readline()
    metadata = nc.RdmaMetadata.model_validate_json(line.split(maxsplit=1)[1])
    target = np.zeros(sum(d.size for d in metadata.descriptors), dtype=np.uint8)
    op = loop.run_until_complete(connector.begin_read(metadata, nc.Descriptor((target, "cpu"))))
    op.status  # the first status read posts the transfer
    say("STARTED")
    for _ in sys.stdin:
        pass  # until killed


def main():
    loop = asyncio.new_event_loop()
    if len(sys.argv) > 1 and sys.argv[1] == "reader":
        doomed_reader(loop)
    else:
        consume(loop)
    sys.stdout.flush()
    os._exit(0)  # skip interpreter teardown: NIXL's threads and UCX need no orderly shutdown here


if __name__ == "__main__":
    main()
