#!/usr/bin/env python3
"""Captures and decodes Dynamo 1.6.1's TCP request plane on loopback, byte for byte, for the wire fixtures in
interop/fixtures/dynamo-1.6.1/ (README there) and docs/dynamo-wire-notes.md.

A capture is taken off the loopback interface (a packet socket: root or CAP_NET_RAW), not through a proxy: the
caller's request header names the address the worker calls home to, and a proxy would have to rewrite it (and so
the bytes under study). Nothing is injected; the TCP streams are put back together from their segments.

  capture_wire.py sniff --port WORKER_PORT --out PREFIX -- COMMAND [ARGS...]
      captures loopback TCP while COMMAND (a client) runs, then writes, for the streams that touch the worker's
      request-plane port and the call-home ports named in the requests:
        PREFIX.request-plane.bin   caller -> worker bytes of each request-plane connection, in connection order
        PREFIX.acks.bin            worker -> caller bytes (the acknowledgements) of the same connections
        PREFIX.response-N.bin      worker -> caller bytes of call-home connection N (1, 2, ... by start time)
        PREFIX.response-N.control.bin   caller -> worker bytes on that connection (cancellation), when any
        PREFIX.connections.json    when each side of those connections closed (FIN or RST), ms after it opened
        PREFIX.txt                 all of it decoded (decode below)
  capture_wire.py decode PREFIX    prints PREFIX.txt's decoding again from the .bin files
  capture_wire.py send --port P --out PREFIX (--frame-hex HEX | --frame-file FILE) [--listen PORT]
      sends hand-made request frame(s) to a worker over one connection and records what comes back (no sniffing:
      PREFIX.acks.bin, and PREFIX.response-1.bin when a frame names this tool's listener, --listen PORT, as the
      address to call home to)

Framing decoded (docs/dynamo-wire-notes.md): request frames u16 BE path length | path | u16 BE headers length |
headers (JSON) | u32 BE payload length | payload; acknowledgements u32 BE length | bytes; payloads and call-home
frames are two-part messages u64 BE header length | u64 BE body length | u64 BE checksum | header | body, bodies
msgpack or JSON (decoded by a small msgpack reader below: maps, arrays, strings, binary, numbers, bool, nil).
"""

import argparse
import json
import os
import socket
import struct
import subprocess
import sys
import threading
import time

ETH_P_ALL = 0x0003
SO_RCVBUFFORCE = 33
SOL_PACKET = 263
PACKET_STATISTICS = 6


# ---------------------------------------------------------------- capture

class Sniffer:
    """Every IPv4 TCP segment on the loopback interface while it runs, kept in memory."""

    def __init__(self):
        self.sock = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.ntohs(ETH_P_ALL))
        # Other loopback traffic can be heavy (NIXL transfers): a large buffer, past rmem_max where allowed (root).
        try:
            self.sock.setsockopt(socket.SOL_SOCKET, SO_RCVBUFFORCE, 256 << 20)
        except OSError:
            self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 256 << 20)
        self.sock.bind(("lo", 0))
        self.sock.settimeout(0.1)
        self.segments = []  # (time, src port, dst port, seq, flags, payload)
        self.running = True
        self.thread = threading.Thread(target=self.run, daemon=True)
        self.thread.start()

    def run(self):
        while self.running:
            try:
                packet, address = self.sock.recvfrom(1 << 17)
            except socket.timeout:
                continue
            if address[2] == socket.PACKET_OUTGOING:  # loopback shows each packet twice: keep the incoming copy
                continue
            ip = packet[14:]
            if len(ip) < 20 or ip[0] >> 4 != 4 or ip[9] != 6:
                continue
            header_length = (ip[0] & 15) * 4
            total = struct.unpack("!H", ip[2:4])[0]
            tcp = ip[header_length:total]
            source, destination, seq = struct.unpack("!HHI", tcp[:8])
            offset = (tcp[12] >> 4) * 4
            self.segments.append((time.monotonic(), source, destination, seq, tcp[13], bytes(tcp[offset:])))

    def stop(self):
        """Stops capturing; returns how many packets the kernel dropped for want of buffer space."""
        self.running = False
        self.thread.join()
        _, drops = struct.unpack("II", self.sock.getsockopt(SOL_PACKET, PACKET_STATISTICS, 8))
        self.sock.close()
        return drops


CLOSES = {}  # (src port, dst port) -> (time, "FIN" | "RST") of the first FIN/RST that side sent, or None


def streams_of(segments, wanted):
    """{(src port, dst port): (start time, bytes)} for the connections wanted(src port, dst port) picks (either
    direction) whose SYN was seen (started during the capture). Other loopback traffic is not put together."""
    by_key = {}
    closes = CLOSES
    for when, source, destination, seq, flags, payload in segments:
        if not (wanted(source, destination) or wanted(destination, source)):
            continue
        entry = by_key.setdefault((source, destination), {"start": None, "isn": None, "parts": {}, "fin": None})
        if flags & 0x02:  # SYN
            entry["isn"] = (seq + 1) & 0xFFFFFFFF
            entry["start"] = when
        if flags & 0x05 and entry["fin"] is None:  # FIN or RST: this side closed (or reset) the connection
            entry["fin"] = (when, "RST" if flags & 0x04 else "FIN")
        if payload:
            entry["parts"].setdefault(seq, payload)
    result = {}
    for key, entry in by_key.items():
        if entry["isn"] is None:
            continue
        data, expected = bytearray(), entry["isn"]
        for seq in sorted(entry["parts"], key=lambda s: (s - entry["isn"]) & 0xFFFFFFFF):
            part = entry["parts"][seq]
            relative = (seq - expected) & 0xFFFFFFFF
            if relative > 0x7FFFFFFF:  # a retransmission overlapping what we have
                part = part[(expected - seq) & 0xFFFFFFFF:]
            elif relative > 0:
                raise RuntimeError("capture lost %d bytes of %s" % (relative, key))
            data += part
            expected = (expected + len(part)) & 0xFFFFFFFF
        result[key] = (entry["start"], bytes(data))
        closes[key] = entry["fin"]
    return result


def call_home_ports(request_bytes):
    ports = []
    for frame in split_request_frames(request_bytes):
        try:
            header = json.loads(frame["message"]["header"])
            address = json.loads(header["connection_info"]["info"])["address"]
            ports.append(int(address.rsplit(":", 1)[1]))
        except (KeyError, ValueError, TypeError):
            pass
    return ports


def sniff(args):
    sniffer = Sniffer()
    time.sleep(0.2)
    code = subprocess.call(args.command)
    time.sleep(args.linger)
    drops = sniffer.stop()
    worker = args.port
    worker_streams = streams_of(sniffer.segments, lambda source, destination: destination == worker)
    request_plane = sorted(((start, key, data) for key, (start, data) in worker_streams.items() if key[1] == worker),
                           key=lambda item: item[0] or 0)
    requests = b"".join(data for _, _, data in request_plane)
    acks = b"".join(worker_streams.get((key[1], key[0]), (None, b""))[1] for _, key, _ in request_plane)
    homes = set(call_home_ports(requests))
    home_streams = streams_of(sniffer.segments, lambda source, destination: destination in homes)
    all_streams = {**worker_streams, **home_streams}
    responses = sorted(((start, key, data) for key, (start, data) in home_streams.items() if key[1] in homes),
                       key=lambda item: item[0] or 0)
    prefix = args.out
    os.makedirs(os.path.dirname(os.path.abspath(prefix)), exist_ok=True)

    def closing(start, caller_to_worker, worker_to_caller):
        def side(key):
            close = CLOSES.get(key)
            return None if close is None else [round((close[0] - start) * 1000, 3), close[1]]
        return {"caller_closed_ms": side(caller_to_worker), "worker_closed_ms": side(worker_to_caller)}

    connections = [dict(kind="request-plane", **closing(start, key, (key[1], key[0])))
                   for start, key, _ in request_plane]
    connections += [dict(kind="call-home %d" % number, **closing(start, (key[1], key[0]), key))
                    for number, (start, key, _) in enumerate(responses, 1)]
    with open(prefix + ".connections.json", "w") as out:
        json.dump(connections, out, indent=1)
        out.write("\n")
    write(prefix + ".request-plane.bin", requests)
    write(prefix + ".acks.bin", acks)
    for number, (_, key, data) in enumerate(responses, 1):
        write("%s.response-%d.bin" % (prefix, number), data)
        control = all_streams.get((key[1], key[0]), (None, b""))[1]
        if control:
            write("%s.response-%d.control.bin" % (prefix, number), control)
    with open(prefix + ".txt", "w") as out:
        out.write(describe(prefix))
    print("capture_wire: %d request-plane connection(s), %d call-home connection(s), client exit %d, %d packet(s)"
          " dropped by the kernel -> %s.*" % (len(request_plane), len(responses), code, drops, prefix), file=sys.stderr)
    if not request_plane:
        print("capture_wire: ERROR: no connection to port %d seen (dropped packets?)" % worker, file=sys.stderr)
        return 1
    return 0


def send(args):
    frame = bytes.fromhex(args.frame_hex) if args.frame_hex else open(args.frame_file, "rb").read()
    listener = None
    if args.listen:
        listener = socket.socket()
        listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        listener.bind(("127.0.0.1", args.listen))
        listener.listen(1)
        listener.settimeout(args.wait)
    time.sleep(0.2)
    connection = socket.create_connection(("127.0.0.1", args.port))
    connection.settimeout(args.wait)
    connection.sendall(frame)
    acks = b""
    try:
        while len(acks) < 4 or len(acks) < 4 + struct.unpack("!I", acks[:4])[0]:
            chunk = connection.recv(65536)
            if not chunk:
                break
            acks += chunk
    except socket.timeout:
        pass
    home = b""
    if listener is not None:
        try:
            peer, _ = listener.accept()
            peer.settimeout(args.wait)
            while True:
                chunk = peer.recv(65536)
                if not chunk:
                    break
                home += chunk
        except socket.timeout:
            pass
    connection.close()
    write(args.out + ".request-plane.bin", frame)
    write(args.out + ".acks.bin", acks)
    if home:
        write(args.out + ".response-1.bin", home)
    with open(args.out + ".txt", "w") as out:
        out.write(describe(args.out))
    print("capture_wire: sent %d bytes, %d back, %d on the call-home connection" % (len(frame), len(acks), len(home)),
          file=sys.stderr)
    return 0


def write(path, data):
    with open(path, "wb") as out:
        out.write(data)


# ---------------------------------------------------------------- decoding

class Truncated(Exception):
    pass


def take(data, offset, count):
    if offset + count > len(data):
        raise Truncated("need %d bytes at %d, have %d" % (count, offset, len(data) - offset))
    return data[offset:offset + count], offset + count


def split_two_part(data, offset=0):
    raw, offset = take(data, offset, 24)
    header_length, body_length, checksum = struct.unpack("!QQQ", raw)
    header, offset = take(data, offset, header_length)
    body, offset = take(data, offset, body_length)
    return {"header_length": header_length, "body_length": body_length, "checksum": checksum,
            "header": header, "body": body}, offset


def split_request_frames(data):
    frames, offset = [], 0
    while offset < len(data):
        start = offset
        try:
            raw, offset = take(data, offset, 2)
            path, offset = take(data, offset, struct.unpack("!H", raw)[0])
            raw, offset = take(data, offset, 2)
            headers, offset = take(data, offset, struct.unpack("!H", raw)[0])
            raw, offset = take(data, offset, 4)
            payload, offset = take(data, offset, struct.unpack("!I", raw)[0])
            message, _ = split_two_part(payload)
        except Truncated as error:
            frames.append({"truncated": str(error), "bytes": len(data) - start})
            break
        frames.append({"offset": start, "length": offset - start, "path": path, "headers": headers,
                       "payload_length": len(payload), "message": message})
    return frames


def split_acks(data):
    acks, offset = [], 0
    while offset < len(data):
        try:
            raw, offset = take(data, offset, 4)
            text, offset = take(data, offset, struct.unpack("!I", raw)[0])
        except Truncated as error:
            acks.append({"truncated": str(error)})
            break
        acks.append({"length": len(text), "text": text})
    return acks


def split_messages(data):
    messages, offset = [], 0
    while offset < len(data):
        start = offset
        try:
            message, offset = split_two_part(data, offset)
        except Truncated as error:
            messages.append({"truncated": str(error), "bytes": len(data) - start})
            break
        message["offset"] = start
        messages.append(message)
    return messages


def msgpack_value(data, offset=0):
    """One msgpack value at offset: (value, next offset). Enough of the format for these captures."""
    code = data[offset]
    offset += 1

    def unpack(fmt, size):
        return struct.unpack(fmt, data[offset:offset + size])[0], offset + size

    if code <= 0x7F:
        return code, offset
    if code >= 0xE0:
        return code - 0x100, offset
    if 0x80 <= code <= 0x8F:
        return msgpack_map(data, offset, code & 0x0F)
    if 0x90 <= code <= 0x9F:
        return msgpack_array(data, offset, code & 0x0F)
    if 0xA0 <= code <= 0xBF:
        length = code & 0x1F
        return data[offset:offset + length].decode("utf-8"), offset + length
    simple = {0xC0: None, 0xC2: False, 0xC3: True}
    if code in simple:
        return simple[code], offset
    sized = {0xCC: ("!B", 1), 0xCD: ("!H", 2), 0xCE: ("!I", 4), 0xCF: ("!Q", 8), 0xD0: ("!b", 1), 0xD1: ("!h", 2),
             0xD2: ("!i", 4), 0xD3: ("!q", 8), 0xCA: ("!f", 4), 0xCB: ("!d", 8)}
    if code in sized:
        return unpack(*sized[code])
    lengths = {0xD9: ("!B", 1), 0xDA: ("!H", 2), 0xDB: ("!I", 4)}
    if code in lengths:
        length, offset = unpack(*lengths[code])
        return data[offset:offset + length].decode("utf-8"), offset + length
    binaries = {0xC4: ("!B", 1), 0xC5: ("!H", 2), 0xC6: ("!I", 4)}
    if code in binaries:
        length, offset = unpack(*binaries[code])
        return {"$bin": data[offset:offset + length].hex()}, offset + length
    if code in (0xDC, 0xDD):
        length, offset = unpack("!H", 2) if code == 0xDC else unpack("!I", 4)
        return msgpack_array(data, offset, length)
    if code in (0xDE, 0xDF):
        length, offset = unpack("!H", 2) if code == 0xDE else unpack("!I", 4)
        return msgpack_map(data, offset, length)
    raise ValueError("msgpack type 0x%02x not handled" % code)


def msgpack_map(data, offset, count):
    result = {}
    for _ in range(count):
        key, offset = msgpack_value(data, offset)
        value, offset = msgpack_value(data, offset)
        result[key if isinstance(key, (str, int)) else repr(key)] = value
    return result, offset


def msgpack_array(data, offset, count):
    result = []
    for _ in range(count):
        value, offset = msgpack_value(data, offset)
        result.append(value)
    return result, offset


def decode_body(body, codec):
    """(codec that decoded it, value)."""
    if not body:
        return "empty", None
    order = ("msgpack", "json") if codec == "msgpack" else ("json", "msgpack")
    for candidate in order:
        try:
            if candidate == "json":
                return "json", json.loads(body)
            value, end = msgpack_value(body)
            if end == len(body):
                return "msgpack", value
        except (ValueError, IndexError, UnicodeDecodeError, struct.error):
            continue
    return "raw", body.hex()


def shorten(value, limit=600):
    text = json.dumps(value, sort_keys=False) if not isinstance(value, str) else value
    return text if len(text) <= limit else text[:limit] + "... (%d chars)" % len(text)


def describe(prefix):
    lines = []

    def read(path):
        try:
            with open(path, "rb") as source:
                return source.read()
        except FileNotFoundError:
            return None

    requests = read(prefix + ".request-plane.bin") or b""
    codec = "msgpack"
    lines.append("== %s.request-plane.bin (%d bytes): caller -> worker" % (os.path.basename(prefix), len(requests)))
    for number, frame in enumerate(split_request_frames(requests), 1):
        if "truncated" in frame:
            lines.append("  frame %d TRUNCATED: %s" % (number, frame["truncated"]))
            continue
        message = frame["message"]
        header_text = message["header"].decode("utf-8", "replace")
        try:
            codec = json.loads(header_text).get("payload_codec", codec)
        except ValueError:
            pass
        body_codec, body = decode_body(message["body"], codec)
        lines.append("  frame %d @%d, %d bytes: path (%d) %s" % (number, frame["offset"], frame["length"],
                                                               len(frame["path"]), frame["path"].decode()))
        lines.append("    headers (%d): %s" % (len(frame["headers"]), frame["headers"].decode("utf-8", "replace")))
        lines.append("    payload (%d): two-part header %d, body %d, checksum %d"
                     % (frame["payload_length"], message["header_length"], message["body_length"], message["checksum"]))
        lines.append("    control message: %s" % header_text)
        lines.append("    body (%s, %d bytes%s): %s" % (body_codec, len(message["body"]),
                                                       ", hex " + message["body"].hex() if len(message["body"]) <= 64 else "",
                                                       shorten(body)))
    acks = read(prefix + ".acks.bin")
    if acks is not None:
        lines.append("== %s.acks.bin (%d bytes): worker -> caller, hex %s" % (os.path.basename(prefix), len(acks),
                                                                            acks[:64].hex()))
        for number, ack in enumerate(split_acks(acks), 1):
            if "truncated" in ack:
                lines.append("  ack %d TRUNCATED: %s" % (number, ack["truncated"]))
            else:
                lines.append("  ack %d: length %d %s" % (number, ack["length"],
                                                         repr(ack["text"].decode("utf-8", "replace")) if ack["length"] else "(accepted)"))
    connections = read(prefix + ".connections.json")
    if connections:
        lines.append("== %s.connections.json: who closed each connection first, ms after it opened"
                     % os.path.basename(prefix))
        for connection in json.loads(connections):
            lines.append("  %s: caller %s, worker %s" % (connection["kind"], connection["caller_closed_ms"],
                                                        connection["worker_closed_ms"]))
    number = 1
    while True:
        data = read("%s.response-%d.bin" % (prefix, number))
        if data is None:
            break
        lines.append("== %s.response-%d.bin (%d bytes): worker -> caller, call-home connection"
                     % (os.path.basename(prefix), number, len(data)))
        for index, message in enumerate(split_messages(data), 1):
            if "truncated" in message:
                lines.append("  message %d TRUNCATED after %d bytes: %s" % (index, message["bytes"], message["truncated"]))
                continue
            header = message["header"].decode("utf-8", "replace")
            body_codec, body = decode_body(message["body"], codec)
            lines.append("  message %d @%d: header %d, body %d, checksum %d" % (
                index, message["offset"], message["header_length"], message["body_length"], message["checksum"]))
            if message["header_length"]:
                lines.append("    header: %s" % header)
            if message["body_length"]:
                lines.append("    body (%s%s): %s" % (body_codec, ", hex " + message["body"].hex()
                                                      if len(message["body"]) <= 48 else "", shorten(body)))
        control = read("%s.response-%d.control.bin" % (prefix, number))
        if control:
            lines.append("  caller -> worker on this connection (%d bytes):" % len(control))
            for index, message in enumerate(split_messages(control), 1):
                if "truncated" in message:
                    lines.append("    message %d TRUNCATED: %s" % (index, message["truncated"]))
                    continue
                lines.append("    message %d: header %s, body %d bytes, hex %s" % (
                    index, message["header"].decode("utf-8", "replace"), message["body_length"],
                    control[message["offset"]:message["offset"] + 24 + message["header_length"] + message["body_length"]].hex()))
        number += 1
    return "\n".join(lines) + "\n"


def main(argv):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    commands = parser.add_subparsers(dest="action", required=True)
    sniff_parser = commands.add_parser("sniff")
    sniff_parser.add_argument("--port", type=int, required=True, help="the worker's request-plane port")
    sniff_parser.add_argument("--out", required=True)
    sniff_parser.add_argument("--linger", type=float, default=1.0, help="seconds captured after COMMAND ends")
    sniff_parser.add_argument("command", nargs=argparse.REMAINDER)
    decode_parser = commands.add_parser("decode")
    decode_parser.add_argument("prefix")
    send_parser = commands.add_parser("send")
    send_parser.add_argument("--port", type=int, required=True)
    send_parser.add_argument("--out", required=True)
    send_parser.add_argument("--frame-hex")
    send_parser.add_argument("--frame-file")
    send_parser.add_argument("--listen", type=int, default=0)
    send_parser.add_argument("--wait", type=float, default=5.0)
    args = parser.parse_args(argv)
    if args.action == "sniff":
        if args.command and args.command[0] == "--":
            args.command = args.command[1:]
        return sniff(args)
    if args.action == "send":
        return send(args)
    sys.stdout.write(describe(args.prefix))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
