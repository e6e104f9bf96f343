package io.nixlconnect.transport.nixl;

import io.nixlconnect.transport.MemoryRegion;
import io.nixlconnect.transport.MemoryRegistration;
import io.nixlconnect.transport.PassiveWindow;
import io.nixlconnect.transport.PeerCounts;
import io.nixlconnect.transport.TransferHandle;
import io.nixlconnect.transport.TransferOp;
import io.nixlconnect.transport.TransportException;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Set;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.ReentrantReadWriteLock;
import java.util.function.Consumer;

/**
 * One NIXL agent: creates the native agent and destroys it, guards its lifetime, and is the entry of every call into
 * it. Its parts do the rest: {@link NixlBackends}, {@link NixlRegistrations}, {@link NixlLocalMetadata}, the peers
 * ({@link NixlPeers}, loaded by {@link PeerLoader}), transfers ({@link TransferPoster}, {@link TransfersInFlight};
 * requests checked and built by {@link NixlRequests}), failure reports ({@link FailureReporter}), notifications
 * ({@link NixlNotifications} into the {@link NotificationDispatcher}), windows closed early ({@link WindowDrain}) and
 * the memory kept for stalled peers ({@link KeptMemory}); one {@link ProgressLoop} drives them.
 *
 * <p>Every native call on the agent runs under the read side of {@link #lifecycle}; {@link #close()}
 * takes the write side, so nothing touches the native agent while, or after, it is destroyed. Only after that does
 * it release the windows still draining and free the memory kept for stalled peers.
 */
final class NixlAgentCore implements ProgressLoop.Work {

    private static final Logger log = LoggerFactory.getLogger(NixlAgentCore.class);
    static final int MAX_EARLY_NOTIFICATIONS = 1024;
    static final long MAX_EARLY_NOTIFICATION_BYTES = 1 << 20;
    /** How long after introducing a peer the loop progresses at its busy pace, so that the peer's wire-up completes. */
    static final long INTRODUCTION_PROGRESS_NANOS = TimeUnit.SECONDS.toNanos(1);
    final ReentrantReadWriteLock lifecycle = new ReentrantReadWriteLock();
    private final String name;
    private final NixlSettings settings;
    private final Consumer<NixlAgentCore> onClose;
    private final NixlBackends backends;
    private final NixlPeers peers;
    private final NixlRegistrations registrations = new NixlRegistrations(this);
    private final NixlLocalMetadata metadata = new NixlLocalMetadata(this, registrations);
    private final NotificationDispatcher dispatcher =
            new NotificationDispatcher(MAX_EARLY_NOTIFICATIONS, MAX_EARLY_NOTIFICATION_BYTES);
    private final NixlNotifications notifications;
    private final KeptMemory kept;
    private final WindowDrain drains;
    private final ProgressLoop progress;
    private final TransfersInFlight inFlight;
    private final TransferPoster poster;
    private final PeerLoader loader;
    private final FailureReporter reporter;
    private long agent;
    private volatile boolean closed;
    /** Whether UCX was warmed up as the agent started ({@link UcxWarmUp}). */
    private boolean warmedUp;
    /** When a peer was last introduced ({@link #introduce}); 0: never. */
    private volatile long lastIntroductionNanos;

    NixlAgentCore(String name, NixlSettings settings, Consumer<NixlAgentCore> onClose) {
        this.name = name;
        this.settings = settings;
        this.onClose = onClose;
        backends = new NixlBackends(settings.backends(), settings.backendParameters());
        peers = new NixlPeers(this, settings);
        notifications = new NixlNotifications(name, dispatcher);
        kept = new KeptMemory(name, settings.maxKeptBytes());
        drains = new WindowDrain(name, settings.drainLimit(), dispatcher, kept);
        progress = new ProgressLoop("nixl-progress-" + name, this, settings.nixlProgressThreadDelayMicros() >= 0);
        inFlight = new TransfersInFlight(this, progress);
        poster = new TransferPoster(this, peers, inFlight, progress);
        loader = new PeerLoader(this, peers, inFlight);
        reporter = new FailureReporter(this, peers, progress);
        long[] handle = new long[1];
        // NIXL's progress thread is refused by NixlSettings (closing under transfers corrupted UCX: docs/nixl.md); on, it
        // waits on UCX's event descriptor and serves peers without polling. Calls come from user threads, our loop
        // and that thread at once, so NIXL's strict thread sync is on.
        long delay = settings.nixlProgressThreadDelayMicros();
        byte[] config = NixlCapi.agentConfig(delay >= 0, Math.max(delay, 0), NixlCapi.THREAD_SYNC_STRICT);
        check(NixlCapi.nixl_capi_create_configured_agent(name, config, handle), "create agent '" + name + "'");
        agent = handle[0];
        try {
            backends.create(agent);
            notifications.createMap();
            warmedUp = settings.warmUp() && UcxWarmUp.warm(agent, name, settings);
        } catch (RuntimeException e) {
            destroyNative();
            throw e;
        }
        progress.start();
    }

    long handle() {
        return agent;
    }

    String name() {
        return name;
    }

    /** Which backend NIXL chose for a request, counted (see {@link NixlBackends#chosen}); call with the request alive. */
    String chosenBackend(long request) {
        return backends.chosen(agent, request);
    }

    // --- memory ---

    MemoryRegistration register(MemoryRegion region) {
        if (region == null) {
            throw new IllegalArgumentException("region must not be null");
        }
        NixlRequests.requireUsable(region, "region");
        lifecycle.readLock().lock();
        try {
            ensureOpen();
            return registrations.register(region);
        } finally {
            lifecycle.readLock().unlock();
        }
    }

    /** Deregisters (registration closing); nothing to do when the agent is already closed. */
    void deregister(NixlRegistration registration, long dlist) {
        lifecycle.readLock().lock();
        try {
            registrations.deregister(registration, dlist);
        } finally {
            lifecycle.readLock().unlock();
        }
    }

    // --- metadata and peers ---

    byte[] localMetadata() {
        lifecycle.readLock().lock();
        try {
            ensureOpen();
            return metadata.full();
        } finally {
            lifecycle.readLock().unlock();
        }
    }

    /** This agent's metadata for operations within {@code registered}: see {@link NixlLocalMetadata#describing}. */
    byte[] localMetadata(List<MemoryRegion> registered) {
        lifecycle.readLock().lock();
        try {
            ensureOpen();
            return metadata.describing(registered);
        } finally {
            lifecycle.readLock().unlock();
        }
    }

    /** Loads a peer: see {@link PeerLoader#load}. */
    String loadRemote(byte[] metadata) {
        return loader.load(metadata);
    }

    /**
     * Loads a peer ahead of its first operation. Loading creates the UCX endpoint and sends its wire-up request; the
     * wire-up completes as both workers progress, so this agent's loop keeps its busy pace for
     * {@link #INTRODUCTION_PROGRESS_NANOS} (idle, it would progress the worker every 10 ms) and the peer is connected by
     * the time its first operation comes.
     */
    String introduce(byte[] metadata) {
        String remote = loader.load(metadata);
        long now = System.nanoTime();
        lastIntroductionNanos = now == 0 ? 1 : now;
        progress.wake();
        return remote;
    }

    /** The peers that transfers in flight target. */
    Set<String> remotesWithTransfersInFlight() {
        return inFlight.remotes();
    }

    /** Transfers to {@code remote} not ended yet (see {@link TransfersInFlight#countTo}). */
    long transfersInFlightTo(String remote) {
        return inFlight.countTo(remote);
    }

    /** Peers loaded now. */
    int remoteCount() {
        return peers.loadedCount();
    }

    // --- transfers ---

    /** Creates and posts a request: see {@link TransferPoster#post}. */
    TransferHandle post(TransferOp op, List<MemoryRegion> local, String remote, List<MemoryRegion> remoteRegions,
            byte[] notification, boolean callerPolls) {
        return poster.post(op, local, remote, remoteRegions, notification, callerPolls);
    }

    /** Polls {@code transfer} on the thread waiting for it: see {@link TransfersInFlight#pollOnWaitingThread}. */
    void pollOnWaitingThread(NixlTransfer transfer) {
        inFlight.pollOnWaitingThread(transfer);
    }

    /** {@code transfer} was cancelled: the loop no longer polls it. */
    void forget(NixlTransfer transfer) {
        inFlight.remove(transfer);
    }

    /** What a failed transfer to {@code remote} most likely means: see {@link TransferPoster#failure}. */
    TransportException transferFailure(String remote, String what, int status) {
        return poster.failure(remote, what, status);
    }

    /** Tells {@code remote} that its transfer for {@code notification} failed: see {@link FailureReporter#report}. */
    void reportFailure(String remote, byte[] notification, String cause) {
        reporter.report(remote, notification, cause);
    }

    // --- windows ---

    PassiveWindow openWindow(TransferOp access, List<MemoryRegion> regions, byte[] notification, int notifications) {
        if (notifications < 1) {
            throw new IllegalArgumentException("a window waits for at least 1 notification, was " + notifications);
        }
        if (access == null) {
            throw new IllegalArgumentException("window access must not be null");
        }
        if (regions == null || regions.stream().anyMatch(Objects::isNull)) {
            throw new IllegalArgumentException("window regions must be a list without nulls");
        }
        if (notification == null) {
            throw new IllegalArgumentException("window notification must not be null");
        }
        lifecycle.readLock().lock();
        try {
            ensureOpen();
            long bytes = 0;
            for (MemoryRegion region : regions) {
                bytes += region.length();
            }
            NixlWindow window = new NixlWindow(this, dispatcher.await(notification, notifications), bytes);
            progress.wake();
            return window;
        } finally {
            lifecycle.readLock().unlock();
        }
    }

    /** How many notifications {@code waiter} has received (fan-out windows wait for several). */
    int notificationsReceived(NotificationDispatcher.Waiter waiter) {
        return dispatcher.received(waiter);
    }

    /**
     * A window closed before its notification drains until released ({@link WindowDrain}); once the agent is
     * destroyed there is no worker left to touch its memory, so it is released at once.
     */
    void drain(NixlWindow window) {
        lifecycle.readLock().lock();
        try {
            if (agent == 0) {
                window.markReleased(); // destroyed: no worker left to touch the memory
                return;
            }
            drains.add(window);
        } finally {
            lifecycle.readLock().unlock();
        }
        drains.releaseWhenOver(window);
        progress.wake();
    }

    int drainingCount() {
        return drains.count();
    }

    /**
     * Keeps the memory of a window released at its drain limit until this agent is destroyed: the UCX worker
     * that could serve a stalled peer's late GET or PUT from it goes with the agent. Once it is gone, frees it now.
     */
    void keepUntilClosed(AutoCloseable memory, long bytes, long residentBytes) {
        lifecycle.readLock().lock();
        try {
            if (agent != 0) {
                kept.keep(memory, bytes, residentBytes);
                return;
            }
        } finally {
            lifecycle.readLock().unlock();
        }
        kept.free(List.of(memory));
    }

    // --- progress loop ---

    @Override
    public int pollOnce() {
        lifecycle.readLock().lock();
        try {
            if (agent == 0) {
                return 0;
            }
            int events = inFlight.pollRound();
            long now = System.nanoTime();
            events += notifications.drainIfDue(agent, now);
            peers.sweep(now);
            return events;
        } finally {
            lifecycle.readLock().unlock();
        }
    }

    @Override
    public boolean transfersInFlight() {
        return inFlight.anyPolledByTheLoop();
    }

    @Override
    public boolean busy() {
        long introduced = lastIntroductionNanos;
        return transfersInFlight() || dispatcher.waitingCount() > 0 || reporter.sentLately()
                || (introduced != 0 && System.nanoTime() - introduced < INTRODUCTION_PROGRESS_NANOS);
    }

    @Override
    public void failed(Throwable error) {
        log.error("NIXL agent {}: progress loop failed; failing pending transfers and windows", name, error);
        TransportException failure = new TransportException("NIXL agent " + name + " progress loop failed: " + error,
                error);
        dispatcher.failAll(failure);
        inFlight.abandonAll("progress loop failed");
    }

    // --- state ---

    boolean isServing() {
        return !closed && progress.isAlive();
    }

    Map<String, Object> details() {
        Map<String, Object> details = new LinkedHashMap<>();
        details.put("agent", name);
        details.put("backends", settings.backends());
        NixlInstallation installation = NixlNativeLibrary.bound();
        if (installation != null) {
            details.put("library", installation.libraryName());
            details.put("librarySource", installation.source());
        }
        details.put("serving", isServing());
        details.put("ucxWarmedUp", warmedUp);
        details.put("registrations", registrations.count());
        details.put("remoteAgents", peers.loadedCount());
        details.put("peersReconnected", peers.reconnectedCount());
        details.put("peersToReconnect", peers.brokenCount());
        details.put("transfersInFlight", inFlight.count());
        details.put("transfersPosted", poster.postedCount());
        details.put("transfersEndedOnWaitingThread", inFlight.endedOnWaitingThreads());
        details.put("transfersByBackend", backends.transfersByBackend());
        details.put("windowsWaiting", dispatcher.waitingCount());
        details.put("windowsDraining", drains.count());
        details.putAll(kept.details());
        details.put("cudaRuntime", NixlCudaSupport.cudaRuntimeStatus());
        details.put("notificationsReceived", notifications.receivedCount());
        details.put("notificationsBuffered", dispatcher.bufferedCount());
        details.put("notificationsDropped", dispatcher.droppedCount());
        details.put("failureReportsDropped", notifications.failureReportsDroppedCount());
        return details;
    }

    /**
     * Each loaded peer holds one UCX endpoint: the connections this agent knows of; evicted past the limit, dropped
     * after a failed transfer (departed), unloaded when idle, and reconnected after a failure, since the agent started.
     */
    PeerCounts peerCounts() {
        if (closed) {
            return PeerCounts.NONE;
        }
        return new PeerCounts(peers.loadedCount(), peers.evictedCount(), peers.reconnectedCount(),
                peers.departedCount(), peers.idleClosedCount());
    }

    /** Throws unless the agent is open; call under {@link #lifecycle}'s read lock. */
    void ensureOpen() {
        if (closed || agent == 0) {
            throw new TransportException("NIXL agent " + name + " is closed");
        }
    }

    void close() {
        if (closed) {
            return;
        }
        closed = true;
        if (progress.isLoopThread()) {
            // Called from a completion callback: the loop holds the read lock, so close from elsewhere.
            Thread closer = new Thread(this::closeNow, "nixl-close-" + name);
            closer.setDaemon(true);
            closer.start();
            return;
        }
        closeNow();
    }

    private void closeNow() {
        progress.stop();
        lifecycle.writeLock().lock();
        try {
            if (agent == 0) {
                return;
            }
            inFlight.abandonAll("agent " + name + " closed");
            dispatcher.failAll(new TransportException("NIXL agent " + name + " closed"));
            registrations.releaseAll();
            peers.invalidateAll();
            destroyNative();
        } finally {
            lifecycle.writeLock().unlock();
            // Only now: the worker that could still serve a peer's transfer is gone.
            drains.releaseAll();
            kept.freeAll();
            onClose.accept(this);
        }
    }

    private void destroyNative() {
        notifications.destroyMap();
        // Destroying a backend handle frees the wrapper; the agent tears the backend down itself.
        backends.destroy();
        int status = NixlCapi.nixl_capi_destroy_agent(agent);
        if (status != NixlCapi.SUCCESS) {
            log.warn("NIXL agent {}: destroy returned {}", name, NixlCapi.statusName(status));
        }
        agent = 0;
    }

    static void check(int status, String what) {
        if (status != NixlCapi.SUCCESS) {
            throw new TransportException("NIXL: " + what + " failed: " + NixlCapi.statusName(status));
        }
    }
}
