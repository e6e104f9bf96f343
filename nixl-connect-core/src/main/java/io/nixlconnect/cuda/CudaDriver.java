package io.nixlconnect.cuda;

import com.sun.jna.Native;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.function.IntSupplier;

import jcuda.CudaException;
import jcuda.Pointer;
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
 * <p>Every operation first makes the target device's <em>primary</em> context current on the calling
 * thread, so memory allocated on one thread is usable from any other. Results are checked here rather
 * than through {@code JCudaDriver.setExceptionsEnabled}, a JVM-wide switch other JCuda users own; if
 * they turned it on, JCuda's own exceptions are converted the same way.
 *
 * <p>Copies run on one blocking stream per device (ordered after work on the legacy default stream, as a
 * plain {@code cuMemcpy} is) and wait for that stream, so a copy is complete, DMA included, when it
 * returns.
 */
final class CudaDriver {

    private final List<CudaDevice> devices;
    private final String driverVersion;
    private final CUdevice[] handles;
    private final CUcontext[] contexts;
    private final CUstream[] copyStreams;

    private CudaDriver(List<CudaDevice> devices, CUdevice[] handles, String driverVersion) {
        this.devices = List.copyOf(devices);
        this.driverVersion = driverVersion;
        this.handles = handles;
        this.contexts = new CUcontext[handles.length];
        this.copyStreams = new CUstream[handles.length];
    }

    /**
     * Loads the JCuda natives, initializes the driver and lists the devices.
     *
     * @throws CudaUnavailableException when there is no driver or no device
     * @throws LinkageError             when the JCuda natives or libcuda cannot be loaded (caller converts)
     */
    static CudaDriver initialize() {
        int init = resultOf(() -> JCudaDriver.cuInit(0));
        if (init != CUresult.CUDA_SUCCESS) {
            throw new CudaUnavailableException(describeInitFailure(CUresult.stringFor(init)));
        }
        int[] count = new int[1];
        check("cuDeviceGetCount", () -> JCudaDriver.cuDeviceGetCount(count));
        if (count[0] == 0) {
            throw new CudaUnavailableException("no CUDA device: the NVIDIA driver reports 0 devices");
        }
        List<CudaDevice> devices = new ArrayList<>(count[0]);
        CUdevice[] handles = new CUdevice[count[0]];
        for (int id = 0; id < count[0]; id++) {
            handles[id] = new CUdevice();
            CUdevice handle = handles[id];
            int ordinal = id;
            check("cuDeviceGet(" + id + ")", () -> JCudaDriver.cuDeviceGet(handle, ordinal));
            devices.add(describe(id, handle));
        }
        int[] version = new int[1];
        check("cuDriverGetVersion", () -> JCudaDriver.cuDriverGetVersion(version));
        return new CudaDriver(devices, handles, version[0] / 1000 + "." + version[0] % 1000 / 10);
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

    // ---- contexts and streams --------------------------------------------------------------------

    /** Makes the device's primary context current on this thread, retaining it on first use. */
    void makeCurrent(int deviceId) {
        CUcontext context = context(deviceId);
        check("cuCtxSetCurrent(device " + deviceId + ")", () -> JCudaDriver.cuCtxSetCurrent(context));
    }

    /**
     * Makes some primary context current, for calls that need one but no particular device: one
     * already in use if any, so that a process on cuda:3 does not also create a context on cuda:0.
     */
    void makeAnyCurrent() {
        makeCurrent(anyRetainedDevice());
    }

    private synchronized int anyRetainedDevice() {
        for (int id = 0; id < contexts.length; id++) {
            if (contexts[id] != null) {
                return id;
            }
        }
        return 0;
    }

    private synchronized CUcontext context(int deviceId) {
        if (contexts[deviceId] == null) {
            // Retained for the life of the process: primary contexts are shared with any other
            // driver or runtime API user of the device, and releasing one frees all its memory.
            CUcontext context = new CUcontext();
            check("cuDevicePrimaryCtxRetain(device " + deviceId + ")",
                    () -> JCudaDriver.cuDevicePrimaryCtxRetain(context, handles[deviceId]));
            contexts[deviceId] = context;
        }
        return contexts[deviceId];
    }

    /** The device's copy stream; call with the device's context current. */
    private synchronized CUstream copyStream(int deviceId) {
        if (copyStreams[deviceId] == null) {
            CUstream stream = new CUstream();
            check("cuStreamCreate(device " + deviceId + ")",
                    () -> JCudaDriver.cuStreamCreate(stream, CUstream_flags.CU_STREAM_DEFAULT));
            copyStreams[deviceId] = stream;
        }
        return copyStreams[deviceId];
    }

    // ---- allocation ------------------------------------------------------------------------------

    long allocateDevice(int deviceId, long bytes) {
        makeCurrent(deviceId);
        DevicePointer pointer = new DevicePointer();
        check("cuMemAlloc(device " + deviceId + ", " + bytes + " bytes)",
                () -> JCudaDriver.cuMemAlloc(pointer, bytes));
        return pointer.address();
    }

    void freeDevice(int deviceId, long address) {
        makeCurrent(deviceId);
        check("cuMemFree(device " + deviceId + ")", () -> JCudaDriver.cuMemFree(DevicePointer.at(address)));
    }

    /**
     * Page-locked host memory, portable so that every device's context sees it as pinned. Up to 2 GiB
     * it comes from {@code cuMemHostAlloc}; beyond, JCuda's binding cannot hand it back (it wraps the
     * memory in a ByteBuffer), so it is malloc'ed and page-locked with {@code cuMemHostRegister}.
     * {@link #freePinned} tells the two apart by size.
     */
    long allocatePinned(long bytes) {
        makeAnyCurrent();
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
        makeAnyCurrent();
        if (fitsHostAlloc(bytes)) {
            check("cuMemFreeHost", () -> JCudaDriver.cuMemFreeHost(new HostPointer(address)));
        } else {
            check("cuMemHostUnregister", () -> JCudaDriver.cuMemHostUnregister(new HostPointer(address)));
            Native.free(address);
        }
    }

    private static boolean fitsHostAlloc(long bytes) {
        return bytes <= Integer.MAX_VALUE;
    }

    // ---- copies between raw addresses --------------------------------------------------------------

    void copyHostToDevice(int deviceId, long hostAddress, long deviceAddress, long bytes) {
        copyHostToDevice(deviceId, new HostPointer(hostAddress), deviceAddress, bytes, true);
    }

    void copyDeviceToHost(int deviceId, long deviceAddress, long hostAddress, long bytes) {
        copyDeviceToHost(deviceId, deviceAddress, new HostPointer(hostAddress), bytes, true);
    }

    /** Copies between device addresses, on the same device or not (unified addressing infers which). */
    void copyDeviceToDevice(int deviceId, long sourceAddress, long destinationAddress, long bytes) {
        makeCurrent(deviceId);
        CUstream stream = copyStream(deviceId);
        check("cuMemcpyAsync(device to device, " + bytes + " bytes)", () -> JCudaDriver.cuMemcpyAsync(
                DevicePointer.at(destinationAddress), DevicePointer.at(sourceAddress), bytes, stream));
        synchronize(deviceId, stream);
    }

    // ---- copies from and to Java memory --------------------------------------------------------------

    /** Copies {@code source.remaining()} bytes to the device; does not move the buffer's position. */
    void copyHostToDevice(int deviceId, ByteBuffer source, long deviceAddress) {
        copyHostToDevice(deviceId, Pointer.toBuffer(source), deviceAddress, source.remaining(), source.isDirect());
    }

    /** Fills {@code destination.remaining()} bytes from the device; does not move the buffer's position. */
    void copyDeviceToHost(int deviceId, long deviceAddress, ByteBuffer destination) {
        copyDeviceToHost(deviceId, deviceAddress, Pointer.toBuffer(destination), destination.remaining(),
                destination.isDirect());
    }

    void copyHostToDevice(int deviceId, byte[] source, int offset, int length, long deviceAddress) {
        copyHostToDevice(deviceId, Pointer.to(source).withByteOffset(offset), deviceAddress, length, false);
    }

    void copyDeviceToHost(int deviceId, long deviceAddress, byte[] destination, int offset, int length) {
        copyDeviceToHost(deviceId, deviceAddress, Pointer.to(destination).withByteOffset(offset), length, false);
    }

    /**
     * Native memory goes through the device's copy stream. Java heap memory can only be copied
     * synchronously (JCuda pins the array for the call); from pageable memory the driver may return
     * before the DMA lands, so the legacy stream is waited for too.
     */
    private void copyHostToDevice(int deviceId, Pointer source, long deviceAddress, long bytes,
                                  boolean nativeMemory) {
        makeCurrent(deviceId);
        String what = "cuMemcpyHtoD(device " + deviceId + ", " + bytes + " bytes)";
        if (nativeMemory) {
            CUstream stream = copyStream(deviceId);
            check(what, () -> JCudaDriver.cuMemcpyHtoDAsync(DevicePointer.at(deviceAddress), source, bytes,
                    stream));
            synchronize(deviceId, stream);
        } else {
            check(what, () -> JCudaDriver.cuMemcpyHtoD(DevicePointer.at(deviceAddress), source, bytes));
            synchronize(deviceId, JCudaDriver.CU_STREAM_LEGACY);
        }
    }

    private void copyDeviceToHost(int deviceId, long deviceAddress, Pointer destination, long bytes,
                                  boolean nativeMemory) {
        makeCurrent(deviceId);
        String what = "cuMemcpyDtoH(device " + deviceId + ", " + bytes + " bytes)";
        if (nativeMemory) {
            CUstream stream = copyStream(deviceId);
            check(what, () -> JCudaDriver.cuMemcpyDtoHAsync(destination, DevicePointer.at(deviceAddress), bytes,
                    stream));
            synchronize(deviceId, stream);
        } else {
            // Synchronous device-to-host copies return only once the data is in host memory.
            check(what, () -> JCudaDriver.cuMemcpyDtoH(destination, DevicePointer.at(deviceAddress), bytes));
        }
    }

    private static void synchronize(int deviceId, CUstream stream) {
        check("cuStreamSynchronize(device " + deviceId + ")", () -> JCudaDriver.cuStreamSynchronize(stream));
    }

    // ---- pointer queries ---------------------------------------------------------------------------

    /**
     * The ordinal of the device that owns {@code address}, or -1 when it is not device memory known to
     * the driver (ordinary host memory, pinned host memory, or nothing at all).
     */
    int deviceOf(long address) {
        if (address == 0) {
            return -1;
        }
        // The query needs some context current; the pointer's own device is found regardless of which.
        makeAnyCurrent();
        CUdeviceptr pointer = DevicePointer.at(address);
        int[] memoryType = new int[1];
        if (resultOf(() -> JCudaDriver.cuPointerGetAttribute(Pointer.to(memoryType),
                CUpointer_attribute.CU_POINTER_ATTRIBUTE_MEMORY_TYPE, pointer)) != CUresult.CUDA_SUCCESS
                || memoryType[0] != CUmemorytype.CU_MEMORYTYPE_DEVICE) {
            return -1;
        }
        int[] ordinal = new int[1];
        check("cuPointerGetAttribute(DEVICE_ORDINAL)", () -> JCudaDriver.cuPointerGetAttribute(Pointer.to(ordinal),
                CUpointer_attribute.CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL, pointer));
        return ordinal[0];
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
