#!/usr/bin/env python3
"""A Python NIXL worker that speaks the dynamo.nixl_connect wire format, driven line by line over stdin.

It uses NIXL's own Python API (nixl._api.nixl_agent, from the nixl / nixl-cu12 wheel) the way Dynamo's
nixl_connect does: agent metadata travels zlib-compressed (level 6) and "b64:"-encoded inside an
RdmaMetadata JSON object; the active side posts one transfer carrying the notification key; the passive
side completes when that key arrives as a NIXL notification. Java's interop test drives it.

Commands (one per line) and replies:
  readable SIZES SEED      -> "DATA crc32" then "META json"; later "DONE key" when the key arrives
  writable SIZES           -> "META json"; later "WRITTEN key crc32" when the key arrives
  read JSON                -> reads the described (Java) memory: "READ key DONE|ERR crc32"
  write SIZES SEED JSON    -> writes generated data into the described memory: "WROTE key DONE|ERR crc32"
  exit                     -> ends the process
SIZES is a comma-separated list of descriptor sizes (0 allowed); data is numpy's PCG64 stream from SEED,
one buffer laid out descriptor after descriptor; crc32 is zlib.crc32 over all of it.
Errors are reported as "ERROR message" and the peer carries on.
"""

import base64
import json
import os
import sys
import threading
import time
import uuid
import zlib

try:  # the plain `nixl` wheel, or the CUDA-12 build `nixl-cu12` that carries the same API
    from nixl._api import nixl_agent, nixl_agent_config
except ImportError:
    from nixl_cu12._api import nixl_agent, nixl_agent_config

import numpy as np

READ_KIND = 1
WRITE_KIND = 2
MAX_METADATA_BYTES = 64 * 1024 * 1024
POLL_SECONDS = 0.0002
TRANSFER_TIMEOUT_SECONDS = 60.0

out_lock = threading.Lock()


def say(line):
    with out_lock:
        sys.stdout.write(line + "\n")
        sys.stdout.flush()


def encode_metadata(raw):
    return "b64:" + base64.b64encode(zlib.compress(raw, 6)).decode("ascii")


def decode_metadata(text):
    # A prefix, not str.lstrip's character set (Dynamo's lstrip("b64:") can eat leading base64 characters).
    packed = base64.b64decode(text[4:]) if text.startswith("b64:") else bytes.fromhex(text)
    inflater = zlib.decompressobj()
    raw = inflater.decompress(packed, MAX_METADATA_BYTES)
    if inflater.unconsumed_tail:
        raise ValueError("nixl_metadata inflates beyond %d bytes" % MAX_METADATA_BYTES)
    return raw


def sizes_of(text):
    return [int(size) for size in text.split(",")]


def generated(sizes, seed):
    return np.random.default_rng(seed).integers(0, 256, size=sum(sizes), dtype=np.uint8)


class Peer:
    def __init__(self):
        self.name = "python-peer-%d" % os.getpid()
        self.agent = nixl_agent(self.name, nixl_agent_config(backends=["UCX"]))
        self.buffers = []  # keeps every registered buffer alive for the life of the process
        self.waiting = {}  # notification key (bytes) -> callback
        self.waiting_lock = threading.Lock()
        self.loaded = {}  # remote agent name -> raw metadata last loaded
        threading.Thread(target=self.watch_notifications, name="notifications", daemon=True).start()

    # --- memory ---

    def register(self, buffer, sizes):
        """Registers each non-empty slice (NIXL refuses empty regions); returns (ptr, size) per descriptor."""
        self.buffers.append(buffer)
        base = buffer.ctypes.data
        regions, offset = [], 0
        for size in sizes:
            regions.append((base + offset, size))
            offset += size
        non_empty = [(ptr, size, 0, "") for ptr, size in regions if size > 0]
        if non_empty:
            self.agent.register_memory(non_empty, "DRAM")
        return regions

    # --- passive side ---

    def publish(self, buffer, sizes, kind, on_notified):
        regions = self.register(buffer, sizes)
        key = str(uuid.uuid4())
        with self.waiting_lock:
            self.waiting[key.encode()] = on_notified
        metadata = {
            "descriptors": [{"device": "cpu", "ptr": ptr, "size": size} for ptr, size in regions],
            "nixl_metadata": encode_metadata(self.agent.get_agent_metadata()),
            "notification_key": key,
            "operation_kind": kind,
        }
        say("META " + json.dumps(metadata, separators=(",", ":")))
        return key

    def readable(self, sizes, seed):
        data = generated(sizes, seed)
        say("DATA %d" % zlib.crc32(data.tobytes()))
        self.publish(data, sizes, READ_KIND, lambda key: say("DONE " + key))

    def writable(self, sizes):
        target = np.zeros(sum(sizes), dtype=np.uint8)
        self.publish(target, sizes, WRITE_KIND,
                     lambda key: say("WRITTEN %s %d" % (key, zlib.crc32(target.tobytes()))))

    def watch_notifications(self):
        while True:
            for messages in self.agent.get_new_notifs().values():
                for message in messages:
                    with self.waiting_lock:
                        callback = self.waiting.pop(bytes(message), None)
                    if callback is not None:
                        callback(bytes(message).decode())
            time.sleep(POLL_SECONDS)

    # --- active side ---

    def load(self, nixl_metadata):
        raw = decode_metadata(nixl_metadata)
        name = self.agent.add_remote_agent(raw)
        name = name.decode() if isinstance(name, bytes) else name
        self.loaded[name] = raw
        return name

    def transfer(self, operation, metadata, buffer):
        expected_kind = READ_KIND if operation == "READ" else WRITE_KIND
        if metadata["operation_kind"] != expected_kind:
            raise ValueError("operation_kind %s does not allow %s" % (metadata["operation_kind"], operation))
        remote_name = self.load(metadata["nixl_metadata"])
        sizes = [d["size"] for d in metadata["descriptors"]]
        local = self.register(buffer, sizes)
        pairs = [(l, (d["ptr"], d["size"])) for l, d in zip(local, metadata["descriptors"]) if d["size"] > 0]
        key = metadata["notification_key"].encode()
        if not pairs:  # nothing to move: the notification alone completes the passive side
            self.agent.send_notif(remote_name, key)
            return "DONE"
        local_descs = self.agent.get_xfer_descs([(p, s, 0) for (p, s), _ in pairs], "DRAM")
        remote_descs = self.agent.get_xfer_descs([(p, s, 0) for _, (p, s) in pairs], "DRAM")
        handle = self.agent.initialize_xfer(operation, local_descs, remote_descs, remote_name, key)
        try:
            state = self.agent.transfer(handle)
            deadline = time.monotonic() + TRANSFER_TIMEOUT_SECONDS
            while state == "PROC" and time.monotonic() < deadline:
                time.sleep(POLL_SECONDS)
                state = self.agent.check_xfer_state(handle)
            return state
        finally:
            self.agent.release_xfer_handle(handle)

    def read(self, json_text):
        metadata = json.loads(json_text)
        target = np.zeros(sum(d["size"] for d in metadata["descriptors"]), dtype=np.uint8)
        state = self.transfer("READ", metadata, target)
        say("READ %s %s %d" % (metadata["notification_key"], state, zlib.crc32(target.tobytes())))

    def write(self, sizes, seed, json_text):
        metadata = json.loads(json_text)
        if sizes != [d["size"] for d in metadata["descriptors"]]:
            raise ValueError("local sizes %s do not match the remote descriptors" % sizes)
        data = generated(sizes, seed)
        state = self.transfer("WRITE", metadata, data)
        say("WROTE %s %s %d" % (metadata["notification_key"], state, zlib.crc32(data.tobytes())))


def main():
    peer = Peer()
    say("READY " + peer.name)
    for line in sys.stdin:
        words = line.split(maxsplit=3)
        if not words:
            continue
        try:
            command = words[0]
            if command == "readable":
                peer.readable(sizes_of(words[1]), int(words[2]))
            elif command == "writable":
                peer.writable(sizes_of(words[1]))
            elif command == "read":
                peer.read(line.split(maxsplit=1)[1])
            elif command == "write":
                peer.write(sizes_of(words[1]), int(words[2]), words[3])
            elif command == "exit":
                break
            else:
                say("ERROR unknown command " + command)
        except Exception as error:  # report and keep serving: the test decides what a failure means
            say("ERROR %s: %s" % (type(error).__name__, error))
    sys.stdout.flush()
    os._exit(0)  # skip interpreter teardown: NIXL's threads and UCX need no orderly shutdown here


if __name__ == "__main__":
    main()
