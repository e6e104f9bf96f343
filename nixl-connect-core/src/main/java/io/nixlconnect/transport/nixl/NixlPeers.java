package io.nixlconnect.transport.nixl;

import com.sun.jna.Native;
import com.sun.jna.Pointer;
import io.nixlconnect.transport.TransportException;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.util.Arrays;
import java.util.HashMap;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.Map;

/**
 * The peers loaded into one NIXL agent: which are loaded (usable for posts), which are idle (unloaded by
 * the caller but kept connected in NIXL), and when a peer is replaced. Every method runs with the agent
 * open and its lifecycle read lock held by the caller; the monitor of this object guards the maps and is
 * held by the agent from creating a request to posting it, so a peer cannot be replaced in between.
 */
final class NixlPeers {

    private static final Logger log = LoggerFactory.getLogger(NixlPeers.class);
    static final int MAX_IDLE_PEERS = 64;

    private final NixlAgentCore core;
    private final Map<String, byte[]> loaded = new HashMap<>();
    /**
     * Peers the caller unloaded but NIXL keeps connected, oldest first. Connecting costs milliseconds (UCX
     * wire-up) and the connector unloads a peer whenever its last operation ends, so invalidating at once
     * would reconnect for every operation; a reload of an idle peer only merges. Invalidated when evicted
     * (beyond {@link #MAX_IDLE_PEERS}) or on close.
     */
    private final LinkedHashMap<String, byte[]> idle = new LinkedHashMap<>();

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
        // Each operation loads its peer again after the last one unloaded it (kept connected in idle):
        // when NIXL already holds this exact blob, loading it would be a no-op merge, so skip the native
        // call (~15-30 us per small operation).
        byte[] held = loaded.containsKey(named) ? loaded.get(named) : idle.get(named);
        if (held != null && Arrays.equals(held, metadata)) {
            idle.remove(named);
            loaded.put(named, held);
            return named;
        }
        long[] remoteName = new long[1];
        int status = NixlCapi.nixl_capi_load_remote_md(core.handle(), metadata, metadata.length, remoteName);
        String remote = status == NixlCapi.SUCCESS ? takeString(remoteName[0]) : replace(metadata, named, status);
        idle.remove(remote);
        loaded.put(remote, metadata.clone());
        return remote;
    }

    /** NIXL refused to merge {@code metadata}; replaces the peer it names if that is safe. */
    private String replace(byte[] metadata, String remote, int refusal) {
        if (!(loaded.containsKey(remote) || idle.containsKey(remote))) {
            throw loadFailure(metadata, refusal);
        }
        long pending = core.transfersInFlightTo(remote);
        if (pending > 0) {
            throw new TransportException("NIXL agent " + core.name() + " cannot take new metadata for peer '" + remote
                    + "' (NIXL refused to merge it: " + NixlCapi.statusName(refusal) + "; the peer restarted or"
                    + " re-registered memory under a new key) while " + pending + " transfer(s) to it are in"
                    + " flight; replacing it would fail them");
        }
        log.debug("NIXL agent {}: replacing peer {} (NIXL refused to merge its new metadata: {})", core.name(),
                remote, NixlCapi.statusName(refusal));
        NixlCapi.nixl_capi_invalidate_remote_md(core.handle(), remote);
        loaded.remove(remote);
        idle.remove(remote);
        long[] remoteName = new long[1];
        int status = NixlCapi.nixl_capi_load_remote_md(core.handle(), metadata, metadata.length, remoteName);
        if (status != NixlCapi.SUCCESS) {
            throw loadFailure(metadata, status);
        }
        return takeString(remoteName[0]);
    }

    private TransportException loadFailure(byte[] metadata, int status) {
        return new TransportException("NIXL agent " + core.name() + " could not load remote agent metadata ("
                + metadata.length + " bytes): " + NixlCapi.statusName(status)
                + "; is it NIXL metadata from a compatible NIXL version?");
    }

    /** Copies and frees a string NIXL allocated for the caller. */
    private static String takeString(long address) {
        try {
            return new Pointer(address).getString(0);
        } finally {
            Native.free(address);
        }
    }

    /** Refuses the peer for posts from now on, but keeps it connected in NIXL for a reload (see {@link #idle}). */
    synchronized void unload(String remote) {
        byte[] metadata = loaded.remove(remote);
        if (metadata != null) {
            idle.put(remote, metadata);
            Iterator<String> oldest = idle.keySet().iterator();
            while (idle.size() > MAX_IDLE_PEERS) {
                invalidate(oldest.next());
                oldest.remove();
            }
        }
    }

    /** Whether posts may target {@code remote}; call holding this object's monitor up to the post. */
    synchronized boolean isLoaded(String remote) {
        return loaded.containsKey(remote);
    }

    synchronized int loadedCount() {
        return loaded.size();
    }

    synchronized int idleCount() {
        return idle.size();
    }

    /** Invalidates every peer, loaded or idle (agent closing). */
    synchronized void invalidateAll() {
        loaded.keySet().forEach(this::invalidate);
        idle.keySet().forEach(this::invalidate);
        loaded.clear();
        idle.clear();
    }

    private void invalidate(String remote) {
        int status = NixlCapi.nixl_capi_invalidate_remote_md(core.handle(), remote);
        if (status != NixlCapi.SUCCESS) {
            log.debug("NIXL agent {}: invalidating {} returned {}", core.name(), remote, NixlCapi.statusName(status));
        }
    }
}
