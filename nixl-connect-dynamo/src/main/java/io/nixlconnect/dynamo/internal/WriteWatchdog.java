package io.nixlconnect.dynamo.internal;

import java.io.BufferedOutputStream;
import java.io.IOException;
import java.io.OutputStream;
import java.net.Socket;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;

/**
 * Blocking socket writes have no timeout in Java: a peer that stops reading would hold the writer forever. Each
 * {@link TimedOutput} marks when its current write began; this watchdog closes the socket of any write older than its
 * limit, which ends the write with an exception.
 */
public final class WriteWatchdog implements AutoCloseable {

    private final Set<TimedOutput> outputs = ConcurrentHashMap.newKeySet();
    private final ScheduledExecutorService scheduler;

    public WriteWatchdog() {
        scheduler = Threads.scheduler("dynamo-write-watchdog");
        scheduler.scheduleWithFixedDelay(this::sweep, 250, 250, TimeUnit.MILLISECONDS);
    }

    private void sweep() {
        long now = System.nanoTime();
        for (TimedOutput output : outputs) {
            long started = output.writeStarted;
            if (started != 0 && now - started > output.limitNanos) {
                output.timedOut = true;
                output.closeSocket();
            }
        }
    }

    /** An output whose writes end with an exception when one takes longer than {@code limitMillis}. */
    public TimedOutput watch(Socket socket, long limitMillis) throws IOException {
        TimedOutput output = new TimedOutput(socket, limitMillis, this);
        outputs.add(output);
        return output;
    }

    @Override
    public void close() {
        scheduler.shutdownNow();
        outputs.clear();
    }

    /** A socket's output: whole messages written and flushed at once, under the watchdog. */
    public static final class TimedOutput implements AutoCloseable {
        private final Socket socket;
        private final OutputStream out;
        private final long limitNanos;
        private final WriteWatchdog watchdog;
        private volatile long writeStarted;
        private volatile boolean timedOut;

        TimedOutput(Socket socket, long limitMillis, WriteWatchdog watchdog) throws IOException {
            this.socket = socket;
            this.out = new BufferedOutputStream(socket.getOutputStream(), 64 * 1024);
            this.limitNanos = limitMillis * 1_000_000L;
            this.watchdog = watchdog;
        }

        /** Writes the parts and flushes them, as one message. */
        public synchronized void write(byte[]... parts) throws IOException {
            writeStarted = System.nanoTime() | 1;
            try {
                for (byte[] part : parts) {
                    out.write(part);
                }
                out.flush();
            } catch (IOException e) {
                if (timedOut) {
                    throw new IOException("the peer did not take a message within " + limitNanos / 1_000_000
                            + " ms (it stopped reading)", e);
                }
                throw e;
            } finally {
                writeStarted = 0;
            }
        }

        public boolean timedOut() {
            return timedOut;
        }

        void closeSocket() {
            try {
                socket.close();
            } catch (IOException e) {
                // closing
            }
        }

        @Override
        public void close() {
            watchdog.outputs.remove(this);
            closeSocket();
        }
    }
}
