package io.nixlconnect;

import io.nixlconnect.transport.MemoryRegion;
import io.nixlconnect.transport.PeerNotLoadedException;
import io.nixlconnect.transport.TransferAttributes;
import io.nixlconnect.transport.TransferHandle;
import io.nixlconnect.transport.TransferOp;
import io.nixlconnect.transport.TransportAgent;
import io.nixlconnect.transport.TransportException;
import java.nio.charset.StandardCharsets;
import java.util.List;
import org.jspecify.annotations.Nullable;

/**
 * The side that moves the bytes: it loads the peer from the {@link RdmaMetadata}, posts one transfer for
 * all descriptor pairs with the peer's notification key, and completes when the transfer is done.
 * Status: IN_PROGRESS, then COMPLETE, ERRORED (failure or the operation timeout) or CANCELLED.
 */
public abstract sealed class ActiveOperation extends AbstractOperation permits ReadOperation, WriteOperation {

    private final RdmaMetadata remoteMetadata;
    /** The peer's agent name, once loaded on this operation's connection. */
    private volatile String remoteAgent;
    private volatile TransferHandle handle;

    ActiveOperation(Connector connector, OperationKind kind, RdmaMetadata remoteMetadata, List<Descriptor> localDescriptors) {
        super(connector, kind, checkPairs(connector, kind, remoteMetadata, localDescriptors), remoteMetadata.notificationKey());
        this.remoteMetadata = remoteMetadata;
    }

    private static List<Descriptor> checkPairs(Connector connector, OperationKind kind, RdmaMetadata remote,
            List<Descriptor> local) {
        if (remote == null) {
            throw new IllegalArgumentException("remoteMetadata must not be null");
        }
        int maxDescriptors = connector.options().maxDescriptors();
        if (remote.descriptors().size() > maxDescriptors) {
            throw new InvalidMetadataException("descriptors", "lists " + remote.descriptors().size()
                    + " descriptors; this connector accepts at most " + maxDescriptors + " (maxDescriptors)");
        }
        if (remote.operationKind() != kind) {
            throw new IllegalArgumentException(kind == OperationKind.READ
                    ? "Cannot begin a read from a peer's WritableOperation (remoteMetadata kind is WRITE); use beginWrite"
                    : "Cannot begin a write to a peer's ReadableOperation (remoteMetadata kind is READ); use beginRead");
        }
        checkLocal(local);
        List<SerializedDescriptor> remoteDescriptors = remote.descriptors();
        if (local.size() != remoteDescriptors.size()) {
            if (local.size() == 1 || remoteDescriptors.size() == 1) {
                throw new IllegalArgumentException("localDescriptors and the remote descriptors must both be single "
                        + "descriptors or both lists: " + local.size() + " != " + remoteDescriptors.size());
            }
            throw new IllegalArgumentException("localDescriptors and the remote descriptors must have the same length: "
                    + local.size() + " != " + remoteDescriptors.size());
        }
        if (local.size() == 1 && local.get(0).size() != remoteDescriptors.get(0).size()) {
            throw new IllegalArgumentException("The local and the remote descriptor must be the same size: "
                    + local.get(0).size() + " != " + remoteDescriptors.get(0).size());
        }
        for (int i = 0; i < local.size(); i++) {
            if (local.get(i).size() != remoteDescriptors.get(i).size()) {
                throw new IllegalArgumentException("localDescriptors[" + i + "] and the remote descriptor at " + i
                        + " must have the same size: " + local.get(i).size() + " != " + remoteDescriptors.get(i).size());
            }
        }
        DeviceKind remoteKind = remoteDescriptors.get(0).toDevice().kind();
        for (int i = 1; i < remoteDescriptors.size(); i++) {
            if (remoteDescriptors.get(i).toDevice().kind() != remoteKind) {
                throw new IllegalArgumentException("All remote descriptors must have the same memory kind");
            }
        }
        return local;
    }

    /** Posts tried when the peer was evicted between its load and the post each time. */
    private static final int MAX_POSTS_AFTER_EVICTION = 8;

    private TransferHandle post(TransferOp op, List<MemoryRegion> local, String peerAgent, List<MemoryRegion> peer,
            byte[] notification, boolean callerWaits) {
        TransportAgent agent = connection().agent();
        return callerWaits ? agent.postTransferForWaitingCaller(op, local, peerAgent, peer, notification)
                : agent.postTransfer(op, local, peerAgent, peer, notification);
    }

    /**
     * Registers, loads the peer, posts the transfer and arms the timeout. Called once by the connector. A
     * transport failure (peer unreachable, metadata refused) ends the operation ERRORED; argument errors throw.
     *
     * @param callerWaits the caller calls {@link #waitForCompletion()} next and closes the operation if that throws
     *                    ({@link Connector#read}): the transport may leave the transfer for that wait to run
     */
    final void start(boolean callerWaits) {
        byte[] agentMetadata;
        try {
            // Under this connector's limit, and before anything is registered.
            agentMetadata = connection().peerMetadata(remoteMetadata.nixlMetadata());
        } catch (InvalidMetadataException e) {
            finish(OperationStatus.ERRORED, e);
            throw e;
        }
        try {
            acquireLocal();
        } catch (RuntimeException e) {
            throw connector.isClosed() && !(e instanceof ConnectorClosedException) ? closedWhileStarting(e)
                    : ended(e);
        }
        try {
            List<MemoryRegion> local = localRegions();
            List<MemoryRegion> peer = peerRegions(remoteMetadata.descriptors());
            TransferOp op = operationKind() == OperationKind.READ ? TransferOp.READ : TransferOp.WRITE;
            // Last before posting: once the peer is loaded, whatever ends this operation short of COMPLETE is
            // reported to it (releaseTransport), the post's own refusal included.
            String peerAgent = connection().loadRemote(agentMetadata);
            remoteAgent = peerAgent;
            refuseSpent(peerAgent);
            if (!compareAndSetStatus(OperationStatus.UNINITIALIZED, OperationStatus.IN_PROGRESS)) {
                // Ended before it was posted: only the connector's close does that (it cancels what it finds).
                throw new ConnectorClosedException("Connector '" + connector.name() + "' closed while this "
                        + getClass().getSimpleName() + " started; no new operations are accepted");
            }
            byte[] notification = notificationKey().getBytes(StandardCharsets.UTF_8);
            TransferHandle posted = null;
            for (int attempt = 1; posted == null; attempt++) {
                try {
                    posted = post(op, local, peerAgent, peer, notification, callerWaits);
                } catch (PeerNotLoadedException evictedSinceLoad) {
                    // Other operations loaded enough peers in between to evict this one from a bounded cache: load
                    // it again and post again, a few times (past that the cache is far too small for the load).
                    if (attempt == MAX_POSTS_AFTER_EVICTION) {
                        throw evictedSinceLoad;
                    }
                    peerAgent = connection().loadRemote(agentMetadata);
                }
            }
            handle = posted;
            if (status().isTerminal()) {
                posted.cancel(); // closed while posting: its finish found no handle to cancel
            }
        } catch (ConnectorClosedException e) {
            finish(OperationStatus.CANCELLED, e);
            throw e;
        } catch (TransportException e) {
            if (connector.isClosed()) {
                throw closedWhileStarting(e); // the close took the agent or the registrations away
            }
            // The peer cannot be reached or refused the request: that is the operation's outcome, reported
            // like any later transport failure, not an argument error.
            finish(OperationStatus.ERRORED, e);
            return;
        } catch (RuntimeException e) {
            if (connector.isClosed()) {
                throw closedWhileStarting(e);
            }
            finish(OperationStatus.ERRORED, e);
            throw e;
        }
        connector.deadlines().arm(deadline, connector.options().operationTimeout());
        if (status().isTerminal()) {
            connector.deadlines().disarm(deadline); // ended before the deadline was armed
        }
        handle.onEnd(endListener);
    }

    /**
     * Starts this operation for the calling thread to wait on, and waits ({@link Connector#read},
     * {@link Connector#write}); an interrupted wait cancels it.
     */
    final void runOnCallersThread() {
        try {
            start(true);
            waitForCompletion();
        } catch (TransferException e) {
            if (status().isTerminal()) {
                throw inCallersThread(e);
            }
            // Interrupted before it ended: nobody else waits for it (and it may be left for this thread), so it stops.
            close();
            if (status() != OperationStatus.COMPLETE) {
                throw new TransferException(status(), getClass().getSimpleName()
                        + " cancelled: the thread was interrupted while waiting for it", e);
            }
        } catch (RuntimeException | Error e) {
            close();
            throw e;
        }
    }

    /**
     * The failure anew, thrown from the caller's thread with the original (created where the operation ended, often a
     * transport thread whose stack says nothing of the caller) as its cause, as {@code HttpClient.send} does. Same type
     * and message; a subclass this method does not know is thrown as it is, its type mattering more than the frames.
     */
    private static TransferException inCallersThread(TransferException e) {
        if (e.getClass() == TransferTimeoutException.class) {
            return new TransferTimeoutException(e.getMessage(), e);
        }
        return e.getClass() == TransferException.class ? new TransferException(e.status(), e.getMessage(), e) : e;
    }

    /** Ends the operation with {@code e} (CANCELLED when the connector closed) and returns {@code e} to throw. */
    private RuntimeException ended(RuntimeException e) {
        finish(e instanceof ConnectorClosedException ? OperationStatus.CANCELLED : OperationStatus.ERRORED, e);
        return e;
    }

    /** The connector closed while this operation started: it is cancelled, and the caller told why. */
    private ConnectorClosedException closedWhileStarting(RuntimeException cause) {
        finish(OperationStatus.CANCELLED, cause);
        return new ConnectorClosedException("Connector '" + connector.name() + "' closed while this "
                + getClass().getSimpleName() + " started; no new operations are accepted", cause);
    }

    /**
     * Refuses a transfer with metadata whose window this connection has already used up: its owner has released the
     * memory, which over UCX's TCP a transfer would still reach (see {@link SpentWindows}).
     */
    private void refuseSpent(String peer) {
        int readers = NotificationKeys.readersOf(notificationKey());
        int done = connection().spentWindows().completed(peer, notificationKey());
        if (done >= readers) {
            throw new TransportException("the window this metadata describes is gone: this connector already completed "
                    + (done == 1 ? "a transfer" : done + " transfers") + " with it (notification key fingerprint "
                    + notificationKeyFingerprint() + ", peer '" + peer + "'), after which its owner released it."
                    + " Metadata serves " + (readers == 1 ? "one transfer" : readers + " transfers (fan-out)")
                    + "; ask the peer for new metadata");
        }
    }

    @Override
    final void expire() {
        finish(OperationStatus.ERRORED, new TransferTimeoutException(getClass().getSimpleName()
                + " did not complete within the operation timeout of " + connector.options().operationTimeout()
                + " (peer '" + remoteAgent + "')"));
    }

    /** The peer's regions, as an immutable list handed over to the transport. */
    private static List<MemoryRegion> peerRegions(List<SerializedDescriptor> descriptors) {
        if (descriptors.size() == 1) {
            SerializedDescriptor only = descriptors.get(0);
            return List.of(Descriptor.region(only.toDevice(), only.ptr(), only.size()));
        }
        MemoryRegion[] regions = new MemoryRegion[descriptors.size()];
        for (int i = 0; i < regions.length; i++) {
            SerializedDescriptor descriptor = descriptors.get(i);
            regions[i] = Descriptor.region(descriptor.toDevice(), descriptor.ptr(), descriptor.size());
        }
        return List.of(regions);
    }

    /**
     * The thread about to block in an untimed wait is offered to the transport: it would only block meanwhile, and
     * the two thread hand-offs it saves (waking a transport thread, that thread waking the caller) are a large part of
     * a small operation's time. The transport decides what it takes (see {@link TransferHandle#runOnWaitingThread}).
     * Not for timed waits: the caller must get control back at its deadline.
     */
    @Override
    void beforeWaiting() {
        TransferHandle posted = handle;
        if (posted != null && !Thread.currentThread().isInterrupted()) {
            posted.runOnWaitingThread();
        }
    }

    @Override
    @Nullable TransferAttributes transferAttributes() {
        TransferHandle posted = handle;
        return posted == null ? null : posted.attributes();
    }

    @Override
    public final boolean isPassive() {
        return false;
    }

    /** The peer's metadata this operation targets. */
    public final RdmaMetadata remoteMetadata() {
        return remoteMetadata;
    }

    /**
     * Stops the transfer. When this returns the transport no longer touches the local buffers. Does
     * nothing once the operation has ended.
     */
    public final void cancel() {
        finish(OperationStatus.CANCELLED, null);
    }

    @Override
    public final @Nullable String transferPath() {
        TransferHandle posted = handle;
        return posted == null ? null : posted.path();
    }

    @Override
    final void releaseTransport() {
        connector.deadlines().disarm(deadline);
        String peer = remoteAgent;
        if (status() == OperationStatus.COMPLETE && peer != null) {
            connection().spentWindows().record(peer, notificationKey());
        }
        TransferHandle posted = handle;
        if (posted != null) {
            posted.cancel();
        }
        if (peer != null && status() != OperationStatus.COMPLETE) {
            // The peer's passive operation would otherwise wait for its own timeout (on NIXL nothing else tells it).
            connection().agent().reportFailure(peer, notificationKey().getBytes(StandardCharsets.UTF_8),
                    failureReport());
        }
    }

    /** Why this operation ended short of COMPLETE, as its peer is told: no key, only what the peer may log. */
    private String failureReport() {
        Throwable cause = failure();
        String what = getClass().getSimpleName() + " of worker '" + connector.name() + "'";
        if (status() == OperationStatus.CANCELLED) {
            return what + " was cancelled";
        }
        return what + " failed" + (cause == null || cause.getMessage() == null ? "" : ": " + cause.getMessage());
    }
}
