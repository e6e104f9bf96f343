package io.nixlconnect.transport.embedded;

import io.nixlconnect.internal.RunOutResources;
import io.nixlconnect.transport.PeerCounts;
import io.nixlconnect.transport.Transport;
import io.nixlconnect.transport.TransportAgent;
import io.nixlconnect.transport.TransportException;
import java.io.IOException;
import java.net.InetAddress;
import java.nio.charset.StandardCharsets;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.locks.LockSupport;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.ThreadFactory;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * The pure-Java transport: one TCP server per connector serving all its agents, and pooled connections to
 * each peer endpoint.
 *
 * <p>Peers come and go: a thread of its own ({@code nixl-embedded-peers-PORT}) checks the pools' idle connections
 * every {@link EmbeddedSettings#peerCheckInterval()}, closing those whose peer closed its end and those idle past
 * {@link EmbeddedSettings#peerIdleTimeout()}, and forgets pools left empty. The server closes an accepted connection
 * as soon as its peer closes it (its handler thread is reading it), or after its idle timeout.
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
    private final PeerCounters counters = new PeerCounters();
    private final Thread peerChecker;
    private volatile boolean closed;

    private EmbeddedTransport(EmbeddedSettings settings) {
        this.settings = settings;
        this.authentication = new PeerAuthentication(settings.sslContext(), settings.sharedSecret());
        this.workers = Executors.newCachedThreadPool(daemonThreads("nixl-embedded-io-"));
        RunOutResources.prepare();
        try {
            this.server = new EmbeddedServer(this, settings, authentication);
        } catch (IOException e) {
            workers.shutdownNow();
            String runOut = RunOutResources.describe(e);
            throw new TransportException("Embedded transport cannot listen on " + settings.bindAddress() + ":"
                    + settings.port() + ": " + (runOut != null ? runOut
                    : e.getMessage() + " (set another bind address or port, or 0 for any free port)"), e);
        } catch (OutOfMemoryError e) {
            workers.shutdownNow();
            throw startFailure(e);
        }
        this.peerChecker = new Thread(this::checkPeersLoop, "nixl-embedded-peers-" + server.localPort());
        peerChecker.setDaemon(true);
        try {
            peerChecker.start();
        } catch (OutOfMemoryError e) {
            server.close();
            workers.shutdownNow();
            throw startFailure(e);
        }
        this.advertisedHost = advertisedHost(settings);
    }

    /** A thread of the transport could not start: named when the process is out of threads, else rethrown. */
    private static TransportException startFailure(OutOfMemoryError e) {
        if (!RunOutResources.isOutOfThreads(e)) {
            throw e;
        }
        TransportException failure = new TransportException("Embedded transport cannot start: " + RunOutResources.threads());
        failure.addSuppressed(e);
        return failure;
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

    /** Peers each agent keeps loaded ({@link EmbeddedSettings#maxCachedPeers()}). */
    int maxCachedPeers() {
        return settings.maxCachedPeers();
    }

    /** Connections one large transfer is striped over ({@link StripedTransfer}); 1: none. */
    int tcpStreams() {
        return settings.tcpStreams();
    }

    /** Per peer endpoint with a pool now: the path its transfers take, and why TCP where they cannot copy directly. */
    Map<String, String> peerPaths() {
        Map<String, String> paths = new java.util.TreeMap<>();
        peers.forEach((endpoint, pool) -> paths.put(endpoint,
                pool.sameHost().state().describe() + pool.sameHost().describeProtocol()));
        return paths;
    }

    /** Most distinct paths {@link #peerPathCounts()} lists; the rest are counted under "other". */
    static final int MAX_PATH_KINDS = 8;
    /** Most characters of one path's description in {@link #peerPathCounts()}. */
    static final int MAX_PATH_CHARS = 160;

    /**
     * For health details, bounded whatever the number of peers: how many peer endpoints (with a pool now) take each
     * path, by its description without the peer's pid ({@code cross-memory-attach}, {@code tcp (<why>)},
     * {@code not probed yet}); at most {@value #MAX_PATH_KINDS} descriptions of at most {@value #MAX_PATH_CHARS}
     * characters, the rest counted as {@code other}.
     */
    Map<String, Integer> peerPathCounts() {
        Map<String, Integer> counts = new LinkedHashMap<>();
        for (PeerPool pool : peers.values()) {
            SameHostPeer.State state = pool.sameHost().state();
            String path = (state.crossMemoryAttach() ? SameHostPeer.CROSS_MEMORY_ATTACH : state.describe())
                    + pool.sameHost().describeProtocol();
            if (path.length() > MAX_PATH_CHARS) {
                path = path.substring(0, MAX_PATH_CHARS - 1) + "…";
            }
            if (!counts.containsKey(path) && counts.size() >= MAX_PATH_KINDS) {
                path = "other";
            }
            counts.merge(path, 1, Integer::sum);
        }
        return counts;
    }

    /** Pooled connections waiting unused, over every pool. */
    int idleConnections() {
        int idle = 0;
        for (PeerPool pool : peers.values()) {
            idle += pool.idleCount();
        }
        return idle;
    }

    /** Pools (peer endpoints with connections or transfers now) this transport holds. */
    int pooledPeers() {
        return peers.size();
    }

    /** Connections open to peers (pooled, idle or busy) and from them (accepted by the server). */
    PeerCounts peerCounts() {
        int open = server.connectionCount();
        for (PeerPool pool : peers.values()) {
            open += pool.openCount();
        }
        return counters.snapshot(open);
    }

    PeerCounters counters() {
        return counters;
    }

    /**
     * Until the transport closes: every {@link EmbeddedSettings#peerCheckInterval()}, the pools' idle connections are
     * checked ({@link PeerPool#checkIdle}) and retired pools forgotten.
     */
    private void checkPeersLoop() {
        long interval = settings.peerCheckInterval().toNanos();
        long idle = settings.peerIdleTimeout().toNanos();
        while (!closed) {
            LockSupport.parkNanos(this, interval);
            if (closed || Thread.currentThread().isInterrupted()) {
                return;
            }
            try {
                checkPeers(System.nanoTime(), idle);
            } catch (RuntimeException e) {
                log.warn("Embedded transport: checking idle peer connections failed", e);
            }
        }
    }

    /** One round of the peer check (tests call it with their own clock). */
    void checkPeers(long now, long idleNanos) {
        for (Map.Entry<String, PeerPool> entry : peers.entrySet()) {
            if (entry.getValue().checkIdle(now, idleNanos)) {
                peers.remove(entry.getKey(), entry.getValue());
            }
        }
    }

    /**
     * An agent dropped {@code peer} from its full cache: when no agent of this transport still holds a peer at its
     * endpoint, that endpoint's idle connections are closed with it.
     */
    void peerEvicted(LoadedPeer peer) {
        counters.evicted.increment();
        for (EmbeddedAgent agent : agents.values()) {
            if (agent.holdsPeerAt(peer.endpoint())) {
                return;
            }
        }
        PeerPool pool = peers.get(peer.endpoint());
        if (pool != null) {
            pool.closeIdle();
        }
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
        while (true) {
            PeerPool pool = pool(transfer.endpoint());
            if (pool.submit(transfer)) {
                return;
            }
            peers.remove(transfer.endpoint(), pool); // retired by the peer check just now: a new one
        }
    }

    private PeerPool pool(String endpoint) {
        PeerPool pool = peers.get(endpoint); // a lookup first: computeIfAbsent's lambda is an object per call
        if (pool == null) {
            pool = peers.computeIfAbsent(endpoint, key -> new PeerPool(settings.maxConnectionsPerPeer(), workers,
                    new SameHostPeer(sameHostCopyDisabled()), counters));
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
                while (borrowed.length == 0 && pool.isRetired()) {
                    peers.remove(peer.endpoint(), pool); // retired by the peer check just now: a new one
                    pool = pool(peer.endpoint());
                    borrowed = pool.borrow(1);
                }
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
        } catch (OutOfMemoryError e) {
            if (!RunOutResources.isOutOfThreads(e)) {
                throw e;
            }
            log.warn("Embedded transport: failure report to {} dropped: {}", peer.endpoint(), RunOutResources.threads());
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
        LockSupport.unpark(peerChecker);
        for (EmbeddedAgent agent : agents.values()) {
            agent.close();
        }
        server.close();
        peers.values().forEach(PeerPool::close);
        workers.shutdownNow();
        staging.close();
    }
}
