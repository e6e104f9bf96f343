package io.nixlconnect.dynamo.internal.client;

import io.nixlconnect.dynamo.DynamoException;
import io.nixlconnect.dynamo.DynamoInstance;
import io.nixlconnect.dynamo.DynamoProtocolException;
import io.nixlconnect.dynamo.DynamoSettings;
import io.nixlconnect.dynamo.DynamoStreamException;
import io.nixlconnect.dynamo.DynamoTimeoutException;
import io.nixlconnect.dynamo.internal.Counters;
import io.nixlconnect.dynamo.internal.Threads;
import io.nixlconnect.dynamo.internal.wire.Ack;
import io.nixlconnect.dynamo.internal.wire.FrameTooLargeException;
import java.io.IOException;
import java.net.InetSocketAddress;
import java.net.StandardSocketOptions;
import java.nio.ByteBuffer;
import java.nio.channels.ClosedSelectorException;
import java.nio.channels.SelectionKey;
import java.nio.channels.Selector;
import java.nio.channels.SocketChannel;
import java.nio.charset.StandardCharsets;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import org.jspecify.annotations.Nullable;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The caller's side of the request plane: one pooled connection per worker address, requests written on it in turn
 * and acknowledged in the same order (Dynamo's worker answers each frame before reading the next), the
 * acknowledgements read by one thread per connection. A connection that breaks, or whose acknowledgement does not
 * come within {@code ackTimeout}, is closed and every request waiting on it fails.
 *
 * <p>A pooled connection can go stale while it idles: its worker restarted at the same address, or closed it. Before
 * a request is written on a connection that carried one before and has none outstanding, the connection is checked
 * without blocking (a read on the non-blocking socket: end of stream, a reset, or bytes nobody asked for); a stale one
 * is dropped and the request goes over a new connection. A request whose write fails before any of its bytes left
 * a connection that carried requests before is written once more on a new connection: the worker cannot have seen
 * any of it. Once a byte may have reached the worker, a failure fails the call (never a second delivery). Connections
 * that carry nothing for {@code requestConnectionIdleTimeout} are closed, as Dynamo's client drops idle hosts.
 */
public final class RequestPlaneClient implements AutoCloseable {

    private static final Logger LOG = LoggerFactory.getLogger(RequestPlaneClient.class);

    /** Connections tried for one request: a stale pooled one, one whose write failed, a new one. */
    private static final int MAX_CONNECTIONS_PER_REQUEST = 3;

    private final DynamoSettings settings;
    private final Counters counters;
    private final ScheduledExecutorService scheduler;
    private final Map<String, Connection> connections = new ConcurrentHashMap<>();
    private final long idleNanos;
    private final long ackNanos;
    private final AtomicBoolean ackSweepArmed = new AtomicBoolean();
    private final @Nullable ScheduledFuture<?> idleSweep;
    private volatile boolean closed;

    public RequestPlaneClient(DynamoSettings settings, Counters counters, ScheduledExecutorService scheduler) {
        this.settings = settings;
        this.counters = counters;
        this.scheduler = scheduler;
        this.idleNanos = settings.requestConnectionIdleTimeout().toNanos();
        this.ackNanos = settings.ackTimeout().toNanos();
        // Every half limit, as Dynamo's client sweeps its idle hosts: a connection closes between one and one and a
        // half limits after its last acknowledgement.
        long sweepMillis = Math.max(1, settings.requestConnectionIdleTimeout().toMillis() / 2);
        ScheduledFuture<?> sweep;
        try {
            sweep = scheduler.scheduleWithFixedDelay(this::closeIdle, sweepMillis, sweepMillis, TimeUnit.MILLISECONDS);
        } catch (RejectedExecutionException e) {
            sweep = null; // the runtime is closing
        }
        this.idleSweep = sweep;
    }

    /** What became of one try to write a request on a connection. */
    private enum Outcome {
        /** Written: the acknowledgement (or the connection's failure) completes the future. */
        WRITTEN,
        /** Nothing written: the connection was closed meanwhile (idle, broken, disconnected); try a new one. */
        CLOSED,
        /** Nothing written: the worker had closed this pooled connection; it is dropped. */
        STALE,
        /** The write failed before any byte of the request left a connection that carried requests before. */
        UNSENT,
        /** The call failed (its future says why). */
        FAILED
    }

    /**
     * Sends a request frame to an instance; the future completes with "" when the worker accepts it, or with its
     * refusal text, or fails with a {@link DynamoException} (cannot connect, connection broken, no answer in time).
     * Blocks while connecting and writing.
     */
    public CompletableFuture<String> send(DynamoInstance instance, byte[] frame) {
        CompletableFuture<String> ack = new CompletableFuture<>();
        String key = new StringBuilder(instance.host().length() + 6).append(instance.host()).append(':')
                .append(instance.port()).toString();
        boolean rewritten = false;
        for (int attempt = 0; attempt < MAX_CONNECTIONS_PER_REQUEST; attempt++) {
            if (closed) {
                ack.completeExceptionally(new DynamoException("the runtime is closed"));
                return ack;
            }
            Connection connection;
            try {
                connection = connection(key, instance);
            } catch (DynamoException e) {
                ack.completeExceptionally(e);
                return ack;
            }
            Outcome outcome = connection.send(frame, ack, !rewritten);
            switch (outcome) {
                case WRITTEN:
                    armAckSweep(ackNanos);
                    return ack;
                case STALE:
                    counters.requestConnectionsReplaced.increment();
                    break;
                case UNSENT:
                    counters.requestConnectionsReplaced.increment();
                    rewritten = true;
                    break;
                case CLOSED:
                    break;
                case FAILED:
                default:
                    return ack;
            }
        }
        ack.completeExceptionally(new DynamoStreamException("no connection to the worker at " + key
                + " took the request (" + MAX_CONNECTIONS_PER_REQUEST + " tried)", null));
        return ack;
    }

    /**
     * Acknowledgement deadlines without a timer per request (scheduling and cancelling one woke the timer thread twice
     * per call): one sweep is armed while requests wait, for the earliest of their deadlines, which the deadlines of
     * requests written later never precede.
     */
    private void armAckSweep(long delayNanos) {
        if (closed || !ackSweepArmed.compareAndSet(false, true)) {
            return;
        }
        try {
            scheduler.schedule(this::sweepAcks, Math.max(0, delayNanos), TimeUnit.NANOSECONDS);
        } catch (RejectedExecutionException e) {
            ackSweepArmed.set(false); // the runtime is closing
        }
    }

    /** Fails the connections whose oldest request was not acknowledged in time; re-arms for the others. */
    private void sweepAcks() {
        ackSweepArmed.set(false);
        long now = System.nanoTime();
        long next = Long.MAX_VALUE;
        for (Connection connection : connections.values()) {
            long deadline = connection.checkAckDeadline(now);
            if (deadline != Long.MAX_VALUE) {
                next = Math.min(next, deadline - now);
            }
        }
        if (next != Long.MAX_VALUE) {
            armAckSweep(next);
        }
    }

    private Connection connection(String key, DynamoInstance instance) {
        Connection existing = connections.get(key);
        if (existing != null && existing.open()) {
            return existing;
        }
        synchronized (this) {
            existing = connections.get(key);
            if (existing != null && existing.open()) {
                return existing;
            }
            if (closed) {
                throw new DynamoException("the runtime is closed");
            }
            Connection created = new Connection(key, instance);
            connections.put(key, created);
            return created;
        }
    }

    /** Closes the connections that carried nothing for the idle limit. */
    private void closeIdle() {
        long now = System.nanoTime();
        for (Connection connection : connections.values()) {
            if (connection.closeIfIdle(now)) {
                counters.idleConnectionsClosed.increment();
                LOG.debug("closed the idle request connection to {}", connection.key);
            }
        }
    }

    /** A request written and not yet acknowledged, and when its acknowledgement is due by. */
    private record Waiting(CompletableFuture<String> ack, long deadline) {
    }

    /** An acknowledgement read, and the request it answers. */
    private record Answered(CompletableFuture<String> ack, String answer) {
    }

    private final class Connection {
        final String key;
        private final SocketChannel channel;
        /** The reader thread waits here for acknowledgements; nothing ever blocks in a read. */
        private final Selector readable;
        /** A sender waits here when the socket's send buffer is full. */
        private final Selector writable;
        private final long frameNanos;
        /**
         * Lock order: {@code writeLock}, then {@code readLock}, then the connection itself. {@code writeLock}: one
         * request written at a time, in the order of {@code pending}. {@code readLock}: the socket's input and the
         * parse state below, shared by the reader thread and a sender checking the connection before it writes.
         */
        private final Object writeLock = new Object();
        private final Object readLock = new Object();
        // Guarded by readLock: the bytes read and not yet parsed; the acknowledgement being read.
        private final ByteBuffer inbound = ByteBuffer.allocate(8 * 1024);
        private long ackLength = -1;
        private byte @Nullable [] ackText;
        private int ackTextAt;
        private long frameDeadline;
        // Guarded by this.
        private final ArrayDeque<Waiting> pending = new ArrayDeque<>();
        private long framesWritten;
        /** When the last outstanding request was answered (or the connection opened). */
        private long idleSince = System.nanoTime();
        private volatile boolean broken;

        Connection(String key, DynamoInstance instance) {
            this.key = key;
            this.frameNanos = settings.frameReadTimeout().toNanos();
            SocketChannel opened = null;
            Selector reads = null;
            Selector writes = null;
            try {
                opened = SocketChannel.open();
                opened.setOption(StandardSocketOptions.TCP_NODELAY, true);
                opened.socket().connect(new InetSocketAddress(instance.host(), instance.port()),
                        (int) settings.connectTimeout().toMillis());
                opened.configureBlocking(false);
                reads = Selector.open();
                writes = Selector.open();
                opened.register(reads, SelectionKey.OP_READ);
                opened.register(writes, SelectionKey.OP_WRITE);
            } catch (IOException e) {
                closeQuietly(opened, reads, writes);
                throw new DynamoStreamException("cannot connect to instance " + instance.instanceIdHex() + " of "
                        + instance.endpoint() + " at " + key + ": " + e.getMessage(), e);
            }
            channel = opened;
            readable = reads;
            writable = writes;
            counters.requestConnectionsOpened.increment();
            try {
                Threads.start("dynamo-ack-reader-" + key, this::readAcks);
            } catch (Error | RuntimeException e) {
                closeQuietly(channel, readable, writable);
                throw new DynamoException("cannot start a reader for the connection to " + key + ": " + e, e);
            }
        }

        boolean open() {
            return !broken;
        }

        /**
         * Writes the frame unless the connection turns out stale first. {@code mayRewrite}: a write that fails before
         * any byte left reports {@link Outcome#UNSENT} (the caller writes it on a new connection) instead of failing.
         */
        Outcome send(byte[] frame, CompletableFuture<String> ack, boolean mayRewrite) {
            List<Answered> answered = new ArrayList<>(0);
            try {
                return send(frame, ack, mayRewrite, answered);
            } finally {
                complete(answered); // outside the locks: what completing runs may send on this connection
            }
        }

        private Outcome send(byte[] frame, CompletableFuture<String> ack, boolean mayRewrite, List<Answered> answered) {
            ByteBuffer bytes = ByteBuffer.wrap(frame);
            boolean reused;
            String stale = null;
            IOException failed = null;
            synchronized (writeLock) {
                synchronized (readLock) {
                    synchronized (this) {
                        if (broken) {
                            return Outcome.CLOSED;
                        }
                        reused = framesWritten > 0;
                    }
                    if (reused) {
                        // A pooled connection: whatever came since it was last read says whether it is still open.
                        stale = readAvailable(answered);
                        if (stale != null) {
                            broken = true; // whoever takes readLock next sees it closed
                        }
                    }
                    if (stale == null) {
                        synchronized (this) {
                            if (broken) {
                                return Outcome.CLOSED;
                            }
                            pending.addLast(new Waiting(ack, System.nanoTime() + ackNanos));
                        }
                    }
                }
                if (stale == null) {
                    failed = write(bytes);
                    if (failed == null) {
                        synchronized (this) {
                            framesWritten++;
                        }
                        return Outcome.WRITTEN;
                    }
                    if (mayRewrite && reused && bytes.position() == 0) {
                        synchronized (this) {
                            pending.pollLast(); // ours (writeLock held): never seen by the worker, no answer comes
                        }
                    }
                }
            }
            if (stale != null) {
                LOG.debug("dropping a stale request connection: {}", stale);
                fail(new DynamoStreamException(stale, null));
                return Outcome.STALE;
            }
            boolean unsent = mayRewrite && reused && bytes.position() == 0;
            fail(new DynamoStreamException("sending a request to " + key + " failed: " + failed.getMessage(), failed));
            return unsent ? Outcome.UNSENT : Outcome.FAILED;
        }

        /**
         * Under {@code readLock}: reads all that has come, without waiting, and parses the acknowledgements in it,
         * matched to their requests into {@code answered}. Returns why the connection cannot carry another request (the worker
         * closed or reset it, or sent what was not asked for), or null.
         */
        private @Nullable String readAvailable(List<Answered> answered) {
            try {
                int read;
                // Until nothing more has come: an end of stream may follow the last acknowledgement.
                while ((read = channel.read(inbound)) > 0) {
                    if (ackLength < 0 && inbound.position() == read) {
                        frameDeadline = System.nanoTime() + frameNanos; // an acknowledgement begins
                    }
                    parse(answered);
                }
                if (read < 0) {
                    return "the worker at " + key + " had closed the pooled connection";
                }
                return null;
            } catch (FrameTooLargeException e) {
                counters.protocolErrors.increment();
                counters.oversizedFrames.increment();
                return e.getMessage();
            } catch (DynamoProtocolException e) {
                return e.getMessage();
            } catch (IOException e) {
                return "the pooled connection to the worker at " + key + " was reset: " + e.getMessage();
            }
        }

        /** Under {@code readLock}: the whole acknowledgements in {@code inbound}, each matched to its request. */
        private void parse(List<Answered> answered) throws IOException {
            inbound.flip();
            try {
                while (true) {
                    if (ackLength < 0) {
                        if (inbound.remaining() < 4) {
                            break;
                        }
                        ackLength = inbound.getInt() & 0xffff_ffffL;
                        if (ackLength > Ack.MAX_ACK) {
                            throw new FrameTooLargeException("an acknowledgement", ackLength, Ack.MAX_ACK);
                        }
                        ackText = ackLength == 0 ? null : new byte[(int) ackLength];
                        ackTextAt = 0;
                    }
                    byte[] text = ackText;
                    if (text != null) {
                        int take = Math.min(inbound.remaining(), text.length - ackTextAt);
                        inbound.get(text, ackTextAt, take);
                        ackTextAt += take;
                        if (ackTextAt < text.length) {
                            break;
                        }
                    }
                    String answer = text == null ? "" : new String(text, StandardCharsets.UTF_8);
                    ackLength = -1;
                    ackText = null;
                    CompletableFuture<String> ack;
                    synchronized (this) {
                        Waiting oldest = pending.pollFirst();
                        ack = oldest == null ? null : oldest.ack();
                        if (pending.isEmpty()) {
                            idleSince = System.nanoTime();
                        }
                    }
                    if (ack == null) {
                        counters.protocolErrors.increment();
                        throw new DynamoProtocolException("the worker at " + key
                                + " acknowledged a request that was not sent");
                    }
                    answered.add(new Answered(ack, answer));
                    frameDeadline = System.nanoTime() + frameNanos; // the next one, if begun, has its own time
                }
            } finally {
                inbound.compact();
            }
        }

        /** Under {@code readLock}: whether part of an acknowledgement has come and the rest not yet. */
        private boolean insideAck() {
            return ackLength >= 0 || inbound.position() > 0;
        }

        private void complete(List<Answered> answered) {
            for (Answered one : answered) {
                one.ack.complete(one.answer);
            }
        }

        /** Writes all of {@code bytes}, waiting for room at most {@code frameReadTimeout}; the failure, or null. */
        private @Nullable IOException write(ByteBuffer bytes) {
            long deadline = System.nanoTime() + frameNanos;
            try {
                while (bytes.hasRemaining()) {
                    if (channel.write(bytes) > 0) {
                        continue;
                    }
                    long left = deadline - System.nanoTime();
                    if (left <= 0) {
                        return new IOException("the worker did not take a request within " + frameNanos / 1_000_000
                                + " ms (it stopped reading)");
                    }
                    writable.select(key -> { }, Math.max(1, left / 1_000_000));
                    if (broken) {
                        return new IOException("the connection was closed");
                    }
                }
                return null;
            } catch (IOException e) {
                return e;
            } catch (ClosedSelectorException e) {
                return new IOException("the connection was closed", e);
            }
        }

        /** The reader thread: waits for the socket to become readable, then reads under {@code readLock}. */
        private void readAcks() {
            List<Answered> answered = new ArrayList<>(1);
            try {
                while (!broken) {
                    long waitMillis = 0;
                    boolean late = false;
                    synchronized (readLock) {
                        if (insideAck()) {
                            long left = frameDeadline - System.nanoTime();
                            late = left <= 0;
                            waitMillis = Math.max(1, left / 1_000_000);
                        }
                    }
                    if (late) {
                        counters.protocolErrors.increment();
                        fail(new DynamoStreamException("an acknowledgement from the worker at " + key
                                + " took longer than " + frameNanos / 1_000_000 + " ms to arrive", null));
                        return;
                    }
                    readable.select(key -> { }, waitMillis);
                    if (broken) {
                        return;
                    }
                    String ended;
                    synchronized (readLock) {
                        if (broken) {
                            return;
                        }
                        ended = readAvailable(answered);
                        if (ended != null) {
                            broken = true; // a sender taking readLock after this sees it closed, never writes on it
                        }
                    }
                    complete(answered);
                    answered.clear();
                    if (ended != null) {
                        fail(new DynamoStreamException(ended.replace(" had closed the pooled connection",
                                " closed the connection"), null));
                        return;
                    }
                }
            } catch (ClosedSelectorException e) {
                // closed: fail() has said why
            } catch (IOException e) {
                fail(new DynamoStreamException("the connection to the worker at " + key + " broke: " + e.getMessage(), e));
            } finally {
                closeQuietly(readable);
            }
        }

        /**
         * Fails the connection if its oldest request was not acknowledged by its deadline; else that deadline
         * ({@link Long#MAX_VALUE} when nothing waits).
         */
        long checkAckDeadline(long now) {
            long deadline;
            synchronized (this) {
                Waiting oldest = pending.peekFirst();
                if (oldest == null || broken) {
                    return Long.MAX_VALUE;
                }
                deadline = oldest.deadline();
            }
            if (deadline - now > 0) {
                return deadline;
            }
            fail(new DynamoTimeoutException("the worker at " + key + " did not acknowledge a request within "
                    + settings.ackTimeout().toMillis() + " ms"));
            return Long.MAX_VALUE;
        }

        /** Closes it if nothing is outstanding and nothing was since {@code now - idle limit}. */
        boolean closeIfIdle(long now) {
            synchronized (this) {
                if (broken || !pending.isEmpty() || now - idleSince < idleNanos) {
                    return false;
                }
                broken = true;
            }
            fail(new DynamoStreamException("the connection to " + key + " was closed as idle", null));
            return true;
        }

        void fail(DynamoException cause) {
            broken = true;
            connections.remove(key, this);
            // Closed before taking the lock: a sender blocked writing gets its exception now.
            closeQuietly(channel);
            readable.wakeup();
            writable.wakeup();
            synchronized (writeLock) { // no sender is writing now, and none will (broken)
                closeQuietly(writable);
            }
            ArrayDeque<Waiting> failed;
            synchronized (this) {
                failed = new ArrayDeque<>(pending);
                pending.clear();
            }
            for (Waiting waiting : failed) {
                waiting.ack().completeExceptionally(cause);
            }
            if (!failed.isEmpty()) {
                LOG.debug("request connection to {} closed: {}", key, cause.getMessage());
            }
        }
    }

    private static void closeQuietly(@Nullable AutoCloseable... closeables) {
        for (AutoCloseable closeable : closeables) {
            if (closeable == null) {
                continue;
            }
            try {
                closeable.close();
            } catch (Exception e) {
                // closing
            }
        }
    }

    /** Closes the connection to an address (an instance that left), failing what waits on it. */
    public void disconnect(String host, int port) {
        Connection connection = connections.get(host + ":" + port);
        if (connection != null) {
            connection.fail(new DynamoStreamException("the connection to " + host + ":" + port + " was closed", null));
        }
    }

    @Override
    public void close() {
        closed = true;
        if (idleSweep != null) {
            idleSweep.cancel(false);
        }
        for (Connection connection : connections.values()) {
            connection.fail(new DynamoException("the runtime is closed"));
        }
        connections.clear();
    }
}
