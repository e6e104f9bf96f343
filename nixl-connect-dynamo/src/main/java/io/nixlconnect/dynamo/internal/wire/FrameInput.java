package io.nixlconnect.dynamo.internal.wire;

import java.io.BufferedInputStream;
import java.io.EOFException;
import java.io.IOException;
import java.io.InputStream;
import java.net.Socket;
import java.net.SocketTimeoutException;
import org.jspecify.annotations.Nullable;

/**
 * Reads frames from a socket with two clocks: the wait for a frame's first byte (idle: as long as the caller allows),
 * and the time the rest of the frame may take once it has begun ({@code frameReadTimeout}), so that a slow or
 * truncated frame ends its connection instead of holding a thread.
 */
public final class FrameInput {

    private final @Nullable Socket socket;
    private final InputStream in;
    private final long frameReadNanos;
    private long deadline;
    private long bytesRead;

    public FrameInput(Socket socket, long frameReadTimeoutMillis) throws IOException {
        this.socket = socket;
        // Small: a connection per call home would otherwise allocate (and zero) 64 KiB per call; reads of a frame's
        // body at least this long go straight to the socket (BufferedInputStream's bypass), whatever its size.
        this.in = new BufferedInputStream(socket.getInputStream(), 8 * 1024);
        this.frameReadNanos = frameReadTimeoutMillis * 1_000_000L;
    }

    /** Frames from a stream with no clock of its own (captured bytes): only the frame deadline applies, checked between reads. */
    public FrameInput(InputStream in, long frameReadTimeoutMillis) {
        this.socket = null;
        this.in = in;
        this.frameReadNanos = frameReadTimeoutMillis * 1_000_000L;
    }

    private void timeout(int millis) throws IOException {
        if (socket != null) {
            socket.setSoTimeout(millis);
        }
    }

    /**
     * Waits up to {@code idleMillis} (0: without limit) for the next frame's first byte and starts the frame's clock.
     *
     * @return the first byte, or -1 if the peer closed the connection between frames
     * @throws SocketTimeoutException if nothing came within {@code idleMillis}
     */
    public int beginFrame(long idleMillis) throws IOException {
        timeout((int) Math.min(Integer.MAX_VALUE, Math.max(0, idleMillis)));
        int first = in.read();
        deadline = System.nanoTime() + frameReadNanos;
        if (first >= 0) {
            bytesRead++;
        }
        return first;
    }

    /** Starts a frame's clock without waiting (the caller knows one is due). */
    public void beginFrameNow() {
        deadline = System.nanoTime() + frameReadNanos;
    }

    /**
     * Reads exactly {@code length} bytes of the frame begun.
     *
     * @throws EOFException           if the connection ends first (a truncated frame)
     * @throws FrameTimeoutException  if the frame's time runs out first (a slow frame)
     */
    public void readFully(byte[] buffer, int offset, int length) throws IOException {
        int done = 0;
        while (done < length) {
            long left = deadline - System.nanoTime();
            if (left <= 0) {
                throw new FrameTimeoutException("a frame took longer than " + frameReadNanos / 1_000_000
                        + " ms to arrive (" + done + " of " + length + " bytes of a part came)");
            }
            timeout((int) Math.max(1, Math.min(Integer.MAX_VALUE, left / 1_000_000)));
            int n;
            try {
                n = in.read(buffer, offset + done, length - done);
            } catch (SocketTimeoutException e) {
                continue; // the loop's deadline check words it
            }
            if (n < 0) {
                throw new EOFException("the connection closed inside a frame (" + done + " of " + length
                        + " bytes of a part came)");
            }
            done += n;
            bytesRead += n;
        }
    }

    public byte[] readBytes(int length) throws IOException {
        byte[] bytes = new byte[length];
        readFully(bytes, 0, length);
        return bytes;
    }

    private final byte[] scratch = new byte[8];

    public int readU16() throws IOException {
        readFully(scratch, 0, 2);
        return ((scratch[0] & 0xff) << 8) | (scratch[1] & 0xff);
    }

    /** An unsigned 32-bit big-endian integer. */
    public long readU32() throws IOException {
        readFully(scratch, 0, 4);
        return ((long) (scratch[0] & 0xff) << 24) | ((scratch[1] & 0xff) << 16) | ((scratch[2] & 0xff) << 8)
                | (scratch[3] & 0xff);
    }

    /** A 64-bit big-endian integer, as Java's signed long (callers treat it as unsigned). */
    public long readU64() throws IOException {
        readFully(scratch, 0, 8);
        long value = 0;
        for (int i = 0; i < 8; i++) {
            value = (value << 8) | (scratch[i] & 0xff);
        }
        return value;
    }

    /** Bytes read so far. */
    public long bytesRead() {
        return bytesRead;
    }

    /** A frame did not arrive within its time. */
    public static final class FrameTimeoutException extends SocketTimeoutException {
        private static final long serialVersionUID = 1L;

        public FrameTimeoutException(String message) {
            super(message);
        }
    }
}
