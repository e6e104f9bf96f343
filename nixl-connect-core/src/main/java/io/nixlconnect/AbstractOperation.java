package io.nixlconnect;

import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.function.Consumer;

/**
 * What every {@link Operation} has: its book-keeping with the connector, local registrations, the status
 * machine and the waits. Not an API: callers see {@link Operation} and the four concrete operations. Its public
 * methods are not final so that javac gives the public subclasses bridges to them (reflection, Spring
 * expressions); nothing outside this package can subclass it.
 */
abstract sealed class AbstractOperation implements Operation permits PassiveOperation, ActiveOperation {

    final Connector connector;
    final Connection connection;
    private final OperationKind kind;
    private final List<Descriptor> localDescriptors;
    private final String notificationKey;
    private final DeviceKind deviceKind;
    private final long totalBytes;
    // Plain volatile fields updated through VarHandles: an Atomic* wrapper each was one more object per operation.
    private volatile OperationStatus status = OperationStatus.UNINITIALIZED;
    private final CompletableFuture<Void> done = new CompletableFuture<>();
    private final List<RegistrationCache.Lease> leases;
    private final long startNanos = System.nanoTime();
    private volatile long endNanos;
    private volatile Throwable failure;
    private int usesAcquired;
    private boolean draining; // guarded by leases

    /** Book-keeping with the connector: NEW until counted in flight, ENDED once finished. */
    static final int NEW = 0;
    static final int COUNTED = 1;
    static final int ENDED = 2;
    private volatile int tracking = NEW;
    private static final VarHandle STATUS;
    private static final VarHandle TRACKING;

    static {
        try {
            MethodHandles.Lookup lookup = MethodHandles.lookup();
            STATUS = lookup.findVarHandle(AbstractOperation.class, "status", OperationStatus.class);
            TRACKING = lookup.findVarHandle(AbstractOperation.class, "tracking", int.class);
        } catch (ReflectiveOperationException e) {
            throw new ExceptionInInitializerError(e);
        }
    }

    /** Moves the book-keeping state from {@code expected} to {@code next}; false if it was not {@code expected}. */
    final boolean compareAndSetTracking(int expected, int next) {
        return TRACKING.compareAndSet(this, expected, next);
    }

    /** Sets the book-keeping state, returning the previous one. */
    final int getAndSetTracking(int next) {
        return (int) TRACKING.getAndSet(this, next);
    }

    AbstractOperation(Connector connector, OperationKind kind, List<Descriptor> localDescriptors, String notificationKey) {
        this.connector = connector;
        this.connection = connector.connection();
        this.kind = kind;
        this.localDescriptors = List.copyOf(localDescriptors);
        this.leases = new ArrayList<>(localDescriptors.size());
        this.notificationKey = notificationKey;
        this.deviceKind = localDescriptors.get(0).device().kind();
        long total = 0;
        for (Descriptor descriptor : localDescriptors) {
            total = Math.addExact(total, descriptor.size());
        }
        this.totalBytes = total;
    }

    /**
     * Validates a local descriptor list with Python Dynamo's rules: not empty, no nulls, one memory kind.
     */
    static List<Descriptor> checkLocal(List<Descriptor> descriptors) {
        if (descriptors == null) {
            throw new IllegalArgumentException("localDescriptors must not be null");
        }
        if (descriptors.isEmpty()) {
            throw new IllegalArgumentException("localDescriptors must not be empty");
        }
        DeviceKind first = null;
        for (int i = 0; i < descriptors.size(); i++) {
            Descriptor descriptor = descriptors.get(i);
            if (descriptor == null) {
                throw new IllegalArgumentException("localDescriptors must not contain null (index " + i + ")");
            }
            if (descriptor.isRemote()) {
                throw new IllegalArgumentException("localDescriptors[" + i + "] is a remote descriptor (from "
                        + "Descriptor.fromSerialized); local descriptors must describe this process's memory");
            }
            if (first == null) {
                first = descriptor.device().kind();
            } else if (first != descriptor.device().kind()) {
                throw new IllegalArgumentException("All localDescriptors must have the same memory kind: index 0 is "
                        + first + ", index " + i + " is " + descriptor.device().kind());
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
            Consumer<AutoCloseable> keeper = draining ? memoryKeeper() : null;
            for (int i = 0; i < usesAcquired; i++) {
                if (draining) {
                    localDescriptors.get(i).endDrain(keeper);
                } else {
                    localDescriptors.get(i).releaseUse();
                }
            }
            usesAcquired = 0;
            draining = false;
        }
    }

    /** The operation ended but the transport has not released its memory yet: live uses become draining uses. */
    private void drainLocal() {
        synchronized (leases) {
            for (int i = 0; i < usesAcquired; i++) {
                localDescriptors.get(i).beginDrain();
            }
            draining = true;
        }
    }

    /**
     * Completes when the transport no longer touches the local memory (see {@link
     * io.nixlconnect.transport.PassiveWindow#released()}); until then the registrations are kept.
     */
    CompletableFuture<Void> transportReleased() {
        return RELEASED;
    }

    /** Already complete, shared: only ever asked whether it is done. */
    private static final CompletableFuture<Void> RELEASED = CompletableFuture.completedFuture(null);

    /**
     * Once {@link #transportReleased()} completed: null when no peer can reach the memory any more, else
     * where memory the descriptors would free must go instead (the transport keeps it until its agent closes).
     */
    Consumer<AutoCloseable> memoryKeeper() {
        return null;
    }

    final void setStatus(OperationStatus newStatus) {
        status = newStatus;
    }

    /**
     * Set, under the {@code leases} monitor that also guards the release, once the thread that ended the operation has
     * released (or started draining) its resources; a latch for this was two more objects per operation.
     */
    private boolean resourcesHandedBack; // guarded by leases
    private volatile Thread finishingThread;

    /**
     * Moves to a terminal status once; the first caller wins. Releases resources, then completes the
     * future and tells listeners.
     *
     * @return whether this call ended the operation
     */
    final boolean finish(OperationStatus terminal, Throwable cause) {
        OperationStatus current;
        do {
            current = status;
            if (current.isTerminal()) {
                return false;
            }
        } while (!STATUS.compareAndSet(this, current, terminal));
        finishingThread = Thread.currentThread();
        endNanos = System.nanoTime();
        failure = cause;
        try {
            releaseTransport();
        } finally {
            CompletableFuture<Void> released = transportReleased();
            if (released.isDone()) {
                releaseLocal();
            } else {
                // A peer's transfer may still touch the memory: it stays registered, and its descriptors
                // refuse to free it (Descriptor.close() waits), until the transport releases it.
                drainLocal();
                released.whenComplete((ignored, error) -> releaseLocal());
            }
            connector.operationEnded(this);
            synchronized (leases) {
                resourcesHandedBack = true;
                leases.notifyAll();
            }
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
        String message = getClass().getSimpleName() + " " + what + " (notification key fingerprint "
                + notificationKeyFingerprint() + ")"
                + (cause == null ? "" : ": " + cause.getMessage());
        return new TransferException(terminal, message, cause);
    }

    /** Called by {@link #waitForCompletion()} before it blocks; the active side may move its bytes right here. */
    void beforeWaiting() {
    }

    /** Releases what the subclass holds in the transport (transfer handle, window). */
    abstract void releaseTransport();

    @Override
    public OperationKind operationKind() {
        return kind;
    }

    @Override
    public OperationStatus status() {
        return status;
    }

    @Override
    public String notificationKey() {
        return notificationKey;
    }

    /** Computed on demand: only messages, logs and observations need it, not the transfer. */
    @Override
    public String notificationKeyFingerprint() {
        return NotificationKeys.fingerprint(notificationKey);
    }

    @Override
    public List<Descriptor> localDescriptors() {
        return localDescriptors;
    }

    @Override
    public DeviceKind deviceKind() {
        return deviceKind;
    }

    @Override
    public long totalBytes() {
        return totalBytes;
    }

    @Override
    public Connector connector() {
        return connector;
    }

    @Override
    public Duration duration() {
        long end = endNanos;
        return Duration.ofNanos((end == 0 ? System.nanoTime() : end) - startNanos);
    }

    @Override
    public Map<String, Object> attributes() {
        Map<String, Object> reported = transferAttributes();
        if (reported.containsKey("transport")) {
            return reported;
        }
        Map<String, Object> all = new LinkedHashMap<>();
        all.put("transport", connector.backendName());
        all.putAll(reported);
        return Collections.unmodifiableMap(all);
    }

    /** What the transport reported about this operation's transfer; empty where there is none. */
    Map<String, Object> transferAttributes() {
        return Map.of();
    }

    @Override
    public Throwable failure() {
        return failure;
    }

    @Override
    public CompletableFuture<Void> completion() {
        return done.copy();
    }

    @Override
    public void waitForCompletion() {
        beforeWaiting();
        try {
            done.get();
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new TransferException(status(), "Interrupted while waiting for " + this, e);
        } catch (ExecutionException e) {
            throw (TransferException) e.getCause();
        }
    }

    @Override
    public void waitForCompletion(Duration timeout) {
        try {
            done.get(timeout.toNanos(), TimeUnit.NANOSECONDS);
        } catch (TimeoutException e) {
            OperationStatus now = status();
            throw new WaitTimeoutException(now, getClass().getSimpleName() + " did not end within " + timeout
                    + " (status " + now + ", notification key fingerprint " + notificationKeyFingerprint()
                    + "); it goes on");
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new TransferException(status(), "Interrupted while waiting for " + this, e);
        } catch (ExecutionException e) {
            throw (TransferException) e.getCause();
        }
    }

    @Override
    public void close() {
        if (!finish(OperationStatus.CANCELLED, null) && finishingThread != Thread.currentThread()) {
            // Another thread (a completion on the progress thread) won the race: wait until it has handed
            // the descriptors back, so that Descriptor.close() right after this close() does not find them in use.
            awaitResourcesHandedBack();
        }
    }

    private void awaitResourcesHandedBack() {
        boolean interrupted = false;
        synchronized (leases) {
            while (!resourcesHandedBack) {
                try {
                    leases.wait();
                } catch (InterruptedException e) {
                    interrupted = true;
                }
            }
        }
        if (interrupted) {
            Thread.currentThread().interrupt();
        }
    }

    @Override
    public String toString() {
        return getClass().getSimpleName() + "[kind=" + kind + ", status=" + status() + ", descriptors="
                + localDescriptors.size() + ", bytes=" + totalBytes + ", notificationKeyFingerprint="
                + notificationKeyFingerprint() + "]";
    }
}
