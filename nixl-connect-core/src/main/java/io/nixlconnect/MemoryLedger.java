package io.nixlconnect;

import com.sun.jna.Memory;
import io.nixlconnect.cuda.CudaBuffer;
import io.nixlconnect.cuda.LiveUse;
import io.nixlconnect.internal.NativeMemory;
import io.nixlconnect.transport.MemoryRegion;
import java.lang.ref.Reference;
import java.util.ArrayDeque;
import java.util.Deque;
import java.util.IdentityHashMap;
import java.util.Map;
import org.jspecify.annotations.Nullable;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The books of a descriptor's memory, kept apart from the {@link Descriptor} that is its view (address, size, device),
 * as Arrow keeps a buffer's reference counting and the memory it frees in a {@code ReferenceManager} apart from the
 * {@code ArrowBuf}: the live operations that use the memory, the registrations the descriptor holds, the operations a
 * transport has not released yet (drain), and the memory the descriptor owns, freed (or handed to a transport) once
 * nothing may touch it.
 *
 * <p>One ledger per descriptor. A slice's ledger keeps its own uses and registrations and reports each to the ledger of
 * its original, whose memory it is: the original refuses to close under them, and drains for them. Each ledger's
 * monitor guards its fields; a slice's ledger takes its own monitor, then its original's, never the reverse.
 */
final class MemoryLedger {

    private static final Logger log = LoggerFactory.getLogger(Descriptor.class);

    /** The descriptor whose books these are: named in messages; its address and size when pages are given back. */
    private final Descriptor descriptor;
    /** For a slice: the ledger of the original, whose memory and registration it shares; null otherwise. */
    private final @Nullable MemoryLedger original;
    /** What the descriptor describes: a GPU buffer is asked for a use per operation and registration. */
    private final @Nullable Object ref;
    /** Memory this descriptor frees on close: its own allocation, or a GPU buffer handed over with {@link Descriptor#owning}. */
    private @Nullable AutoCloseable owned;
    /** Live operations on this descriptor; an original's count includes those on its slices. */
    private int liveUses;
    /** Made at the first {@link #register}: most descriptors never hold a registration of their own. */
    private @Nullable Map<Connection, RegistrationCache.Lease> registrations;
    /**
     * Per registration from {@link #register}, a use of the CUDA buffer described: a registered buffer cannot be freed,
     * so no later allocation at the same address can meet the stale registration.
     */
    private @Nullable Map<Connection, LiveUse> registrationUses;
    /** Live-use handles on a borrowed GPU buffer, one per live operation: it cannot be freed under us. */
    private @Nullable Deque<LiveUse> bufferUses;
    private boolean closed;
    /** Registrations of this memory that slices hold ({@code registerMemory} on a slice): it cannot close under them. */
    private int sliceRegistrations;
    /** Ended operations whose memory the transport has not released yet (see {@link #beginDrain()}). */
    private int drainingUses;
    /** Set when a drained operation's memory may still be reached by a stalled peer (see {@link #endDrain}). */
    private @Nullable MemoryKeeper memoryKeeper;
    /**
     * Closed while a transport may still touch its memory, which this descriptor owns: {@link #close()} returned at
     * once, and the last {@link #endDrain} frees the memory, or hands it to the transport.
     */
    private boolean freeWhenDrained;
    /** Whether a transport already keeps this memory reachable until its agent closes (see {@link #endDrain}). */
    private boolean reachabilityKept;
    private @Nullable Map<Connection, LiveUse> usesToEndWhenDrained;

    MemoryLedger(Descriptor descriptor, @Nullable MemoryLedger original, @Nullable Object ref) {
        this.descriptor = descriptor;
        this.original = original;
        this.ref = ref;
    }

    /** Makes {@code memory} this descriptor's to free on {@link #close()}; called before the descriptor is handed out. */
    void own(AutoCloseable memory) {
        owned = memory;
    }

    /** Holds a registration of {@code region} (for a slice its original's) with {@code connection} until close. Idempotent. */
    synchronized void register(Connection connection, MemoryRegion region) {
        requireOpen();
        if (registrations == null) {
            registrations = new IdentityHashMap<>();
        }
        if (registrations.containsKey(connection)) {
            return;
        }
        if (original != null) {
            original.holdForSlice();
        }
        LiveUse use = null;
        try {
            use = ref instanceof CudaBuffer buffer ? buffer.acquireUse() : null; // refused once freed
            registrations.put(connection, connection.registrations().acquire(region));
        } catch (RuntimeException | Error e) {
            if (use != null) {
                use.close();
            }
            if (original != null) {
                original.releaseForSlice();
            }
            throw e;
        }
        if (use != null) {
            if (registrationUses == null) {
                registrationUses = new IdentityHashMap<>();
            }
            registrationUses.put(connection, use);
        }
    }

    synchronized boolean isRegistered(Connection connection) {
        return registrations != null && registrations.containsKey(connection);
    }

    /**
     * Releases this descriptor's registrations and frees what it owns, as {@link Descriptor#close()} says: waits for
     * the transports to release borrowed memory, hands owned memory to the last drain to end.
     */
    void close() {
        Map<Connection, RegistrationCache.Lease> toRelease;
        Map<Connection, LiveUse> usesToEnd;
        boolean deferred;
        synchronized (this) {
            if (closed) {
                return;
            }
            if (liveUses > 0) {
                throw inUse();
            }
            // Memory this descriptor owns is nobody else's to free: rather than block the caller until the transport
            // releases it (up to the drain limit), hand it to the last drain to end.
            deferred = drainingUses > 0 && owned != null && original == null && sliceRegistrations == 0;
            if (!deferred) {
                awaitDrained();
            }
            if (closed) {
                return;
            }
            if (liveUses > 0) {
                throw inUse(); // an operation began while this waited for the drain (wait lets go of the monitor)
            }
            if (sliceRegistrations > 0) {
                // A registration of freed memory would stay reachable by peers: refuse, as for a live operation.
                throw new IllegalStateException("Descriptor " + descriptor + " is still registered through "
                        + sliceRegistrations + " of its slices (registerMemory); close them first");
            }
            closed = true;
            toRelease = registrations == null ? Map.of() : registrations;
            registrations = null;
            usesToEnd = registrationUses == null ? Map.of() : registrationUses;
            registrationUses = null;
            if (deferred) {
                freeWhenDrained = true;
                usesToEndWhenDrained = usesToEnd;
            }
        }
        toRelease.values().forEach(RegistrationCache.Lease::release);
        if (original != null) {
            for (int i = 0; i < toRelease.size(); i++) {
                original.releaseForSlice();
            }
        }
        if (!deferred) {
            free(usesToEnd);
        }
    }

    private IllegalStateException inUse() {
        return new IllegalStateException("Descriptor " + descriptor + " is still in use by " + liveUses
                + " live operation(s); close or wait for them first");
    }

    /**
     * Frees what this descriptor owns, once no transport touches it; after a drain limit (a peer that stalled could
     * still ask UCX over TCP for the memory) hands it to the transport instead, with the pages of host memory given
     * back to the system first: they stay mapped, so a late request reads zeros instead of freed memory.
     */
    private void free(Map<Connection, LiveUse> usesToEnd) {
        AutoCloseable toFree = owned;
        owned = null;
        MemoryKeeper keeper = memoryKeeper;
        if (keeper != null) {
            // The transport keeps the GPU buffer's uses and the memory this descriptor owns until its agent closes
            // (endDrain already handed it what keeps the memory reachable).
            usesToEnd.values().forEach(use -> keeper.keep(use, 0));
            if (toFree != null) {
                long size = descriptor.size();
                long released = toFree instanceof Memory && descriptor.device().kind() == DeviceKind.HOST
                        ? NativeMemory.releasePages(descriptor.ptr(), size) : 0;
                keeper.keep(toFree, size - released);
            }
            return;
        }
        usesToEnd.values().forEach(LiveUse::close); // deregistered: the buffer may be freed now
        if (toFree != null) {
            try {
                toFree.close();
            } catch (Exception e) {
                throw new IllegalStateException("Freeing the memory of " + descriptor + " failed", e);
            }
        }
    }

    /** Marks the memory as used by a live operation; refused once closed. */
    void acquireUse() {
        if (original == null) {
            acquireUses(1);
            return;
        }
        original.acquireUses(1); // the original then refuses to close (and so to free the memory) under us
        try {
            acquireSliceUse();
        } catch (RuntimeException | Error e) {
            original.releaseUses(1);
            throw e;
        }
    }

    void releaseUse() {
        if (original == null) {
            releaseUses(1);
            return;
        }
        releaseSliceUse();
        original.releaseUses(1);
    }

    /**
     * For an original (not a slice): marks it used by {@code count} descriptors of live operations, itself or as many
     * of its slices (each also marked with {@link #acquireSliceUse}). A block list of one buffer's slices takes this
     * monitor once, not once per slice ({@link DescriptorUses}). All or none: a refusal undoes what it took.
     */
    synchronized void acquireUses(int count) {
        requireOpen();
        if (ref instanceof CudaBuffer buffer) {
            if (bufferUses == null) {
                bufferUses = new ArrayDeque<>();
            }
            int acquired = 0;
            try {
                for (; acquired < count; acquired++) {
                    bufferUses.push(buffer.acquireUse()); // throws if the buffer was closed meanwhile
                }
            } catch (RuntimeException | Error e) {
                for (; acquired > 0; acquired--) {
                    bufferUses.pop().close();
                }
                throw e;
            }
        }
        liveUses += count;
    }

    synchronized void releaseUses(int count) {
        liveUses -= count;
        for (int i = 0; i < count && bufferUses != null; i++) {
            LiveUse use = bufferUses.poll();
            if (use != null) {
                use.close();
            }
        }
    }

    /** For a slice: marks it alone as used, once its original is marked with {@link #acquireUses}; refused once closed. */
    synchronized void acquireSliceUse() {
        requireOpen();
        liveUses++;
    }

    synchronized void releaseSliceUse() {
        liveUses--;
    }

    /**
     * An operation on this memory ended before the transport released it (a passive operation closed
     * while a peer's transfer may still be in flight): the memory must stay until {@link #endDrain}.
     */
    synchronized void beginDrain() {
        liveUses--;
        if (original != null) {
            original.beginDrain(); // the original's close waits for the drain: the memory is its
            return;
        }
        drainingUses++;
    }

    /**
     * The transport released the memory of an operation that {@link #beginDrain() drained}; a non-null
     * {@code keeper} says a stalled peer might still reach it, so {@link #close()} hands the memory to it
     * instead of freeing it.
     */
    synchronized void endDrain(@Nullable MemoryKeeper keeper) {
        if (original != null) {
            original.endDrain(keeper);
            return;
        }
        if (keeper != null) {
            memoryKeeper = keeper;
            // Also if this descriptor is never closed: its memory must not be freed by the garbage collector
            // (JNA's Memory, a direct buffer) while a stalled peer could still reach it. Once is enough: a pool
            // whose slices are published per request would otherwise leave one holder per aborted slice.
            if (!reachabilityKept) {
                reachabilityKept = true;
                Object keepReachable = owned != null ? owned : ref;
                keeper.keep(() -> Reference.reachabilityFence(keepReachable), 0);
            }
        }
        drainingUses--;
        LiveUse use = bufferUses == null ? null : bufferUses.poll();
        if (use != null && keeper != null) {
            keeper.keep(use::close, 0); // the borrowed GPU buffer stays unfreeable until the agent closes
        } else if (use != null) {
            use.close();
        }
        if (drainingUses == 0 && freeWhenDrained) {
            freeWhenDrained = false;
            Map<Connection, LiveUse> usesToEnd = usesToEndWhenDrained;
            usesToEndWhenDrained = null;
            try {
                free(usesToEnd);
            } catch (RuntimeException e) {
                log.warn("Freeing the memory of closed descriptor {} failed", descriptor, e);
            }
        }
        notifyAll();
    }

    /**
     * Waits (holding no lock but this monitor's wait) until no transport may touch the memory. Bounded:
     * the transport releases a drained window at the latest after its drain limit or when it closes.
     */
    private void awaitDrained() {
        boolean interrupted = false;
        while (drainingUses > 0) {
            try {
                wait();
            } catch (InterruptedException e) {
                interrupted = true;
            }
        }
        if (interrupted) {
            Thread.currentThread().interrupt();
        }
    }

    /** Refuses once this descriptor is closed. */
    synchronized void ensureOpen() {
        requireOpen();
    }

    /** Refuses once this descriptor is closed, or for a slice once its original is (the memory may be gone). */
    synchronized void ensureReadable() {
        requireOpen();
        if (original != null) {
            original.ensureUsable("read");
        }
    }

    private void requireOpen() {
        if (closed) {
            throw new IllegalStateException("Descriptor " + descriptor + " is closed");
        }
    }

    /** For the original of a slice: one of its slices registers it (see {@link #sliceRegistrations}). */
    private synchronized void holdForSlice() {
        ensureUsable("register");
        sliceRegistrations++;
    }

    private synchronized void releaseForSlice() {
        sliceRegistrations--;
    }

    /** For the original of a slice: refuses once it is closed (its memory may be gone). */
    private synchronized void ensureUsable(String action) {
        if (closed) {
            throw new IllegalStateException("Cannot " + action + " a slice of closed descriptor " + descriptor);
        }
    }
}
