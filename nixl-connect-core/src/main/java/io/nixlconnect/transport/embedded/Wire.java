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
 * </pre>
 */
final class Wire {

    static final int MAGIC = 0x4E58434E; // "NXCN"
    static final byte READ = 1;
    static final byte WRITE = 2;
    static final byte NOTIFY = 3;
    static final byte OK = 0;
    static final byte ERROR = 1;

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
        if (type != READ && type != WRITE && type != NOTIFY) {
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

    /** The peer broke the protocol; the connection is dropped. */
    static final class ProtocolException extends IOException {
        private static final long serialVersionUID = 1L;

        ProtocolException(String message) {
            super(message);
        }
    }
}
