package io.nixlconnect;

import io.nixlconnect.transport.MemoryRegion;
import io.nixlconnect.transport.PassiveWindow;
import io.nixlconnect.transport.TransferOp;
import io.nixlconnect.transport.TransportException;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import org.jspecify.annotations.Nullable;

/**
 * The side that publishes its buffers ({@link #metadata()}) and waits: it completes when the peer's
 * notification arrives, after the peer's transfer has landed. Status: INITIALIZED while waiting, then
 * COMPLETE, CANCELLED (closed first) or ERRORED (passive timeout).
 */
public abstract sealed class PassiveOperation extends AbstractOperation permits ReadableOperation, WritableOperation {

    private final PassiveWindow window;
    private final int peers;
    private RdmaMetadata metadata;
    private RdmaMetadata hexMetadata;

    PassiveOperation(Connector connector, OperationKind kind, List<Descriptor> localDescriptors) {
        this(connector, kind, localDescriptors, 1);
    }

    /** {@code peers}: how many peers' notifications complete the operation (fan-out readables), at least 1. */
    PassiveOperation(Connector connector, OperationKind kind, List<Descriptor> localDescriptors, int peers) {
        this(connector, kind, localDescriptors, peers, NotificationKeys.next(peers));
    }

    /** {@code key}: a new notification key's ASCII bytes, handed to the transport as they are. */
    private PassiveOperation(Connector connector, OperationKind kind, List<Descriptor> localDescriptors, int peers,
            byte[] key) {
        super(connector, kind, checkLocal(localDescriptors), new String(key, StandardCharsets.ISO_8859_1));
        if (peers < 1) {
            throw new IllegalArgumentException("Argument `readers` must be at least 1, was " + peers + ".");
        }
        this.peers = peers;
        acquireLocal();
        TransferOp access = kind == OperationKind.READ ? TransferOp.READ : TransferOp.WRITE;
        PassiveWindow opened;
        try {
            opened = connection().agent().openWindow(access, localRegions(), key, peers);
        } catch (TransportException e) {
            TransportFailureException failure = TransportFailureException.of(connector.backendName(),
                    "open the window of a " + getClass().getSimpleName(), e);
            finish(OperationStatus.ERRORED, failure);
            throw failure;
        } catch (RuntimeException e) {
            finish(OperationStatus.ERRORED, e);
            throw e;
        }
        this.window = opened;
        setStatus(OperationStatus.INITIALIZED);
        Duration passiveTimeout = connector.options().passiveTimeout();
        if (passiveTimeout != null) {
            connector.deadlines().arm(deadline, passiveTimeout);
        }
        window.onNotified(endListener);
    }

    @Override
    final void expire() {
        finish(OperationStatus.ERRORED, new TransferTimeoutException(getClass().getSimpleName() + " was not completed by "
                + (peers == 1 ? "a peer" : "its peers") + " within the passive timeout of "
                + connector.options().passiveTimeout()
                + (peers == 1 ? "" : " (" + peersDone() + " of " + peers + " notified)")));
    }

    /**
     * What the peer needs: this side's descriptors, agent metadata ({@code b64:} + zlib), the notification
     * key and the kind. Send it as JSON ({@link RdmaMetadata#toJson()} or any Jackson mapper). Built once.
     */
    public final synchronized RdmaMetadata metadata() {
        if (metadata == null) {
            metadata = connection().publish(localSerialized(), registrationRegions(localDescriptors()), notificationKey(),
                    operationKind());
        }
        return metadata;
    }

    /**
     * As {@link #metadata()}, with the agent metadata in the legacy form (lowercase hex of the zlib bytes, no prefix)
     * that Python's {@code metadata(hex_encode=True)} writes, for peers that predate the {@code b64:} form. Built once;
     * unlike Python, asking for one form never returns the other.
     */
    public final synchronized RdmaMetadata hexEncodedMetadata() {
        if (hexMetadata == null) {
            hexMetadata = RdmaMetadata.ofHexEncoded(localSerialized(),
                    connection().metadata(registrationRegions(localDescriptors())), notificationKey(), operationKind());
        }
        return hexMetadata;
    }

    private List<SerializedDescriptor> localSerialized() {
        List<Descriptor> locals = localDescriptors();
        if (locals.size() == 1) {
            return List.of(locals.get(0).metadata());
        }
        List<SerializedDescriptor> descriptors = new ArrayList<>(locals.size());
        for (Descriptor descriptor : locals) {
            descriptors.add(descriptor.metadata());
        }
        return descriptors;
    }

    /**
     * The registrations the descriptors lie in, each once (a block list's slices of one pool: one): the agent's
     * metadata needs to describe these only.
     */
    private static List<MemoryRegion> registrationRegions(List<Descriptor> locals) {
        if (locals.size() == 1) {
            return List.of(locals.get(0).registrationRegion());
        }
        List<MemoryRegion> regions = new ArrayList<>(1);
        java.util.Set<MemoryRegion> seen = null;
        for (Descriptor descriptor : locals) {
            MemoryRegion region = descriptor.registrationRegion();
            if (!regions.isEmpty() && regions.get(regions.size() - 1) == region) {
                continue; // the common case, checked without hashing
            }
            if (seen == null) {
                seen = new java.util.HashSet<>();
            }
            if (seen.add(region)) {
                regions.add(region);
            }
        }
        return regions;
    }

    /** How many peers' notifications complete this operation: 1, or the readers of a fan-out readable. */
    final int peers() {
        return peers;
    }

    /** How many peers have notified so far; after the end, how many did. */
    final int peersDone() {
        PassiveWindow opened = window;
        return opened == null ? 0 : opened.notificationsReceived();
    }

    @Override
    final CompletableFuture<Void> transportReleased() {
        return window == null ? CompletableFuture.completedFuture(null) : window.released();
    }

    @Override
    final MemoryKeeper memoryKeeper() {
        PassiveWindow opened = window;
        return opened != null && opened.releasedWithoutNotification() ? opened::keepUntilAgentCloses : null;
    }

    @Override
    public final boolean isPassive() {
        return true;
    }

    @Override
    public final @Nullable String transferPath() {
        return window == null ? null : window.path();
    }

    @Override
    final void releaseTransport() {
        connector.deadlines().disarm(deadline);
        // The window may be null when opening it failed in the constructor.
        if (window != null) {
            window.close();
        }
    }
}
