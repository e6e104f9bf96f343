#!/usr/bin/env python3
"""Drives the REAL dynamo.nixl_connect (ai-dynamo-runtime, fetched by .ci/dynamo-setup.sh) line by line
over stdin, for DynamoInteropTest. Unlike interop/python_peer.py (our own peer on NIXL's Python API), every
transfer here goes through the module's public API exactly as a Dynamo worker calls it: one Connector,
create_readable / create_writable / begin_read / begin_write, wait_for_completion, metadata(hex_encode).

Commands (one per line) and replies:
  readable SIZES SEED [hex]  -> "DATA crc32", "META json"; later "DONE key STATUS" when wait_for_completion returns
  writable SIZES             -> "META json"; later "WRITTEN key STATUS crc32"
  read JSON                  -> "READ key STATUS crc32" (STATUS ERRORED when the module raises)
  readpost JSON              -> begins the read, reads its status once (which posts it), says "POSTED key STATUS",
                                then waits as `read` does (the test kills the process in between)
  write SIZES SEED JSON      -> "WROTE key STATUS crc32"
  cancelread JSON            -> begins a read, completes it, then cancel(): "CANCELLED key STATUS_BEFORE STATUS_AFTER"
  parse JSON                 -> validates RdmaMetadata as the module does: "PARSED kind:id,kind:id,... json"
  failreport JSON            -> begins a read, releases it unposted, then sends the publisher nixl-connect's
                                failure report (docs/interop.md) as any worker could, with the module agent's
                                send_notif: "REPORTED key STATUS". Never transfers: not op.cancel(), which reads
                                `status` first, and in 1.6.1 the first status read posts the transfer
  notifs                     -> "NOTIFS n text|text|..." the nixl-connect failure reports among the notifications
                                the module's agent has received (its update_notifs() keeps every one)
  info                       -> "INFO hostname worker_id equal_to_same_id"
  exit
SIZES is a comma-separated list of descriptor sizes (0 allowed) or COUNTxSIZE (1024x4096); data is numpy's
PCG64 stream from SEED laid out descriptor after descriptor; crc32 is zlib.crc32 over all of it.
Each descriptor is a numpy array of its own, passed as (ndarray, "cpu") as Dynamo's workers do.
Errors are reported as "ERROR type: message" and the peer carries on.
"""

import asyncio
import os
import sys
import threading
import zlib

try:
    import torch  # noqa: F401  (a real torch wins when installed)
except ImportError:
    # The module imports torch but uses it only for isinstance checks: see interop/torch_stand_in/.
    sys.path.append(os.path.join(os.path.dirname(os.path.abspath(__file__)), "torch_stand_in"))

import numpy as np

import dynamo.nixl_connect as nc

out_lock = threading.Lock()
# nixl-connect's failure report: FAILURE_PREFIX + key + "\n" + cause, UTF-8 (docs/interop.md)
FAILURE_PREFIX = "nixl-connect:failed:v1:"


def say(line):
    with out_lock:
        sys.stdout.write(line + "\n")
        sys.stdout.flush()


def sizes_of(text):
    if "x" in text:
        count, size = text.split("x")
        return [int(size)] * int(count)
    return [int(size) for size in text.split(",")]


def arrays(sizes, seed=None):
    data = (np.random.default_rng(seed).integers(0, 256, size=sum(sizes), dtype=np.uint8)
            if seed is not None else np.zeros(sum(sizes), dtype=np.uint8))
    out, offset = [], 0
    for size in sizes:
        out.append(data[offset:offset + size].copy())
        offset += size
    return out


def crc(parts):
    value = 0
    for part in parts:
        value = zlib.crc32(part.tobytes(), value)
    return value


def descriptors(parts):
    descs = [nc.Descriptor((part, "cpu")) for part in parts]
    return descs[0] if len(descs) == 1 else descs


def release_unposted(op):
    """Cancels an active operation the module has not posted yet, without posting it.

    op.cancel() would not do: in 1.6.1 ActiveOperation._cancel_() first reads the `status` property, and the first
    status read of an UNINITIALIZED operation posts the transfer (with its notification key); the release that follows
    cancels it only if it has not finished. Here the handle is released as _cancel_() releases it, with no status read
    before: the transfer is never posted."""
    assert op._status == nc.OperationStatus.UNINITIALIZED, "already posted: " + op._status.name
    op.connection._nixl.release_xfer_handle(op._xfer_hndl)
    op._xfer_hndl = None
    op._status = nc.OperationStatus.CANCELLED


def status_name(op):
    return nc.OperationStatus(op._status).name


class Peer:
    def __init__(self, loop):
        self.loop = loop
        self.connector = nc.Connector(worker_id="dynamo-peer-%d" % os.getpid())
        self.keep = []  # operations and buffers stay alive for the life of the process

    async def wait_then(self, op, reply):
        try:
            await op.wait_for_completion()
            reply(status_name(op))
        except Exception as error:  # the module raises RuntimeError on ERRORED
            reply("ERRORED " + type(error).__name__)

    async def readable(self, sizes, seed, hex_encode):
        parts = arrays(sizes, seed)
        op = await self.connector.create_readable(descriptors(parts))
        self.keep.append((op, parts))
        say("DATA %d" % crc(parts))
        metadata = op.metadata(hex_encode=hex_encode)
        say("META " + metadata.model_dump_json())
        key = metadata.notification_key
        asyncio.ensure_future(self.wait_then(op, lambda status: say("DONE %s %s" % (key, status))))

    async def writable(self, sizes):
        parts = arrays(sizes)
        op = await self.connector.create_writable(descriptors(parts))
        self.keep.append((op, parts))
        metadata = op.metadata()
        say("META " + metadata.model_dump_json())
        key = metadata.notification_key
        asyncio.ensure_future(self.wait_then(op, lambda status: say("WRITTEN %s %s %d" % (key, status, crc(parts)))))

    async def read(self, json_text, announce_post=False):
        metadata = nc.RdmaMetadata.model_validate_json(json_text)
        parts = arrays([d.size for d in metadata.descriptors])
        op = await self.connector.begin_read(metadata, descriptors(parts))
        self.keep.append((op, parts))
        if announce_post:
            say("POSTED %s %s" % (metadata.notification_key, op.status.name))  # the first status read posts it
        await self.wait_then(op, lambda status: say("READ %s %s %d" % (metadata.notification_key, status, crc(parts))))

    async def write(self, sizes, seed, json_text):
        metadata = nc.RdmaMetadata.model_validate_json(json_text)
        parts = arrays(sizes, seed)
        op = await self.connector.begin_write(descriptors(parts), metadata)
        self.keep.append((op, parts))
        await self.wait_then(op, lambda status: say("WROTE %s %s %d" % (metadata.notification_key, status, crc(parts))))

    async def cancel_read(self, json_text):
        metadata = nc.RdmaMetadata.model_validate_json(json_text)
        parts = arrays([d.size for d in metadata.descriptors])
        op = await self.connector.begin_read(metadata, descriptors(parts))
        self.keep.append((op, parts))
        await op.wait_for_completion()
        before = op.status.name
        op.cancel()
        say("CANCELLED %s %s %s" % (metadata.notification_key, before, op.status.name))

    async def fail_report(self, json_text):
        metadata = nc.RdmaMetadata.model_validate_json(json_text)
        parts = arrays([d.size for d in metadata.descriptors])
        op = await self.connector.begin_read(metadata, descriptors(parts))
        self.keep.append((op, parts))
        release_unposted(op)
        report = (FAILURE_PREFIX + metadata.notification_key + "\ncancelled by the Python reader").encode("utf-8")
        op.connection._nixl.send_notif(op.remote.name, report)
        say("REPORTED %s %s" % (metadata.notification_key, op.status.name))

    async def notifs(self):
        # Observing only: the module's shared connection's agent, whose notification map the module never trims.
        received = self.connector._shared_connection._nixl.update_notifs()
        reports = [value.decode("utf-8") for values in received.values() for value in values
                   if value.startswith(FAILURE_PREFIX.encode("utf-8"))]
        say("NOTIFS %d %s" % (len(reports), "|".join(report.replace("\n", " / ") for report in reports)))

    async def parse(self, json_text):
        metadata = nc.RdmaMetadata.model_validate_json(json_text)
        devices = [nc.Device(d.device) for d in metadata.descriptors]
        say("PARSED %s %s" % (",".join("%s:%d" % (d.kind.name, d.id) for d in devices), metadata.model_dump_json()))

    async def info(self):
        same = nc.Connector(worker_id=self.connector.name)
        say("INFO %s %s %s" % (self.connector.hostname, self.connector.name, self.connector == same))

    async def handle(self, line):
        words = line.split(maxsplit=3)
        command = words[0]
        if command == "readable":
            await self.readable(sizes_of(words[1]), int(words[2]), len(words) > 3 and words[3] == "hex")
        elif command == "writable":
            await self.writable(sizes_of(words[1]))
        elif command == "notifs":
            await self.notifs()
        elif command in ("read", "readpost", "cancelread", "parse", "failreport"):
            json_text = line.split(maxsplit=1)[1]
            if command == "read":
                await self.read(json_text)
            elif command == "readpost":
                await self.read(json_text, announce_post=True)
            elif command == "cancelread":
                await self.cancel_read(json_text)
            elif command == "failreport":
                await self.fail_report(json_text)
            else:
                await self.parse(json_text)
        elif command == "write":
            await self.write(sizes_of(words[1]), int(words[2]), words[3])
        elif command == "info":
            await self.info()
        else:
            say("ERROR unknown command " + command)

    async def guarded(self, line):
        try:
            await self.handle(line)
        except Exception as error:  # report and keep serving: the test decides what a failure means
            say("ERROR %s: %s" % (type(error).__name__, error))


def main():
    loop = asyncio.new_event_loop()
    threading.Thread(target=loop.run_forever, name="asyncio", daemon=True).start()
    peer = asyncio.run_coroutine_threadsafe(asyncio.sleep(0, Peer(loop)), loop).result()
    say("READY dynamo-peer %s" % peer.connector.name)
    for line in sys.stdin:
        line = line.strip()
        if not line:
            continue
        if line == "exit":
            break
        asyncio.run_coroutine_threadsafe(peer.guarded(line), loop)
    sys.stdout.flush()
    os._exit(0)  # skip interpreter teardown: NIXL's threads and UCX need no orderly shutdown here


if __name__ == "__main__":
    main()
