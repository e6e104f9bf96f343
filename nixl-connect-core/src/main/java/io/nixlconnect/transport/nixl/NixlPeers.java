package io.nixlconnect.transport.nixl;

import com.sun.jna.Native;
import com.sun.jna.Pointer;
import io.nixlconnect.transport.TransportException;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collection;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.LongAdder;

/**
 * The peers loaded into one NIXL agent and the metadata each was loaded from, and when a peer is replaced
 * or evicted. This agent alone decides a peer's lifetime: loading the same metadata again is a lookup, and
 * a peer stays loaded (connected: UCX wire-up costs milliseconds) until more than {@link #MAX_LOADED_PEERS}
 * are, when the least recently loaded one with no transfer in flight is invalidated, or until close. Every
 * method runs with the agent open and its lifecycle read lock held by the caller; the monitor of this
 * object guards the map and is held by the agent from creating a request to posting it, so a peer cannot
 * be replaced or evicted in between.
 */
final class NixlPeers {

    private static final Logger log = LoggerFactory.getLogger(NixlPeers.class);
    static final int MAX_LOADED_PEERS = 64;

    private final NixlAgentCore core;
    /** Loaded peers, least recently loaded first (access order). */
    private final LinkedHashMap<String, byte[]> loaded = new LinkedHashMap<>(16, 0.75f, true);
    /**
     * Peers a transfer to which failed: their UCX endpoint may be in error (NIXL then says the peer "was
     * disconnected"), so they are torn down and connected anew at their next load. Not under this object's monitor:
     * transfers report failures holding their own lock, which {@link NixlAgentCore#post} takes inside this monitor.
     */
    private final Set<String> broken = ConcurrentHashMap.newKeySet();
    private final LongAdder reconnected = new LongAdder();
    private final LongAdder evicted = new LongAdder();

    NixlPeers(NixlAgentCore core) {
        this.core = core;
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
     * while no transfer to it is in flight. Nothing here blocks: the caller may hold locks that
     * completion callbacks on the progress thread need.
     */
    synchronized String load(byte[] metadata, String named) {
        if (!broken.isEmpty() && broken.contains(named)) {
            tearDownBroken(named);
        }
        // Every operation loads its peer: when NIXL already holds this exact blob, loading it would be a
        // no-op merge, so skip the native call (~15-30 us per small operation).
        byte[] held = loaded.get(named); // also marks it recently loaded
        if (held != null && Arrays.equals(held, metadata)) {
            return named;
        }
        long[] remoteName = new long[1];
        int status = NixlCapi.nixl_capi_load_remote_md(core.handle(), metadata, metadata.length, remoteName);
        String remote = status == NixlCapi.SUCCESS ? takeString(remoteName[0]) : replace(metadata, named, status);
        loaded.put(remote, metadata.clone());
        evictIdlePeers(remote);
        return remote;
    }

    /** NIXL refused to merge {@code metadata}; replaces the peer it names if that is safe. */
    private String replace(byte[] metadata, String remote, int refusal) {
        if (!loaded.containsKey(remote)) {
            throw loadFailure(metadata, refusal);
        }
        long pending = core.transfersInFlightTo(remote);
        if (pending > 0) {
            throw new PeerBusyException("NIXL agent " + core.name() + " cannot take new metadata for peer '" + remote
                    + "' (NIXL refused to merge it: " + NixlCapi.statusName(refusal) + "; the peer restarted, another"
                    + " agent took its name, or it re-registered memory under a new key) while " + pending
                    + " transfer(s) to it are in flight; replacing it would fail them");
        }
        log.debug("NIXL agent {}: replacing peer {} (NIXL refused to merge its new metadata: {})", core.name(),
                remote, NixlCapi.statusName(refusal));
        NixlCapi.nixl_capi_invalidate_remote_md(core.handle(), remote);
        loaded.remove(remote);
        long[] remoteName = new long[1];
        int status = NixlCapi.nixl_capi_load_remote_md(core.handle(), metadata, metadata.length, remoteName);
        if (status != NixlCapi.SUCCESS) {
            throw loadFailure(metadata, status);
        }
        return takeString(remoteName[0]);
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
     * anew. Only once no transfer to it is in flight: invalidating frees what such a transfer still uses.
     */
    private void tearDownBroken(String remote) {
        long pending = core.transfersInFlightTo(remote);
        if (pending > 0) {
            throw new PeerBusyException("NIXL agent " + core.name() + ": a transfer to peer '" + remote + "' failed"
                    + " and its connection is to be made anew, once its " + pending + " transfer(s) still in flight"
                    + " have ended");
        }
        broken.remove(remote);
        if (loaded.remove(remote) == null) {
            return; // evicted meanwhile: already invalidated
        }
        invalidate(remote);
        reconnected.increment();
        log.info("NIXL agent {}: a transfer to peer {} failed; its connection was torn down and is made anew with"
                + " the metadata at hand", core.name(), remote);
    }

    /** How many peers were torn down after a failed transfer and loaded anew (health). */
    long reconnectedCount() {
        return reconnected.sum();
    }

    /** How many idle peers were invalidated to keep at most {@link #MAX_LOADED_PEERS} loaded. */
    long evictedCount() {
        return evicted.sum();
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
        String hint = status == -1
                // UCX refuses a connection for a name it is connected to already (NIXL kept a stale one).
                ? "NIXL's backend still holds a connection to an agent of that name that it did not release"
                : "most often UCX found no transport or network interface that reaches the peer (UCX_TLS,"
                        + " UCX_NET_DEVICES; NIXL's log says which), else the peer runs a NIXL or UCX this one cannot"
                        + " talk to";
        return new TransportException("NIXL agent " + core.name() + " could not load remote agent metadata ("
                + metadata.length + " bytes): " + NixlCapi.statusName(status) + ". The metadata passed the format"
                + " checks, so NIXL's backend refused it: " + hint);
    }

    /** Copies and frees a string NIXL allocated for the caller. */
    private static String takeString(long address) {
        try {
            return new Pointer(address).getString(0);
        } finally {
            Native.free(address);
        }
    }

    /** Beyond {@link #MAX_LOADED_PEERS}, invalidates the least recently loaded peers with no transfer in flight. */
    private void evictIdlePeers(String justLoaded) {
        if (loaded.size() <= MAX_LOADED_PEERS) {
            return;
        }
        Set<String> busy = new HashSet<>(core.remotesWithTransfersInFlight());
        busy.add(justLoaded);
        for (String peer : evictable(loaded.keySet(), MAX_LOADED_PEERS, busy)) {
            invalidate(peer);
            loaded.remove(peer);
            broken.remove(peer);
            evicted.increment();
        }
    }

    /** Which of {@code peers} (oldest first) to unload to get down to {@code max}, never one in {@code busy}. */
    static List<String> evictable(Collection<String> peers, int max, Set<String> busy) {
        List<String> evict = new ArrayList<>();
        int excess = peers.size() - max;
        for (String peer : peers) {
            if (evict.size() >= excess) {
                break;
            }
            if (!busy.contains(peer)) {
                evict.add(peer);
            }
        }
        return evict;
    }

    /** Whether posts may target {@code remote}; call holding this object's monitor up to the post. */
    synchronized boolean isLoaded(String remote) {
        return loaded.containsKey(remote);
    }

    synchronized int loadedCount() {
        return loaded.size();
    }

    /** Invalidates every peer (agent closing). */
    synchronized void invalidateAll() {
        loaded.keySet().forEach(this::invalidate);
        loaded.clear();
        broken.clear();
    }

    private void invalidate(String remote) {
        int status = NixlCapi.nixl_capi_invalidate_remote_md(core.handle(), remote);
        if (status != NixlCapi.SUCCESS) {
            log.debug("NIXL agent {}: invalidating {} returned {}", core.name(), remote, NixlCapi.statusName(status));
        }
    }
}
