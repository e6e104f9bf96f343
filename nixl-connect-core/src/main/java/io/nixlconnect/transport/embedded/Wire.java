package io.nixlconnect.transport.embedded;

import io.nixlconnect.internal.NativeMemory;
import io.nixlconnect.transport.MemoryType;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;

/**
 * The embedded transport's protocol, big-endian over one connection (plain TCP, or TLS) at a time. When a
 * shared secret is set, {@link PeerAuthentication} runs first.
 *
 * <pre>
 * request  := MAGIC:int type:byte agentLen:short credentialLen:short count:int agent:bytes credential:bytes
 *             (address:long length:long)*count
 * response := status:byte [messageLen:short message:bytes when status = ERROR]
 *
 * READ   request → response → (OK) the ranges' bytes in order      ; then the client sends NOTIFY
 * WRITE  request → response → (OK) client sends the ranges' bytes → response (after the notification)
 * NOTIFY request (count 0) → response (OK once delivered to a waiting window)
 * </pre>
 *
 * The credential is the passive operation's notification key: a READ or WRITE is served only from the one
 * window opened with it, and a NOTIFY completes only that window. The fixed-size head comes first so the
 * server checks every length against its limits before it allocates anything, and it looks the window up
 * before it reads a single range; ranges are then read in bounded chunks and each is checked as it arrives.
 */
final class Wire {

    static final int MAGIC = 0x4E584332; // "NXC2": version 2, with per-window credentials
    /** The version 1 magic ("NXCN"), recognised only to tell an outdated peer what is wrong. */
    static final int MAGIC_V1 = 0x4E58434E;
    static final byte READ = 1;
    static final byte WRITE = 2;
    static final byte NOTIFY = 3;
    static final byte OK = 0;
    static final byte ERROR = 1;

    static final int HEAD = 4 + 1 + 2 + 2 + 4;
    static final int MAX_AGENT_NAME = 1024;
    /** Longest credential (notification key) a window may have; keys are generated, 32 hex characters. */
    static final int MAX_CREDENTIAL = 1024;
    /** Shortest credential a window may be opened with: 128 bits written as hex. */
    static final int MIN_CREDENTIAL = 16;
    static final int MAX_RANGES = 1 << 20;
    /** Ranges read per chunk: the server holds at most this many unchecked ranges at once. */
    static final int RANGE_CHUNK = 4096;

    private Wire() {
    }

    /** A request's fixed-size head and names; the ranges follow on the link. */
    record Head(byte type, String agent, byte[] credential, int count) {
    }

    static ByteBuffer encodeRequest(byte type, String agent, byte[] credential, long[] addresses, long[] lengths) {
        byte[] name = agent.getBytes(StandardCharsets.UTF_8);
        int count = addresses.length;
        ByteBuffer buffer = ByteBuffer.allocate(HEAD + name.length + credential.length + 16 * count);
        buffer.putInt(MAGIC).put(type).putShort((short) name.length).putShort((short) credential.length).putInt(count)
                .put(name).put(credential);
        for (int i = 0; i < count; i++) {
            buffer.putLong(addresses[i]).putLong(lengths[i]);
        }
        return buffer.flip();
    }

    /**
     * Reads one request's head, agent name and credential, checking each length before allocating for it;
     * {@code null} on a clean end of stream before the first byte. The ranges are left on the link.
     */
    static Head readHead(Link link) throws IOException {
        ByteBuffer head = ByteBuffer.allocate(HEAD);
        if (!link.readFullyOrEof(head.limit(4))) {
            return null;
        }
        int magic = head.getInt(0);
        if (magic != MAGIC) {
            if (magic == PeerAuthentication.HELLO_MAGIC) {
                throw new UnexpectedHelloException();
            }
            if (magic == MAGIC_V1) {
                throw new OutdatedPeerException();
            }
            throw new ProtocolException("not an embedded-transport request (bad magic)");
        }
        link.readFully(head.limit(HEAD));
        head.position(4);
        byte type = head.get();
        if (type != READ && type != WRITE && type != NOTIFY) {
            throw new ProtocolException("unknown request type " + type);
        }
        int nameLength = head.getShort() & 0xFFFF;
        if (nameLength == 0 || nameLength > MAX_AGENT_NAME) {
            throw new ProtocolException("agent name length " + nameLength + " out of range");
        }
        int credentialLength = head.getShort() & 0xFFFF;
        if (credentialLength == 0 || credentialLength > MAX_CREDENTIAL) {
            throw new ProtocolException("credential length " + credentialLength + " out of range");
        }
        int count = head.getInt();
        if (count < 0 || count > MAX_RANGES || (type == NOTIFY && count != 0)) {
            throw new ProtocolException("range count " + count + " out of range");
        }
        ByteBuffer names = ByteBuffer.allocate(nameLength + credentialLength);
        link.readFully(names);
        byte[] credential = new byte[credentialLength];
        String agent = new String(names.array(), 0, nameLength, StandardCharsets.UTF_8);
        System.arraycopy(names.array(), nameLength, credential, 0, credentialLength);
        return new Head(type, agent, credential, count);
    }

    /** Receives ranges from a request, in chunks of at most {@link #RANGE_CHUNK}; gets each one in turn. */
    interface RangeSink {
        /** @return false to refuse the request: reading stops there, and the connection must be dropped */
        boolean accept(long address, long length);
    }

    /**
     * Reads {@code count} ranges, handing each to {@code sink}; false as soon as one is refused (the rest stay
     * unread, so the caller drops the connection). Memory held is one chunk, whatever the count.
     */
    static boolean readRanges(Link link, int count, RangeSink sink) throws IOException {
        ByteBuffer chunk = ByteBuffer.allocate(16 * Math.min(count, RANGE_CHUNK));
        for (int left = count; left > 0; ) {
            int n = Math.min(left, RANGE_CHUNK);
            chunk.clear().limit(16 * n);
            link.readFully(chunk);
            chunk.flip();
            for (int i = 0; i < n; i++) {
                long address = chunk.getLong();
                long length = chunk.getLong();
                if (length < 0) {
                    throw new ProtocolException("negative range length");
                }
                if (!sink.accept(address, length)) {
                    return false;
                }
            }
            left -= n;
        }
        return true;
    }

    static void writeOk(Link link) throws IOException {
        writeFully(link, ByteBuffer.wrap(new byte[] {OK}));
    }

    static void writeError(Link link, String message) throws IOException {
        byte[] text = message.getBytes(StandardCharsets.UTF_8);
        int length = Math.min(text.length, 4096);
        ByteBuffer buffer = ByteBuffer.allocate(3 + length);
        buffer.put(ERROR).putShort((short) length).put(text, 0, length).flip();
        writeFully(link, buffer);
    }

    /** Reads a response; returns null for OK, the peer's message for ERROR. */
    static String readResponse(Link link) throws IOException {
        byte status = readExactly(link, 1).get();
        if (status == OK) {
            return null;
        }
        if (status != ERROR) {
            throw new ProtocolException("bad response status " + status);
        }
        int length = readExactly(link, 2).getShort() & 0xFFFF;
        byte[] text = new byte[length];
        readExactly(link, length).get(text);
        return new String(text, StandardCharsets.UTF_8);
    }

    /** Streams a region's bytes to the channel: host memory directly, GPU memory through {@code staging}. */
    static void sendMemory(Link link, MemoryType type, long address, long length, GpuStaging staging)
            throws IOException {
        if (type == MemoryType.VRAM) {
            staging.send(link, address, length);
        } else {
            sendMemory(link, address, length);
        }
    }

    /** Receives a region's bytes from the channel: into host memory directly, into GPU memory through {@code staging}. */
    static void receiveMemory(Link link, MemoryType type, long address, long length, GpuStaging staging)
            throws IOException {
        if (type == MemoryType.VRAM) {
            staging.receive(link, address, length);
        } else {
            receiveMemory(link, address, length);
        }
    }

    /** Streams {@code length} bytes at {@code address} to the channel, in views of at most 1 GiB. */
    static void sendMemory(Link link, long address, long length) throws IOException {
        long done = 0;
        while (done < length) {
            int chunk = (int) Math.min(NativeMemory.MAX_VIEW, length - done);
            writeFully(link, NativeMemory.view(address + done, chunk));
            done += chunk;
        }
    }

    /** Receives {@code length} bytes from the channel straight into memory at {@code address}. */
    static void receiveMemory(Link link, long address, long length) throws IOException {
        long done = 0;
        while (done < length) {
            int chunk = (int) Math.min(NativeMemory.MAX_VIEW, length - done);
            readFully(link, NativeMemory.view(address + done, chunk));
            done += chunk;
        }
    }

    static void writeFully(Link link, ByteBuffer buffer) throws IOException {
        link.writeFully(buffer);
    }

    static void readFully(Link link, ByteBuffer buffer) throws IOException {
        link.readFully(buffer);
    }

    private static ByteBuffer readExactly(Link link, int length) throws IOException {
        ByteBuffer buffer = ByteBuffer.allocate(length);
        link.readFully(buffer);
        return buffer.flip();
    }

    /** A peer offered shared-secret authentication to a server that has none configured. */
    static final class UnexpectedHelloException extends IOException {
        private static final long serialVersionUID = 1L;

        UnexpectedHelloException() {
            super("peer offered shared-secret authentication, but this server has no secret configured");
        }
    }

    /** A peer speaks version 1 of this protocol. */
    static final class OutdatedPeerException extends IOException {
        private static final long serialVersionUID = 1L;

        OutdatedPeerException() {
            super("this peer speaks embedded-transport protocol version 2 (per-window credentials); "
                    + "upgrade nixl-connect on the requesting side");
        }
    }

    /** The peer broke the protocol; the connection is dropped. */
    static final class ProtocolException extends IOException {
        private static final long serialVersionUID = 1L;

        ProtocolException(String message) {
            super(message);
        }
    }
}

