package io.nixlconnect.transport.nixl;

import com.sun.jna.Native;
import com.sun.jna.Pointer;
import io.nixlconnect.cuda.DeviceContext;
import io.nixlconnect.transport.InvalidAgentMetadataException;
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
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Set;
import java.util.TreeMap;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.LongAdder;
import java.util.concurrent.locks.ReentrantReadWriteLock;
import java.util.function.Consumer;

/**
 * One NIXL agent: the native agent and backends, registrations, posted transfers, passive windows, the
 * notification dispatcher and the progress loop. Its peers are {@link NixlPeers}; transfer requests are
 * checked and built by {@link NixlRequests}.
 *
 * <p>Every native call on the agent runs under the read side of {@link #lifecycle}; {@link #close()}
 * takes the write side, so nothing touches the native agent while, or after, it is destroyed.
 */
final class NixlAgentCore implements ProgressLoop.Work {

    private static final Logger log = LoggerFactory.getLogger(NixlAgentCore.class);
    static final int MAX_EARLY_NOTIFICATIONS = 1024;
    static final long MAX_EARLY_NOTIFICATION_BYTES = 1 << 20;
    /**
     * How often the loop drains notifications while no window waits for one. {@code getNotifs} holds
     * NIXL's agent-wide lock and progresses UCX until idle, so calling it every round made callers'
     * request creation and posting wait for the lock; notifications that no window awaits only need
     * collecting (they are buffered), not speed.
     */
    static final long UNAWAITED_DRAIN_NANOS = TimeUnit.MILLISECONDS.toNanos(1);
    static final long DRAIN_BYTES_PER_SECOND = 100_000_000L;
    /**
     * How long after sending a failure report the loop keeps progressing UCX at its busy pace. Over TCP the report
     * goes out behind whatever of the released transfer UCX still had queued to that peer (a cancelled WRITE's
     * bytes), and only as fast as this agent's worker is progressed: idle, the loop progresses it every 10 ms.
     */
    static final long REPORT_PROGRESS_NANOS = TimeUnit.SECONDS.toNanos(1);
    /** When not negative, the fixed part of {@link #drainLimitNanos} instead of {@link NixlSettings#drainLimit()}: tests shorten it. */
    static volatile long drainBaseNanos = -1;

    final ReentrantReadWriteLock lifecycle = new ReentrantReadWriteLock();
    private final String name;
    private final NixlSettings settings;
    private final Consumer<NixlAgentCore> onClose;
    private final List<Long> backends = new ArrayList<>();
    /** NIXL's own handle ({@code nixlBackendH*}) of each backend, in {@code settings.backends()} order; set once. */
    private long[] backendHandles = new long[0];
    /** Ended transfers by the backend NIXL chose for them (health details). */
    private final Map<String, LongAdder> transfersByBackend = new ConcurrentHashMap<>();
    private final NixlPeers peers = new NixlPeers(this);
    private final Set<NixlRegistration> registrations = ConcurrentHashMap.newKeySet();
    /** The live registrations by region, for metadata that describes only an operation's regions. */
    private final Map<MemoryRegion, NixlRegistration> registrationsByRegion = new ConcurrentHashMap<>();
    /** Header, agent name and connection info of this agent's metadata (fixed once its backends exist). */
    private volatile byte[] connectionPart;
    private final Set<NixlTransfer> inFlight = ConcurrentHashMap.newKeySet();
    /** How many of {@link #inFlight} their waiting threads poll (see {@link #pollOnWaitingThread}). */
    private final AtomicInteger polledByWaitingThreads = new AtomicInteger();
    /** Transfers whose end the thread waiting for them saw first (see {@link #pollOnWaitingThread}). */
    private final LongAdder transfersEndedOnWaitingThreads = new LongAdder();
    private final Set<NixlWindow> draining = ConcurrentHashMap.newKeySet();
    /** Memory of windows released at their drain limit, freed when the agent is destroyed. */
    private final List<AutoCloseable> keptUntilClose = new ArrayList<>();
    private long keptBytes; // guarded by keptUntilClose
    /**
     * Memory kept that its owner would have freed: owned memory of closed descriptors, less pages given back to the
     * system (see {@link NixlSettings#maxKeptBytes()}). {@link #keptBytes} also counts windows over memory still in use.
     */
    private long keptResidentBytes; // guarded by keptUntilClose
    private boolean overKeptCap; // guarded by keptUntilClose
    private final NotificationDispatcher dispatcher =
            new NotificationDispatcher(MAX_EARLY_NOTIFICATIONS, MAX_EARLY_NOTIFICATION_BYTES);
    private final ProgressLoop progress;
    private final long[] out = new long[2];
    private long agent;
    private long notifMap;
    private volatile boolean closed;
    private volatile long transfersPosted;
    private volatile long notificationsReceived;
    /** When the last failure report was sent (see {@link #REPORT_PROGRESS_NANOS}); 0: never. */
    private volatile long lastReportNanos;
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
        NixlRequests.requireUsable(region, "region");
        lifecycle.readLock().lock();
        try {
            ensureOpen();
            if (region.length() == 0) {
                // Legal on the wire, refused by NIXL ("region is empty"); transfers skip such pairs.
                return NixlRegistration.empty(this, region);
            }
            long[] dlist = new long[1];
            check(NixlCapi.nixl_capi_create_reg_dlist(NixlRequests.memType(region.type()), dlist), "create registration list");
            try (DeviceContext context = NixlCudaSupport.contextFor(List.of(region))) {
                check(NixlCapi.nixl_capi_reg_dlist_add_desc(dlist[0], region.address(), region.length(),
                        region.deviceId(), null, 0), "describe " + region);
                int status = NixlCapi.nixl_capi_register_mem(agent, dlist[0], 0);
                if (status != NixlCapi.SUCCESS && region.type() == MemoryType.VRAM) {
                    throw new TransportException(NixlCudaSupport.vramRegistrationFailure(region, NixlCapi.statusName(status)));
                }
                check(status, "register " + region);
            } catch (RuntimeException e) {
                NixlCapi.nixl_capi_destroy_reg_dlist(dlist[0]);
                throw e;
            }
            NixlRegistration registration = new NixlRegistration(this, region, dlist[0]);
            registrations.add(registration);
            registrationsByRegion.put(region, registration);
            return registration;
        } finally {
            lifecycle.readLock().unlock();
        }
    }

    /** Deregisters (registration closing); false when the agent is already closed. */
    void deregister(NixlRegistration registration, long dlist) {
        lifecycle.readLock().lock();
        try {
            registrationsByRegion.remove(registration.region(), registration);
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
     * This agent's metadata with only the memory sections of {@code registered} (regions registered through {@link
     * #register}), and its connection info: what a peer needs for an operation within them, the same size however
     * many other regions the agent holds (NIXL's full metadata carries every registration's key: 220 KB with 5,000
     * registered). Assembled in Java from the connection part (read once) and each registration's sections (read once
     * per registration, with {@code nixl_capi_get_local_partial_md}, whose output lacks connection info). Falls back
     * to the full metadata for a region it does not hold a registration of.
     */
    byte[] localMetadata(List<MemoryRegion> registered) {
        lifecycle.readLock().lock();
        try {
            ensureOpen();
            List<NixlMetadataFormat.Section> sections = new ArrayList<>();
            for (MemoryRegion region : registered) {
                if (region.length() == 0) {
                    continue; // never registered with NIXL: nothing to describe
                }
                NixlRegistration registration = registrationsByRegion.get(region);
                if (registration == null) {
                    return localMetadata();
                }
                List<NixlMetadataFormat.Section> known = registration.sections();
                if (known == null) {
                    known = NixlMetadataFormat.sections(partialMetadata(registration.dlist()));
                    registration.sections(known);
                }
                sections.addAll(known);
            }
            byte[] connections = connectionPart;
            if (connections == null) {
                connectionPart = connections = NixlMetadataFormat.connectionPart(localMetadata());
            }
            return NixlMetadataFormat.assemble(connections, sections);
        } finally {
            lifecycle.readLock().unlock();
        }
    }

    /** NIXL's partial metadata of one registration's descriptor list (its sections; no connection info). */
    private byte[] partialMetadata(long dlist) {
        long[] data = new long[1];
        long[] len = new long[1];
        check(NixlCapi.nixl_capi_get_local_partial_md(agent, dlist, data, len, 0), "get partial local metadata");
        try {
            return new Pointer(data[0]).getByteArray(0, Math.toIntExact(len[0]));
        } finally {
            Native.free(data[0]);
        }
    }

    /** Loads a peer after checking its metadata in Java (see {@link NixlPeers#load}); returns its name. */
    String loadRemote(byte[] metadata) {
        if (metadata == null || metadata.length == 0) {
            throw new IllegalArgumentException("remote agent metadata must not be null or empty");
        }
        // NIXL trusts the blob; everything it could mis-handle is refused here, before any native call.
        NixlMetadataFormat.Parsed parsed = NixlMetadataFormat.validate(metadata);
        if (parsed.agent().equals(name)) {
            throw new InvalidAgentMetadataException("Agent", "is this agent's own name '" + name + "'");
        }
        long deadline = System.nanoTime() + MAX_PEER_WAIT_NANOS;
        while (true) {
            List<CompletableFuture<Void>> pending;
            lifecycle.readLock().lock();
            try {
                ensureOpen();
                return peers.load(metadata, parsed.agent());
            } catch (NixlPeers.PeerBusyException busy) {
                pending = transferCompletionsTo(parsed.agent());
                if (pending.isEmpty()) {
                    continue; // they ended meanwhile
                }
            } finally {
                lifecycle.readLock().unlock();
            }
            awaitEnds(pending, parsed.agent(), deadline);
        }
    }

    /**
     * Bounds the wait of a load for transfers to a peer of the same name (each also ends at its own operation
     * timeout, which is far shorter).
     */
    static final long MAX_PEER_WAIT_NANOS = TimeUnit.MINUTES.toNanos(10);

    /**
     * Waits, holding no lock, for transfers that stand in the way of new metadata for {@code remote} (issue 22 item
     * 5: a second agent under a producer's name, or a peer whose connection failed). They end by themselves: done,
     * failed, or at their operation timeout.
     */
    private void awaitEnds(List<CompletableFuture<Void>> pending, String remote, long deadline) {
        try {
            CompletableFuture.allOf(pending.toArray(CompletableFuture[]::new))
                    .get(Math.max(0, deadline - System.nanoTime()), TimeUnit.NANOSECONDS);
        } catch (java.util.concurrent.ExecutionException | java.util.concurrent.CancellationException e) {
            // one of them failed or was cancelled: it has ended all the same
        } catch (java.util.concurrent.TimeoutException e) {
            throw new TransportException("NIXL agent " + name + " cannot take new metadata for peer '" + remote
                    + "': " + pending.size() + " transfer(s) to an agent of that name are still in flight after "
                    + TimeUnit.NANOSECONDS.toMinutes(MAX_PEER_WAIT_NANOS) + " minutes");
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new TransportException("NIXL agent " + name + ": interrupted while waiting for the transfers to '"
                    + remote + "' to end before taking its new metadata");
        }
    }

    /** The completions of the transfers to {@code remote} not ended yet. */
    private List<CompletableFuture<Void>> transferCompletionsTo(String remote) {
        List<CompletableFuture<Void>> completions = new ArrayList<>();
        for (NixlTransfer transfer : inFlight) {
            if (remote.equals(transfer.remote()) && !transfer.state().isTerminal()) {
                completions.add(transfer.completion());
            }
        }
        return completions;
    }

    /** The peers that transfers in flight target. */
    Set<String> remotesWithTransfersInFlight() {
        Set<String> remotes = new HashSet<>();
        for (NixlTransfer transfer : inFlight) {
            remotes.add(transfer.remote());
        }
        return remotes;
    }

    /** Transfers to {@code remote} not ended yet (one that has ended leaves {@link #inFlight} a moment later). */
    long transfersInFlightTo(String remote) {
        return inFlight.stream().filter(transfer -> remote.equals(transfer.remote()) && !transfer.state().isTerminal())
                .count();
    }

    /** Peers loaded now. */
    int remoteCount() {
        return peers.loadedCount();
    }

    // --- transfers ---

    /**
     * Creates and posts a request. {@code callerPolls}: the caller polls it on its own thread straight away
     * ({@link #pollOnWaitingThread}), so the progress loop is not woken for it; it still sees the transfer in flight
     * at its next round (an interrupted caller leaves it to the loop).
     */
    TransferHandle post(TransferOp op, List<MemoryRegion> local, String remote, List<MemoryRegion> remoteRegions,
            byte[] notification, boolean callerPolls) {
        NixlRequests.validateTransfer(op, local, remote, remoteRegions);
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
            // Under the peers' monitor so a peer cannot be replaced between creating the request and posting it.
            synchronized (peers) {
                if (!peers.isLoaded(remote)) {
                    throw new TransportException("remote agent '" + remote + "' is not loaded in NIXL agent " + name
                            + "; load its metadata first");
                }
                if (localData.isEmpty()) {
                    sendNotification(remote, notification, description);
                    transfer = NixlTransfer.completedWithoutData(this, remote, description);
                } else {
                    // Local GPU memory: its device's context is current while NIXL/UCX create and post.
                    try (DeviceContext context = NixlCudaSupport.contextFor(localData)) {
                        long request = NixlRequests.createRequest(agent, op, localData, remote, remoteData, notification, description);
                        transfer = new NixlTransfer(this, remote, request, description,
                                NixlCudaSupport.cudaDeviceOf(localData), callerPolls);
                        synchronized (transfer) {
                            int status = NixlCapi.nixl_capi_post_xfer_req(agent, request, 0);
                            if (status == NixlCapi.IN_PROGRESS) {
                                inFlight.add(transfer);
                            } else if (status == NixlCapi.SUCCESS) {
                                outcome = transfer.finish(status);
                            } else {
                                transfer.finish(status);
                                throw transferFailure(remote, "NIXL agent " + name + " could not post "
                                        + description, status);
                            }
                        }
                    }
                }
            }
            transfersPosted++;
            // Completion callbacks run outside our locks: they may call back into this agent.
            if (outcome != null) {
                outcome.run();
            } else if (!callerPolls && !transfer.state().isTerminal()) {
                progress.wake();
            }
            return transfer;
        } finally {
            lifecycle.readLock().unlock();
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

    /**
     * Sends {@code remote} a {@link FailureNotification} for {@code notification} (see
     * {@code TransportAgent#reportFailure}): one {@code genNotif}, which queues the message and returns. Best effort:
     * a peer no longer loaded, a closed agent or NIXL's refusal drop it, logged at DEBUG; never throws.
     */
    void reportFailure(String remote, byte[] notification, String cause) {
        byte[] report = FailureNotification.encode(notification, cause);
        if (report == null) {
            return;
        }
        lifecycle.readLock().lock();
        try {
            if (agent == 0) {
                return;
            }
            int status;
            synchronized (peers) { // the peer cannot be unloaded between the check and the send
                if (!peers.isLoaded(remote)) {
                    log.debug("NIXL agent {}: failure report to {} dropped: the peer is no longer loaded", name, remote);
                    return;
                }
                status = NixlCapi.nixl_capi_gen_notif(agent, remote, report, report.length, 0);
            }
            if (status != NixlCapi.SUCCESS) {
                log.debug("NIXL agent {}: failure report to {} not sent: {}", name, remote, NixlCapi.statusName(status));
            } else {
                long now = System.nanoTime();
                lastReportNanos = now == 0 ? 1 : now;
                progress.wake();
            }
        } catch (RuntimeException e) {
            log.debug("NIXL agent {}: failure report to {} not sent", name, remote, e);
        } finally {
            lifecycle.readLock().unlock();
        }
    }

    void forget(NixlTransfer transfer) {
        inFlight.remove(transfer);
    }

    /**
     * A transfer to {@code remote} failed ({@code what}: "could not post …" or "… failed"): the peer is torn down at
     * its next load ({@link NixlPeers#markBroken}), and the error says what most likely happened. A peer refuses a
     * transfer whose window is gone (its operation completed, was closed or timed out) the way it refuses a dead
     * peer's: UCX fails the endpoint; NIXL cannot tell which.
     */
    TransportException transferFailure(String remote, String what, int status) {
        peers.markBroken(remote);
        return new TransportException(what + ": " + NixlCapi.statusName(status) + ". Most likely the window this"
                + " metadata describes is gone (its operation on the peer completed, was closed or timed out: metadata"
                + " serves one transfer per reader), or the peer died or restarted. The connection to '" + remote
                + "' is made anew with the next metadata");
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
     * A window closed before its notification: a peer's transfer may still be in flight, and over UCX's
     * software RMA (TCP) this agent's worker goes on reading or writing the window's memory whenever it
     * progresses, deregistered or not. The window is released when its notification arrives (the peer's
     * transfer is over), when this agent is destroyed, or after {@link #drainLimitNanos} (a peer that
     * has not finished by then is taken to have given up; see docs/security.md for what a peer that
     * stalls on purpose can still do over TCP).
     */
    void drain(NixlWindow window) {
        lifecycle.readLock().lock();
        try {
            if (agent == 0) {
                window.markReleased(); // destroyed: no worker left to touch the memory
                return;
            }
            draining.add(window);
        } finally {
            lifecycle.readLock().unlock();
        }
        window.waiter().future.whenComplete((ok, error) -> {
            if (error == null) {
                endDrain(window);
            }
        });
        long limit = drainLimitNanos(drainBaseNanos >= 0 ? drainBaseNanos : settings.drainLimit().toNanos(), window.bytes());
        CompletableFuture.delayedExecutor(limit, TimeUnit.NANOSECONDS).execute(() -> {
            if (draining.contains(window)) {
                log.warn("NIXL agent {}: a window of {} bytes closed before its notification got no notification within"
                        + " the drain limit of {} ms; its memory is deregistered but kept allocated until the agent"
                        + " closes, as a stalled peer could still reach it over UCX TCP", name, window.bytes(),
                        TimeUnit.NANOSECONDS.toMillis(limit));
                dispatcher.cancel(window.waiter());
                if (draining.remove(window)) {
                    synchronized (keptUntilClose) {
                        keptBytes += window.bytes(); // counted once per window, whatever then holds its memory
                    }
                    window.markReleasedWithoutNotification();
                }
            }
        });
        progress.wake();
    }

    /** How long a window closed early stays unreleased at most: {@code base} (2 s by default) plus its size at 100 MB/s. */
    static long drainLimitNanos(long base, long bytes) {
        return base + bytes / DRAIN_BYTES_PER_SECOND * TimeUnit.SECONDS.toNanos(1)
                + bytes % DRAIN_BYTES_PER_SECOND * TimeUnit.SECONDS.toNanos(1) / DRAIN_BYTES_PER_SECOND;
    }

    private void endDrain(NixlWindow window) {
        if (draining.remove(window)) {
            window.markReleased();
        }
    }

    int drainingCount() {
        return draining.size();
    }

    /**
     * Keeps the memory of a window released at its drain limit until this agent is destroyed: the UCX worker
     * that could serve a stalled peer's late GET or PUT from it goes with the agent.
     */
    void keepUntilClosed(AutoCloseable memory, long bytes, long residentBytes) {
        lifecycle.readLock().lock();
        try {
            if (agent != 0) {
                long resident;
                boolean crossed;
                synchronized (keptUntilClose) {
                    keptUntilClose.add(memory);
                    keptBytes += bytes;
                    keptResidentBytes += residentBytes;
                    resident = keptResidentBytes;
                    crossed = !overKeptCap && resident > settings.maxKeptBytes();
                    overKeptCap = resident > settings.maxKeptBytes();
                }
                if (crossed) {
                    log.warn("NIXL agent {}: {} bytes of memory that closed descriptors owned are kept resident for"
                            + " peers that stalled past the drain limit, over the cap of {} (NixlSettings.maxKeptBytes):"
                            + " GPU memory cannot be given back before the connector closes (host memory is, but for"
                            + " the partial pages at its ends)", name, resident, settings.maxKeptBytes());
                }
                return;
            }
        } finally {
            lifecycle.readLock().unlock();
        }
        closeKept(List.of(memory));
    }

    private void closeKept(List<AutoCloseable> memories) {
        for (AutoCloseable memory : memories) {
            try {
                memory.close();
            } catch (Exception e) {
                log.warn("NIXL agent {}: freeing memory kept after a drain limit failed", name, e);
            }
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
                if (transfer.polledByWaitingThread) {
                    continue;
                }
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
        // Notifications (byte[]), and the failure reports among them (FailureNotification.Received), in the
        // order they came: a reader that failed and then read again is seen in that order.
        List<Object> received = new ArrayList<>();
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
                    byte[] bytes = len[0] == 0 ? new byte[0] : new Pointer(data[0]).getByteArray(0, (int) len[0]);
                    if (FailureNotification.isReport(bytes)) {
                        FailureNotification.Received report = FailureNotification.parse(bytes, from);
                        if (report != null) {
                            received.add(report);
                        }
                    } else {
                        received.add(bytes);
                    }
                }
            }
        }
        NixlCapi.nixl_capi_notif_map_clear(notifMap);
        notificationsReceived += received.size();
        for (Object each : received) {
            if (each instanceof byte[] notification) {
                dispatcher.deliver(notification);
            } else if (each instanceof FailureNotification.Received report
                    && !dispatcher.peerFailed(report.key(), report.peer(), report.cause())) {
                log.debug("NIXL agent {}: a failure report from {} names no operation waiting alone for it; dropped",
                        name, report.peer());
            }
        }
        return received.size();
    }

    @Override
    public boolean transfersInFlight() {
        return inFlight.size() > polledByWaitingThreads.get();
    }

    /**
     * Polls {@code transfer} on the calling thread, which waits for it, until it ends, the thread is interrupted or
     * the agent closes. Python's callers of NIXL poll the same way ({@code check_xfer_state} in a loop); here it
     * spares the hand-off from the progress thread (a completion there, then a wake-up of the parked caller, tens of
     * microseconds on a busy machine). Meanwhile the progress loop leaves the transfer alone and does not spin for it.
     */
    void pollOnWaitingThread(NixlTransfer transfer) {
        Runnable outcome = null;
        transfer.polledByWaitingThread = true;
        polledByWaitingThreads.incrementAndGet();
        try {
            while (outcome == null && !Thread.currentThread().isInterrupted()) {
                lifecycle.readLock().lock();
                try {
                    if (agent == 0) {
                        return; // closing abandons the transfer
                    }
                    outcome = transfer.pollOnce();
                    if (outcome != null) {
                        inFlight.remove(transfer);
                    }
                } finally {
                    lifecycle.readLock().unlock();
                }
                Thread.onSpinWait();
            }
        } finally {
            polledByWaitingThreads.decrementAndGet();
            transfer.polledByWaitingThread = false;
            // An interrupted wait leaves its transfer to the loop. After a transfer posted with a wake-up (beginRead and a
            // later wait), the wake-up keeps the loop in its spin window for the caller's next post, which then need not
            // unpark it: without it, 64 KiB READs measured 20% slower and spent more CPU per byte.
            if (outcome == null || !transfer.postedForPollingCaller) {
                progress.wake();
            }
        }
        if (outcome != null && outcome != NixlTransfer.ALREADY_ENDED) {
            transfersEndedOnWaitingThreads.increment();
            // Outside the agent's lock: the operation's completion callbacks may close the connector from here.
            outcome.run();
        }
    }

    @Override
    public boolean busy() {
        long report = lastReportNanos;
        return transfersInFlight() || dispatcher.waitingCount() > 0
                || report != 0 && System.nanoTime() - report < REPORT_PROGRESS_NANOS;
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
        details.put("remoteAgents", peers.loadedCount());
        details.put("peersReconnected", peers.reconnectedCount());
        details.put("peersToReconnect", peers.brokenCount());
        details.put("transfersInFlight", inFlight.size());
        details.put("transfersPosted", transfersPosted);
        details.put("transfersEndedOnWaitingThread", transfersEndedOnWaitingThreads.sum());
        Map<String, Long> byBackend = new TreeMap<>();
        transfersByBackend.forEach((backend, count) -> byBackend.put(backend, count.sum()));
        details.put("transfersByBackend", byBackend);
        details.put("windowsWaiting", dispatcher.waitingCount());
        details.put("windowsDraining", draining.size());
        synchronized (keptUntilClose) {
            details.put("bytesKeptAfterDrainLimit", keptBytes);
            details.put("bytesKeptResident", keptResidentBytes);
            details.put("memoryHeldUntilClose", keptUntilClose.size());
            details.put("maxKeptBytes", settings.maxKeptBytes());
        }
        details.put("cudaRuntime", NixlCudaSupport.cudaRuntimeStatus());
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
            registrationsByRegion.clear();
            peers.invalidateAll();
            destroyNative();
        } finally {
            lifecycle.writeLock().unlock();
            // Only now: the worker that could still serve a peer's transfer is gone.
            new ArrayList<>(draining).forEach(this::endDrain);
            List<AutoCloseable> kept;
            synchronized (keptUntilClose) {
                kept = new ArrayList<>(keptUntilClose);
                keptUntilClose.clear();
                keptBytes = 0;
                keptResidentBytes = 0;
                overKeptCap = false;
            }
            closeKept(kept);
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

    static void check(int status, String what) {
        if (status != NixlCapi.SUCCESS) {
            throw new TransportException("NIXL: " + what + " failed: " + NixlCapi.statusName(status));
        }
    }
}
