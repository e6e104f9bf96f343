package io.nixlconnect.cuda;

import com.sun.jna.Native;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ConcurrentLinkedDeque;
import java.util.function.IntSupplier;

import io.nixlconnect.internal.NativeMemory;

import jcuda.CudaException;
import jcuda.Pointer;
import jcuda.driver.CUcomputemode;
import jcuda.driver.CUcontext;
import jcuda.driver.CUdevice;
import jcuda.driver.CUdevice_attribute;
import jcuda.driver.CUdeviceptr;
import jcuda.driver.CUmemorytype;
import jcuda.driver.CUpointer_attribute;
import jcuda.driver.CUresult;
import jcuda.driver.CUstream;
import jcuda.driver.CUstream_flags;
import jcuda.driver.JCudaDriver;

/**
 * The only class that touches JCuda: every driver call of this package goes through here, so that
 * nothing JCuda-related is loaded until CUDA is actually asked for.
 *
 * <p><b>Contexts.</b> Every operation runs with the <em>primary</em> context of the device the memory
 * lives on, so memory allocated on one thread is usable from any other. That context is pushed onto the
 * calling thread's context stack for the call and popped afterwards ({@code cuCtxPushCurrent} /
 * {@code cuCtxPopCurrent}), or used as it is when it is already current: a caller's own current context
 * (or CUDA runtime device) is never replaced. Calls that need some context but no particular device
 * (pinned host memory, pointer queries) use the caller's current context when there is one, else a
 * device this process already uses, else the first usable device.
 *
 * <p>Results are checked here rather than through {@code JCudaDriver.setExceptionsEnabled}, a JVM-wide
 * switch other JCuda users own; if they turned it on, JCuda's own exceptions are converted the same way.
 *
 * <p><b>Copies</b> run on pooled streams (one per concurrent copy and device, created on demand and kept
 * for the life of the process; blocking, so ordered after work on the legacy default stream, as a plain
 * {@code cuMemcpy} is) and wait for their stream, so a copy is complete, DMA included, when it returns,
 * and copies from different threads overlap. Java heap memory is copied through pooled pinned staging
 * chunks: no JNI critical section is held for the length of a large copy.
 */
class CudaDriver {

    /** The oldest driver JCuda 12.6 can use: every driver function it calls exists from CUDA 12.0 on. */
    static final int MINIMUM_DRIVER_VERSION = 12000;
    /** Size of one pinned staging chunk for copies from and to the Java heap. */
    static final int STAGING_CHUNK = 4 << 20;

    private final List<CudaDevice> devices;
    private final String driverVersion;
    private final CUdevice[] handles;
    /** Per device: null when usable, else why not. */
    private final String[] unusable;
    private final Context[] contexts;
    private final ConcurrentLinkedDeque<CUstream>[] idleStreams;
    private final ConcurrentLinkedDeque<Long> idleStaging = new ConcurrentLinkedDeque<>();

    @SuppressWarnings("unchecked")
    CudaDriver(List<CudaDevice> devices, CUdevice[] handles, String driverVersion, String[] unusable,
               Context[] retained) {
        this.devices = List.copyOf(devices);
        this.driverVersion = driverVersion;
        this.handles = handles;
        this.unusable = unusable.clone();
        this.contexts = retained.clone();
        this.idleStreams = new ConcurrentLinkedDeque[handles.length];
        for (int id = 0; id < handles.length; id++) {
            idleStreams[id] = new ConcurrentLinkedDeque<>();
        }
    }

    /**
     * Loads the JCuda natives, initializes the driver and lists the devices, finding out which ones this
     * process can use: a device in prohibited compute mode cannot be used, and one in exclusive-process
     * mode only if its primary context can be retained (then it stays retained).
     *
     * @throws CudaUnavailableException when there is no driver, a driver too old, or no device
     * @throws LinkageError             when the JCuda natives or libcuda cannot be loaded (caller converts)
     */
    static CudaDriver initialize() {
        int init = resultOf(() -> JCudaDriver.cuInit(0));
        if (init != CUresult.CUDA_SUCCESS) {
            throw new CudaUnavailableException(describeInitFailure(CUresult.stringFor(init)));
        }
        int[] version = new int[1];
        check("cuDriverGetVersion", () -> JCudaDriver.cuDriverGetVersion(version));
        String driverVersion = version[0] / 1000 + "." + version[0] % 1000 / 10;
        if (version[0] < MINIMUM_DRIVER_VERSION) {
            // JCuda binds driver functions lazily: calling one an old libcuda lacks would end the process.
            throw new CudaUnavailableException(tooOldDriver(driverVersion));
        }
        int[] count = new int[1];
        check("cuDeviceGetCount", () -> JCudaDriver.cuDeviceGetCount(count));
        if (count[0] == 0) {
            throw new CudaUnavailableException("no CUDA device: the NVIDIA driver reports 0 devices");
        }
        List<CudaDevice> devices = new ArrayList<>(count[0]);
        CUdevice[] handles = new CUdevice[count[0]];
        String[] unusable = new String[count[0]];
        Context[] retained = new Context[count[0]];
        for (int id = 0; id < count[0]; id++) {
            handles[id] = new CUdevice();
            CUdevice handle = handles[id];
            int ordinal = id;
            check("cuDeviceGet(" + id + ")", () -> JCudaDriver.cuDeviceGet(handle, ordinal));
            devices.add(describe(id, handle));
            int[] mode = new int[1];
            check("cuDeviceGetAttribute(" + id + ", COMPUTE_MODE)", () -> JCudaDriver.cuDeviceGetAttribute(mode,
                    CUdevice_attribute.CU_DEVICE_ATTRIBUTE_COMPUTE_MODE, handle));
            if (mode[0] == CUcomputemode.CU_COMPUTEMODE_PROHIBITED) {
                unusable[id] = "cuda:" + id + " is in prohibited compute mode (no process may use it; see nvidia-smi -c)";
            } else if (mode[0] == CUcomputemode.CU_COMPUTEMODE_EXCLUSIVE_PROCESS) {
                Context context = new Context();
                int result = resultOf(() -> JCudaDriver.cuDevicePrimaryCtxRetain(context, handle));
                if (result == CUresult.CUDA_SUCCESS) {
                    retained[id] = context;
                } else {
                    unusable[id] = "cuda:" + id + " is in exclusive-process compute mode and cannot be used by this "
                            + "process, probably another one holds it (cuDevicePrimaryCtxRetain: "
                            + CUresult.stringFor(result) + ")";
                }
            }
        }
        return new CudaDriver(devices, handles, driverVersion, unusable, retained);
    }

    static String tooOldDriver(String driverVersion) {
        return "the NVIDIA driver is too old: it supports CUDA " + driverVersion + ", JCuda 12.6 needs a driver for CUDA "
                + MINIMUM_DRIVER_VERSION / 1000 + ".0 or newer; update the driver";
    }

    private static String describeInitFailure(String error) {
        if (error.contains("CUDA_ERROR_NO_DEVICE")) {
            return "no CUDA device: the NVIDIA driver is installed but reports none (cuInit: " + error + ")";
        }
        if (error.contains("CUDA_ERROR_INSUFFICIENT_DRIVER") || error.contains("DRIVER_MISMATCH")) {
            return "the NVIDIA driver is too old or does not match its kernel module (cuInit: " + error + ")";
        }
        return "the NVIDIA driver failed to initialize (cuInit: " + error + ")";
    }

    private static CudaDevice describe(int id, CUdevice handle) {
        byte[] name = new byte[256];
        check("cuDeviceGetName(" + id + ")", () -> JCudaDriver.cuDeviceGetName(name, name.length, handle));
        long[] total = new long[1];
        check("cuDeviceTotalMem(" + id + ")", () -> JCudaDriver.cuDeviceTotalMem(total, handle));
        int[] major = new int[1];
        int[] minor = new int[1];
        check("cuDeviceGetAttribute(" + id + ")", () -> JCudaDriver.cuDeviceGetAttribute(major,
                CUdevice_attribute.CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, handle));
        check("cuDeviceGetAttribute(" + id + ")", () -> JCudaDriver.cuDeviceGetAttribute(minor,
                CUdevice_attribute.CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, handle));
        int length = 0;
        while (length < name.length && name[length] != 0) {
            length++;
        }
        return new CudaDevice(id, new String(name, 0, length, StandardCharsets.UTF_8), total[0], major[0],
                minor[0]);
    }

    List<CudaDevice> devices() {
        return devices;
    }

    String driverVersion() {
        return driverVersion;
    }

    int deviceCount() {
        return handles.length;
    }

    /** Why device {@code deviceId} cannot be used by this process, or null when it can. */
    String unusableReason(int deviceId) {
        return unusable[deviceId];
    }

    /** How many devices this process can use. */
    int usableDeviceCount() {
        int usable = 0;
        for (String reason : unusable) {
            if (reason == null) {
                usable++;
            }
        }
        return usable;
    }

    // ---- contexts and streams --------------------------------------------------------------------

    /**
     * Runs {@code work} with the device's primary context current on this thread: pushed for the call and
     * popped after, unless it already was current. The caller's own context stack is left as it was.
     */
    void inContext(int deviceId, Runnable work) {
        boolean pushed = enter(deviceId);
        try {
            work.run();
        } finally {
            if (pushed) {
                leave();
            }
        }
    }

    /** Pushes the device's primary context unless it is current already; true when pushed ({@link #leave} pops it). */
    boolean enter(int deviceId) {
        return pushUnlessCurrent(context(deviceId));
    }

    /** Pops what {@link #enter} pushed. */
    void leave() {
        check("cuCtxPopCurrent", () -> JCudaDriver.cuCtxPopCurrent(new CUcontext()));
    }

    /** Runs {@code work} with some context current: the caller's if it has one, else a device this process uses. */
    private void inAnyContext(Runnable work) {
        if (currentContext() != 0) {
            work.run();
        } else {
            inContext(preferredDevice(), work);
        }
    }

    private static long currentContext() {
        Context current = new Context();
        check("cuCtxGetCurrent", () -> JCudaDriver.cuCtxGetCurrent(current));
        return current.address();
    }

    private static boolean pushUnlessCurrent(Context wanted) {
        if (currentContext() == wanted.address()) {
            return false;
        }
        check("cuCtxPushCurrent", () -> JCudaDriver.cuCtxPushCurrent(wanted));
        return true;
    }

    /** A device already in use by this process if any, else the first usable one: never a context for nothing. */
    private synchronized int preferredDevice() {
        for (int id = 0; id < contexts.length; id++) {
            if (contexts[id] != null) {
                return id;
            }
        }
        for (int id = 0; id < unusable.length; id++) {
            if (unusable[id] == null) {
                return id;
            }
        }
        throw new CudaUnavailableException("no usable CUDA device");
    }

    private synchronized Context context(int deviceId) {
        if (contexts[deviceId] == null) {
            if (unusable[deviceId] != null) {
                throw new CudaUnavailableException(unusable[deviceId]);
            }
            // Retained for the life of the process: primary contexts are shared with any other
            // driver or runtime API user of the device, and releasing one frees all its memory.
            Context context = new Context();
            check("cuDevicePrimaryCtxRetain(device " + deviceId + ")",
                    () -> JCudaDriver.cuDevicePrimaryCtxRetain(context, handles[deviceId]));
            contexts[deviceId] = context;
        }
        return contexts[deviceId];
    }

    /** Runs {@code copy} on a stream of the device (current context) borrowed from the pool, then waits for it. */
    private void onStream(int deviceId, java.util.function.Consumer<CUstream> copy) {
        CUstream stream = idleStreams[deviceId].poll();
        if (stream == null) {
            CUstream created = new CUstream();
            check("cuStreamCreate(device " + deviceId + ")",
                    () -> JCudaDriver.cuStreamCreate(created, CUstream_flags.CU_STREAM_DEFAULT));
            stream = created;
        }
        try {
            copy.accept(stream);
            synchronize(deviceId, stream);
        } finally {
            // A stream whose copy failed is still a valid stream; errors are sticky only for the context.
            idleStreams[deviceId].push(stream);
        }
    }

    // ---- allocation ------------------------------------------------------------------------------

    long allocateDevice(int deviceId, long bytes) {
        DevicePointer pointer = new DevicePointer();
        inContext(deviceId, () -> check("cuMemAlloc(device " + deviceId + ", " + bytes + " bytes)",
                () -> JCudaDriver.cuMemAlloc(pointer, bytes)));
        return pointer.address();
    }

    void freeDevice(int deviceId, long address) {
        inContext(deviceId, () ->
                check("cuMemFree(device " + deviceId + ")", () -> JCudaDriver.cuMemFree(DevicePointer.at(address))));
    }

    /**
     * Page-locked host memory, portable so that every device's context sees it as pinned. Up to 2 GiB
     * it comes from {@code cuMemHostAlloc}; beyond, JCuda's binding cannot hand it back (it wraps the
     * memory in a ByteBuffer), so it is malloc'ed and page-locked with {@code cuMemHostRegister}.
     * {@link #freePinned} tells the two apart by size.
     */
    long allocatePinned(long bytes) {
        long[] result = new long[1];
        inAnyContext(() -> result[0] = allocatePinnedInContext(bytes));
        return result[0];
    }

    private static long allocatePinnedInContext(long bytes) {
        if (fitsHostAlloc(bytes)) {
            HostPointer pointer = new HostPointer(0);
            check("cuMemHostAlloc(" + bytes + " bytes)",
                    () -> JCudaDriver.cuMemHostAlloc(pointer, bytes, JCudaDriver.CU_MEMHOSTALLOC_PORTABLE));
            return pointer.address();
        }
        long address = Native.malloc(bytes);
        if (address == 0) {
            throw new OutOfMemoryError("malloc of " + bytes + " bytes for pinned host memory failed");
        }
        try {
            check("cuMemHostRegister(" + bytes + " bytes)", () -> JCudaDriver.cuMemHostRegister(
                    new HostPointer(address), bytes, JCudaDriver.CU_MEMHOSTREGISTER_PORTABLE));
        } catch (RuntimeException e) {
            Native.free(address);
            throw e;
        }
        return address;
    }

    void freePinned(long address, long bytes) {
        inAnyContext(() -> {
            if (fitsHostAlloc(bytes)) {
                check("cuMemFreeHost", () -> JCudaDriver.cuMemFreeHost(new HostPointer(address)));
            } else {
                check("cuMemHostUnregister", () -> JCudaDriver.cuMemHostUnregister(new HostPointer(address)));
                com.sun.jna.Native.free(address);
            }
        });
    }

    private static boolean fitsHostAlloc(long bytes) {
        return bytes <= Integer.MAX_VALUE;
    }

    // ---- copies between raw addresses --------------------------------------------------------------

    void copyHostToDevice(int deviceId, long hostAddress, long deviceAddress, long bytes) {
        inContext(deviceId, () -> onStream(deviceId, stream -> check(
                "cuMemcpyHtoD(device " + deviceId + ", " + bytes + " bytes)", () -> JCudaDriver.cuMemcpyHtoDAsync(
                        DevicePointer.at(deviceAddress), new HostPointer(hostAddress), bytes, stream))));
    }

    void copyDeviceToHost(int deviceId, long deviceAddress, long hostAddress, long bytes) {
        inContext(deviceId, () -> onStream(deviceId, stream -> check(
                "cuMemcpyDtoH(device " + deviceId + ", " + bytes + " bytes)", () -> JCudaDriver.cuMemcpyDtoHAsync(
                        new HostPointer(hostAddress), DevicePointer.at(deviceAddress), bytes, stream))));
    }

    /** Copies between device addresses, on the same device or not (unified addressing infers which). */
    void copyDeviceToDevice(int deviceId, long sourceAddress, long destinationAddress, long bytes) {
        inContext(deviceId, () -> onStream(deviceId, stream -> check(
                "cuMemcpyAsync(device to device, " + bytes + " bytes)", () -> JCudaDriver.cuMemcpyAsync(
                        DevicePointer.at(destinationAddress), DevicePointer.at(sourceAddress), bytes, stream))));
    }

    // ---- copies from and to Java memory --------------------------------------------------------------

    /** Copies {@code source.remaining()} bytes to the device; does not move the buffer's position. */
    void copyHostToDevice(int deviceId, ByteBuffer source, long deviceAddress) {
        if (source.isDirect()) {
            copyHostToDevice(deviceId, NativeMemory.addressOf(source) + source.position(), deviceAddress,
                    source.remaining());
        } else {
            copyHostToDevice(deviceId, source.array(), source.arrayOffset() + source.position(), source.remaining(),
                    deviceAddress);
        }
    }

    /** Fills {@code destination.remaining()} bytes from the device; does not move the buffer's position. */
    void copyDeviceToHost(int deviceId, long deviceAddress, ByteBuffer destination) {
        if (destination.isDirect()) {
            copyDeviceToHost(deviceId, deviceAddress, NativeMemory.addressOf(destination) + destination.position(),
                    destination.remaining());
        } else {
            copyDeviceToHost(deviceId, deviceAddress, destination.array(),
                    destination.arrayOffset() + destination.position(), destination.remaining());
        }
    }

    /** Through pinned staging, chunk by chunk: the array is read by plain Java copies, never pinned by JNI. */
    void copyHostToDevice(int deviceId, byte[] source, int offset, int length, long deviceAddress) {
        inContext(deviceId, () -> withStaging(staging -> {
            for (int done = 0; done < length; ) {
                int chunk = Math.min(STAGING_CHUNK, length - done);
                NativeMemory.view(staging, chunk).put(source, offset + done, chunk);
                copyHostToDevice(deviceId, staging, deviceAddress + done, chunk);
                done += chunk;
            }
        }));
    }

    void copyDeviceToHost(int deviceId, long deviceAddress, byte[] destination, int offset, int length) {
        inContext(deviceId, () -> withStaging(staging -> {
            for (int done = 0; done < length; ) {
                int chunk = Math.min(STAGING_CHUNK, length - done);
                copyDeviceToHost(deviceId, deviceAddress + done, staging, chunk);
                NativeMemory.view(staging, chunk).get(destination, offset + done, chunk);
                done += chunk;
            }
        }));
    }

    /** Lends a pinned chunk of {@link #STAGING_CHUNK} bytes (pooled for the life of the process). */
    private void withStaging(java.util.function.LongConsumer work) {
        Long staging = idleStaging.poll();
        if (staging == null) {
            staging = allocatePinned(STAGING_CHUNK);
        }
        try {
            work.accept(staging);
        } finally {
            idleStaging.push(staging);
        }
    }

    private static void synchronize(int deviceId, CUstream stream) {
        check("cuStreamSynchronize(device " + deviceId + ")", () -> JCudaDriver.cuStreamSynchronize(stream));
    }

    // ---- pointer queries ---------------------------------------------------------------------------

    /**
     * The ordinal of the device that owns {@code address}, or -1 when it is not device memory known to
     * the driver (ordinary host memory, pinned host memory, or nothing at all). Asked in the caller's
     * context, or in none; only if that fails without a current context is the query repeated in the
     * context of a device this process uses.
     */
    int deviceOf(long address) {
        if (address == 0) {
            return -1;
        }
        int[] memoryType = new int[1];
        int result = queryPointer(CUpointer_attribute.CU_POINTER_ATTRIBUTE_MEMORY_TYPE, address, memoryType);
        if (result != CUresult.CUDA_SUCCESS || memoryType[0] != CUmemorytype.CU_MEMORYTYPE_DEVICE) {
            return -1;
        }
        int[] ordinal = new int[1];
        int found = queryPointer(CUpointer_attribute.CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL, address, ordinal);
        if (found != CUresult.CUDA_SUCCESS) {
            throw new CudaOperationException("cuPointerGetAttribute(DEVICE_ORDINAL)", CUresult.stringFor(found));
        }
        return ordinal[0];
    }

    private int queryPointer(int attribute, long address, int[] value) {
        IntSupplier query = () -> JCudaDriver.cuPointerGetAttribute(Pointer.to(value), attribute,
                DevicePointer.at(address));
        int result = resultOf(query);
        // Drivers answer for any unified address without a context; should one insist, ask again in one.
        if (result != CUresult.CUDA_SUCCESS && currentContext() == 0) {
            int[] retried = new int[1];
            inContext(preferredDevice(), () -> retried[0] = resultOf(query));
            result = retried[0];
        }
        return result;
    }

    // ---- result checking ---------------------------------------------------------------------------

    private static void check(String operation, IntSupplier call) {
        int result;
        try {
            result = call.getAsInt();
        } catch (CudaException e) {
            throw new CudaOperationException(operation, e.getMessage());
        }
        if (result != CUresult.CUDA_SUCCESS) {
            throw new CudaOperationException(operation, CUresult.stringFor(result));
        }
    }

    /** The raw result, also when another JCuda user turned JCuda's exceptions on. */
    private static int resultOf(IntSupplier call) {
        try {
            return call.getAsInt();
        } catch (CudaException e) {
            String message = String.valueOf(e.getMessage());
            for (int code = 1; code < 1000; code++) {
                if (message.equals(CUresult.stringFor(code))) {
                    return code;
                }
            }
            return CUresult.CUDA_ERROR_UNKNOWN;
        }
    }

    // ---- pointers with raw addresses ----------------------------------------------------------------

    /** A context handle whose address can be compared; JCuda keeps it protected. */
    static final class Context extends CUcontext {
        long address() {
            return getNativePointer();
        }
    }

    /** A device pointer whose address can be read back; JCuda keeps it protected. */
    static final class DevicePointer extends CUdeviceptr {
        private static final DevicePointer NULL = new DevicePointer();

        DevicePointer() {
        }

        private DevicePointer(long address) {
            super(NULL, address);
        }

        /** A device pointer to an address; JCuda adds the offset to a null base when passing it on. */
        static DevicePointer at(long address) {
            return new DevicePointer(address);
        }

        long address() {
            return getNativePointer() + getByteOffset();
        }
    }

    /**
     * A host pointer to raw native memory. Holding the address as the native pointer (not as an
     * offset) is what lets JCuda accept it for asynchronous copies.
     */
    static final class HostPointer extends Pointer {
        HostPointer(long address) {
            super(address);
        }

        long address() {
            return getNativePointer() + getByteOffset();
        }
    }
}
