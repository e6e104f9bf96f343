package io.nixlconnect;

import com.sun.jna.Memory;
import com.sun.jna.Pointer;
import io.nixlconnect.cuda.CudaBuffer;
import io.nixlconnect.cuda.CudaDeviceBuffer;
import io.nixlconnect.cuda.LiveUse;
import io.nixlconnect.internal.NativeMemory;
import io.nixlconnect.transport.MemoryRegion;
import io.nixlconnect.transport.MemoryType;
import java.lang.ref.Reference;
import java.nio.ByteBuffer;
import java.util.ArrayDeque;
import java.util.Deque;
import java.util.IdentityHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.atomic.AtomicInteger;
import org.jspecify.annotations.Nullable;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * A buffer that takes part in transfers: where it is ({@link #device()}), its address ({@link #ptr()})
 * and length ({@link #size()}).
 *
 * <p>Local descriptors come from a direct {@link ByteBuffer}, from a {@code byte[]} (copied into memory
 * the descriptor owns, readable back with {@link #toByteArray()}), from {@link #allocate(long)}, or from a
 * raw address. Remote descriptors come from {@link #fromSerialized(SerializedDescriptor)} and describe a
 * peer's memory: they can be named in transfers but never registered here.
 *
 * <p>Registration with a connector happens automatically when the descriptor is handed to an operation;
 * {@link #registerMemory(Connector)} registers it ahead of time (and keeps it registered until
 * {@link #close()}), which saves the registration cost when a buffer is reused for many transfers.
 * A descriptor in use by a live operation cannot be closed.
 *
 * <p>{@link #slice(long, long)} gives a view of a sub-range that shares this descriptor's memory and registration:
 * one registered buffer serves transfers of different sizes and places without registering again.
 */
public final class Descriptor implements AutoCloseable {

    private static final Logger log = LoggerFactory.getLogger(Descriptor.class);

    private final Device device;
    private final long ptr;
    private final long size;
    private final boolean remote;
    /** This memory as the transport sees it, made once (every operation on the descriptor asks for it). */
    private MemoryRegion region;
    /** {@code List.of(region())}, made once: a one-descriptor operation hands it to the transport as it is. */
    private List<MemoryRegion> regionList;
    /** Keeps the caller's buffer reachable while we hold its address. */
    private final Object ref;
    /** Memory this descriptor frees on close: its own allocation, or a GPU buffer handed over with {@link #owning}. */
    private AutoCloseable owned;
    private final AtomicInteger liveUses = new AtomicInteger();
    private final Map<Connection, RegistrationCache.Lease> registrations = new IdentityHashMap<>();
    /**
     * Per registration from {@link #registerMemory}, a use of the CUDA buffer described: a registered buffer
     * cannot be freed, so no later allocation at the same address can meet the stale registration.
     */
    private final Map<Connection, LiveUse> registrationUses = new IdentityHashMap<>();
    /** Live-use handles on a borrowed GPU buffer, one per live operation: it cannot be freed under us. */
    private final Deque<LiveUse> bufferUses = new ArrayDeque<>();
    private SerializedDescriptor serialized;
    private boolean closed;
    /** For a slice: the outermost descriptor whose memory and registration it shares; null otherwise. */
    private final Descriptor parent;
    /** Registrations of this buffer that its slices hold ({@link #registerMemory} on a slice): it cannot close under them. */
    private int sliceRegistrations;
    /** Ended operations whose memory the transport has not released yet (see {@link #beginDrain()}). */
    private int drainingUses;
    /** Set when a drained operation's memory may still be reached by a stalled peer (see {@link #endDrain}). */
    private MemoryKeeper memoryKeeper;
    /**
     * Closed while a transport may still touch its memory, which this descriptor owns: {@link #close()} returned at
     * once, and the last {@link #endDrain} frees the memory, or hands it to the transport.
     */
    private boolean freeWhenDrained;
    /** Whether a transport already keeps this memory reachable until its agent closes (see {@link #endDrain}). */
    private boolean reachabilityKept;
    private Map<Connection, LiveUse> usesToEndWhenDrained;

    /**
     * Describes the remaining bytes of a direct buffer ({@code position} to {@code limit}). The buffer is
     * kept reachable for as long as the descriptor is.
     */
    public Descriptor(ByteBuffer buffer) {
        this(addressOf(buffer), buffer.remaining(), Device.CPU, buffer, false);
    }

    /** Copies {@code data} into memory this descriptor owns and frees on {@link #close()}. */
    public Descriptor(byte[] data) {
        this(ownedCopy(data), data.length);
    }

    private Descriptor(Memory memory, long size) {
        this(Pointer.nativeValue(memory), size, Device.CPU, memory, false);
        this.owned = memory;
    }

    /**
     * Describes memory at a raw address. {@code ref} (may be null) is kept reachable for as long as the
     * descriptor is: pass the object that owns the memory.
     */
    public Descriptor(long ptr, long size, Device device, @Nullable Object ref) {
        this(ptr, size, device, ref, false);
    }

    /** As {@link #Descriptor(long, long, Device, Object)}, with the device as a string ({@code cpu}, {@code cuda:1}, …). */
    public Descriptor(long ptr, long size, String device, @Nullable Object ref) {
        this(ptr, size, Device.of(device), ref, false);
    }

    private Descriptor(long ptr, long size, Device device, Object ref, boolean remote) {
        this(ptr, size, device, ref, remote, null);
    }

    private Descriptor(long ptr, long size, Device device, Object ref, boolean remote, Descriptor parent) {
        if (device == null) {
            throw new IllegalArgumentException("device must not be null");
        }
        if (ptr == 0) {
            throw new IllegalArgumentException("ptr must not be 0 (a null address)");
        }
        if (size < 0) {
            throw new IllegalArgumentException("size must be >= 0, was " + size);
        }
        this.ptr = ptr;
        this.size = size;
        this.device = device;
        this.ref = ref;
        this.remote = remote;
        this.parent = parent;
    }

    /**
     * Describes a GPU buffer ({@code cuda:N}). While an operation uses the descriptor, the buffer refuses to
     * be closed.
     */
    public Descriptor(CudaDeviceBuffer buffer) {
        this(requireOpen(buffer).address(), buffer.size(), Device.cuda(buffer.deviceId()), buffer, false);
    }

    /**
     * Describes a GPU buffer and takes ownership of it: {@link #close()} frees the buffer too.
     */
    public static Descriptor owning(CudaDeviceBuffer buffer) {
        Descriptor descriptor = new Descriptor(buffer);
        descriptor.owned = buffer;
        return descriptor;
    }

    private static CudaDeviceBuffer requireOpen(CudaDeviceBuffer buffer) {
        if (buffer == null) {
            throw new IllegalArgumentException("buffer must not be null");
        }
        if (buffer.isClosed()) {
            throw new IllegalArgumentException("GPU buffer " + buffer + " is closed");
        }
        return buffer;
    }

    /**
     * Allocates {@code size} zeroed bytes of host memory that this descriptor owns (sizes beyond 2 GiB too).
     *
     * @throws NixlConnectException when the system cannot give that much memory; the message names the size
     */
    public static Descriptor allocate(long size) {
        if (size < 0) {
            throw new IllegalArgumentException("size must be >= 0, was " + size);
        }
        return new Descriptor(allocateHost(size), size);
    }

    /** Native memory from malloc; its failure is the library's exception, not the JVM's OutOfMemoryError. */
    private static Memory allocateHost(long size) {
        try {
            return NativeMemory.allocate(size);
        } catch (OutOfMemoryError e) {
            // JNA reports a failed malloc as "Cannot allocate N bytes"; the Java heap is fine then. Anything else
            // is the heap's own exhaustion, which stays an error.
            if (e.getMessage() == null || !e.getMessage().startsWith("Cannot allocate")) {
                throw e;
            }
            throw new NixlConnectException("Cannot allocate " + size + " bytes" + inGiB(size)
                    + " of host memory: the system refused it (malloc failed); allocate less, or free memory", e);
        }
    }

    private static String inGiB(long size) {
        return size < (1L << 30) ? "" : String.format(java.util.Locale.ROOT, " (%.1f GiB)", size / (double) (1L << 30));
    }

    /** A descriptor of a peer's buffer, as its {@link RdmaMetadata} lists it. */
    public static Descriptor fromSerialized(SerializedDescriptor serialized) {
        if (serialized == null) {
            throw new IllegalArgumentException("serialized must not be null");
        }
        return new Descriptor(serialized.ptr(), serialized.size(), serialized.toDevice(), null, true);
    }

    private static long addressOf(ByteBuffer buffer) {
        if (buffer == null) {
            throw new IllegalArgumentException("buffer must not be null");
        }
        if (!buffer.isDirect()) {
            throw new IllegalArgumentException(
                    "ByteBuffer must be direct (ByteBuffer.allocateDirect): a heap buffer can move in memory");
        }
        return NativeMemory.addressOf(buffer) + buffer.position();
    }

    private static Memory ownedCopy(byte[] data) {
        if (data == null) {
            throw new IllegalArgumentException("data must not be null");
        }
        Memory memory = allocateHost(data.length);
        NativeMemory.copyIn(data, Pointer.nativeValue(memory));
        return memory;
    }

    public Device device() {
        return device;
    }

    /** Address of the first byte. */
    public long ptr() {
        return ptr;
    }

    /** Length in bytes. */
    public long size() {
        return size;
    }

    /**
     * A view of {@code length} bytes at {@code offset} of this descriptor: same memory, same device, no copy. It
     * shares this descriptor's registration — in an operation it holds (and if need be makes) the registration of
     * the whole buffer, never one of its own — so a registered buffer ({@link #registerMemory}) serves transfers of
     * any sub-range without registering again, and concurrent slices of one buffer share one registration. Use it
     * as a local descriptor in any operation; a passive operation over a slice exposes only the slice to its peer.
     * A slice of a slice is a slice of the original. Closing a slice releases only what it holds itself (its own
     * {@link #registerMemory}, which registers the whole original); the memory stays the original's, and the
     * original cannot be closed while an operation uses one of its slices or a slice holds such a registration.
     *
     * @throws IndexOutOfBoundsException if the range is not inside this descriptor
     * @throws IllegalStateException     for a remote or closed descriptor
     */
    public Descriptor slice(long offset, long length) {
        if (offset < 0 || length < 0 || offset > size - length) {
            throw new IndexOutOfBoundsException("slice [" + offset + ", " + offset + "+" + length
                    + ") outside descriptor of " + size + " bytes");
        }
        synchronized (this) {
            ensureLocal("slice");
            ensureOpen();
        }
        Descriptor root = parent == null ? this : parent;
        return new Descriptor(ptr + offset, length, device, root.ref, false, root);
    }

    /** The descriptor this is a slice of (the outermost one), or null if it is not a slice. */
    public @Nullable Descriptor parent() {
        return parent;
    }

    /** Whether this describes a peer's memory (from {@link #fromSerialized}). */
    public boolean isRemote() {
        return remote;
    }

    /** This descriptor as {@link RdmaMetadata} lists it. */
    public synchronized SerializedDescriptor metadata() {
        if (serialized == null) {
            serialized = new SerializedDescriptor(device.toString(), ptr, size);
        }
        return serialized;
    }

    /**
     * Registers this memory with the connector's transport and keeps it registered until {@link #close()}
     * (or the connector closes). Idempotent. A CUDA buffer described by this descriptor refuses to be freed
     * until this descriptor closes.
     */
    public void registerMemory(Connector connector) {
        if (connector == null) {
            throw new IllegalArgumentException("connector must not be null");
        }
        Connection connection = connector.connection();
        synchronized (this) {
            ensureLocal("register");
            ensureOpen();
            if (!registrations.containsKey(connection)) {
                if (parent != null) {
                    parent.holdForSlice();
                }
                LiveUse use = null;
                try {
                    use = ref instanceof CudaBuffer buffer ? buffer.acquireUse() : null; // refused once freed
                    registrations.put(connection, connection.registrations().acquire(registrationRegion()));
                } catch (RuntimeException | Error e) {
                    if (use != null) {
                        use.close();
                    }
                    if (parent != null) {
                        parent.releaseForSlice();
                    }
                    throw e;
                }
                if (use != null) {
                    registrationUses.put(connection, use);
                }
            }
        }
    }

    /** Whether this descriptor holds its own registration with the connector (see {@link #registerMemory}). */
    public synchronized boolean isRegistered(Connector connector) {
        return registrations.containsKey(connector.connection());
    }

    /**
     * A copy of this host buffer's bytes.
     *
     * @throws IllegalStateException for GPU or remote memory, or buffers over 2 GiB
     */
    public byte[] toByteArray() {
        checkHostReadable();
        if (size > Integer.MAX_VALUE - 8) {
            throw new IllegalStateException("Descriptor of " + size + " bytes does not fit a byte[]; use asByteBuffer(offset, length)");
        }
        return NativeMemory.copyOut(ptr, (int) size);
    }

    /** A direct view of {@code length} bytes at {@code offset} of this host buffer; no copy. */
    public ByteBuffer asByteBuffer(long offset, int length) {
        checkHostReadable();
        if (offset < 0 || length < 0 || offset > size - length) {
            throw new IndexOutOfBoundsException("range [" + offset + ", " + offset + "+" + length + ") outside descriptor of " + size + " bytes");
        }
        return NativeMemory.view(ptr + offset, length);
    }

    /** A direct view of the whole host buffer; no copy. Buffers over 2 GiB need {@link #asByteBuffer(long, int)}. */
    public ByteBuffer asByteBuffer() {
        if (size > Integer.MAX_VALUE) {
            throw new IllegalStateException("Descriptor of " + size + " bytes exceeds one ByteBuffer; use asByteBuffer(offset, length)");
        }
        return asByteBuffer(0, (int) size);
    }

    private synchronized void checkHostReadable() {
        ensureLocal("read");
        ensureOpen();
        if (parent != null) {
            parent.ensureUsable("read");
        }
        if (device.isGpu()) {
            throw new IllegalStateException("Descriptor is GPU memory (" + device + "); copy it to the host first");
        }
    }

    /**
     * Deregisters this descriptor's own registrations and frees memory it owns. When it returns, no
     * transport touches the memory any more, or the memory is the library's to free later. If a passive
     * operation on it was closed (or timed out) while a peer's transfer may still be in flight, the
     * transport releases the memory when the peer's notification arrives, the connector closes, or a drain
     * limit (on NIXL 2 s plus the operation's size at 100 MB/s, {@code NixlSettings.drainLimit}) has passed:
     * memory this descriptor owns ({@link #allocate}, {@link #Descriptor(byte[])}, {@link #owning}) is then
     * freed by the library and this returns at once; over memory the caller owns, this waits until then (the
     * caller frees it next). After a drain limit (a peer that stalled could still ask UCX over TCP for the
     * memory) owned memory is not freed but kept by the transport until the connector closes, its host pages
     * given back to the system (they stay mapped and read as zeros), and a borrowed buffer stays reachable.
     *
     * @throws IllegalStateException while a live operation uses the descriptor
     */
    @Override
    public void close() {
        Map<Connection, RegistrationCache.Lease> toRelease;
        Map<Connection, LiveUse> usesToEnd;
        boolean deferred;
        synchronized (this) {
            if (closed) {
                return;
            }
            if (liveUses.get() > 0) {
                throw new IllegalStateException("Descriptor " + this + " is still in use by " + liveUses.get()
                        + " live operation(s); close or wait for them first");
            }
            // Memory this descriptor owns is nobody else's to free: rather than block the caller until the transport
            // releases it (up to the drain limit), hand it to the last drain to end.
            deferred = drainingUses > 0 && owned != null && parent == null && sliceRegistrations == 0;
            if (!deferred) {
                awaitDrained();
            }
            if (closed) {
                return;
            }
            if (sliceRegistrations > 0) {
                // A registration of freed memory would stay reachable by peers: refuse, as for a live operation.
                throw new IllegalStateException("Descriptor " + this + " is still registered through "
                        + sliceRegistrations + " of its slices (registerMemory); close them first");
            }
            closed = true;
            toRelease = new IdentityHashMap<>(registrations);
            registrations.clear();
            usesToEnd = new IdentityHashMap<>(registrationUses);
            registrationUses.clear();
            if (deferred) {
                freeWhenDrained = true;
                usesToEndWhenDrained = usesToEnd;
            }
        }
        toRelease.values().forEach(RegistrationCache.Lease::release);
        if (parent != null) {
            for (int i = 0; i < toRelease.size(); i++) {
                parent.releaseForSlice();
            }
        }
        if (!deferred) {
            free(usesToEnd);
        }
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
                long released = toFree instanceof Memory && device.kind() == DeviceKind.HOST
                        ? NativeMemory.releasePages(ptr, size) : 0;
                keeper.keep(toFree, size - released);
            }
            return;
        }
        usesToEnd.values().forEach(LiveUse::close); // deregistered: the buffer may be freed now
        if (toFree != null) {
            try {
                toFree.close();
            } catch (Exception e) {
                throw new IllegalStateException("Freeing the memory of " + this + " failed", e);
            }
        }
    }

    // --- used by operations -------------------------------------------------------------------------

    MemoryRegion region() {
        MemoryRegion made = region;
        if (made == null) {
            region = made = region(device, ptr, size); // immutable: a racing thread at worst makes an equal one
        }
        return made;
    }

    /** {@link #region()} as a one-element immutable list (final fields: safe to share across threads). */
    List<MemoryRegion> regionList() {
        List<MemoryRegion> made = regionList;
        if (made == null) {
            regionList = made = List.of(region()); // immutable: a racing thread at worst makes an equal one
        }
        return made;
    }

    /** What is registered for this descriptor: its own region, or for a slice the whole original's. */
    MemoryRegion registrationRegion() {
        return parent == null ? region() : parent.region();
    }

    /** The transport's view of memory at {@code ptr}: host memory is DRAM, a CUDA device's VRAM, an Intel GPU's XPU. */
    static MemoryRegion region(Device device, long ptr, long size) {
        MemoryType type = switch (device.kind()) {
            case CUDA -> MemoryType.VRAM;
            case XPU -> MemoryType.XPU;
            default -> MemoryType.DRAM;
        };
        return new MemoryRegion(ptr, size, type, device.id());
    }

    /** Marks the descriptor as used by a live operation; refused once closed or for remote memory. */
    synchronized void acquireUse() {
        ensureLocal("transfer into or out of");
        ensureOpen();
        if (parent != null) {
            parent.acquireUse(); // the original then refuses to close (and so to free the memory) under us
            liveUses.incrementAndGet();
            return;
        }
        if (ref instanceof CudaBuffer buffer) {
            bufferUses.push(buffer.acquireUse()); // throws if the buffer was closed meanwhile
        }
        liveUses.incrementAndGet();
    }

    synchronized void releaseUse() {
        liveUses.decrementAndGet();
        if (parent != null) {
            parent.releaseUse();
            return;
        }
        LiveUse use = bufferUses.poll();
        if (use != null) {
            use.close();
        }
    }

    /**
     * An operation on this memory ended before the transport released it (a passive operation closed
     * while a peer's transfer may still be in flight): the memory must stay until {@link #endDrain()}.
     */
    synchronized void beginDrain() {
        liveUses.decrementAndGet();
        if (parent != null) {
            parent.beginDrain(); // the original's close waits for the drain: the memory is its
            return;
        }
        drainingUses++;
    }

    /**
     * The transport released the memory of an operation that {@link #beginDrain() drained}; a non-null
     * {@code keeper} says a stalled peer might still reach it, so {@link #close()} hands the memory to it
     * instead of freeing it.
     */
    synchronized void endDrain(MemoryKeeper keeper) {
        if (parent != null) {
            parent.endDrain(keeper);
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
        LiveUse use = bufferUses.poll();
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
                log.warn("Freeing the memory of closed descriptor {} failed", this, e);
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

    private void ensureLocal(String action) {
        if (remote) {
            throw new IllegalStateException("Cannot " + action + " a remote descriptor (" + this
                    + "): it describes a peer's memory");
        }
    }

    private void ensureOpen() {
        if (closed) {
            throw new IllegalStateException("Descriptor " + this + " is closed");
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
            throw new IllegalStateException("Cannot " + action + " a slice of closed descriptor " + this);
        }
    }

    @Override
    public String toString() {
        return "ptr=0x" + Long.toHexString(ptr) + ", size=" + size + ", device=" + device;
    }
}
