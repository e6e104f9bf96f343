package io.nixlconnect.transport.embedded;

import io.nixlconnect.internal.FailureReports;
import io.nixlconnect.transport.TransferOp;
import java.io.Closeable;
import java.io.IOException;
import java.net.InetAddress;
import java.nio.channels.SocketChannel;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * One accepted connection to the embedded server: where it is from, since when it waits for a request
 * ({@link #BUSY} while in one), whether it was chosen for eviction, the deadline of the bounded part of a request
 * it is reading, and the windows it started on and has not notified (failed when it ends).
 */
final class ServerConnection {

    /** The server's log: its settings name one logger for the whole server, as before it was split. */
    private static final Logger log = LoggerFactory.getLogger(EmbeddedServer.class);
    /**
     * The slowest a peer may send the bounded parts of a request — its head once begun, its ranges, a grant's
     * challenge, a refused inline WRITE's bytes — after {@link #GRACE_NANOS}: an honest client writes each in one go,
     * so only a peer that means to hold the connection sends slower.
     */
    static final long FLOOR_BYTES_PER_SECOND = 1 << 20;
    /** Allowance for latency before the floor rate counts (or the read timeout, if shorter). */
    static final long GRACE_NANOS = TimeUnit.SECONDS.toNanos(5);

    static final long BUSY = Long.MIN_VALUE;

    final SocketChannel channel;
    final InetAddress address;
    final AtomicInteger state = new AtomicInteger(WAITING);
    final CountDownLatch gone = new CountDownLatch(1);
    final long acceptedAt = System.nanoTime();
    volatile long waitingSince = acceptedAt;
    /**
     * While a bounded part of a request (its head once begun, its ranges, a grant's challenge, a refused inline
     * WRITE's bytes) is read: when it must all be in (see {@link #FLOOR_BYTES_PER_SECOND}); else 0.
     */
    volatile long partDeadline;
    volatile Link link;
    /** Windows this connection started to read or write and has not notified: if it drops, that peer is gone. */
    final Set<EmbeddedWindow> unfinished = ConcurrentHashMap.newKeySet();
    /** Why the connection ended, for the windows it leaves unfinished. */
    volatile String dropReason = "the peer closed the connection";
    /** The request being served and its ranges, reused from request to request (only the serving thread uses them). */
    final Wire.Head head = new Wire.Head();
    final RequestedRanges ranges = new RequestedRanges();

    static final int WAITING = 0;
    static final int IN_REQUEST = 1;
    static final int EVICTED = 2;

    private final EmbeddedSettings settings;
    /** The server's open connections: this one leaves them when it has finished. */
    private final Set<ServerConnection> openConnections;

    ServerConnection(SocketChannel channel, InetAddress address, EmbeddedSettings settings,
            Set<ServerConnection> openConnections) {
        this.channel = channel;
        this.address = address;
        this.settings = settings;
        this.openConnections = openConnections;
    }

    /**
     * The peer started to read or write {@code window} on this connection. Windows that completed meanwhile are
     * forgotten first: a stripe of a large transfer ({@link StripedTransfer}) starts on a window that its peer
     * notifies on another connection, and a long-lived connection must not keep every such window.
     */
    void started(EmbeddedWindow window) {
        if (!unfinished.isEmpty()) {
            unfinished.removeIf(done -> done.notified().isDone());
        }
        unfinished.add(window);
    }

    /** Whether a window this connection started on is still waiting for its notification. */
    boolean holdsOpenWindow() {
        for (EmbeddedWindow window : unfinished) {
            if (!window.notified().isDone()) {
                return true;
            }
        }
        return false;
    }

    /** The peer notified {@code window} (null: nothing was notified). */
    void notified(EmbeddedWindow window) {
        if (window != null) {
            unfinished.remove(window);
        }
    }

    /**
     * Between requests. The idle clock restarts only after a request that named a live window's credential: a
     * peer sending refused requests (or IDENTIFYs) keeps the age it had, and is evicted and timed out by it.
     */
    void awaitRequest() {
        if (state.get() == IN_REQUEST) {
            waitingSince = System.nanoTime();
            state.compareAndSet(IN_REQUEST, WAITING);
        }
    }

    /** A request that stays "waiting" (a NOTIFY) was served: the idle clock restarts. */
    void served() {
        if (state.get() == WAITING) {
            waitingSince = System.nanoTime();
        }
    }

    /** Marks the connection busy; false if it was chosen for eviction meanwhile. */
    boolean beginRequest() {
        if (!state.compareAndSet(WAITING, IN_REQUEST)) {
            return false;
        }
        waitingSince = BUSY;
        return true;
    }

    boolean evict() {
        return state.compareAndSet(WAITING, EVICTED);
    }

    /**
     * Reads a request's ranges as {@link Wire#readRanges} does, all within the read timeout from now: however
     * many there are, reading and checking them is charged against it, so ranges that trickle in (one byte every
     * few seconds still counts as progress) or a request too large to check in time cannot hold the connection.
     */
    boolean readRanges(Link link, int count, Wire.RangeSink sink) throws IOException {
        partDeadline = deadline(16L * count);
        try {
            return Wire.readRanges(link, count, sink);
        } finally {
            partDeadline = 0;
        }
    }

    /** Reads a READ_GRANT's challenge, within the read timeout as for its ranges. */
    byte[] readChallenge(Link link) throws IOException {
        partDeadline = deadline(GrantProof.CHALLENGE_BYTES);
        try {
            return Wire.readChallenge(link);
        } finally {
            partDeadline = 0;
        }
    }

    /** Reads the rest of a {@link Wire#FAIL} report, at the floor rate as for ranges. */
    String[] readFailureReport(Link link) throws IOException {
        partDeadline = deadline(4 + FailureReports.MAX_NAME_BYTES + FailureReports.MAX_CAUSE_BYTES);
        try {
            return Wire.readFailureReport(link);
        } finally {
            partDeadline = 0;
        }
    }

    /** Reads and drops a refused inline WRITE's bytes, within the read timeout as for ranges. */
    void discard(Link link, long length) throws IOException {
        partDeadline = deadline(length);
        try {
            Wire.discard(link, length);
        } finally {
            partDeadline = 0;
        }
    }

    /**
     * Reads a request's head: waiting for its first bytes counts as idle (the idle timeout, eviction); from then on
     * the rest of the head, at most {@link Wire#HEAD} plus the longest names, must arrive at the floor rate.
     */
    boolean readHead(Link link, Wire.Head head) throws IOException {
        try {
            return Wire.readHead(link, head,
                    () -> partDeadline = deadline(Wire.HEAD + Wire.MAX_AGENT_NAME + Wire.MAX_CREDENTIAL));
        } finally {
            partDeadline = 0;
        }
    }

    /** When {@code bytes} must have arrived by: the grace, then the floor rate; never past the read timeout. */
    private long deadline(long bytes) {
        long read = settings.readTimeout().toNanos();
        long allowed = Math.min(read, Math.min(read, GRACE_NANOS)
                + bytes * TimeUnit.SECONDS.toNanos(1) / FLOOR_BYTES_PER_SECOND);
        long deadline = System.nanoTime() + allowed;
        return deadline == 0 ? 1 : deadline;
    }

    long lastProgress() {
        Link current = link;
        return current == null ? waitingSince : current.lastProgressNanos();
    }

    /** Closes the socket from any thread; the serving thread's blocked read or write fails. */
    void abort() {
        closeQuietly(channel);
    }

    void finished() {
        abort();
        endUnfinishedWindows();
        openConnections.remove(this);
        gone.countDown();
    }

    void awaitGone(long millis) {
        try {
            gone.await(millis, TimeUnit.MILLISECONDS);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    /**
     * A connection ended. Every window it had started to read or write and not notified has lost its peer before
     * completing: the window fails at once with the reason (a fan-out readable waits on for its other readers).
     */
    private void endUnfinishedWindows() {
        for (EmbeddedWindow window : unfinished) {
            if (!window.notified().isDone()) {
                log.debug("Embedded transport: a peer from {} disconnected after starting on a window, before notifying it",
                        address);
            }
            window.peerLost("the connection of the peer that was " + (window.access() == TransferOp.READ
                    ? "reading" : "writing") + " this operation's memory dropped before it notified ("
                    + dropReason + ")");
        }
        unfinished.clear();
    }

    private static void closeQuietly(Closeable closeable) {
        try {
            closeable.close();
        } catch (IOException ignored) {
            // closing is all we wanted
        }
    }
}
