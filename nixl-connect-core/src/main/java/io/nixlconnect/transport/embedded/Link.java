package io.nixlconnect.transport.embedded;

import java.io.EOFException;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.nio.ByteBuffer;
import java.nio.channels.SocketChannel;
import javax.net.ssl.SSLSocket;

/**
 * One connection's byte stream: the socket channel itself, or TLS over it. Every read and write records
 * progress, so the server can close connections that stall; {@link #abort()} closes the socket from any
 * thread and unblocks whoever is reading or writing it.
 */
abstract class Link implements AutoCloseable {

    /** Bytes of the reusable buffer each link keeps for message heads and answers (a request head with the longest names fits). */
    static final int SCRATCH_BYTES = 4096;

    final SocketChannel channel;
    private volatile long lastProgressNanos = System.nanoTime();
    /** See {@link #systemCalls()}; written by the one thread using the link. */
    long systemCalls;
    // A link is used by one thread at a time (a pooled client connection by the worker running its transfer, a
    // server connection by its handler), so the heads and answers of every message can share one buffer instead
    // of a new one each (several per small operation).
    private final ByteBuffer scratch = ByteBuffer.allocate(SCRATCH_BYTES);
    /** Since when (System.nanoTime) it waits unused in its peer's pool; written under the pool's lock. */
    long idleSince;
    /** The two buffers of {@link #writeFully(ByteBuffer, ByteBuffer)}, emptied after each write (no view outlives it). */
    private final ByteBuffer[] pair = new ByteBuffer[2];

    Link(SocketChannel channel) {
        this.channel = channel;
    }

    static Link plain(SocketChannel channel) {
        return new Plain(channel);
    }

    static Link tls(SocketChannel channel, SSLSocket socket) throws IOException {
        return new Tls(channel, socket);
    }

    /**
     * A cleared buffer of {@code capacity} bytes (its limit) for one message; the link's own when it fits, else a new
     * one for this message only (so a rare large message does not make every link keep a large buffer). Valid until
     * the next call: the caller must be the one thread using the link.
     */
    ByteBuffer scratch(int capacity) {
        if (capacity > SCRATCH_BYTES) {
            return ByteBuffer.allocate(capacity);
        }
        return scratch.clear().limit(capacity);
    }

    /** Reads what is available into {@code buffer}, blocking for at least one byte; -1 at end of stream. */
    abstract int read(ByteBuffer buffer) throws IOException;

    /** Writes some of {@code buffer}, blocking until at least one byte went. */
    abstract void writeSome(ByteBuffer buffer) throws IOException;

    void writeFully(ByteBuffer buffer) throws IOException {
        while (buffer.hasRemaining()) {
            writeSome(buffer);
            progress();
        }
    }

    /** Writes every buffer in order; a gathering write where the link has one, so that small messages go as one segment. */
    void writeFully(ByteBuffer[] buffers) throws IOException {
        for (ByteBuffer buffer : buffers) {
            writeFully(buffer);
        }
    }

    /** {@code first} and then {@code second}, as {@link #writeFully(ByteBuffer[])} writes them (one segment when small). */
    void writeFully(ByteBuffer first, ByteBuffer second) throws IOException {
        pair[0] = first;
        pair[1] = second;
        try {
            writeFully(pair);
        } finally {
            pair[0] = null;
            pair[1] = null;
        }
    }

    /** Fills every buffer in order; a scattering read where the link has one (as many buffers a call as bytes have arrived). */
    void readFully(ByteBuffer[] buffers) throws IOException {
        for (ByteBuffer buffer : buffers) {
            readFully(buffer);
        }
    }

    void readFully(ByteBuffer buffer) throws IOException {
        while (buffer.hasRemaining()) {
            if (read(buffer) < 0) {
                throw new EOFException("connection closed by peer");
            }
            progress();
        }
    }

    /** Like {@link #readFully}, but false on a clean end of stream before the first byte. */
    boolean readFullyOrEof(ByteBuffer buffer) throws IOException {
        int start = buffer.position();
        while (buffer.hasRemaining()) {
            if (read(buffer) < 0) {
                if (buffer.position() == start) {
                    return false;
                }
                throw new EOFException("connection closed by peer mid-message");
            }
            progress();
        }
        return true;
    }

    /** Read and write system calls made on a plain link (tests count them: a block list must not cost one per block). */
    long systemCalls() {
        return systemCalls;
    }

    void progress() {
        lastProgressNanos = System.nanoTime();
    }

    long lastProgressNanos() {
        return lastProgressNanos;
    }

    InetAddress remoteAddress() {
        try {
            return channel.getRemoteAddress() instanceof InetSocketAddress address ? address.getAddress() : null;
        } catch (IOException e) {
            return null;
        }
    }

    /**
     * Whether bytes have arrived that nobody read yet (the kernel's count, TLS records included): while the peer is
     * expected to send nothing, that it said something (a revoked grant).
     */
    boolean hasUnreadInput() {
        try {
            return channel.socket().getInputStream().available() > 0;
        } catch (IOException | RuntimeException e) {
            return true; // a broken connection: treat it as revoked
        }
    }

    /**
     * For a connection waiting unused in its pool, whose peer is to send nothing until asked: whether the peer closed
     * its end (end of stream), sent something anyway (as a TLS close_notify before closing), or the socket failed.
     * A non-blocking read of the socket itself: nothing is consumed from a connection that is still fine (no byte has
     * arrived), so it stays usable, TLS or not; one found otherwise must be closed. The caller is the one thread
     * touching the link (it holds the pool's lock, under which links are taken from the pool).
     */
    boolean peerClosedWhileIdle() {
        ByteBuffer one = scratch.clear().limit(1);
        try {
            channel.configureBlocking(false);
            try {
                return channel.read(one) != 0;
            } finally {
                channel.configureBlocking(true);
            }
        } catch (IOException | RuntimeException e) {
            return true; // reset, or closed under us: unusable either way
        }
    }

    /** The TLS session, or null for a plain link. */
    javax.net.ssl.SSLSession tlsSession() {
        return null;
    }

    /** Closes the socket at once, from any thread; a blocked read or write fails. */
    void abort() {
        try {
            channel.close();
        } catch (IOException ignored) {
            // closing is all we wanted
        }
    }

    @Override
    public void close() {
        abort();
    }

    private static final class Plain extends Link {

        Plain(SocketChannel channel) {
            super(channel);
        }

        @Override
        int read(ByteBuffer buffer) throws IOException {
            systemCalls++;
            return channel.read(buffer);
        }

        @Override
        void writeSome(ByteBuffer buffer) throws IOException {
            systemCalls++;
            channel.write(buffer);
        }

        @Override
        void writeFully(ByteBuffer[] buffers) throws IOException {
            long left = 0;
            for (ByteBuffer buffer : buffers) {
                left += buffer.remaining();
            }
            int first = 0;
            while (left > 0) {
                while (!buffers[first].hasRemaining()) {
                    first++; // the JDK would skip them too, on every call
                }
                systemCalls++;
                left -= channel.write(buffers, first, buffers.length - first);
                progress();
            }
        }

        @Override
        void readFully(ByteBuffer[] buffers) throws IOException {
            long left = 0;
            for (ByteBuffer buffer : buffers) {
                left += buffer.remaining();
            }
            int first = 0;
            while (left > 0) {
                while (!buffers[first].hasRemaining()) {
                    first++;
                }
                systemCalls++;
                long n = channel.read(buffers, first, buffers.length - first);
                if (n < 0) {
                    throw new EOFException("connection closed by peer");
                }
                left -= n;
                progress();
            }
        }
    }

    /** TLS through an {@link SSLSocket} layered on the channel's socket; direct buffers go through a heap copy. */
    private static final class Tls extends Link {

        private static final int COPY = 64 * 1024;

        private final InputStream in;
        private final OutputStream out;
        private final byte[] copy = new byte[COPY];

        private final SSLSocket socket;

        Tls(SocketChannel channel, SSLSocket socket) throws IOException {
            super(channel);
            this.socket = socket;
            this.in = socket.getInputStream();
            this.out = socket.getOutputStream();
        }

        @Override
        javax.net.ssl.SSLSession tlsSession() {
            return socket.getSession();
        }

        @Override
        int read(ByteBuffer buffer) throws IOException {
            if (buffer.hasArray()) {
                int n = in.read(buffer.array(), buffer.arrayOffset() + buffer.position(), buffer.remaining());
                if (n > 0) {
                    buffer.position(buffer.position() + n);
                }
                return n;
            }
            int n = in.read(copy, 0, Math.min(COPY, buffer.remaining()));
            if (n > 0) {
                buffer.put(copy, 0, n);
            }
            return n;
        }

        @Override
        void writeSome(ByteBuffer buffer) throws IOException {
            if (buffer.hasArray()) {
                int n = buffer.remaining();
                out.write(buffer.array(), buffer.arrayOffset() + buffer.position(), n);
                buffer.position(buffer.position() + n);
            } else {
                int n = Math.min(COPY, buffer.remaining());
                buffer.get(copy, 0, n);
                out.write(copy, 0, n);
            }
        }

        @Override
        void writeFully(ByteBuffer buffer) throws IOException {
            super.writeFully(buffer);
            out.flush();
        }

        /** The buffers gathered in the copy array: one TLS record per 64 KiB, not one (and one write) per buffer. */
        @Override
        void writeFully(ByteBuffer[] buffers) throws IOException {
            int filled = 0;
            for (ByteBuffer buffer : buffers) {
                while (buffer.hasRemaining()) {
                    if (filled == COPY) {
                        out.write(copy, 0, filled);
                        progress();
                        filled = 0;
                    }
                    int n = Math.min(COPY - filled, buffer.remaining());
                    buffer.get(copy, filled, n);
                    filled += n;
                }
            }
            if (filled > 0) {
                out.write(copy, 0, filled);
                progress();
            }
            out.flush();
        }
    }
}
