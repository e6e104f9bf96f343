package io.nixlconnect.transport.embedded;

import io.nixlconnect.transport.PeerCounts;
import io.nixlconnect.transport.Transport;
import io.nixlconnect.transport.TransportAgent;
import io.nixlconnect.transport.TransportException;
import java.io.IOException;
import java.net.InetAddress;
import java.nio.charset.StandardCharsets;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.ThreadFactory;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * The pure-Java transport: one TCP server per connector serving all its agents, and pooled connections to
 * each peer endpoint.
 */
final class EmbeddedTransport implements Transport {

    private static final org.slf4j.Logger log = org.slf4j.LoggerFactory.getLogger(EmbeddedTransport.class);

    private final EmbeddedSettings settings;
    private final ExecutorService workers;
    private final EmbeddedServer server;
    private final String advertisedHost;
    private final Map<String, EmbeddedAgent> agents = new ConcurrentHashMap<>();
    private final Map<String, PeerPool> peers = new ConcurrentHashMap<>();
    private final GpuStaging staging = new GpuStaging();
    private final PeerAuthentication authentication;
    private volatile boolean closed;

    private EmbeddedTransport(EmbeddedSettings settings) {
        this.settings = settings;
        this.authentication = new PeerAuthentication(settings.sslContext(), settings.sharedSecret());
        this.workers = Executors.newCachedThreadPool(daemonThreads("nixl-embedded-io-"));
        try {
            this.server = new EmbeddedServer(this, settings, authentication);
        } catch (IOException e) {
            workers.shutdownNow();
            throw new TransportException("Embedded transport cannot listen on " + settings.bindAddress() + ":"
                    + settings.port() + ": " + e.getMessage() + " (set another bind address or port, or 0 for any free port)", e);
        }
        this.advertisedHost = advertisedHost(settings);
    }

    /** Starts the server on the configured address and port. */
    static EmbeddedTransport open(EmbeddedSettings settings) {
        return new EmbeddedTransport(settings);
    }

    private static String advertisedHost(EmbeddedSettings settings) {
        if (settings.advertisedAddress() != null) {
            return settings.advertisedAddress();
        }
        String bind = settings.bindAddress();
        if (bind.equals("0.0.0.0") || bind.equals("::") || bind.equals("[::]")) {
            try {
                return InetAddress.getLocalHost().getHostAddress();
            } catch (IOException e) {
                throw new TransportException("Bound to the wildcard address " + bind + " but cannot determine this host's "
                        + "address to advertise; set advertisedAddress", e);
            }
        }
        return bind;
    }

    private static ThreadFactory daemonThreads(String prefix) {
        AtomicInteger ids = new AtomicInteger();
        return runnable -> {
            Thread thread = new Thread(runnable, prefix + ids.incrementAndGet());
            thread.setDaemon(true);
            return thread;
        };
    }

    @Override
    public String name() {
        return "embedded";
    }

    /** {@code host:port} peers connect to. */
    public String endpoint() {
        return advertisedHost + ":" + server.localPort();
    }

    public int port() {
        return server.localPort();
    }

    /** Why this side neither copies from peers directly nor grants them to (the setting); null when it does. */
    String sameHostCopyDisabled() {
        return settings.sameHostCopy() ? null : "same-host copy is turned off by configuration";
    }

    /** Connections one large transfer is striped over ({@link StripedTransfer}); 1: none. */
    int tcpStreams() {
        return settings.tcpStreams();
    }

    /** Per peer endpoint: the path its transfers take, and why TCP where they cannot copy directly. */
    Map<String, String> peerPaths() {
        Map<String, String> paths = new java.util.TreeMap<>();
        peers.forEach((endpoint, pool) -> paths.put(endpoint,
                pool.sameHost().state().describe() + pool.sameHost().describeProtocol()));
        return paths;
    }

    /** Connections open to peers (pooled, idle or busy) and from them (accepted by the server). */
    PeerCounts peerCounts() {
        int open = server.connectionCount();
        for (PeerPool pool : peers.values()) {
            open += pool.openCount();
        }
        return new PeerCounts(open, 0, 0, 0, 0);
    }

    PeerAuthentication authentication() {
        return authentication;
    }

    /** The server, for tests that check its limits. */
    EmbeddedServer server() {
        return server;
    }

    GpuStaging staging() {
        return staging;
    }

    boolean isServing() {
        return !closed && server.isRunning();
    }

    @Override
    public TransportAgent createAgent(String agentName) {
        if (closed) {
            throw new TransportException("Embedded transport is closed");
        }
        if (agentName == null || agentName.isEmpty() || agentName.getBytes(StandardCharsets.UTF_8).length > Wire.MAX_AGENT_NAME) {
            throw new TransportException("Agent name must be 1.." + Wire.MAX_AGENT_NAME + " bytes, was '" + agentName + "'");
        }
        EmbeddedAgent agent = new EmbeddedAgent(this, agentName,
                new EmbeddedMetadata(agentName, advertisedHost, server.localPort()));
        if (agents.putIfAbsent(agentName, agent) != null) {
            throw new TransportException("An agent named '" + agentName + "' already exists on this transport");
        }
        return agent;
    }

    EmbeddedAgent agent(String name) {
        return agents.get(name);
    }

    void agentClosed(EmbeddedAgent agent) {
        agents.remove(agent.name(), agent);
    }

    void submit(EmbeddedTransfer transfer) {
        pool(transfer.endpoint()).submit(transfer);
    }

    private PeerPool pool(String endpoint) {
        PeerPool pool = peers.get(endpoint); // a lookup first: computeIfAbsent's lambda is an object per call
        if (pool == null) {
            pool = peers.computeIfAbsent(endpoint, key -> new PeerPool(settings.maxConnectionsPerPeer(), workers,
                    new SameHostPeer(sameHostCopyDisabled())));
        }
        return pool;
    }

    /**
     * Opens a connection to {@code peer} ahead of its first transfer (connecting and securing it: TCP, TLS, the shared
     * secret), on an I/O worker, and leaves it idle in the peer's pool; nothing when the pool has a connection already.
     * Completes once the connection is pooled, or exceptionally when the peer cannot be reached.
     */
    CompletableFuture<Void> connectAhead(LoadedPeer peer) {
        CompletableFuture<Void> ready = new CompletableFuture<>();
        try {
            workers.execute(() -> {
                PeerPool pool = pool(peer.endpoint());
                Link[] borrowed = pool.borrow(1);
                if (borrowed.length == 0 || borrowed[0] != null) {
                    if (borrowed.length == 1) {
                        pool.giveBack(borrowed[0]); // an idle connection: connected already
                    }
                    ready.complete(null); // or every connection is busy: connected already
                    return;
                }
                Link link;
                try {
                    link = EmbeddedTransfer.connect(this, peer.metadata(), opened -> { });
                } catch (IOException | RuntimeException e) {
                    pool.giveBack(null);
                    ready.completeExceptionally(EmbeddedTransfer.ioFailure("Connecting to " + peer.endpoint(), e));
                    return;
                }
                pool.giveBack(link);
                ready.complete(null);
            });
        } catch (RejectedExecutionException e) {
            ready.completeExceptionally(new TransportException("The embedded transport is closed"));
        }
        return ready;
    }

    /**
     * Sends {@code peer} a {@link Wire#FAIL} report for its window {@code credential}, on an I/O worker: on an idle
     * pooled connection or a new one the pool allows, else (every connection busy, as when the failed transfer was
     * still queued for one) on a connection of its own, closed afterwards. A stale pooled connection is retried once
     * on a fresh one. Best effort: failures are logged at DEBUG.
     */
    void reportFailure(LoadedPeer peer, String reporter, byte[] credential, String cause) {
        try {
            workers.execute(() -> sendFailureReport(peer, reporter, credential, cause, true));
        } catch (java.util.concurrent.RejectedExecutionException e) {
            log.debug("Embedded transport: closing; failure report to {} dropped", peer.endpoint());
        }
    }

    private void sendFailureReport(LoadedPeer peer, String reporter, byte[] credential, String cause, boolean usePool) {
        PeerPool pool = usePool && !closed ? peers.get(peer.endpoint()) : null;
        Link[] borrowed = pool == null ? new Link[0] : pool.borrow(1);
        Link link = borrowed.length == 1 ? borrowed[0] : null;
        boolean reused = link != null;
        boolean inStep = false;
        try {
            if (link == null) {
                link = EmbeddedTransfer.connect(this, peer.metadata(), opened -> { });
            }
            Wire.writeFailureReport(link, peer.agentName(), credential, reporter, cause);
            String refusal = Wire.readResponse(link);
            inStep = refusal == null; // refused: the peer drops the connection
            if (refusal != null) {
                log.debug("Embedded transport: failure report to {} refused: {}", peer.endpoint(), refusal);
            }
        } catch (IOException | RuntimeException e) {
            if (reused) {
                giveBackFailureLink(pool, borrowed, link, false);
                sendFailureReport(peer, reporter, credential, cause, false); // the pooled connection was stale
                return;
            }
            log.debug("Embedded transport: failure report to {} not delivered: {}", peer.endpoint(), e.toString());
        }
        giveBackFailureLink(pool, borrowed, link, inStep);
    }

    /** A connection (or permit) borrowed for a failure report back to its pool; one of its own is closed. */
    private static void giveBackFailureLink(PeerPool pool, Link[] borrowed, Link link, boolean inStep) {
        if (borrowed.length == 1) {
            if (!inStep && link != null) {
                link.close();
            }
            pool.giveBack(inStep ? link : null);
        } else if (link != null) {
            link.close();
        }
    }

    void dequeue(EmbeddedTransfer transfer) {
        PeerPool pool = peers.get(transfer.endpoint());
        if (pool != null) {
            pool.remove(transfer);
        }
    }

    @Override
    public String toString() {
        return "embedded transport on " + endpoint();
    }

    @Override
    public void close() {
        if (closed) {
            return;
        }
        closed = true;
        for (EmbeddedAgent agent : agents.values()) {
            agent.close();
        }
        server.close();
        peers.values().forEach(PeerPool::close);
        workers.shutdownNow();
        staging.close();
    }
}
