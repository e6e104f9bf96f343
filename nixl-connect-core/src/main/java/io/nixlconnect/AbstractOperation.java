package io.nixlconnect;

import io.nixlconnect.transport.EndListener;
import io.nixlconnect.transport.MemoryRegion;
import io.nixlconnect.transport.TransferAttributes;
import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.jspecify.annotations.Nullable;

/**
 * What every {@link Operation} has: its book-keeping with the connector, local registrations, the status
 * machine and the waits. Not an API: callers see {@link Operation} and the four concrete operations. Its public
 * methods are not final so that javac gives the public subclasses bridges to them (reflection, Spring
 * expressions); nothing outside this package can subclass it.
 */
abstract sealed class AbstractOperation implements Operation permits PassiveOperation, ActiveOperation {

    final Connector connector;
    private final OperationKind kind;
    private final List<Descriptor> localDescriptors;
    private final String notificationKey;
    private final long totalBytes;
    private volatile OperationStatus status = OperationStatus.UNINITIALIZED;
    /**
     * Guards the release of the operation's resources and the waits for its end (not the operation itself: callers
     * may lock that).
     */
    final Object lock = new Object();
    /** The operation's time limit; the subclass arms it when the operation starts. */
    final Deadlines.Deadline deadline = new Deadlines.Deadline(this::expire);
    /** Told by the transport when the transfer ended (active) or the window's notifications arrived (passive). */
    final EndListener endListener = error -> finish(error == null ? OperationStatus.COMPLETE : OperationStatus.ERRORED,
            error);
    /** Made only when {@link #completion()} is asked for: waits use {@code lock}. Guarded by lock. */
    private CompletableFuture<Void> done;
    /** What waits throw once the operation has ended other than COMPLETE. Guarded by lock. */
    private TransferException outcome;
    /** Whether the operation has ended and told its waiters. Guarded by lock. */
    private boolean settled;
    /** The registrations held for the first {@code held} local descriptors (guarded by lock once released). */
    private RegistrationCache heldIn;
    private int held;
    private final long startNanos = System.nanoTime();
    private volatile long endNanos;
    private volatile Throwable failure;
    private int usesAcquired;
    private boolean draining; // guarded by lock

    /** The connector's connection. */
    final Connection connection() {
        return connector.connection();
    }

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
        this.kind = kind;
        this.localDescriptors = List.copyOf(localDescriptors);
        this.notificationKey = notificationKey;
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

    /**
     * The local descriptors' regions as an immutable list the transport may keep (see {@link
     * io.nixlconnect.transport.TransportAgent#postTransfer}): for one descriptor, the list it made once.
     */
    final List<MemoryRegion> localRegions() {
        if (localDescriptors.size() == 1) {
            return localDescriptors.get(0).regionList();
        }
        MemoryRegion[] regions = new MemoryRegion[localDescriptors.size()];
        for (int i = 0; i < regions.length; i++) {
            regions[i] = localDescriptors.get(i).region();
        }
        return List.of(regions);
    }

    /** Marks the descriptors in use and registers them; undone by {@link #releaseLocal()}. */
    final void acquireLocal() {
        try {
            DescriptorUses.acquire(localDescriptors); // all or none
            usesAcquired = localDescriptors.size();
            // Counted holds: the operation knows which regions it holds, and releases exactly those.
            RegistrationCache cache = connection().registrations();
            heldIn = cache;
            // A block list's slices of one pool share its registration: one hold of n, not n holds (a lookup each).
            int count = localDescriptors.size();
            while (held < count) {
                MemoryRegion region = localDescriptors.get(held).registrationRegion();
                int run = sameRegistrationRun(held, region);
                cache.hold(region, run);
                held += run;
            }
        } catch (RuntimeException e) {
            releaseLocal();
            throw e;
        }
    }

    /** How many local descriptors from {@code from} on have {@code region} (the same object) as their registration. */
    private int sameRegistrationRun(int from, MemoryRegion region) {
        int end = from + 1;
        while (end < localDescriptors.size() && localDescriptors.get(end).registrationRegion() == region) {
            end++;
        }
        return end - from;
    }

    private void releaseLocal() {
        synchronized (lock) {
            for (int i = 0; i < held; ) {
                MemoryRegion region = localDescriptors.get(i).registrationRegion();
                int run = Math.min(sameRegistrationRun(i, region), held - i);
                heldIn.release(region, run);
                i += run;
            }
            held = 0;
            if (draining) {
                MemoryKeeper keeper = memoryKeeper();
                for (int i = 0; i < usesAcquired; i++) {
                    localDescriptors.get(i).endDrain(keeper);
                }
            } else {
                DescriptorUses.release(localDescriptors, usesAcquired);
            }
            usesAcquired = 0;
            draining = false;
        }
    }

    /** The operation ended but the transport has not released its memory yet: live uses become draining uses. */
    private void drainLocal() {
        synchronized (lock) {
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
    MemoryKeeper memoryKeeper() {
        return null;
    }

    final void setStatus(OperationStatus newStatus) {
        status = newStatus;
    }

    /** Moves the status from {@code expected} to {@code next}; false if it was not {@code expected}. */
    final boolean compareAndSetStatus(OperationStatus expected, OperationStatus next) {
        return STATUS.compareAndSet(this, expected, next);
    }

    /**
     * Set, under {@code lock}, which also guards the release, once the thread that ended the operation has released
     * (or started draining) its resources.
     */
    private boolean resourcesHandedBack; // guarded by lock
    private volatile Thread finishingThread;

    /**
     * Moves to a terminal status once; the first caller wins. Releases resources, then tells waiters (and the
     * future, if one was asked for) and listeners.
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
        cause = publicFailure(cause);
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
            synchronized (lock) {
                resourcesHandedBack = true;
                lock.notifyAll();
            }
        }
        TransferException thrown = terminal == OperationStatus.COMPLETE ? null : failureException(terminal, cause);
        CompletableFuture<Void> future;
        synchronized (lock) {
            outcome = thrown;
            settled = true;
            future = done;
            lock.notifyAll();
        }
        if (future != null) {
            settle(future, thrown);
        }
        return true;
    }

    /**
     * What a caller may see of a failure: the API's own exceptions as they are, anything else (the SPI's
     * {@code TransportException}, a transport's I/O error) wrapped in a {@link TransportFailureException} naming the
     * transport, with it as the cause.
     */
    private @Nullable Throwable publicFailure(@Nullable Throwable cause) {
        if (cause == null || (cause instanceof NixlConnectException
                && cause.getClass().getPackageName().equals(NixlConnectException.class.getPackageName()))) {
            return cause;
        }
        String backend = connector.backendName();
        return new TransportFailureException(backend, "The " + backend + " transport failed the transfer: "
                + cause.getMessage(), cause);
    }

    private static void settle(CompletableFuture<Void> future, TransferException thrown) {
        if (thrown == null) {
            future.complete(null);
        } else {
            future.completeExceptionally(thrown);
        }
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
        return localDescriptors.get(0).device().kind(); // all alike (checkLocal)
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
    public TransferAttributes attributes() {
        TransferAttributes reported = transferAttributes();
        return reported != null ? reported : TransferAttributes.of(connector.backendName());
    }

    /** What the transport reported about this operation's transfer; null where there is none. */
    @Nullable TransferAttributes transferAttributes() {
        return null;
    }

    @Override
    public @Nullable Throwable failure() {
        return failure;
    }

    @Override
    public CompletableFuture<Void> completion() {
        CompletableFuture<Void> future;
        synchronized (lock) {
            future = done;
            if (future == null) {
                done = future = new CompletableFuture<>();
                if (settled) {
                    settle(future, outcome); // nothing depends on it yet: completing it under the monitor is safe
                }
            }
        }
        return future.copy();
    }

    @Override
    public void waitForCompletion() {
        beforeWaiting();
        awaitEnd(null);
    }

    @Override
    public void waitForCompletion(Duration timeout) {
        awaitEnd(timeout);
    }

    /** Blocks until the operation has ended (or {@code timeout}, unless null, has elapsed) and throws its failure. */
    private void awaitEnd(Duration timeout) {
        TransferException thrown;
        synchronized (lock) {
            try {
                long deadline = timeout == null ? 0 : System.nanoTime() + timeout.toNanos();
                while (!settled) {
                    if (timeout == null) {
                        lock.wait();
                        continue;
                    }
                    long left = deadline - System.nanoTime();
                    if (left <= 0) {
                        OperationStatus now = status();
                        throw new WaitTimeoutException(now, getClass().getSimpleName() + " did not end within " + timeout
                                + " (status " + now + ", notification key fingerprint " + notificationKeyFingerprint()
                                + "); it goes on");
                    }
                    TimeUnit.NANOSECONDS.timedWait(lock, left);
                }
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                throw new TransferException(status(), "Interrupted while waiting for " + this, e);
            }
            thrown = outcome;
        }
        if (thrown != null) {
            throw thrown;
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
        synchronized (lock) {
            while (!resourcesHandedBack) {
                try {
                    lock.wait();
                } catch (InterruptedException e) {
                    interrupted = true;
                }
            }
        }
        if (interrupted) {
            Thread.currentThread().interrupt();
        }
    }

    /** Ends the operation ERRORED at its time limit (on the timer thread). */
    abstract void expire();

    @Override
    public String toString() {
        return getClass().getSimpleName() + "[kind=" + kind + ", status=" + status() + ", descriptors="
                + localDescriptors.size() + ", bytes=" + totalBytes + ", notificationKeyFingerprint="
                + notificationKeyFingerprint() + "]";
    }
}
