package io.nixlconnect.transport.nixl;

import com.sun.jna.Native;
import com.sun.jna.Pointer;
import io.nixlconnect.transport.MemoryRegion;
import io.nixlconnect.transport.MemoryRegistration;
import io.nixlconnect.transport.MemoryType;
import io.nixlconnect.transport.PassiveWindow;
import io.nixlconnect.transport.TransferHandle;
import io.nixlconnect.transport.TransferOp;
import io.nixlconnect.transport.TransportException;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collection;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Set;
import java.util.TreeMap;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.LongAdder;
import java.util.concurrent.locks.ReentrantReadWriteLock;
import java.util.function.Consumer;

/**
 * Everything one NIXL agent owns: the native agent and backends, registrations, loaded peers,
 * posted transfers, the notification dispatcher and the progress loop.
 *
 * <p>Every native call on the agent runs under the read side of {@link #lifecycle}; {@link #close()}
 * takes the write side, so nothing touches the native agent while, or after, it is destroyed.
 */
final class NixlAgentCore implements ProgressLoop.Work {

    private static final Logger log = LoggerFactory.getLogger(NixlAgentCore.class);
    static final int MAX_EARLY_NOTIFICATIONS = 1024;
    static final long MAX_EARLY_NOTIFICATION_BYTES = 1 << 20;
    static final int MAX_LOADED_PEERS = 64;
    /**
     * How often the loop drains notifications while no window waits for one. {@code getNotifs} holds
     * NIXL's agent-wide lock and progresses UCX until idle, so calling it every round made callers'
     * request creation and posting wait for the lock; notifications that no window awaits only need
     * collecting (they are buffered), not speed.
     */
    static final long UNAWAITED_DRAIN_NANOS = TimeUnit.MILLISECONDS.toNanos(1);

    final ReentrantReadWriteLock lifecycle = new ReentrantReadWriteLock();
    private final String name;
    private final NixlSettings settings;
    private final Consumer<NixlAgentCore> onClose;
    private final List<Long> backends = new ArrayList<>();
    /** NIXL's own handle ({@code nixlBackendH*}) of each backend, in {@code settings.backends()} order; set once. */
    private long[] backendHandles = new long[0];
    /** Ended transfers by the backend NIXL chose for them (health details). */
    private final Map<String, LongAdder> transfersByBackend = new ConcurrentHashMap<>();
    /**
     * The loaded peers and the metadata each was loaded from, least recently loaded first (guarded by itself). This
     * agent alone decides a peer's lifetime: loading the same metadata again is a lookup, and a peer stays loaded
     * (connected: UCX wire-up costs milliseconds) until more than {@link #MAX_LOADED_PEERS} are, when the least
     * recently loaded one with no transfer in flight is invalidated, or until close.
     */
    private final LinkedHashMap<String, byte[]> remotes = new LinkedHashMap<>(16, 0.75f, true);
    private final Set<NixlRegistration> registrations = ConcurrentHashMap.newKeySet();
    private final Set<NixlTransfer> inFlight = ConcurrentHashMap.newKeySet();
    private final NotificationDispatcher dispatcher =
            new NotificationDispatcher(MAX_EARLY_NOTIFICATIONS, MAX_EARLY_NOTIFICATION_BYTES);
    private final ProgressLoop progress;
    private final long[] out = new long[2];
    private long agent;
    private long notifMap;
    private volatile boolean closed;
    private volatile long transfersPosted;
    private volatile long notificationsReceived;
    private long lastDrainNanos; // progress thread only

    NixlAgentCore(String name, NixlSettings settings, Consumer<NixlAgentCore> onClose) {
        this.name = name;
        this.settings = settings;
        this.onClose = onClose;
        long[] handle = new long[1];
        // By default NIXL's progress thread stays off: our loop already drives NIXL, and with both
        // on two agents idled at 1.1 cores and 64 MiB READs ran 4x slower (docs/nixl.md). Calls come
        // from user threads and the loop at once, so NIXL's strict thread sync is on.
        long delay = settings.nixlProgressThreadDelayMicros();
        byte[] config = NixlCapi.agentConfig(delay >= 0, Math.max(delay, 0), NixlCapi.THREAD_SYNC_STRICT);
        check(NixlCapi.nixl_capi_create_configured_agent(name, config, handle), "create agent '" + name + "'");
        agent = handle[0];
        try {
            for (String plugin : settings.backends()) {
                backends.add(createBackend(plugin));
            }
            long[] handles = new long[backends.size()];
            for (int i = 0; i < handles.length; i++) {
                handles[i] = innerBackend(backends.get(i));
            }
            backendHandles = handles;
            check(NixlCapi.nixl_capi_create_notif_map(handle), "create notification map");
            notifMap = handle[0];
        } catch (RuntimeException e) {
            destroyNative();
            throw e;
        }
        progress = new ProgressLoop("nixl-progress-" + name, this);
        progress.start();
    }

    long handle() {
        return agent;
    }

    private String counted(String backend) {
        transfersByBackend.computeIfAbsent(backend, b -> new LongAdder()).increment();
        return backend;
    }

    /** The {@code nixlBackendH*} a {@code nixl_capi_backend_s} wraps: that struct's one field. */
    private static long innerBackend(long wrapper) {
        return new Pointer(wrapper).getLong(0);
    }

    /**
     * Which of our backends NIXL chose for a request ({@code queryXferBackend}), by its plugin name; null when the
     * library cannot say. Call with the request alive.
     */
    String chosenBackend(long request) {
        if (backendHandles.length == 1) {
            return counted(settings.backends().get(0)); // NIXL can only have chosen the one there is
        }
        long[] chosen = new long[1];
        if (NixlCapi.queryXferBackend(agent, request, chosen) != NixlCapi.SUCCESS || chosen[0] == 0) {
            return null;
        }
        try {
            long inner = innerBackend(chosen[0]);
            long[] handles = backendHandles;
            for (int i = 0; i < handles.length; i++) {
                if (handles[i] == inner) {
                    return counted(settings.backends().get(i));
                }
            }
            return null;
        } finally {
            NixlCapi.nixl_capi_destroy_backend(chosen[0]); // frees the wrapper only, not the backend
        }
    }

    String name() {
        return name;
    }

    private long createBackend(String plugin) {
        long[] mems = new long[1];
        long[] params = new long[1];
        int status = NixlCapi.nixl_capi_get_plugin_params(agent, plugin, mems, params);
        if (status != NixlCapi.SUCCESS) {
            throw new TransportException("NIXL backend plugin '" + plugin + "' is not available ("
                    + NixlCapi.statusName(status) + "); available plugins: " + availablePlugins()
                    + "; check NIXL_PLUGIN_DIR / NixlSettings.pluginDir");
        }
        try {
            for (Map.Entry<String, String> parameter : settings.backendParameters().entrySet()) {
                check(NixlCapi.nixl_capi_params_add(params[0], parameter.getKey(), parameter.getValue()),
                        "set backend parameter " + parameter.getKey());
            }
            long[] backend = new long[1];
            check(NixlCapi.nixl_capi_create_backend(agent, plugin, params[0], backend),
                    "create NIXL backend '" + plugin + "' with parameters " + settings.backendParameters());
            return backend[0];
        } finally {
            NixlCapi.nixl_capi_destroy_mem_list(mems[0]);
            NixlCapi.nixl_capi_destroy_params(params[0]);
        }
    }

    List<String> availablePlugins() {
        long[] list = new long[1];
        if (NixlCapi.nixl_capi_get_available_plugins(agent, list) != NixlCapi.SUCCESS) {
            return List.of();
        }
        try {
            long[] size = new long[1];
            NixlCapi.nixl_capi_string_list_size(list[0], size);
            List<String> names = new ArrayList<>();
            long[] str = new long[1];
            for (long i = 0; i < size[0]; i++) {
                if (NixlCapi.nixl_capi_string_list_get(list[0], i, str) == NixlCapi.SUCCESS && str[0] != 0) {
                    names.add(new Pointer(str[0]).getString(0));
                }
            }
            return names;
        } finally {
            NixlCapi.nixl_capi_destroy_string_list(list[0]);
        }
    }

    // --- memory ---

    MemoryRegistration register(MemoryRegion region) {
        if (region == null) {
            throw new IllegalArgumentException("region must not be null");
        }
        requireUsable(region, "region");
        lifecycle.readLock().lock();
        try {
            ensureOpen();
            if (region.length() == 0) {
                // Legal on the wire, refused by NIXL ("region is empty"); transfers skip such pairs.
                return NixlRegistration.empty(this, region);
            }
            long[] dlist = new long[1];
            check(NixlCapi.nixl_capi_create_reg_dlist(memType(region.type()), dlist, false), "create registration list");
            try {
                check(NixlCapi.nixl_capi_reg_dlist_add_desc(dlist[0], region.address(), region.length(),
                        region.deviceId(), null, 0), "describe " + region);
                check(NixlCapi.nixl_capi_register_mem(agent, dlist[0], 0), "register " + region);
            } catch (RuntimeException e) {
                NixlCapi.nixl_capi_destroy_reg_dlist(dlist[0]);
                throw e;
            }
            NixlRegistration registration = new NixlRegistration(this, region, dlist[0]);
            registrations.add(registration);
            return registration;
        } finally {
            lifecycle.readLock().unlock();
        }
    }

    /** Deregisters (registration closing); false when the agent is already closed. */
    void deregister(NixlRegistration registration, long dlist) {
        lifecycle.readLock().lock();
        try {
            if (!registrations.remove(registration) || agent == 0) {
                return;
            }
            deregisterNative(registration.region(), dlist);
        } finally {
            lifecycle.readLock().unlock();
        }
    }

    private void deregisterNative(MemoryRegion region, long dlist) {
        int status = NixlCapi.nixl_capi_deregister_mem(agent, dlist, 0);
        NixlCapi.nixl_capi_destroy_reg_dlist(dlist);
        if (status != NixlCapi.SUCCESS) {
            log.warn("NIXL agent {}: deregistering {} failed: {}", name, region, NixlCapi.statusName(status));
        }
    }

    int registrationCount() {
        return registrations.size();
    }

    // --- metadata and peers ---

    byte[] localMetadata() {
        lifecycle.readLock().lock();
        try {
            ensureOpen();
            long[] data = new long[1];
            long[] len = new long[1];
            check(NixlCapi.nixl_capi_get_local_md(agent, data, len), "get local metadata");
            try {
                return new Pointer(data[0]).getByteArray(0, Math.toIntExact(len[0]));
            } finally {
                Native.free(data[0]);
            }
        } finally {
            lifecycle.readLock().unlock();
        }
    }

    /**
     * Loads a peer, or updates one already loaded under the same name.
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
    String loadRemote(byte[] metadata) {
        if (metadata == null || metadata.length == 0) {
            throw new IllegalArgumentException("remote agent metadata must not be null or empty");
        }
        lifecycle.readLock().lock();
        try {
            ensureOpen();
            synchronized (remotes) {
                // Every operation loads its peer: when NIXL already holds this exact blob, loading it would be a
                // no-op merge, so skip the native call (~15-30 us per small operation).
                String named = NixlMetadataFormat.agentName(metadata);
                if (named != null) {
                    byte[] held = remotes.get(named); // also marks it recently loaded
                    if (held != null && Arrays.equals(held, metadata)) {
                        return named;
                    }
                }
                long[] remoteName = new long[1];
                int status = NixlCapi.nixl_capi_load_remote_md(agent, metadata, metadata.length, remoteName);
                String remote = status == NixlCapi.SUCCESS ? takeString(remoteName[0]) : replaceRemote(metadata, status);
                remotes.put(remote, metadata.clone());
                evictIdlePeers(remote);
                return remote;
            }
        } finally {
            lifecycle.readLock().unlock();
        }
    }

    /** NIXL refused to merge {@code metadata}; replaces the peer it names if that is safe. Holds {@link #remotes}. */
    private String replaceRemote(byte[] metadata, int refusal) {
        String remote = NixlMetadataFormat.agentName(metadata);
        if (remote == null || !remotes.containsKey(remote)) {
            throw loadFailure(metadata, refusal);
        }
        long pending = inFlight.stream().filter(transfer -> remote.equals(transfer.remote())).count();
        if (pending > 0) {
            throw new TransportException("NIXL agent " + name + " cannot take new metadata for peer '" + remote
                    + "' (NIXL refused to merge it: " + NixlCapi.statusName(refusal) + "; the peer restarted or"
                    + " re-registered memory under a new key) while " + pending + " transfer(s) to it are in"
                    + " flight; replacing it would fail them");
        }
        log.debug("NIXL agent {}: replacing peer {} (NIXL refused to merge its new metadata: {})", name, remote,
                NixlCapi.statusName(refusal));
        NixlCapi.nixl_capi_invalidate_remote_md(agent, remote);
        remotes.remove(remote);
        return loadRemoteNative(metadata);
    }

    private String loadRemoteNative(byte[] metadata) {
        long[] remoteName = new long[1];
        int status = NixlCapi.nixl_capi_load_remote_md(agent, metadata, metadata.length, remoteName);
        if (status != NixlCapi.SUCCESS) {
            throw loadFailure(metadata, status);
        }
        return takeString(remoteName[0]);
    }

    private TransportException loadFailure(byte[] metadata, int status) {
        return new TransportException("NIXL agent " + name + " could not load remote agent metadata ("
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

    /** Beyond {@link #MAX_LOADED_PEERS}, invalidates the least recently loaded peers with no transfer in flight. Holds {@link #remotes}. */
    private void evictIdlePeers(String justLoaded) {
        if (remotes.size() <= MAX_LOADED_PEERS) {
            return;
        }
        Set<String> busy = new HashSet<>();
        for (NixlTransfer transfer : inFlight) {
            busy.add(transfer.remote());
        }
        busy.add(justLoaded);
        for (String peer : evictable(remotes.keySet(), MAX_LOADED_PEERS, busy)) {
            invalidate(peer);
            remotes.remove(peer);
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

    /** Peers loaded now. */
    int remoteCount() {
        synchronized (remotes) {
            return remotes.size();
        }
    }

    private void invalidate(String remote) {
        int status = NixlCapi.nixl_capi_invalidate_remote_md(agent, remote);
        if (status != NixlCapi.SUCCESS) {
            log.debug("NIXL agent {}: invalidating {} returned {}", name, remote, NixlCapi.statusName(status));
        }
    }

    // --- transfers ---

    TransferHandle post(TransferOp op, List<MemoryRegion> local, String remote, List<MemoryRegion> remoteRegions,
            byte[] notification) {
        validateTransfer(op, local, remote, remoteRegions);
        String description = op + " of " + local.size() + " region(s) " + (op == TransferOp.READ ? "from " : "to ")
                + remote;
        // Empty pairs are legal on the wire and move nothing; NIXL refuses empty descriptors.
        List<MemoryRegion> localData = new ArrayList<>(local.size());
        List<MemoryRegion> remoteData = new ArrayList<>(local.size());
        for (int i = 0; i < local.size(); i++) {
            if (local.get(i).length() > 0) {
                localData.add(local.get(i));
                remoteData.add(remoteRegions.get(i));
            }
        }
        lifecycle.readLock().lock();
        try {
            ensureOpen();
            NixlTransfer transfer;
            Runnable outcome = null;
            // Under `remotes` so a peer cannot be replaced between creating the request and posting it.
            synchronized (remotes) {
                if (!remotes.containsKey(remote)) {
                    throw new TransportException("remote agent '" + remote + "' is not loaded in NIXL agent " + name
                            + "; load its metadata first");
                }
                if (localData.isEmpty()) {
                    sendNotification(remote, notification, description);
                    transfer = NixlTransfer.completedWithoutData(this, remote, description);
                } else {
                    long request = createRequest(op, localData, remote, remoteData, notification, description);
                    transfer = new NixlTransfer(this, remote, request, description);
                    synchronized (transfer) {
                        int status = NixlCapi.nixl_capi_post_xfer_req(agent, request, 0);
                        if (status == NixlCapi.IN_PROGRESS) {
                            inFlight.add(transfer);
                        } else if (status == NixlCapi.SUCCESS) {
                            outcome = transfer.finish(status);
                        } else {
                            transfer.finish(status);
                            throw new TransportException("NIXL agent " + name + " could not post " + description
                                    + ": " + NixlCapi.statusName(status));
                        }
                    }
                }
            }
            transfersPosted++;
            // Completion callbacks run outside our locks: they may call back into this agent.
            if (outcome != null) {
                outcome.run();
            } else if (!transfer.state().isTerminal()) {
                progress.wake();
            }
            return transfer;
        } finally {
            lifecycle.readLock().unlock();
        }
    }

    /** Builds a NIXL transfer request; the descriptor lists and options are freed before returning. */
    private long createRequest(TransferOp op, List<MemoryRegion> local, String remote, List<MemoryRegion> remoteRegions,
            byte[] notification, String description) {
        long localList = 0;
        long remoteList = 0;
        long optArgs = 0;
        try {
            localList = xferList(local);
            remoteList = xferList(remoteRegions);
            long[] handle = new long[1];
            check(NixlCapi.nixl_capi_create_opt_args(handle), "create transfer options");
            optArgs = handle[0];
            if (notification != null) {
                check(NixlCapi.nixl_capi_opt_args_set_notif_msg(optArgs, notification, notification.length),
                        "set notification");
                check(NixlCapi.nixl_capi_opt_args_set_has_notif(optArgs, true), "set notification flag");
            }
            int nixlOp = op == TransferOp.READ ? NixlCapi.XFER_READ : NixlCapi.XFER_WRITE;
            check(NixlCapi.nixl_capi_create_xfer_req(agent, nixlOp, localList, remoteList, remote, handle, optArgs),
                    "create " + description);
            return handle[0];
        } finally {
            if (optArgs != 0) {
                NixlCapi.nixl_capi_destroy_opt_args(optArgs);
            }
            if (localList != 0) {
                NixlCapi.nixl_capi_destroy_xfer_dlist(localList);
            }
            if (remoteList != 0) {
                NixlCapi.nixl_capi_destroy_xfer_dlist(remoteList);
            }
        }
    }

    /**
     * A transfer whose pairs are all empty still owes the peer its notification: NIXL sends it on its
     * own ({@code genNotif}), in order with earlier notifications to that peer.
     */
    private void sendNotification(String remote, byte[] notification, String description) {
        if (notification == null) {
            return;
        }
        int status = NixlCapi.nixl_capi_gen_notif(agent, remote, notification, notification.length, 0);
        if (status != NixlCapi.SUCCESS) {
            throw new TransportException("NIXL agent " + name + " could not send the notification of " + description
                    + " (no data to move): " + NixlCapi.statusName(status));
        }
    }

    private static void validateTransfer(TransferOp op, List<MemoryRegion> local, String remote,
            List<MemoryRegion> remoteRegions) {
        if (op == null) {
            throw new IllegalArgumentException("transfer op must not be null");
        }
        if (remote == null || remote.isEmpty() || remote.indexOf('\0') >= 0) {
            throw new IllegalArgumentException("remote agent name must be non-empty and free of NUL characters");
        }
        if (local == null || remoteRegions == null || local.isEmpty()) {
            throw new IllegalArgumentException("a transfer needs at least one local and one remote region");
        }
        if (local.size() != remoteRegions.size()) {
            throw new IllegalArgumentException("local and remote region lists differ in length: " + local.size()
                    + " vs " + remoteRegions.size());
        }
        for (int i = 0; i < local.size(); i++) {
            MemoryRegion l = local.get(i);
            MemoryRegion r = remoteRegions.get(i);
            if (l == null || r == null) {
                throw new IllegalArgumentException("region pair " + i + " contains null");
            }
            requireUsable(l, "local region " + i);
            requireUsable(r, "remote region " + i);
            if (l.length() != r.length()) {
                throw new IllegalArgumentException("region pair " + i + " differs in size: local " + l.length()
                        + " bytes, remote " + r.length() + " bytes");
            }
            if (l.type() != local.get(0).type() || r.type() != remoteRegions.get(0).type()) {
                throw new IllegalArgumentException("all regions of one side must share one memory type");
            }
        }
    }

    /** Empty regions are accepted (they never reach NIXL); others need an address. */
    private static void requireUsable(MemoryRegion region, String what) {
        if (region.address() == 0 && region.length() > 0) {
            throw new IllegalArgumentException(what + " has address 0");
        }
        if (region.type() == MemoryType.DRAM && region.deviceId() != 0) {
            throw new IllegalArgumentException(what + " is host memory but names device " + region.deviceId());
        }
    }

    private static long xferList(List<MemoryRegion> regions) {
        long[] handle = new long[1];
        check(NixlCapi.nixl_capi_create_xfer_dlist(memType(regions.get(0).type()), handle, false),
                "create descriptor list");
        try {
            for (MemoryRegion region : regions) {
                check(NixlCapi.nixl_capi_xfer_dlist_add_desc(handle[0], region.address(), region.length(),
                        region.deviceId()), "describe " + region);
            }
            return handle[0];
        } catch (RuntimeException e) {
            NixlCapi.nixl_capi_destroy_xfer_dlist(handle[0]);
            throw e;
        }
    }

    void forget(NixlTransfer transfer) {
        inFlight.remove(transfer);
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
            NixlWindow window = new NixlWindow(dispatcher, dispatcher.await(notification, notifications));
            progress.wake();
            return window;
        } finally {
            lifecycle.readLock().unlock();
        }
    }

    // --- progress loop ---

    @Override
    public int pollOnce() {
        lifecycle.readLock().lock();
        try {
            if (agent == 0) {
                return 0;
            }
            int events = 0;
            for (NixlTransfer transfer : inFlight) {
                if (transfer.poll()) {
                    inFlight.remove(transfer);
                    events++;
                }
            }
            long now = System.nanoTime();
            if (dispatcher.waitingCount() > 0 || now - lastDrainNanos >= UNAWAITED_DRAIN_NANOS) {
                lastDrainNanos = now;
                events += drainNotifications();
            }
            return events;
        } finally {
            lifecycle.readLock().unlock();
        }
    }

    private int drainNotifications() {
        int status = NixlCapi.nixl_capi_get_notifs(agent, notifMap, 0);
        if (status != NixlCapi.SUCCESS) {
            return 0;
        }
        long[] size = out;
        NixlCapi.nixl_capi_notif_map_size(notifMap, size);
        long agents = size[0];
        if (agents == 0) {
            return 0;
        }
        List<byte[]> received = new ArrayList<>();
        long[] data = new long[1];
        long[] len = new long[1];
        for (long a = 0; a < agents; a++) {
            if (NixlCapi.nixl_capi_notif_map_get_agent_at(notifMap, a, data) != NixlCapi.SUCCESS) {
                continue;
            }
            String from = new Pointer(data[0]).getString(0);
            NixlCapi.nixl_capi_notif_map_get_notifs_size(notifMap, from, size);
            long count = size[0];
            for (long i = 0; i < count; i++) {
                if (NixlCapi.nixl_capi_notif_map_get_notif(notifMap, from, i, data, len) == NixlCapi.SUCCESS) {
                    received.add(len[0] == 0 ? new byte[0] : new Pointer(data[0]).getByteArray(0, (int) len[0]));
                }
            }
        }
        NixlCapi.nixl_capi_notif_map_clear(notifMap);
        notificationsReceived += received.size();
        received.forEach(dispatcher::deliver);
        return received.size();
    }

    @Override
    public boolean transfersInFlight() {
        return !inFlight.isEmpty();
    }

    @Override
    public boolean busy() {
        return transfersInFlight() || dispatcher.waitingCount() > 0;
    }

    @Override
    public void failed(Throwable error) {
        log.error("NIXL agent {}: progress loop failed; failing pending transfers and windows", name, error);
        TransportException failure = new TransportException("NIXL agent " + name + " progress loop failed: " + error,
                error);
        dispatcher.failAll(failure);
        for (NixlTransfer transfer : inFlight) {
            transfer.abandon("progress loop failed");
        }
        inFlight.clear();
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
        details.put("registrations", registrations.size());
        details.put("remoteAgents", remoteCount());
        details.put("transfersInFlight", inFlight.size());
        details.put("transfersPosted", transfersPosted);
        Map<String, Long> byBackend = new TreeMap<>();
        transfersByBackend.forEach((backend, count) -> byBackend.put(backend, count.sum()));
        details.put("transfersByBackend", byBackend);
        details.put("windowsWaiting", dispatcher.waitingCount());
        details.put("notificationsReceived", notificationsReceived);
        details.put("notificationsBuffered", dispatcher.bufferedCount());
        details.put("notificationsDropped", dispatcher.droppedCount());
        return details;
    }

    private void ensureOpen() {
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
            for (NixlTransfer transfer : inFlight) {
                transfer.abandon("agent " + name + " closed");
            }
            inFlight.clear();
            dispatcher.failAll(new TransportException("NIXL agent " + name + " closed"));
            for (NixlRegistration registration : registrations) {
                registration.markReleased();
                deregisterNative(registration.region(), registration.dlist());
            }
            registrations.clear();
            synchronized (remotes) {
                remotes.keySet().forEach(this::invalidate);
                remotes.clear();
            }
            destroyNative();
        } finally {
            lifecycle.writeLock().unlock();
            onClose.accept(this);
        }
    }

    private void destroyNative() {
        if (notifMap != 0) {
            NixlCapi.nixl_capi_destroy_notif_map(notifMap);
            notifMap = 0;
        }
        // Destroying a backend handle frees the wrapper; the agent tears the backend down itself.
        for (long backend : backends) {
            NixlCapi.nixl_capi_destroy_backend(backend);
        }
        backends.clear();
        int status = NixlCapi.nixl_capi_destroy_agent(agent);
        if (status != NixlCapi.SUCCESS) {
            log.warn("NIXL agent {}: destroy returned {}", name, NixlCapi.statusName(status));
        }
        agent = 0;
    }

    static int memType(MemoryType type) {
        return type == MemoryType.DRAM ? NixlCapi.MEM_DRAM : NixlCapi.MEM_VRAM;
    }

    static void check(int status, String what) {
        if (status != NixlCapi.SUCCESS) {
            throw new TransportException("NIXL: " + what + " failed: " + NixlCapi.statusName(status));
        }
    }
}
