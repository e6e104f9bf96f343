package io.nixlconnect.transport.embedded;

import io.nixlconnect.internal.FailureReports;
import io.nixlconnect.transport.MemoryRegion;
import io.nixlconnect.transport.MemoryType;
import io.nixlconnect.transport.TransferOp;
import java.io.Closeable;
import java.io.IOException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.StandardSocketOptions;
import java.nio.channels.ClosedChannelException;
import java.nio.channels.ServerSocketChannel;
import java.nio.channels.SocketChannel;
import java.util.Arrays;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.SynchronousQueue;
import java.util.concurrent.ThreadPoolExecutor;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Accepts peers and serves their requests, one thread per connection from a bounded pool.
 *
 * <p>Under hostile load it holds its limits: at most {@code maxServerConnections} connections and
 * {@code maxConnectionsPerAddress} from one address; a connection that waits for its next request (or its
 * authentication) longer than {@code idleTimeout}, that has not authenticated within 5 s (or {@code readTimeout}, if
 * shorter), that sends a begun request's head, its ranges or a grant's challenge slower than 5 s plus
 * {@value #FLOOR_BYTES_PER_SECOND} bytes/s allow (never longer than {@code readTimeout}), or that makes no progress for
 * {@code readTimeout} in the middle of a request, is closed. When a limit is reached, the connection that has
 * waited longest for a request is closed to make room, so idle or trickling connections cannot lock out a peer
 * that actually sends requests. Only a connection whose request named a live window's credential is "in the
 * middle of a request" and never evicted: authenticating, sending a request's bounded head, or sending the ranges
 * of a refused request, a connection still counts as waiting.
 */
final class EmbeddedServer {

    private static final Logger log = LoggerFactory.getLogger(EmbeddedServer.class);
    /** Handler threads beyond the connection limit, for evicted connections still winding down. */
    private static final int HANDLER_SLACK = 16;
    private static final long EVICTION_WAIT_MILLIS = 1000;
    /**
     * The slowest a peer may send the bounded parts of a request — its head once begun, its ranges, a grant's
     * challenge, a refused inline WRITE's bytes — after {@link #GRACE_NANOS}: an honest client writes each in one go,
     * so only a peer that means to hold the connection sends slower.
     */
    static final long FLOOR_BYTES_PER_SECOND = 1 << 20;
    /** Allowance for latency before the floor rate counts (or the read timeout, if shorter). */
    static final long GRACE_NANOS = TimeUnit.SECONDS.toNanos(5);

    private final EmbeddedTransport transport;
    private final EmbeddedSettings settings;
    private final PeerAuthentication authentication;
    private final ServerSocketChannel server;
    private final ThreadPoolExecutor handlers;
    private final Set<Connection> connections = ConcurrentHashMap.newKeySet();
    private final Thread acceptor;
    private final Thread reaper;
    private volatile boolean running = true;

    EmbeddedServer(EmbeddedTransport transport, EmbeddedSettings settings, PeerAuthentication authentication)
            throws IOException {
        this.transport = transport;
        this.settings = settings;
        this.authentication = authentication;
        this.server = ServerSocketChannel.open();
        try {
            server.setOption(StandardSocketOptions.SO_REUSEADDR, true);
            server.setOption(StandardSocketOptions.SO_RCVBUF, 4 << 20);
            server.bind(new InetSocketAddress(settings.bindAddress(), settings.port()), 256);
        } catch (IOException e) {
            server.close();
            throw e;
        }
        AtomicInteger ids = new AtomicInteger();
        this.handlers = new ThreadPoolExecutor(0, settings.maxServerConnections() + HANDLER_SLACK, 30, TimeUnit.SECONDS,
                new SynchronousQueue<>(), runnable -> {
                    Thread thread = new Thread(runnable, "nixl-embedded-serve-" + ids.incrementAndGet());
                    thread.setDaemon(true);
                    return thread;
                });
        this.acceptor = new Thread(this::acceptLoop, "nixl-embedded-accept-" + localPort());
        acceptor.setDaemon(true);
        this.reaper = new Thread(this::reapLoop, "nixl-embedded-timeouts-" + localPort());
        reaper.setDaemon(true);
        acceptor.start();
        reaper.start();
    }

    int localPort() {
        return server.socket().getLocalPort();
    }

    boolean isRunning() {
        return running && acceptor.isAlive();
    }

    /** Open connections (for tests and health details). */
    int connectionCount() {
        return connections.size();
    }

    /** Open connections that wait for their next request (not in one): for tests. */
    int connectionsWaitingForRequest() {
        int waiting = 0;
        for (Connection connection : connections) {
            if (connection.waitingSince != Connection.BUSY) {
                waiting++;
            }
        }
        return waiting;
    }

    /** Threads serving connections now. */
    int handlerThreads() {
        return handlers.getPoolSize();
    }

    private void acceptLoop() {
        while (running) {
            SocketChannel channel;
            try {
                channel = server.accept();
            } catch (ClosedChannelException e) {
                return;
            } catch (IOException e) {
                if (running) {
                    log.warn("Embedded transport: accept failed: {}", e.toString());
                }
                continue;
            }
            admit(channel);
        }
    }

    /** Makes room under the limits (evicting the longest-waiting connection if need be), then serves. */
    private void admit(SocketChannel channel) {
        InetAddress address = remoteAddress(channel);
        Connection victim = null;
        boolean full;
        int fromAddress = 0;
        for (Connection connection : connections) {
            if (connection.address.equals(address)) {
                fromAddress++;
            }
        }
        if (fromAddress >= settings.maxConnectionsPerAddress()) {
            victim = longestWaiting(address);
            full = true;
        } else if (connections.size() >= settings.maxServerConnections()) {
            victim = longestWaiting(null);
            full = true;
        } else {
            full = false;
        }
        if (full) {
            if (victim == null) {
                log.warn("Embedded transport: refusing a connection from {}: every one of the {} open connections is "
                        + "in the middle of a request", address, connections.size());
                closeQuietly(channel);
                return;
            }
            log.debug("Embedded transport: connection limit reached; closing the one from {} that waited longest",
                    victim.address);
            victim.abort();
            victim.awaitGone(EVICTION_WAIT_MILLIS);
        }
        Connection connection = new Connection(channel, address);
        connections.add(connection);
        try {
            channel.setOption(StandardSocketOptions.TCP_NODELAY, true);
            channel.setOption(StandardSocketOptions.SO_SNDBUF, 4 << 20);
            handlers.execute(() -> serve(connection));
        } catch (IOException | RejectedExecutionException e) {
            log.warn("Embedded transport: cannot serve a connection from {}: {}", address, e.toString());
            connection.finished();
        }
    }

    /**
     * The connection (from {@code address}, or any when null) that has waited longest for a request, of those not
     * holding a window they started on and that is still open: such a connection is a stripe that finished its part
     * of a transfer whose other stripes still run ({@link StripedTransfer}), and closing it would fail that window
     * as if its reader were lost. (The idle timeout still closes it.)
     */
    private Connection longestWaiting(InetAddress address) {
        Connection oldest = null;
        long oldestSince = 0;
        for (Connection connection : connections) {
            long since = connection.waitingSince;
            if (since != Connection.BUSY && (address == null || connection.address.equals(address))
                    && (oldest == null || since - oldestSince < 0) && !connection.holdsOpenWindow()) {
                oldest = connection;
                oldestSince = since;
            }
        }
        return oldest != null && oldest.evict() ? oldest : null;
    }

    /** Closes connections past their idle or read timeout. */
    private void reapLoop() {
        long idle = settings.idleTimeout().toNanos();
        long read = settings.readTimeout().toNanos();
        long tick = Math.max(TimeUnit.MILLISECONDS.toNanos(10), Math.min(TimeUnit.SECONDS.toNanos(1), Math.min(idle, read) / 4));
        while (running) {
            try {
                TimeUnit.NANOSECONDS.sleep(tick);
            } catch (InterruptedException e) {
                return;
            }
            long now = System.nanoTime();
            for (Connection connection : connections) {
                long since = connection.waitingSince;
                long partDeadline = connection.partDeadline;
                String why = null;
                if (since != Connection.BUSY ? now - since > idle : now - connection.lastProgress() > read) {
                    why = since != Connection.BUSY ? "waited too long for a request" : "stalled mid-request";
                } else if (partDeadline != 0 && now - partDeadline > 0) {
                    why = "sent a request slower than " + FLOOR_BYTES_PER_SECOND + " bytes/s (or the read timeout) "
                            + "allows";
                } else if (connection.link == null && now - connection.acceptedAt > Math.min(read, GRACE_NANOS)) {
                    why = "did not authenticate within the read timeout";
                }
                if (why != null) {
                    log.debug("Embedded transport: closing a connection from {} that {}", connection.address, why);
                    connection.abort();
                }
            }
        }
    }

    private void serve(Connection connection) {
        try {
            Link link = authentication.server(connection.channel, transport.endpoint());
            if (link == null) {
                return;
            }
            connection.link = link;
            while (true) {
                connection.awaitRequest();
                Wire.Head head = connection.head;
                boolean more;
                try {
                    more = connection.readHead(link, head);
                } catch (Wire.UnexpectedHelloException e) {
                    authentication.refuseUnexpectedHello(link);
                    return;
                } catch (Wire.OutdatedPeerException e) {
                    Wire.writeError(link, e.getMessage()); // version 1 reads responses the same way
                    return;
                }
                if (!more) {
                    return;
                }
                if (head.count() > settings.maxRangesPerRequest()) {
                    // The same answer whatever the credential; the ranges are left unread, so the connection goes.
                    Wire.writeError(link, "request of " + head.count() + " ranges refused: this peer takes at most "
                            + settings.maxRangesPerRequest() + " ranges per request (embedded setting "
                            + "maxRangesPerRequest, nixl.connect.embedded.max-ranges-per-request)");
                    return;
                }
                if (!handle(connection, link, head)) {
                    return;
                }
            }
        } catch (IOException e) {
            connection.dropReason = e.toString();
            log.debug("Embedded transport: connection dropped: {}", e.toString());
        } catch (RuntimeException e) {
            log.warn("Embedded transport: connection from {} failed", connection.address, e);
        } finally {
            connection.finished();
        }
    }

    /**
     * Serves one request.
     *
     * @return whether the connection is still in step with the peer (false: drop it)
     */
    private boolean handle(Connection connection, Link link, Wire.Head head) throws IOException {
        EmbeddedAgent agent = transport.agent(head.agent());
        return switch (head.type()) {
            // NOTIFY and IDENTIFY read nothing more and answer at once: the connection still counts as waiting.
            case Wire.NOTIFY -> {
                EmbeddedWindow notified = deliver(link, agent, head.credential());
                if (notified != null) {
                    connection.served();
                }
                connection.notified(notified);
                yield true;
            }
            case Wire.FAIL -> failWindow(connection, link, agent, head);
            // A READ's notification comes as its own NOTIFY, once the active side has the bytes.
            case Wire.READ -> moveRanges(connection, link, agent, head, TransferOp.READ);
            case Wire.IDENTIFY -> {
                String disabled = transport.sameHostCopyDisabled();
                if (disabled != null) {
                    Wire.writeDeclined(link, "same-host copy declined: " + disabled);
                } else {
                    Wire.writeHello(link, SameHostIdentity.self());
                }
                yield true;
            }
            case Wire.READ_GRANT -> grantRanges(connection, link, agent, head, true);
            case Wire.READ_GRANT_UNBOUND -> grantRanges(connection, link, agent, head, false);
            case Wire.READ_INLINE -> serveInline(connection, link, agent, head, TransferOp.READ);
            case Wire.WRITE_INLINE -> serveInline(connection, link, agent, head, TransferOp.WRITE);
            case Wire.WRITE -> {
                // The data has landed: only now may the passive side learn of it.
                if (!moveRanges(connection, link, agent, head, TransferOp.WRITE)) {
                    yield false;
                }
                connection.notified(deliver(link, agent, head.credential()));
                yield true;
            }
            // One stripe of a large WRITE: the bytes only; the notification comes as a NOTIFY after every stripe's.
            case Wire.WRITE_STRIPE -> {
                if (!moveRanges(connection, link, agent, head, TransferOp.WRITE)) {
                    yield false;
                }
                Wire.writeOk(link);
                yield true;
            }
            default -> throw new Wire.ProtocolException("unknown request type " + head.type());
        };
    }

    /**
     * Serves a request's ranges from the one live window opened with its credential, if every range lies inside
     * it: streams them out (READ) or in (WRITE). Refuses otherwise, touching nothing, with the same answer
     * whatever the reason, so refusals tell a prober nothing.
     *
     * @return whether the ranges were moved (false: refused, and the connection must be dropped)
     */
    private boolean moveRanges(Connection connection, Link link, EmbeddedAgent agent, Wire.Head head, TransferOp access)
            throws IOException {
        EmbeddedWindow window = agent == null ? null : agent.enter(access, head.credential(), link);
        if (window == null) {
            refuse(link, access);
            return head.count() == 0;
        }
        try {
            if (!connection.beginRequest()) {
                return false; // evicted meanwhile
            }
            Ranges ranges = connection.ranges.reset(window, false);
            if (!connection.readRanges(link, head.count(), ranges)) {
                refuse(link, access);
                return false;
            }
            connection.started(window); // from here the peer has started on the window
            Wire.writeOk(link);
            if (ranges.hostMemoryOnly()) { // a block list in gathering or scattering calls, not one per block
                if (access == TransferOp.READ) {
                    Wire.sendHostRanges(link, ranges.addresses, ranges.lengths, ranges.size);
                } else {
                    Wire.receiveHostRanges(link, ranges.addresses, ranges.lengths, ranges.size);
                }
                return true;
            }
            for (int i = 0; i < ranges.size; i++) {
                long address = ranges.addresses[i];
                long length = ranges.lengths[i];
                MemoryRegion region = window.regionCovering(address, length);
                if (access == TransferOp.READ) {
                    Wire.sendMemory(link, region.type(), address, length, transport.staging());
                } else {
                    Wire.receiveMemory(link, region.type(), address, length, transport.staging());
                }
            }
            return true;
        } finally {
            window.exit(link);
        }
    }

    /**
     * Grants the peer a direct copy (cross-memory attach) of a READ's ranges, checked exactly as for a READ (the
     * one live window opened with the credential covers each): answers with this pid, keeps the window pinned
     * until the peer reports, then delivers the notification as a NOTIFY would. Declines (the peer then sends
     * a READ) when the setting is off or a range is GPU memory.
     *
     * <p>Once granted, the peer has started on the window exactly as a streamed READ has: if its connection
     * drops before it reports a finished copy (a cancelled or killed reader never reports), the window fails
     * with the peer lost, as on the socket path. A reported abort does not fail it: the peer reports one only
     * when it falls back to streaming the same ranges on this connection (the kernel refused the copy, or the
     * pid it probed is another process now, or the proof did not hold), and that READ needs the window still open.
     *
     * <p>{@code proven}: the reader sent a challenge, and the grant carries this process's proof of it
     * ({@link GrantProof}), in native memory here until the reader reports. An unbound grant (a reader from before
     * proofs, which would copy from whatever pid a peer names) is declined: that reader streams.
     *
     * @return whether the connection is still in step with the peer
     */
    private boolean grantRanges(Connection connection, Link link, EmbeddedAgent agent, Wire.Head head, boolean proven)
            throws IOException {
        EmbeddedWindow window = agent == null ? null : agent.enter(TransferOp.READ, head.credential(), link, true);
        if (window == null) {
            refuse(link, TransferOp.READ);
            return head.count() == 0;
        }
        boolean copied;
        boolean revoked;
        GrantProof.Published proof = null;
        try {
            if (!connection.beginRequest()) {
                return false; // evicted meanwhile
            }
            Ranges ranges = connection.ranges.reset(window, false);
            if (!connection.readRanges(link, head.count(), ranges)) {
                refuse(link, TransferOp.READ);
                return false;
            }
            byte[] challenge = proven ? connection.readChallenge(link) : null;
            String declined = proven ? transport.sameHostCopyDisabled() : "this reader's same-host copy is not bound to "
                    + "the process that owns the window (a nixl-connect from before grant proofs): upgrade it";
            for (int i = 0; declined == null && i < ranges.size; i++) {
                if (window.regionCovering(ranges.addresses[i], ranges.lengths[i]).type() != MemoryType.DRAM) {
                    declined = "GPU memory is staged through the socket";
                }
            }
            // Writes while granted hold the link's monitor: a close may write a revocation on it (EmbeddedWindow#revoke).
            if (declined != null) {
                synchronized (link) {
                    Wire.writeDeclined(link, declined);
                }
                return true;
            }
            long pid = SameHostIdentity.self().pid();
            proof = new GrantProof.Published(GrantProof.compute(head.credential(), challenge, pid, ranges.addresses,
                    ranges.lengths, ranges.size));
            connection.started(window); // from here the peer may copy from the window
            synchronized (link) {
                Wire.writeGrant(link, pid, proof.address());
            }
            // Blocks until the peer has finished copying or stopped (or its process, and so its connection, is
            // gone); closing the window meanwhile revokes the grant, and the peer stops at its next chunk.
            copied = Wire.readCopyOutcome(link);
        } finally {
            synchronized (link) {
                revoked = window.exit(link, true);
            }
            if (proof != null) {
                proof.close(); // the peer reads it before it copies, so before it reports
            }
        }
        if (revoked) {
            return false; // the peer was told its grant is revoked: nothing more is said on this connection
        }
        if (copied) {
            connection.notified(deliver(link, agent, head.credential()));
        } else {
            Wire.writeOk(link);
        }
        return true;
    }

    /**
     * A small READ or WRITE in one round trip (READ_INLINE, WRITE_INLINE): checked exactly as a READ or WRITE (the
     * one live window of that access opened with the credential covers every range, else the same refusal), and it
     * claims the window's notification before a byte moves. Every range is read whether or not the request is served
     * (at most {@link Wire#INLINE_MAX_RANGES}), so a refusal leaves the connection in step.
     *
     * <p>READ: answers OK and the bytes in one write, leaves the window, then delivers the notification itself: the
     * readable completes once its bytes are in the reader's socket, without waiting for the reader to say so.
     * WRITE: the peer sent the bytes right after the request; they are received into the window, then the
     * notification is delivered as for a WRITE (answer OK, then complete the window). Refused, a WRITE's bytes
     * already sent are read and dropped — never written anywhere — outside any window; there are at most
     * {@link Wire#INLINE_MAX_BYTES}. If the bytes cannot be moved (the peer vanished, the window closed and cut the
     * connection), the claim is released and the connection's loss fails the window as for a READ or WRITE.
     *
     * @return whether the connection is still in step with the peer
     */
    private boolean serveInline(Connection connection, Link link, EmbeddedAgent agent, Wire.Head head,
            TransferOp access) throws IOException {
        EmbeddedWindow window = agent == null ? null : agent.enter(access, head.credential(), link);
        boolean claimed = false;
        boolean moved = false;
        try {
            // A live window's credential makes this connection busy (not evicted); a refused request's ranges and
            // bytes (bounded: INLINE_MAX_RANGES, INLINE_MAX_BYTES) are read while it still counts as waiting.
            if (window != null && !connection.beginRequest()) {
                return false; // evicted meanwhile
            }
            Ranges ranges = readInlineRanges(connection, link, window, head);
            claimed = !ranges.refused && window.claim();
            if (!claimed) {
                if (window != null) {
                    window.exit(link);
                    window = null;
                }
                if (access == TransferOp.WRITE) {
                    connection.discard(link, ranges.total);
                }
                refuse(link, access);
                return true;
            }
            connection.unfinished.add(window); // from here the peer has started on the window
            boolean hostMemory = ranges.hostMemoryOnly();
            if (access == TransferOp.READ && hostMemory) {
                Wire.writeWithMemory(link, link.scratch(1).put(Wire.OK).flip(), ranges.addresses, ranges.lengths,
                        ranges.size);
            } else if (hostMemory) {
                Wire.receiveHostRanges(link, ranges.addresses, ranges.lengths, ranges.size);
            } else {
                if (access == TransferOp.READ) {
                    Wire.writeOk(link);
                }
                for (int i = 0; i < ranges.size; i++) {
                    MemoryRegion region = window.regionCovering(ranges.addresses[i], ranges.lengths[i]);
                    if (access == TransferOp.READ) {
                        Wire.sendMemory(link, region.type(), ranges.addresses[i], ranges.lengths[i], transport.staging());
                    } else {
                        Wire.receiveMemory(link, region.type(), ranges.addresses[i], ranges.lengths[i],
                                transport.staging());
                    }
                }
            }
            moved = true;
        } finally {
            if (claimed && !moved) {
                window.release();
            }
            if (window != null) {
                window.exit(link);
            }
        }
        // Outside the window: completing it closes it, and a close waits for the threads inside.
        if (access == TransferOp.READ) {
            window.deliver();
        } else {
            answerThenDeliver(link, window);
        }
        connection.notified(window);
        return true;
    }

    /** Reads every range of an inline request, checking each against {@code window} (null: refused) and the size limit. */
    private static Ranges readInlineRanges(Connection connection, Link link, EmbeddedWindow window, Wire.Head head)
            throws IOException {
        Ranges ranges = connection.ranges.reset(window, true);
        connection.readRanges(link, head.count(), ranges);
        if (ranges.total > Wire.INLINE_MAX_BYTES) {
            throw new Wire.ProtocolException("inline request of more than " + Wire.INLINE_MAX_BYTES + " bytes");
        }
        return ranges;
    }

    /**
     * A peer reports that its transfer for a window ended without notifying ({@link Wire#FAIL}): the window, if one
     * waits for that credential, ends ERRORED with the peer's words (a fan-out readable waits on for its other
     * readers, as when a reader's connection drops). The report is read within the read timeout, only once the
     * credential named a live window; otherwise the answer is the one any unknown credential gets.
     *
     * @return whether the connection is still in step
     */
    private boolean failWindow(Connection connection, Link link, EmbeddedAgent agent, Wire.Head head)
            throws IOException {
        EmbeddedWindow window = agent == null ? null : agent.window(head.credential());
        if (window == null) {
            Wire.writeError(link, "no passive operation waits for this notification (completed, closed or never created)");
            return false; // the report is left unread
        }
        String[] report = connection.readFailureReport(link);
        window.peerLost("the peer '" + report[0] + "' (" + connection.address.getHostAddress()
                + ") reported that its transfer ended without notifying: " + report[1]);
        Wire.writeOk(link);
        connection.served();
        return true;
    }

    private static void refuse(Link link, TransferOp access) throws IOException {
        Wire.writeError(link, access + " refused: no live "
                + (access == TransferOp.READ ? "ReadableOperation" : "WritableOperation")
                + " with this credential covers every requested range");
    }

    /**
     * Delivers a notification: claims the waiting window, answers OK, then completes the window — in that
     * order, so that a passive side which shuts down as soon as it completes cannot cut off the answer.
     *
     * @return the window the notification was for, or null
     */
    private static EmbeddedWindow deliver(Link link, EmbeddedAgent agent, byte[] notification) throws IOException {
        EmbeddedWindow window = agent == null ? null : agent.claim(notification);
        if (window == null) {
            Wire.writeError(link, "no passive operation waits for this notification (completed, closed or never created)");
            return null;
        }
        answerThenDeliver(link, window);
        return window;
    }

    /** Answers OK, then completes the claimed {@code window}, even if the answer cannot reach the peer. */
    private static void answerThenDeliver(Link link, EmbeddedWindow window) throws IOException {
        try {
            Wire.writeOk(link);
        } finally {
            window.deliver(); // the data has landed whether or not the answer reaches the peer
        }
    }

    /**
     * A connection ended. Every window it had started to read or write and not notified has lost its peer before
     * completing: the window fails at once with the reason (a fan-out readable waits on for its other readers).
     */
    private static void connectionEnded(Connection connection) {
        for (EmbeddedWindow window : connection.unfinished) {
            if (!window.notified().isDone()) {
                log.debug("Embedded transport: a peer from {} disconnected after starting on a window, before notifying it",
                        connection.address);
            }
            window.peerLost("the connection of the peer that was " + (window.access() == TransferOp.READ
                    ? "reading" : "writing") + " this operation's memory dropped before it notified ("
                    + connection.dropReason + ")");
        }
        connection.unfinished.clear();
    }

    void close() {
        running = false;
        closeQuietly(server);
        for (Connection connection : connections) {
            connection.abort();
        }
        reaper.interrupt();
        try {
            acceptor.join(5000);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
        handlers.shutdown();
    }

    private static InetAddress remoteAddress(SocketChannel channel) {
        try {
            if (channel.getRemoteAddress() instanceof InetSocketAddress remote) {
                return remote.getAddress();
            }
        } catch (IOException ignored) {
            // fall through: an unknown address counts as one address
        }
        return InetAddress.getLoopbackAddress();
    }

    private static void closeQuietly(Closeable closeable) {
        try {
            closeable.close();
        } catch (IOException ignored) {
            // closing is all we wanted
        }
    }

    /**
     * A request's ranges, checked against the window one by one as they arrive; storage grows with what arrived.
     * One per connection, {@link #reset} for each request (a small request's ranges then cost no allocation); storage
     * grown beyond {@link #KEPT} ranges by a large request is not kept for the next.
     */
    private static final class Ranges implements Wire.RangeSink {
        private static final int KEPT = 16;
        private EmbeddedWindow window;
        /** Inline requests: read every range even after one is refused (there are few), so the connection stays in step. */
        private boolean readAll;
        /** A range lay outside the window (or there is no window). */
        private boolean refused;
        /** Bytes the ranges add up to (stops counting past the inline limit). */
        private long total;
        private long[] addresses = new long[KEPT];
        private long[] lengths = new long[KEPT];
        private int size;

        /** {@code window}: null when the request is refused already (its ranges are then only counted, with {@code readAll}). */
        Ranges reset(EmbeddedWindow window, boolean readAll) {
            this.window = window;
            this.readAll = readAll;
            refused = window == null;
            total = 0;
            size = 0;
            if (addresses.length > KEPT) {
                addresses = new long[KEPT];
                lengths = new long[KEPT];
            }
            return this;
        }

        @Override
        public boolean accept(long address, long length) {
            if (total <= Wire.INLINE_MAX_BYTES) {
                total += Math.max(0, Math.min(length, Wire.INLINE_MAX_BYTES + 1L)); // negative: refused below
            }
            if (!refused && !window.covers(address, length)) {
                refused = true;
            }
            if (refused) {
                return readAll;
            }
            if (size == addresses.length) {
                addresses = Arrays.copyOf(addresses, size * 2);
                lengths = Arrays.copyOf(lengths, size * 2);
            }
            addresses[size] = address;
            lengths[size] = length;
            size++;
            return true;
        }

        /** Whether every range lies in host memory of the window (GPU memory is staged, not gathered). */
        boolean hostMemoryOnly() {
            for (int i = 0; i < size; i++) {
                if (window.regionCovering(addresses[i], lengths[i]).type() != MemoryType.DRAM) {
                    return false;
                }
            }
            return true;
        }
    }

    /** One accepted connection: where it is from, and since when it waits for a request ({@link #BUSY} while in one). */
    private final class Connection {
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
        final Ranges ranges = new Ranges();

        static final int WAITING = 0;
        static final int IN_REQUEST = 1;
        static final int EVICTED = 2;

        Connection(SocketChannel channel, InetAddress address) {
            this.channel = channel;
            this.address = address;
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
            connectionEnded(this);
            connections.remove(this);
            gone.countDown();
        }

        void awaitGone(long millis) {
            try {
                gone.await(millis, TimeUnit.MILLISECONDS);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        }
    }
}
