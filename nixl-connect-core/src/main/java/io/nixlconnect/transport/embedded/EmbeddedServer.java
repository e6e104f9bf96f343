package io.nixlconnect.transport.embedded;

import io.nixlconnect.internal.RunOutResources;
import java.io.Closeable;
import java.io.IOException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.StandardSocketOptions;
import java.nio.channels.ClosedChannelException;
import java.nio.channels.ServerSocketChannel;
import java.nio.channels.SocketChannel;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.SynchronousQueue;
import java.util.concurrent.ThreadPoolExecutor;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Accepts peers under the connection limits, evicting and timing out connections to hold them, and hands each
 * admitted connection ({@link ServerConnection}) to its {@link RequestDispatcher} on a thread from a bounded pool.
 *
 * <p>Under hostile load it holds its limits: at most {@code maxServerConnections} connections and
 * {@code maxConnectionsPerAddress} from one address; a connection that waits for its next request (or its
 * authentication) longer than {@code idleTimeout}, that has not authenticated within 5 s (or {@code readTimeout}, if
 * shorter), that sends a begun request's head, its ranges or a grant's challenge slower than 5 s plus
 * {@value ServerConnection#FLOOR_BYTES_PER_SECOND} bytes/s allow (never longer than {@code readTimeout}), or that
 * makes no progress for {@code readTimeout} in the middle of a request, is closed. When a limit is reached, the
 * connection that has waited longest for a request is closed to make room, so idle or trickling connections cannot
 * lock out a peer that actually sends requests. Only a connection whose request named a live window's credential is
 * "in the middle of a request" and never evicted: authenticating, sending a request's bounded head, or sending the
 * ranges of a refused request, a connection still counts as waiting.
 */
final class EmbeddedServer {

    private static final Logger log = LoggerFactory.getLogger(EmbeddedServer.class);
    /** Handler threads beyond the connection limit, for evicted connections still winding down. */
    private static final int HANDLER_SLACK = 16;
    private static final long EVICTION_WAIT_MILLIS = 1000;
    private final EmbeddedSettings settings;
    private final RequestDispatcher dispatcher;
    private final ServerSocketChannel server;
    private final ThreadPoolExecutor handlers;
    private final Set<ServerConnection> connections = ConcurrentHashMap.newKeySet();
    private final Thread acceptor;
    private final Thread reaper;
    private final PeerCounters counters;
    private volatile boolean running = true;

    EmbeddedServer(EmbeddedTransport transport, EmbeddedSettings settings, PeerAuthentication authentication)
            throws IOException {
        this.settings = settings;
        this.counters = transport.counters();
        this.dispatcher = new RequestDispatcher(transport, settings, authentication);
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
        // One handler thread waits from the start (started with the acceptor below): a new peer's first connection
        // is handed to it instead of waiting for a thread to be created (FirstOperationBenchmark: about 0.3-0.5 ms
        // less on a busy 2-core machine). Further threads come and go with the connections, as before.
        this.handlers = new ThreadPoolExecutor(1, settings.maxServerConnections() + HANDLER_SLACK, 30, TimeUnit.SECONDS,
                new SynchronousQueue<>(), runnable -> {
                    Thread thread = new Thread(runnable, "nixl-embedded-serve-" + ids.incrementAndGet());
                    thread.setDaemon(true);
                    return thread;
                });
        this.acceptor = new Thread(this::acceptLoop, "nixl-embedded-accept-" + localPort());
        acceptor.setDaemon(true);
        this.reaper = new Thread(this::reapLoop, "nixl-embedded-timeouts-" + localPort());
        reaper.setDaemon(true);
        try {
            acceptor.start();
            reaper.start();
            handlers.prestartCoreThread();
        } catch (OutOfMemoryError e) { // out of threads: nothing of this server may stay open
            running = false;
            closeQuietly(server);
            handlers.shutdown();
            throw e;
        }
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
        for (ServerConnection connection : connections) {
            if (connection.waitingSince != ServerConnection.BUSY) {
                waiting++;
            }
        }
        return waiting;
    }

    /** Threads serving connections now. */
    int handlerThreads() {
        return handlers.getPoolSize();
    }

    /**
     * Accepts until closed. Out of file descriptors, accept fails at once for as long as that lasts: the failure is
     * logged once, naming what ran out, and accepting is retried every {@value #RUN_OUT_RETRY_MILLIS} ms (the peers
     * wait in the listen backlog meanwhile), and once it works again that is logged too. Any other failure is logged
     * each time, at most every {@value #RUN_OUT_RETRY_MILLIS} ms.
     */
    private void acceptLoop() {
        boolean outOfDescriptors = false;
        while (running) {
            SocketChannel channel;
            try {
                channel = server.accept();
            } catch (ClosedChannelException e) {
                return;
            } catch (IOException e) {
                if (!running) {
                    return;
                }
                if (RunOutResources.isOutOfFileDescriptors(e)) {
                    if (!outOfDescriptors) {
                        log.warn("Embedded transport on port {}: cannot accept peers' connections: {}", localPort(),
                                RunOutResources.fileDescriptors());
                        outOfDescriptors = true;
                    }
                } else {
                    log.warn("Embedded transport: accept failed: {}", e.toString());
                }
                pause(RUN_OUT_RETRY_MILLIS);
                continue;
            }
            if (outOfDescriptors) {
                log.info("Embedded transport on port {}: file descriptors available again, accepting connections",
                        localPort());
                outOfDescriptors = false;
            }
            admit(channel);
        }
    }

    /** How long the acceptor waits after a failed accept before it tries again. */
    static final long RUN_OUT_RETRY_MILLIS = 50;

    private static void pause(long millis) {
        try {
            Thread.sleep(millis);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    /** Makes room under the limits (evicting the longest-waiting connection if need be), then serves. */
    private void admit(SocketChannel channel) {
        InetAddress address = remoteAddress(channel);
        ServerConnection victim = null;
        boolean full;
        int fromAddress = 0;
        for (ServerConnection connection : connections) {
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
        ServerConnection connection = new ServerConnection(channel, address, settings, connections);
        connections.add(connection);
        try {
            channel.setOption(StandardSocketOptions.TCP_NODELAY, true);
            channel.setOption(StandardSocketOptions.SO_SNDBUF, 4 << 20);
            handlers.execute(() -> dispatcher.serve(connection));
        } catch (IOException | RejectedExecutionException e) {
            log.warn("Embedded transport: cannot serve a connection from {}: {}", address, e.toString());
            connection.finished();
        } catch (OutOfMemoryError e) {
            if (!RunOutResources.isOutOfThreads(e)) {
                throw e;
            }
            // The acceptor goes on: the next connection gets a thread once threads are free again.
            log.warn("Embedded transport: cannot serve a connection from {}: {}", address, RunOutResources.threads());
            connection.finished();
        }
    }

    /**
     * The connection (from {@code address}, or any when null) that has waited longest for a request, of those not
     * holding a window they started on and that is still open: such a connection is a stripe that finished its part
     * of a transfer whose other stripes still run ({@link StripedTransfer}), and closing it would fail that window
     * as if its reader were lost. (The idle timeout still closes it.)
     */
    private ServerConnection longestWaiting(InetAddress address) {
        ServerConnection oldest = null;
        long oldestSince = 0;
        for (ServerConnection connection : connections) {
            long since = connection.waitingSince;
            if (since != ServerConnection.BUSY && (address == null || connection.address.equals(address))
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
            for (ServerConnection connection : connections) {
                long since = connection.waitingSince;
                long partDeadline = connection.partDeadline;
                String why = null;
                if (since != ServerConnection.BUSY ? now - since > idle : now - connection.lastProgress() > read) {
                    why = since != ServerConnection.BUSY ? "waited too long for a request" : "stalled mid-request";
                } else if (partDeadline != 0 && now - partDeadline > 0) {
                    why = "sent a request slower than " + ServerConnection.FLOOR_BYTES_PER_SECOND
                            + " bytes/s (or the read timeout) allows";
                } else if (connection.link == null
                        && now - connection.acceptedAt > Math.min(read, ServerConnection.GRACE_NANOS)) {
                    why = "did not authenticate within the read timeout";
                }
                if (why != null) {
                    log.debug("Embedded transport: closing a connection from {} that {}", connection.address, why);
                    if (since != ServerConnection.BUSY && now - since > idle) {
                        counters.idleClosed.increment();
                    }
                    connection.abort();
                }
            }
        }
    }

    void close() {
        running = false;
        closeQuietly(server);
        for (ServerConnection connection : connections) {
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
}
