package io.nixlconnect;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicReference;

/**
 * What every operation has: a kind, local descriptors, a notification key, a status that ends in
 * COMPLETE, CANCELLED or ERRORED, and ways to wait for that end (blocking or through a
 * {@link CompletableFuture}). Operations are {@link AutoCloseable}: closing an unfinished operation
 * cancels it; every resource (registrations, windows, peer references) is released as soon as the
 * operation ends, whether or not it is closed.
 */
public abstract sealed class AbstractOperation implements AutoCloseable permits PassiveOperation, ActiveOperation {

    final Connector connector;
    final Connection connection;
    private final OperationKind kind;
    private final List<Descriptor> localDescriptors;
    private final String notificationKey;
    private final DeviceKind deviceKind;
    private final long totalBytes;
    private final AtomicReference<OperationStatus> status = new AtomicReference<>(OperationStatus.UNINITIALIZED);
    private final CompletableFuture<Void> done = new CompletableFuture<>();
    private final List<RegistrationCache.Lease> leases = new ArrayList<>();
    private final long startNanos = System.nanoTime();
    private volatile long endNanos;
    private volatile Throwable failure;
    private int usesAcquired;

    /** Book-keeping with the connector: NEW until counted in flight, ENDED once finished. */
    static final int NEW = 0;
    static final int COUNTED = 1;
    static final int ENDED = 2;
    final java.util.concurrent.atomic.AtomicInteger tracking = new java.util.concurrent.atomic.AtomicInteger(NEW);

    AbstractOperation(Connector connector, OperationKind kind, List<Descriptor> localDescriptors, String notificationKey) {
        this.connector = connector;
        this.connection = connector.defaultConnection();
        this.kind = kind;
        this.localDescriptors = List.copyOf(localDescriptors);
        this.notificationKey = notificationKey;
        this.deviceKind = localDescriptors.get(0).device().kind();
        long total = 0;
        for (Descriptor descriptor : localDescriptors) {
            total = Math.addExact(total, descriptor.size());
        }
        this.totalBytes = total;
    }

    /**
     * Validates a local descriptor list the way Python Dynamo does: not empty, no nulls, one memory kind.
     */
    static List<Descriptor> checkLocal(List<Descriptor> descriptors) {
        if (descriptors == null) {
            throw new IllegalArgumentException(
                    "Argument `local_descriptors` must be `Descriptor` or `list[Descriptor]`, was null.");
        }
        if (descriptors.isEmpty()) {
            throw new IllegalArgumentException("Argument `local_descriptors` must not be an empty list.");
        }
        DeviceKind first = null;
        for (int i = 0; i < descriptors.size(); i++) {
            Descriptor descriptor = descriptors.get(i);
            if (descriptor == null) {
                throw new IllegalArgumentException("Argument `local_descriptors` must not contain null (index " + i + ").");
            }
            if (descriptor.isRemote()) {
                throw new IllegalArgumentException("Argument `local_descriptors` index " + i
                        + " is a remote descriptor (from fromSerialized); local descriptors must describe this process's memory.");
            }
            if (first == null) {
                first = descriptor.device().kind();
            } else if (first != descriptor.device().kind()) {
                throw new IllegalArgumentException("All local descriptors must have the same memory type.");
            }
        }
        return descriptors;
    }

    /** Marks the descriptors in use and registers them; undone by {@link #releaseLocal()}. */
    final void acquireLocal() {
        try {
            for (Descriptor descriptor : localDescriptors) {
                descriptor.acquireUse();
                usesAcquired++;
            }
            RegistrationCache cache = connection.registrations();
            for (Descriptor descriptor : localDescriptors) {
                leases.add(cache.acquire(descriptor.registrationRegion()));
            }
        } catch (RuntimeException e) {
            releaseLocal();
            throw e;
        }
    }

    private void releaseLocal() {
        synchronized (leases) {
            for (RegistrationCache.Lease lease : leases) {
                lease.release();
            }
            leases.clear();
            for (int i = 0; i < usesAcquired; i++) {
                localDescriptors.get(i).releaseUse();
            }
            usesAcquired = 0;
        }
    }

    final void setStatus(OperationStatus newStatus) {
        status.set(newStatus);
    }

    /**
     * Moves to a terminal status once; the first caller wins. Releases resources, then completes the
     * future and tells listeners.
     *
     * @return whether this call ended the operation
     */
    final boolean finish(OperationStatus terminal, Throwable cause) {
        OperationStatus current;
        do {
            current = status.get();
            if (current.isTerminal()) {
                return false;
            }
        } while (!status.compareAndSet(current, terminal));
        endNanos = System.nanoTime();
        failure = cause;
        try {
            releaseTransport();
        } finally {
            releaseLocal();
            connector.operationEnded(this);
        }
        if (terminal == OperationStatus.COMPLETE) {
            done.complete(null);
        } else {
            done.completeExceptionally(failureException(terminal, cause));
        }
        return true;
    }

    private TransferException failureException(OperationStatus terminal, Throwable cause) {
        if (cause instanceof TransferException transfer && transfer.status() == terminal) {
            return transfer;
        }
        String what = terminal == OperationStatus.CANCELLED ? "was cancelled" : "failed";
        String message = getClass().getSimpleName() + " " + what + " (notification key '" + notificationKey + "')"
                + (cause == null ? "" : ": " + cause.getMessage());
        return new TransferException(terminal, message, cause);
    }

    /** Releases what the subclass holds in the transport (transfer handle, window, peer reference). */
    abstract void releaseTransport();

    /** READ or WRITE. */
    public final OperationKind operationKind() {
        return kind;
    }

    public final OperationStatus status() {
        return status.get();
    }

    /** The notification that completes the passive side. */
    public final String notificationKey() {
        return notificationKey;
    }

    /** The local descriptors, in order. */
    public final List<Descriptor> localDescriptors() {
        return localDescriptors;
    }

    /** Memory kind of the local descriptors. */
    public final DeviceKind deviceKind() {
        return deviceKind;
    }

    /** Bytes over all local descriptors. */
    public final long totalBytes() {
        return totalBytes;
    }

    public final Connector connector() {
        return connector;
    }

    /** Time from creation to the end, or to now while running. */
    public final Duration duration() {
        long end = endNanos;
        return Duration.ofNanos((end == 0 ? System.nanoTime() : end) - startNanos);
    }

    /**
     * How the bytes moved, as the transport reports it: {@code transport} ({@code embedded} or {@code nixl}) always;
     * for an active operation once it has ended, {@code backend} (the NIXL plugin NIXL chose, e.g. {@code UCX}, or
     * {@code tcp} on the embedded transport) and, on NIXL, its telemetry of the transfer
     * ({@code telemetry.postMicros}, {@code telemetry.transferMicros}, {@code telemetry.bytes},
     * {@code telemetry.descriptors}); the embedded transport adds the {@code peer} address. A passive operation
     * learns nothing of the path its peer chose. Never null; unmodifiable.
     */
    public final java.util.Map<String, Object> attributes() {
        java.util.Map<String, Object> reported = transferAttributes();
        if (reported.containsKey("transport")) {
            return reported;
        }
        java.util.Map<String, Object> all = new java.util.LinkedHashMap<>();
        all.put("transport", connector.backendName());
        all.putAll(reported);
        return java.util.Collections.unmodifiableMap(all);
    }

    /** What the transport reported about this operation's transfer; empty where there is none. */
    java.util.Map<String, Object> transferAttributes() {
        return java.util.Map.of();
    }

    /** Why the operation errored or was cancelled; {@code null} otherwise. */
    public final Throwable failure() {
        return failure;
    }

    /**
     * A future that completes when the operation completes, or exceptionally with a
     * {@link TransferException} when it errors or is cancelled. Each call returns a new dependent future,
     * so completing or cancelling it does not affect the operation.
     */
    public final CompletableFuture<Void> completion() {
        return done.copy();
    }

    /**
     * Blocks until the operation ends.
     *
     * @throws TransferException if it errored or was cancelled (or the thread was interrupted)
     */
    public final void waitForCompletion() {
        try {
            done.get();
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new TransferException(status(), "Interrupted while waiting for " + this, e);
        } catch (ExecutionException e) {
            throw (TransferException) e.getCause();
        }
    }

    /**
     * Blocks until the operation ends or {@code timeout} elapses; the operation itself goes on after a
     * timed-out wait (close or cancel it to stop it).
     *
     * @throws TransferTimeoutException if the time elapsed first
     * @throws TransferException        if it errored or was cancelled
     */
    public final void waitForCompletion(Duration timeout) {
        try {
            done.get(timeout.toNanos(), TimeUnit.NANOSECONDS);
        } catch (TimeoutException e) {
            throw new TransferTimeoutException(status(), getClass().getSimpleName() + " did not end within " + timeout
                    + " (status " + status() + ", notification key '" + notificationKey + "')");
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new TransferException(status(), "Interrupted while waiting for " + this, e);
        } catch (ExecutionException e) {
            throw (TransferException) e.getCause();
        }
    }

    /** Cancels the operation if it has not ended, and releases everything it holds. Idempotent. */
    @Override
    public void close() {
        finish(OperationStatus.CANCELLED, null);
    }

    @Override
    public String toString() {
        return getClass().getSimpleName() + "[kind=" + kind + ", status=" + status() + ", descriptors="
                + localDescriptors.size() + ", bytes=" + totalBytes + ", notificationKey='" + notificationKey + "']";
    }
}
