package io.nixlconnect.transport.nixl;

import com.sun.jna.Native;
import com.sun.jna.Pointer;
import io.nixlconnect.internal.RunOutResources;
import io.nixlconnect.transport.TransportException;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.util.ArrayList;
import java.util.Arrays;
import java.time.Duration;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.LongAdder;
import java.util.concurrent.locks.ReentrantLock;
import java.util.concurrent.locks.ReentrantReadWriteLock;

/**
 * The peers loaded into one NIXL agent and the metadata each was loaded from, and when a peer is replaced,
 * evicted or dropped. This agent alone decides a peer's lifetime: loading the same metadata again is a lookup, and
 * a peer stays loaded (connected: UCX wire-up costs milliseconds) until one of these, each only while no transfer to
 * it is in flight: more than {@link NixlSettings#maxLoadedPeers} are loaded (the least recently used goes: evicted);
 * it went unused for {@link NixlSettings#peerIdleLimit} (idle-closed); a transfer to it failed (departed: its process
 * ended, or its endpoint failed; dropped at once rather than at a next load that may never come, since a restarted
 * peer comes back under a new name); the agent closes.
 *
 * <p>What unloading releases (NIXL 1.5.1): the peer's loaded metadata and, when its UCX endpoint had failed (the
 * peer left), the endpoint and its socket. The endpoint of a peer still alive is closed in UCX's flush mode, which
 * keeps an endpoint the peer connected back to until the worker is destroyed: that socket stays open on both ends
 * until either process ends, and the peer's next load opens a new one (docs/nixl.md). Hence a limit sized so that a
 * fleet stays loaded, and a long idle limit.
 *
 * <p>Peers are independent of one another (issue 32: one agent-wide monitor made every operation wait for every
 * other peer's load). Each {@link Peer} has two locks: {@link Peer#loading}, which one load of that peer holds at a
 * time (a second load of the same metadata waits for the first and then finds it loaded: a lookup), and
 * {@link Peer#use}, whose read side a transfer holds from creating its request to posting it (and a failure report
 * while it sends) and whose write side whatever frees the peer in NIXL holds (invalidating: a replacement, an
 * eviction, a teardown after a failure), so that nothing frees a peer between a request's creation and its post.
 * NIXL merges metadata into a loaded peer without freeing anything, so a merge runs on the read side, beside posts
 * to that peer. Every method runs with the agent open and its lifecycle read lock held by the caller; the agent's
 * close takes the write side of that lock before {@link #invalidateAll}. Nothing here waits for the progress loop:
 * the loop's own work here only tries locks.
 */
final class NixlPeers {

    private static final Logger log = LoggerFactory.getLogger(NixlPeers.class);
    /** How often the progress loop looks for peers to drop (departed, idle). */
    static final long SWEEP_INTERVAL_NANOS = TimeUnit.MILLISECONDS.toNanos(100);
    /** How many dropped peer names are remembered, to count a peer that is loaded again as reconnected. */
    static final int REMEMBERED_DEPARTED = 1024;

    /**
     * The two native calls that load and free a peer; {@link #NIXL} in the agent. A test wraps them to hold one
     * peer's load open and see that the others go on (their own calls still reach NIXL).
     */
    interface NativePeerCalls {
        int load(long agent, byte[] metadata, long[] remoteName);

        int invalidate(long agent, String remote);
    }

    static final NativePeerCalls NIXL = new NativePeerCalls() {
        @Override
        public int load(long agent, byte[] metadata, long[] remoteName) {
            return NixlCapi.nixl_capi_load_remote_md(agent, metadata, metadata.length, remoteName);
        }

        @Override
        public int invalidate(long agent, String remote) {
            return NixlCapi.nixl_capi_invalidate_remote_md(agent, remote);
        }
    };

    /** One peer name's state in this agent. */
    static final class Peer {
        final String name;
        /** Held by the one load of this peer at a time (see the class comment). */
        final ReentrantLock loading = new ReentrantLock();
        /** Read: a request being created and posted, a merge, a report; write: freeing the peer in NIXL. */
        final ReentrantReadWriteLock use = new ReentrantReadWriteLock();
        /** The metadata NIXL holds for this peer; null while it is not loaded. */
        volatile byte[] held;
        /** Set when this object leaves the map: a loader that waited for it starts over with the map's current one. */
        volatile boolean removed;
        volatile long lastUsedNanos = System.nanoTime();

        Peer(String name) {
            this.name = name;
        }

        boolean loaded() {
            return held != null;
        }
    }

    private final NixlAgentCore core;
    private final NativePeerCalls calls;
    private final int maxLoaded;
    private final long idleLimitNanos;
    private volatile long nextSweepNanos = System.nanoTime();
    private final ConcurrentHashMap<String, Peer> peers = new ConcurrentHashMap<>();
    private final AtomicInteger loadedCount = new AtomicInteger();
    /**
     * Peers a transfer to which failed: their UCX endpoint may be in error (NIXL then says the peer "was
     * disconnected"), so they are torn down and connected anew at their next load.
     */
    private final Set<String> broken = ConcurrentHashMap.newKeySet();
    /** Names of peers dropped after a failure, most recent last: one loaded again counts as reconnected. */
    private final Set<String> departedNames = Collections.synchronizedSet(Collections.newSetFromMap(
            new LinkedHashMap<>(16, 0.75f, false) {
                @Override
                protected boolean removeEldestEntry(Map.Entry<String, Boolean> eldest) {
                    return size() > REMEMBERED_DEPARTED;
                }
            }));
    private final LongAdder reconnected = new LongAdder();
    private final LongAdder evicted = new LongAdder();
    private final LongAdder departed = new LongAdder();
    private final LongAdder idleClosed = new LongAdder();

    NixlPeers(NixlAgentCore core, NixlSettings settings) {
        this(core, NIXL, settings.maxLoadedPeers(), settings.peerIdleLimit());
    }

    NixlPeers(NixlAgentCore core, NativePeerCalls calls, int maxLoaded, Duration idleLimit) {
        if (maxLoaded < 1) {
            throw new IllegalArgumentException("at least one peer must be allowed to be loaded, was " + maxLoaded);
        }
        this.core = core;
        this.calls = calls;
        this.maxLoaded = maxLoaded;
        this.idleLimitNanos = idleLimit.isZero() ? 0 : Math.max(1, idleLimit.toNanos());
    }

    /**
     * Loads a peer, or updates one already loaded under the same name ({@code named}, read from the
     * validated blob).
     *
     * <p>NIXL (1.5.1, {@code nixlAgentData::loadRemoteMD}) merges a blob for an already loaded name: the
     * connection is kept when its info is unchanged, regions not yet known are added, known ones are
     * kept, and the peer keeps its generation, so transfers in flight against it carry on. Invalidating
     * first would start a new generation and fail those transfers with NOT_FOUND. NIXL refuses the
     * merge (NOT_ALLOWED, reported as ERROR_BACKEND) when the connection info changed (the peer restarted
     * under the same name) or a known region's key changed; only then is the peer replaced, and only
     * while no transfer to it is in flight. Waits only for another load or a post of this same peer.
     */
    String load(byte[] metadata, String named) {
        while (true) {
            Peer peer = peers.computeIfAbsent(named, Peer::new);
            peer.loading.lock();
            try {
                if (peer.removed) {
                    continue; // dropped while this thread waited: load into the map's current one
                }
                String remote;
                try {
                    remote = loadLocked(peer, metadata);
                } catch (RuntimeException e) {
                    forgetUnloaded(peer);
                    throw e;
                }
                evictBeyondLimit(peer);
                return remote;
            } finally {
                peer.loading.unlock();
            }
        }
    }

    /** {@link #load} holding {@code peer.loading}. */
    private String loadLocked(Peer peer, byte[] metadata) {
        if (!broken.isEmpty() && broken.contains(peer.name)) {
            tearDownBroken(peer);
        }
        peer.lastUsedNanos = System.nanoTime();
        // Every operation loads its peer: when NIXL already holds this exact blob, loading it would be a
        // no-op merge, so skip the native call (~15-30 us per small operation).
        byte[] held = peer.held;
        if (held != null && Arrays.equals(held, metadata)) {
            return peer.name;
        }
        int status;
        long[] remoteName = new long[1];
        boolean fresh = held == null;
        // A fresh load has nothing to race; a merge frees nothing, so posts to this peer go on beside it.
        ReentrantReadWriteLock.ReadLock shared = peer.use.readLock();
        shared.lock();
        try {
            status = calls.load(core.handle(), metadata, remoteName);
            if (status == NixlCapi.SUCCESS) {
                checkName(takeString(remoteName[0]), peer.name);
                peer.held = metadata.clone();
                if (fresh) {
                    loadedCount.incrementAndGet();
                    if (!departedNames.isEmpty() && departedNames.remove(peer.name)) {
                        reconnected.increment();
                    }
                }
                return peer.name;
            }
        } finally {
            shared.unlock();
        }
        return replace(peer, metadata, status);
    }

    /** A name whose load failed leaves nothing behind (holding {@code peer.loading}). */
    private void forgetUnloaded(Peer peer) {
        if (!peer.loaded() && !broken.contains(peer.name)) {
            peer.removed = true;
            peers.remove(peer.name, peer);
        }
    }

    /** NIXL refused to merge {@code metadata}; replaces the peer it names if that is safe. Holds {@code peer.loading}. */
    private String replace(Peer peer, byte[] metadata, int refusal) {
        if (!peer.loaded()) {
            throw loadFailure(metadata, refusal);
        }
        ReentrantReadWriteLock.WriteLock exclusive = peer.use.writeLock();
        exclusive.lock();
        try {
            long pending = core.transfersInFlightTo(peer.name);
            if (pending > 0) {
                throw new PeerBusyException("NIXL agent " + core.name() + " cannot take new metadata for peer '"
                        + peer.name + "' (NIXL refused to merge it: " + NixlCapi.statusName(refusal) + "; the peer"
                        + " restarted, another agent took its name, or it re-registered memory under a new key) while "
                        + pending + " transfer(s) to it are in flight; replacing it would fail them");
            }
            log.debug("NIXL agent {}: replacing peer {} (NIXL refused to merge its new metadata: {})", core.name(),
                    peer.name, NixlCapi.statusName(refusal));
            unload(peer);
            long[] remoteName = new long[1];
            int status = calls.load(core.handle(), metadata, remoteName);
            if (status != NixlCapi.SUCCESS) {
                throw loadFailure(metadata, status);
            }
            checkName(takeString(remoteName[0]), peer.name);
            peer.held = metadata.clone();
            loadedCount.incrementAndGet();
            return peer.name;
        } finally {
            exclusive.unlock();
        }
    }

    /**
     * A transfer to {@code remote} failed: its connection is torn down before NIXL sees that peer's metadata again.
     * Without this, NIXL 1.5 merged the next metadata into the peer whose endpoint had failed, failed
     * ({@code REMOTE_DISCONNECT}), dropped the peer but not its UCX connection, and refused every later load under
     * that name ({@code ERROR_INVALID_PARAM}) until the process restarted.
     */
    void markBroken(String remote) {
        broken.add(remote);
    }

    /**
     * Invalidates a broken peer (NIXL disconnects its backends: UCX's endpoint goes), so that the next load connects
     * anew. Only once no transfer to it is in flight: invalidating frees what such a transfer still uses. Holds
     * {@code peer.loading}.
     */
    private void tearDownBroken(Peer peer) {
        ReentrantReadWriteLock.WriteLock exclusive = peer.use.writeLock();
        exclusive.lock();
        try {
            long pending = core.transfersInFlightTo(peer.name);
            if (pending > 0) {
                throw new PeerBusyException("NIXL agent " + core.name() + ": a transfer to peer '" + peer.name
                        + "' failed and its connection is to be made anew, once its " + pending + " transfer(s) still"
                        + " in flight have ended");
            }
            broken.remove(peer.name);
            if (!peer.loaded()) {
                return; // evicted meanwhile: already invalidated
            }
            unload(peer);
        } finally {
            exclusive.unlock();
        }
        reconnected.increment();
        log.info("NIXL agent {}: a transfer to peer {} failed; its connection was torn down and is made anew with"
                + " the metadata at hand", core.name(), peer.name);
    }

    /**
     * The progress loop's turn (holding the agent's lifecycle read lock, the agent open), at most every
     * {@link #SWEEP_INTERVAL_NANOS}: drops the peers a transfer to which failed and the peers idle past the limit,
     * each once no transfer to it is in flight. Only tries locks: a peer in use is left for a later turn.
     */
    void sweep(long now) {
        if (now - nextSweepNanos < 0) {
            return;
        }
        nextSweepNanos = now + SWEEP_INTERVAL_NANOS;
        if (!broken.isEmpty()) {
            for (String name : broken) {
                Peer peer = peers.get(name);
                if (peer == null || !peer.loaded()) {
                    broken.remove(name);
                } else if (drop(peer)) {
                    departed.increment();
                    departedNames.add(name);
                    log.info("NIXL agent {}: peer {} dropped: a transfer to it failed (it left, or its connection"
                            + " failed); it connects anew if it is loaded again", core.name(), name);
                }
            }
        }
        if (idleLimitNanos > 0) {
            for (Peer peer : peers.values()) {
                if (peer.loaded() && now - peer.lastUsedNanos > idleLimitNanos && drop(peer)) {
                    idleClosed.increment();
                    log.debug("NIXL agent {}: peer {} unloaded after {} s unused", core.name(), peer.name,
                            TimeUnit.NANOSECONDS.toSeconds(idleLimitNanos));
                }
            }
        }
    }

    /** How many peers were torn down after a failed transfer and loaded anew (health). */
    long reconnectedCount() {
        return reconnected.sum();
    }

    /** How many idle peers were invalidated to keep at most the limit loaded. */
    long evictedCount() {
        return evicted.sum();
    }

    /** How many peers were dropped after a transfer to them failed (health). */
    long departedCount() {
        return departed.sum();
    }

    /** How many peers were unloaded after going unused for the idle limit (health). */
    long idleClosedCount() {
        return idleClosed.sum();
    }

    /** Peers a transfer to which failed, to be torn down at their next load (health). */
    int brokenCount() {
        return broken.size();
    }

    /**
     * The metadata cannot be taken while transfers to an agent of that name are in flight; the agent waits for them
     * to end, holding no lock, and tries again ({@link NixlAgentCore#loadRemote}).
     */
    static final class PeerBusyException extends TransportException {
        private static final long serialVersionUID = 1L;

        PeerBusyException(String message) {
            super(message);
        }
    }

    private TransportException loadFailure(byte[] metadata, int status) {
        String what = "NIXL agent " + core.name() + " could not load remote agent metadata (" + metadata.length
                + " bytes): " + NixlCapi.statusName(status) + ". ";
        if (status == NixlCapi.ERROR_BACKEND && fileDescriptorsNearlyAllOpen()) {
            // UCX could not open a socket (EMFILE); NIXL says only ERROR_BACKEND, and UCX_TLS is not the cause.
            return new TransportException(what + "UCX could not open a connection to the peer because "
                    + RunOutResources.fileDescriptors() + ". Each loaded NIXL peer holds one (" + loadedCount.get()
                    + " loaded now, at most " + maxLoaded + ": nixl.connect.nixl.max-loaded-peers); the peer is loaded"
                    + " at its next operation. UCX's log: " + UcxLog.where());
        }
        String hint = status == -1
                // UCX refuses a connection for a name it is connected to already (NIXL kept a stale one).
                ? "NIXL's backend still holds a connection to an agent of that name that it did not release"
                : "most often UCX found no transport or network interface that reaches the peer (UCX_TLS,"
                        + " UCX_NET_DEVICES; NIXL's and UCX's logs say which: UCX's goes to " + UcxLog.where()
                        + "), else the peer runs a NIXL or UCX this one cannot talk to";
        return new TransportException(what + "The metadata passed the format checks, so NIXL's backend refused it: "
                + hint);
    }

    /** Within 1% of the limit (at least 4): NIXL's ERROR_BACKEND does not say EMFILE, so the count has to. */
    private static boolean fileDescriptorsNearlyAllOpen() {
        long limit = RunOutResources.fileDescriptorLimit();
        long open = RunOutResources.openFileDescriptors();
        return limit > 0 && (open < 0 || open >= limit - Math.max(4, limit / 100));
    }

    /** NIXL names the peer as the validated blob does; anything else would file it under the wrong name. */
    private void checkName(String remote, String named) {
        if (!named.equals(remote)) {
            throw new TransportException("NIXL agent " + core.name() + " loaded metadata for '" + named
                    + "' as agent '" + remote + "'");
        }
    }

    /** Copies and frees a string NIXL allocated for the caller. */
    private static String takeString(long address) {
        try {
            return new Pointer(address).getString(0);
        } finally {
            Native.free(address);
        }
    }

    /**
     * Beyond the limit, invalidates the least recently used peers with no transfer in flight, never {@code justLoaded}
     * and never one another thread is loading or posting to (those are in use: they are tried, not waited for).
     */
    private void evictBeyondLimit(Peer justLoaded) {
        if (loadedCount.get() <= maxLoaded) {
            return;
        }
        // Ages read once: the last-use times move while this sorts.
        long now = System.nanoTime();
        List<Map.Entry<Peer, Long>> byAge = new ArrayList<>();
        for (Peer peer : peers.values()) {
            if (peer != justLoaded && peer.loaded()) {
                byAge.add(Map.entry(peer, now - peer.lastUsedNanos));
            }
        }
        byAge.sort(Map.Entry.<Peer, Long>comparingByValue().reversed());
        for (Map.Entry<Peer, Long> oldest : byAge) {
            Peer peer = oldest.getKey();
            if (loadedCount.get() <= maxLoaded) {
                return;
            }
            if (drop(peer)) {
                evicted.increment();
            }
        }
    }

    /**
     * Invalidates {@code peer} and removes it from the map unless it is in use (being loaded, posted to, or with
     * transfers in flight): only tries its locks. Returns whether it was dropped.
     */
    private boolean drop(Peer peer) {
        if (!peer.loading.tryLock()) {
            return false;
        }
        try {
            if (!peer.use.writeLock().tryLock()) {
                return false;
            }
            try {
                if (!peer.loaded() || core.transfersInFlightTo(peer.name) > 0) {
                    return false;
                }
                unload(peer);
                broken.remove(peer.name);
                peer.removed = true;
                peers.remove(peer.name, peer);
                return true;
            } finally {
                peer.use.writeLock().unlock();
            }
        } finally {
            peer.loading.unlock();
        }
    }

    /**
     * Takes {@code remote} for a post or a report: returns its read lock, held, so that nothing frees the peer until
     * the caller unlocks it after its native call; null when it is not loaded.
     */
    ReentrantReadWriteLock.ReadLock use(String remote) {
        Peer peer = peers.get(remote);
        if (peer == null) {
            return null;
        }
        ReentrantReadWriteLock.ReadLock shared = peer.use.readLock();
        shared.lock();
        if (!peer.loaded()) {
            shared.unlock();
            return null;
        }
        peer.lastUsedNanos = System.nanoTime();
        return shared;
    }

    /** Whether {@code remote} is loaded now. */
    boolean isLoaded(String remote) {
        Peer peer = peers.get(remote);
        return peer != null && peer.loaded();
    }

    int loadedCount() {
        return loadedCount.get();
    }

    /** Invalidates every peer (agent closing: the caller holds the lifecycle write lock, so nothing else runs here). */
    void invalidateAll() {
        for (Peer peer : peers.values()) {
            if (peer.loaded()) {
                unload(peer);
            }
            peer.removed = true;
        }
        peers.clear();
        broken.clear();
    }

    /** Invalidates a loaded peer in NIXL; call holding its write lock (or the lifecycle write lock). */
    private void unload(Peer peer) {
        peer.held = null;
        loadedCount.decrementAndGet();
        int status = calls.invalidate(core.handle(), peer.name);
        if (status != NixlCapi.SUCCESS) {
            log.debug("NIXL agent {}: invalidating {} returned {}", core.name(), peer.name, NixlCapi.statusName(status));
        }
    }
}
