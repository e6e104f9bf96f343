package io.nixlconnect.transport.embedded;

import io.nixlconnect.transport.MemoryRegion;
import io.nixlconnect.transport.MemoryRegistration;
import io.nixlconnect.transport.MemoryType;
import io.nixlconnect.transport.PassiveWindow;
import io.nixlconnect.transport.PeerCounts;
import io.nixlconnect.transport.PeerNotLoadedException;
import io.nixlconnect.transport.TransferHandle;
import io.nixlconnect.transport.TransferOp;
import io.nixlconnect.transport.TransportAgent;
import io.nixlconnect.transport.TransportException;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicLong;

/** One embedded agent: registrations, windows by notification, peers by name, transfers in flight. */
final class EmbeddedAgent implements TransportAgent {

    private final EmbeddedTransport transport;
    private final String name;
    private final byte[] metadata;
    private final AtomicLong registrationIds = new AtomicLong();
    private final Map<Long, MemoryRegion> registered = new ConcurrentHashMap<>();
    /**
     * The peers loaded, at most {@link EmbeddedTransport#maxCachedPeers()}: read without a lock by every operation;
     * entries are added and dropped under {@link #remotesLock}.
     */
    private final Map<String, LoadedPeer> remotes = new ConcurrentHashMap<>();
    private final Object remotesLock = new Object();
    /** The peer loaded last: every active operation loads its peer, nearly always the same one as before. */
    private volatile LoadedPeer lastLoaded;
    /** The open windows, by notification (the only table of them: a second list cost two array copies per window). */
    private final Map<NotificationKey, EmbeddedWindow> windowsByNotification = new ConcurrentHashMap<>();
    /**
     * Transfers in flight, linked through their own fields (a set's node per transfer was one more object each).
     * Guarded by this list's lock, held for a few pointer moves per transfer start and end.
     */
    private final Object transfersLock = new Object();
    private EmbeddedTransfer firstTransfer;
    private int transferCount;
    private volatile boolean closed;

    EmbeddedTransport transport() {
        return transport;
    }

    EmbeddedAgent(EmbeddedTransport transport, String name, EmbeddedMetadata metadata) {
        this.transport = transport;
        this.name = name;
        this.metadata = metadata.encode();
    }

    @Override
    public String name() {
        return name;
    }

    @Override
    public Map<String, Object> details() {
        Map<String, Object> details = new LinkedHashMap<>();
        details.put("registeredRegions", registered.size());
        details.put("openWindows", windowsByNotification.size());
        synchronized (transfersLock) {
            details.put("transfersInFlight", transferCount);
        }
        details.put("remoteAgents", remotes.size());
        details.put("tls", transport.authentication().usesTls());
        details.put("sharedSecret", transport.authentication().requiresSecret());
        details.put("sameHostCopy", transport.sameHostCopyDisabled() != null ? "off"
                : CrossMemoryAttach.unavailableReason() != null ? "unavailable: " + CrossMemoryAttach.unavailableReason()
                : "on");
        // Counts, not a list per peer: the details stay small whatever the number of peers.
        details.put("peerPaths", transport.peerPathCounts());
        return details;
    }

    @Override
    public String endpoint() {
        return transport.endpoint();
    }

    @Override
    public boolean isServing() {
        return !closed && transport.isServing();
    }

    @Override
    public MemoryRegistration registerMemory(MemoryRegion region) {
        ensureOpen();
        if (region.type() == MemoryType.XPU) {
            throw new TransportException("The embedded transport cannot move Intel GPU (XPU) memory (xpu:"
                    + region.deviceId() + "): use the NIXL backend (nixl.connect.backend=nixl) for XPU buffers");
        }
        if (region.type() == MemoryType.VRAM) {
            GpuStaging.requireCuda(region.deviceId());
        }
        long id = registrationIds.incrementAndGet();
        registered.put(id, region);
        return new MemoryRegistration() {
            @Override
            public MemoryRegion region() {
                return region;
            }

            @Override
            public void close() {
                registered.remove(id);
            }
        };
    }

    @Override
    public byte[] localMetadata() {
        ensureOpen();
        return metadata.clone();
    }

    /** Without a copy: this agent's metadata never changes. */
    @Override
    public boolean localMetadataEquals(byte[] known) {
        ensureOpen();
        return Arrays.equals(known, metadata);
    }

    @Override
    public String loadRemoteAgent(byte[] peerMetadata) {
        ensureOpen();
        LoadedPeer last = lastLoaded;
        if (last != null && Arrays.equals(last.loadedFrom(), peerMetadata)
                && remotes.get(last.metadata().agent()) == last) {
            last.used();
            return last.metadata().agent(); // the same bytes decode to the same peer, still loaded
        }
        EmbeddedMetadata peer = EmbeddedMetadata.decode(peerMetadata);
        LoadedPeer known = remotes.get(peer.agent());
        if (known != null && Arrays.equals(known.loadedFrom(), peerMetadata)) {
            known.used(); // loaded already (operations alternating between peers)
            lastLoaded = known;
            return peer.agent();
        }
        LoadedPeer loaded = LoadedPeer.of(peer, peerMetadata);
        LoadedPeer evicted = null;
        synchronized (remotesLock) {
            remotes.put(peer.agent(), loaded); // a changed peer replaces its old entry
            lastLoaded = loaded;
            if (remotes.size() > transport.maxCachedPeers()) {
                evicted = leastRecentlyUsed(loaded);
                remotes.remove(evicted.metadata().agent(), evicted);
            }
        }
        if (evicted != null) {
            transport.peerEvicted(evicted);
        }
        return peer.agent();
    }

    /** The peer loaded longest ago, other than {@code kept}; called with more peers loaded than the cache holds. */
    private LoadedPeer leastRecentlyUsed(LoadedPeer kept) {
        LoadedPeer oldest = null;
        for (LoadedPeer peer : remotes.values()) {
            if (peer != kept && (oldest == null || peer.lastUsed() - oldest.lastUsed() < 0)) {
                oldest = peer;
            }
        }
        return oldest;
    }

    /** Whether a peer at {@code endpoint} ({@code host:port}) is loaded. */
    boolean holdsPeerAt(String endpoint) {
        for (LoadedPeer peer : remotes.values()) {
            if (peer.endpoint().equals(endpoint)) {
                return true;
            }
        }
        return false;
    }

    /** Loads the peer and opens a connection to it in the pool, ready for its first transfer. */
    @Override
    public CompletableFuture<String> introducePeer(byte[] peerMetadata) {
        String name = loadRemoteAgent(peerMetadata);
        LoadedPeer peer = remotes.get(name);
        if (peer == null) {
            return CompletableFuture.completedFuture(name); // closed meanwhile
        }
        return transport.connectAhead(peer).thenApply(connected -> name);
    }

    /**
     * Peers stay loaded until dropped from the bounded cache (least recently used first) or close: each is a name and
     * an endpoint; connections are pooled per endpoint.
     */
    @Override
    public int remoteAgentCount() {
        return remotes.size();
    }

    /** The connector's transport holds the connections (one server, one pool per peer endpoint): its counts. */
    @Override
    public PeerCounts peerCounts() {
        return closed ? PeerCounts.NONE : transport.peerCounts();
    }

    @Override
    public TransferHandle postTransfer(TransferOp op, List<MemoryRegion> local, String remoteAgentName,
            List<MemoryRegion> remote, byte[] notification) {
        return post(op, local, remoteAgentName, remote, notification, false);
    }

    /** A small transfer is left for the caller's {@link TransferHandle#runOnWaitingThread()}: no worker wakes for it. */
    @Override
    public TransferHandle postTransferForWaitingCaller(TransferOp op, List<MemoryRegion> local, String remoteAgentName,
            List<MemoryRegion> remote, byte[] notification) {
        return post(op, local, remoteAgentName, remote, notification, true);
    }

    private TransferHandle post(TransferOp op, List<MemoryRegion> local, String remoteAgentName,
            List<MemoryRegion> remote, byte[] notification, boolean callerWaits) {
        ensureOpen();
        LoadedPeer peer = remotes.get(remoteAgentName);
        if (peer == null) {
            throw new PeerNotLoadedException("Remote agent '" + remoteAgentName + "' is not loaded on agent '" + name
                    + "' (never loaded, or dropped since as the least recently used of the "
                    + transport.maxCachedPeers() + " peers an agent keeps loaded: embedded setting maxCachedPeers,"
                    + " nixl.connect.embedded.max-cached-peers)");
        }
        if (local.size() != remote.size() || local.isEmpty()) {
            throw new TransportException("Transfer needs equally long, non-empty local and remote lists (" + local.size()
                    + " vs " + remote.size() + ")");
        }
        if (notification.length == 0 || notification.length > Wire.MAX_CREDENTIAL) {
            throw new TransportException("Notification must be 1.." + Wire.MAX_CREDENTIAL + " bytes, was "
                    + notification.length);
        }
        MemoryRegion lastRegistration = null;
        for (int i = 0; i < local.size(); i++) {
            MemoryRegion region = local.get(i);
            if (region.length() != remote.get(i).length()) {
                throw new TransportException("Descriptor " + i + ": local " + region.length() + " bytes vs remote "
                        + remote.get(i).length());
            }
            if (!covers(lastRegistration, region) && (lastRegistration = registrationOf(region)) == null) {
                throw new TransportException("Local region " + i + " (0x" + Long.toHexString(region.address()) + ", "
                        + region.length() + " bytes) is not registered with agent '" + name + "'");
            }
        }
        EmbeddedTransfer transfer = new EmbeddedTransfer(this, op, local, peer, remote, notification, callerWaits);
        synchronized (transfersLock) {
            transfer.nextInAgent = firstTransfer;
            if (firstTransfer != null) {
                firstTransfer.previousInAgent = transfer;
            }
            firstTransfer = transfer;
            transferCount++;
        }
        transport.submit(transfer);
        return transfer;
    }

    /** Called once by a transfer that has ended: it is no longer in flight. */
    void transferEnded(EmbeddedTransfer transfer) {
        synchronized (transfersLock) {
            if (transfer.previousInAgent == null && firstTransfer != transfer) {
                return; // not linked
            }
            if (transfer.previousInAgent == null) {
                firstTransfer = transfer.nextInAgent;
            } else {
                transfer.previousInAgent.nextInAgent = transfer.nextInAgent;
            }
            if (transfer.nextInAgent != null) {
                transfer.nextInAgent.previousInAgent = transfer.previousInAgent;
            }
            transfer.previousInAgent = null;
            transfer.nextInAgent = null;
            transferCount--;
        }
    }

    /** The registered region holding {@code region}, or null. */
    private MemoryRegion registrationOf(MemoryRegion region) {
        for (MemoryRegion known : registered.values()) {
            if (covers(known, region)) {
                return known;
            }
        }
        return null;
    }

    /**
     * Whether registered region {@code known} (may be null) holds {@code region}: a block list's blocks mostly lie in
     * the registration the previous one did, so it is asked first, not every registration for every block.
     */
    private static boolean covers(MemoryRegion known, MemoryRegion region) {
        return known != null && known.type() == region.type() && known.contains(region.address(), region.length());
    }

    @Override
    public PassiveWindow openWindow(TransferOp access, List<MemoryRegion> regions, byte[] notification,
            int notifications) {
        ensureOpen();
        if (notifications < 1) {
            throw new IllegalArgumentException("a window waits for at least 1 notification, was " + notifications);
        }
        MemoryRegion lastRegistration = null;
        for (MemoryRegion region : regions) {
            if (!covers(lastRegistration, region) && (lastRegistration = registrationOf(region)) == null) {
                throw new TransportException("Region 0x" + Long.toHexString(region.address()) + " (" + region.length()
                        + " bytes) is not registered with agent '" + name + "'");
            }
        }
        requireCredential(notification);
        NotificationKey key = NotificationKey.of(notification); // handed over by the caller: kept, not copied
        EmbeddedWindow window = new EmbeddedWindow(this, access, regions, key, notifications);
        if (windowsByNotification.putIfAbsent(key, window) != null) {
            // Without the key: it is the window's credential.
            throw new TransportException("A passive operation waiting for this notification is already open");
        }
        if (closed) {
            window.close();
        }
        return window;
    }

    /** Memory a revoked reader might still reach (EmbeddedWindow): freed only when this agent closes. */
    private final List<AutoCloseable> kept = new ArrayList<>();

    /** Holds {@code memory} until this agent closes; closes it at once if it has. */
    void keepUntilClosed(AutoCloseable memory) {
        synchronized (kept) {
            if (!closed) {
                kept.add(memory);
                return;
            }
        }
        closeKept(List.of(memory));
    }

    private static void closeKept(List<AutoCloseable> memories) {
        for (AutoCloseable memory : memories) {
            try {
                memory.close();
            } catch (Exception e) {
                throw new IllegalStateException("Freeing memory kept for a revoked same-host reader failed", e);
            }
        }
    }

    void windowClosed(EmbeddedWindow window) {
        windowsByNotification.remove(window.notification(), window);
    }

    /**
     * The live window opened with {@code credential} for {@code access}, entered on behalf of {@code link}
     * (the caller must {@link EmbeddedWindow#exit exit} it); {@code null} when there is none.
     */
    EmbeddedWindow enter(TransferOp access, byte[] credential, Link link) {
        return enter(access, credential, link, false);
    }

    /** As {@link #enter(TransferOp, byte[], Link)}; {@code grant}: for a peer's direct copy (see EmbeddedWindow). */
    EmbeddedWindow enter(TransferOp access, byte[] credential, Link link, boolean grant) {
        EmbeddedWindow window = windowsByNotification.get(NotificationKey.lookup(credential));
        if (window == null || window.access() != access || !window.enter(link, grant)) {
            return null;
        }
        return window;
    }

    /** The open window whose credential is {@code credential}, whatever its access; null when there is none. */
    EmbeddedWindow window(byte[] credential) {
        return windowsByNotification.get(NotificationKey.lookup(credential));
    }

    /**
     * Sends the peer a {@link Wire#FAIL} report on an I/O worker (see {@link TransportAgent#reportFailure}); a peer
     * not loaded, or a transport closing, drops it.
     */
    @Override
    public void reportFailure(String remoteAgentName, byte[] notification, String cause) {
        LoadedPeer peer = remotes.get(remoteAgentName);
        if (peer == null || closed || notification.length == 0 || notification.length > Wire.MAX_CREDENTIAL) {
            return;
        }
        transport.reportFailure(peer, name, notification, cause);
    }

    /**
     * Counts a notification for the window waiting for it; null when none waits (or it has all it expects). The
     * window leaves the table when it closes, after its last notification.
     */
    EmbeddedWindow claim(byte[] notification) {
        EmbeddedWindow window = windowsByNotification.get(NotificationKey.lookup(notification));
        return window != null && window.claim() ? window : null;
    }

    /** A window's notification is also the credential peers must present to reach it, so it must be one. */
    private static void requireCredential(byte[] notification) {
        if (notification.length < Wire.MIN_CREDENTIAL || notification.length > Wire.MAX_CREDENTIAL) {
            throw new TransportException("The embedded transport uses the notification as the window's credential: it must be "
                    + Wire.MIN_CREDENTIAL + ".." + Wire.MAX_CREDENTIAL + " bytes (128 random bits or more), was "
                    + notification.length);
        }
    }

    private void ensureOpen() {
        if (closed) {
            throw new TransportException("Agent '" + name + "' is closed");
        }
    }

    @Override
    public void close() {
        synchronized (kept) {
            if (closed) {
                return;
            }
            closed = true;
        }
        List<EmbeddedTransfer> inFlight = new ArrayList<>();
        synchronized (transfersLock) {
            for (EmbeddedTransfer transfer = firstTransfer; transfer != null; transfer = transfer.nextInAgent) {
                inFlight.add(transfer);
            }
        }
        for (EmbeddedTransfer transfer : inFlight) {
            transfer.cancel();
        }
        for (EmbeddedWindow window : List.copyOf(windowsByNotification.values())) {
            window.close();
        }
        registered.clear();
        remotes.clear();
        List<AutoCloseable> toFree;
        synchronized (kept) {
            toFree = List.copyOf(kept);
            kept.clear();
        }
        closeKept(toFree);
        transport.agentClosed(this);
    }
}
