package io.nixlconnect.transport.embedded;

import io.nixlconnect.internal.NativeMemory;
import io.nixlconnect.transport.MemoryType;
import java.io.EOFException;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.SocketChannel;
import java.nio.charset.StandardCharsets;

/**
 * The embedded transport's protocol, big-endian over one TCP connection at a time:
 *
 * <pre>
 * request  := MAGIC:int type:byte agentLen:short agent:bytes count:int (address:long length:long)*count
 *             notificationLen:int notification:bytes
 * response := status:byte [messageLen:short message:bytes when status = ERROR]
 *
 * READ   request → response → (OK) the ranges' bytes in order      ; then the client sends NOTIFY
 * WRITE  request → response → (OK) client sends the ranges' bytes → response (after the notification)
 * NOTIFY request (count 0) → response (OK once delivered to a waiting window)
 *
 * Same host (cross-memory attach; the side that owns the destination memory copies, nobody writes into
 * another process):
 * IDENTIFY   request (count 0) → OK pid:long bootId:16 tokenAddress:long token:16
 *            | DECLINED messageLen:short message (setting off) | ERROR
 * READ_GRANT request (with the notification) → GRANT: OK pid:long, the ranges stay pinned
 *            | DECLINED messageLen:short message (use READ) | ERROR
 *            → the client copies, then sends DONE or ABORTED:byte → response (after the notification)
 * </pre>
 */
final class Wire {

    static final int MAGIC = 0x4E58434E; // "NXCN"
    static final byte READ = 1;
    static final byte WRITE = 2;
    static final byte NOTIFY = 3;
    static final byte IDENTIFY = 4;
    static final byte READ_GRANT = 5;
    static final byte OK = 0;
    static final byte ERROR = 1;
    static final byte DECLINED = 2;
    /** After a grant: the client copied everything (deliver the notification) or gave up (deliver nothing). */
    static final byte COPY_DONE = 0;
    static final byte COPY_ABORTED = 1;

    static final int MAX_AGENT_NAME = 1024;
    static final int MAX_RANGES = 1 << 20;
    static final int MAX_NOTIFICATION = 64 * 1024;

    private Wire() {
    }

    /** One request's header. */
    record Request(byte type, String agent, long[] addresses, long[] lengths, byte[] notification) {
    }

    static ByteBuffer encodeRequest(byte type, String agent, long[] addresses, long[] lengths, byte[] notification) {
        byte[] name = agent.getBytes(StandardCharsets.UTF_8);
        int count = addresses.length;
        ByteBuffer buffer = ByteBuffer.allocate(4 + 1 + 2 + name.length + 4 + 16 * count + 4 + notification.length);
        buffer.putInt(MAGIC).put(type).putShort((short) name.length).put(name).putInt(count);
        for (int i = 0; i < count; i++) {
            buffer.putLong(addresses[i]).putLong(lengths[i]);
        }
        buffer.putInt(notification.length).put(notification);
        return buffer.flip();
    }

    /** Reads one request header; {@code null} on a clean end of stream before its first byte. */
    static Request readRequest(SocketChannel channel) throws IOException {
        ByteBuffer head = ByteBuffer.allocate(7);
        if (!readFullyOrEof(channel, head)) {
            return null;
        }
        head.flip();
        if (head.getInt() != MAGIC) {
            throw new ProtocolException("not an embedded-transport request (bad magic)");
        }
        byte type = head.get();
        if (type < READ || type > READ_GRANT) {
            throw new ProtocolException("unknown request type " + type);
        }
        int nameLength = head.getShort() & 0xFFFF;
        if (nameLength == 0 || nameLength > MAX_AGENT_NAME) {
            throw new ProtocolException("agent name length " + nameLength + " out of range");
        }
        ByteBuffer name = readExactly(channel, nameLength + 4);
        byte[] nameBytes = new byte[nameLength];
        name.get(nameBytes);
        int count = name.getInt();
        if (count < 0 || count > MAX_RANGES) {
            throw new ProtocolException("range count " + count + " out of range");
        }
        ByteBuffer ranges = readExactly(channel, 16 * count + 4);
        long[] addresses = new long[count];
        long[] lengths = new long[count];
        for (int i = 0; i < count; i++) {
            addresses[i] = ranges.getLong();
            lengths[i] = ranges.getLong();
            if (lengths[i] < 0) {
                throw new ProtocolException("negative range length");
            }
        }
        int notificationLength = ranges.getInt();
        if (notificationLength < 0 || notificationLength > MAX_NOTIFICATION) {
            throw new ProtocolException("notification length " + notificationLength + " out of range");
        }
        byte[] notification = new byte[notificationLength];
        readExactly(channel, notificationLength).get(notification);
        return new Request(type, new String(nameBytes, StandardCharsets.UTF_8), addresses, lengths, notification);
    }

    static void writeOk(SocketChannel channel) throws IOException {
        writeFully(channel, ByteBuffer.wrap(new byte[] {OK}));
    }

    static void writeError(SocketChannel channel, String message) throws IOException {
        byte[] text = message.getBytes(StandardCharsets.UTF_8);
        int length = Math.min(text.length, 4096);
        ByteBuffer buffer = ByteBuffer.allocate(3 + length);
        buffer.put(ERROR).putShort((short) length).put(text, 0, length).flip();
        writeFully(channel, buffer);
    }

    /** Reads a response; returns null for OK, the peer's message for ERROR. */
    static String readResponse(SocketChannel channel) throws IOException {
        byte status = readExactly(channel, 1).get();
        if (status == OK) {
            return null;
        }
        if (status != ERROR) {
            throw new ProtocolException("bad response status " + status);
        }
        int length = readExactly(channel, 2).getShort() & 0xFFFF;
        byte[] text = new byte[length];
        readExactly(channel, length).get(text);
        return new String(text, StandardCharsets.UTF_8);
    }

    /** Answers an IDENTIFY with this process's identity. */
    static void writeHello(SocketChannel channel, SameHostIdentity identity) throws IOException {
        ByteBuffer buffer = ByteBuffer.allocate(1 + SameHostIdentity.ENCODED_BYTES);
        buffer.put(OK);
        identity.encode(buffer);
        writeFully(channel, buffer.flip());
    }

    /**
     * Reads an IDENTIFY's answer: the peer's identity, or null when it declined (why goes to {@code declined}).
     *
     * @throws IOException for an ERROR answer (the peer does not know the request, or refuses it)
     */
    static SameHostIdentity readHello(SocketChannel channel, StringBuilder declined) throws IOException {
        byte status = readExactly(channel, 1).get();
        if (status == OK) {
            return SameHostIdentity.decode(readExactly(channel, SameHostIdentity.ENCODED_BYTES));
        }
        if (status != ERROR && status != DECLINED) {
            throw new ProtocolException("bad response status " + status);
        }
        int length = readExactly(channel, 2).getShort() & 0xFFFF;
        byte[] text = new byte[length];
        readExactly(channel, length).get(text);
        String message = new String(text, StandardCharsets.UTF_8);
        if (status == ERROR) {
            throw new RefusedException("the peer refused IDENTIFY: " + message);
        }
        declined.append(message);
        return null;
    }

    /** Grants a peer the ranges of its READ_GRANT: they stay pinned until it reports. */
    static void writeGrant(SocketChannel channel, long pid) throws IOException {
        writeFully(channel, ByteBuffer.allocate(9).put(OK).putLong(pid).flip());
    }

    /** Declines a READ_GRANT whose ranges can only go over the socket (GPU memory, setting off). */
    static void writeDeclined(SocketChannel channel, String message) throws IOException {
        byte[] text = message.getBytes(StandardCharsets.UTF_8);
        int length = Math.min(text.length, 4096);
        writeFully(channel, ByteBuffer.allocate(3 + length).put(DECLINED).putShort((short) length).put(text, 0, length)
                .flip());
    }

    /** A READ_GRANT's answer: the granting pid, or why the peer declined. */
    record Grant(long pid, String declined) {
    }

    /**
     * Reads a READ_GRANT's answer.
     *
     * @return the grant or the decline; an ERROR (a range outside every window) comes back as {@code refused}
     */
    static Grant readGrant(SocketChannel channel, StringBuilder refused) throws IOException {
        byte status = readExactly(channel, 1).get();
        if (status == OK) {
            return new Grant(readExactly(channel, 8).getLong(), null);
        }
        if (status != ERROR && status != DECLINED) {
            throw new ProtocolException("bad grant status " + status);
        }
        int length = readExactly(channel, 2).getShort() & 0xFFFF;
        byte[] text = new byte[length];
        readExactly(channel, length).get(text);
        String message = new String(text, StandardCharsets.UTF_8);
        if (status == ERROR) {
            refused.append(message);
            return null;
        }
        return new Grant(0, message);
    }

    static void writeCopyOutcome(SocketChannel channel, boolean done) throws IOException {
        writeFully(channel, ByteBuffer.wrap(new byte[] {done ? COPY_DONE : COPY_ABORTED}));
    }

    /** Reads the client's report after a grant: true for DONE, false for ABORTED. */
    static boolean readCopyOutcome(SocketChannel channel) throws IOException {
        byte outcome = readExactly(channel, 1).get();
        if (outcome != COPY_DONE && outcome != COPY_ABORTED) {
            throw new ProtocolException("bad copy outcome " + outcome);
        }
        return outcome == COPY_DONE;
    }

    /** Streams a region's bytes to the channel: host memory directly, GPU memory through {@code staging}. */
    static void sendMemory(SocketChannel channel, MemoryType type, long address, long length, GpuStaging staging)
            throws IOException {
        if (type == MemoryType.VRAM) {
            staging.send(channel, address, length);
        } else {
            sendMemory(channel, address, length);
        }
    }

    /** Receives a region's bytes from the channel: into host memory directly, into GPU memory through {@code staging}. */
    static void receiveMemory(SocketChannel channel, MemoryType type, long address, long length, GpuStaging staging)
            throws IOException {
        if (type == MemoryType.VRAM) {
            staging.receive(channel, address, length);
        } else {
            receiveMemory(channel, address, length);
        }
    }

    /** Streams {@code length} bytes at {@code address} to the channel, in views of at most 1 GiB. */
    static void sendMemory(SocketChannel channel, long address, long length) throws IOException {
        long done = 0;
        while (done < length) {
            int chunk = (int) Math.min(NativeMemory.MAX_VIEW, length - done);
            writeFully(channel, NativeMemory.view(address + done, chunk));
            done += chunk;
        }
    }

    /** Receives {@code length} bytes from the channel straight into memory at {@code address}. */
    static void receiveMemory(SocketChannel channel, long address, long length) throws IOException {
        long done = 0;
        while (done < length) {
            int chunk = (int) Math.min(NativeMemory.MAX_VIEW, length - done);
            readFully(channel, NativeMemory.view(address + done, chunk));
            done += chunk;
        }
    }

    static void writeFully(SocketChannel channel, ByteBuffer buffer) throws IOException {
        while (buffer.hasRemaining()) {
            channel.write(buffer);
        }
    }

    static void readFully(SocketChannel channel, ByteBuffer buffer) throws IOException {
        while (buffer.hasRemaining()) {
            if (channel.read(buffer) < 0) {
                throw new EOFException("connection closed by peer");
            }
        }
    }

    private static ByteBuffer readExactly(SocketChannel channel, int length) throws IOException {
        ByteBuffer buffer = ByteBuffer.allocate(length);
        readFully(channel, buffer);
        return buffer.flip();
    }

    private static boolean readFullyOrEof(SocketChannel channel, ByteBuffer buffer) throws IOException {
        while (buffer.hasRemaining()) {
            if (channel.read(buffer) < 0) {
                if (buffer.position() == 0) {
                    return false;
                }
                throw new EOFException("connection closed by peer mid-request");
            }
        }
        return true;
    }

    /** The peer answered a request with an ERROR it does not expect to be retried. */
    static final class RefusedException extends IOException {
        private static final long serialVersionUID = 1L;

        RefusedException(String message) {
            super(message);
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
