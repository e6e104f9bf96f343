package io.nixlconnect;

import com.sun.jna.Memory;
import com.sun.jna.Pointer;
import io.nixlconnect.cuda.CudaDeviceBuffer;
import io.nixlconnect.internal.NativeMemory;
import io.nixlconnect.transport.MemoryRegion;
import io.nixlconnect.transport.MemoryType;
import java.nio.ByteBuffer;
import java.util.List;
import org.jspecify.annotations.Nullable;

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
    private SerializedDescriptor serialized;
    /** For a slice: the outermost descriptor whose memory and registration it shares; null otherwise. */
    private final Descriptor parent;
    /** The books of the memory this views: live uses, registrations, drain, what it owns and frees (see MemoryLedger). */
    private final MemoryLedger ledger;

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
        ledger.own(memory);
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
        this.ledger = new MemoryLedger(this, parent == null ? null : parent.ledger, ref);
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
        descriptor.ledger.own(buffer);
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
        ensureLocal("slice");
        ledger.ensureOpen();
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
        ensureLocal("register");
        ledger.register(connection, registrationRegion());
    }

    /** Whether this descriptor holds its own registration with the connector (see {@link #registerMemory}). */
    public synchronized boolean isRegistered(Connector connector) {
        return ledger.isRegistered(connector.connection());
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

    private void checkHostReadable() {
        ensureLocal("read");
        ledger.ensureReadable();
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
        ledger.close();
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
    void acquireUse() {
        ensureLocal("transfer into or out of");
        ledger.acquireUse();
    }

    void releaseUse() {
        ledger.releaseUse();
    }

    /** For an original: marks it used by {@code count} live descriptors, itself or its slices ({@link DescriptorUses}). */
    void acquireUses(int count) {
        ensureLocal("transfer into or out of");
        ledger.acquireUses(count);
    }

    void releaseUses(int count) {
        ledger.releaseUses(count);
    }

    /** For a slice whose original is marked with {@link #acquireUses}: marks the slice alone. */
    void acquireSliceUse() {
        ensureLocal("transfer into or out of");
        ledger.acquireSliceUse();
    }

    void releaseSliceUse() {
        ledger.releaseSliceUse();
    }

    /** The operation ended before the transport released its memory (see {@link MemoryLedger#beginDrain()}). */
    void beginDrain() {
        ledger.beginDrain();
    }

    /** The transport released a drained operation's memory (see {@link MemoryLedger#endDrain}). */
    void endDrain(@Nullable MemoryKeeper keeper) {
        ledger.endDrain(keeper);
    }

    private void ensureLocal(String action) {
        if (remote) {
            throw new IllegalStateException("Cannot " + action + " a remote descriptor (" + this
                    + "): it describes a peer's memory");
        }
    }

    @Override
    public String toString() {
        return "ptr=0x" + Long.toHexString(ptr) + ", size=" + size + ", device=" + device;
    }
}
