package io.nixlconnect.cuda;

import com.sun.jna.Pointer;
import io.nixlconnect.transport.embedded.EmbeddedSettings;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.LongBuffer;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;

/**
 * A stand-alone check for a machine with an NVIDIA GPU, run by {@code scripts/gpu-check.sh run}:
 * lists the devices, verifies host/device/device round trips byte for byte, and measures copy
 * bandwidth.
 *
 * <p>Exit status: 0 when every verdict passes, 1 when one fails, 2 when there is no usable GPU, 3 when
 * there is none but one is expected ({@code -Dnixl.test.gpu.required=true} or
 * {@code NIXL_TEST_GPU_REQUIRED=1}, see {@link GpuTests}): then the missing GPU is the failure.
 * Options: {@code --size-mib N} (bandwidth buffer, default 256), {@code --iterations N} (default 20).
 *
 * <p>To add a check, add a {@link #verdict} call in {@link #run}.
 */
public final class GpuCheck {

    static final int EXIT_PASSED = 0;
    static final int EXIT_FAILED = 1;
    static final int EXIT_NO_GPU = 2;
    static final int EXIT_GPU_EXPECTED = 3;

    private final long bandwidthBytes;
    private final int iterations;
    private final boolean gpuRequired;
    private final List<String> failures = new ArrayList<>();

    private GpuCheck(long bandwidthBytes, int iterations, boolean gpuRequired) {
        this.bandwidthBytes = bandwidthBytes;
        this.iterations = iterations;
        this.gpuRequired = gpuRequired;
    }

    /**
     * A check with a {@code bandwidthBytes} buffer copied {@code iterations} times per rate; with
     * {@code gpuRequired}, a missing GPU exits {@link #EXIT_GPU_EXPECTED}.
     */
    static GpuCheck withSizes(long bandwidthBytes, int iterations, boolean gpuRequired) {
        return new GpuCheck(bandwidthBytes, iterations, gpuRequired);
    }

    public static void main(String[] args) {
        long sizeMib = 256;
        int iterations = 20;
        for (int i = 0; i < args.length; i++) {
            switch (args[i]) {
                case "--size-mib" -> sizeMib = Long.parseLong(args[++i]);
                case "--iterations" -> iterations = Integer.parseInt(args[++i]);
                default -> {
                    System.err.println("usage: GpuCheck [--size-mib N] [--iterations N]");
                    System.exit(64);
                }
            }
        }
        System.exit(new GpuCheck(sizeMib << 20, iterations, GpuTests.gpuRequired()).run());
    }

    int run() {
        System.out.println("java " + Runtime.version() + " on " + System.getProperty("os.name") + " "
                + System.getProperty("os.arch"));
        CudaAvailability availability = Cuda.availability();
        if (!availability.available()) {
            if (gpuRequired) {
                System.out.println("GPU EXPECTED, NONE USABLE: " + GpuTests.gpuExpectedMessage(availability.reason()));
                return EXIT_GPU_EXPECTED;
            }
            System.out.println("NO GPU: " + availability.reason());
            return EXIT_NO_GPU;
        }
        CudaMemory cuda = Cuda.open();
        System.out.println("CUDA driver " + cuda.driverVersion() + ", devices: " + cuda.deviceCount());
        for (CudaDevice device : cuda.devices()) {
            System.out.println("  " + device);
        }

        for (CudaDevice device : cuda.devices()) {
            int id = device.id();
            String on = " on cuda:" + id;
            verdict("H2D/D2H pinned round trip, 1 MiB + 13 bytes" + on, () -> pinnedRoundTrip(cuda, id, (1 << 20) + 13));
            verdict("H2D/D2H byte[] round trip, 1 MiB + 13 bytes" + on, () -> arrayRoundTrip(cuda, id, (1 << 20) + 13));
            verdict("D2D round trip, 1 MiB + 13 bytes" + on, () -> deviceToDevice(cuda, id, id, (1 << 20) + 13));
            verdict("staging helper (raw addresses) round trip" + on, () -> stagingRoundTrip(cuda, id, (1 << 20) + 13));
            verdict("allocated on one thread, copied and freed on others" + on, () -> crossThread(cuda, id));
            verdict("close refused while in use" + on, () -> closeRefusedWhileInUse(cuda, id));
            if (bandwidthBytes <= Integer.MAX_VALUE) {
                verdict("pinned round trip, " + (bandwidthBytes >> 20) + " MiB" + on,
                        () -> pinnedRoundTrip(cuda, id, bandwidthBytes));
            }
            bandwidth(cuda, id);
        }
        verdict("pinned buffer above 2 GiB (page-locked with cuMemHostRegister) round trip on cuda:0",
                () -> largePinnedRoundTrip(cuda));
        if (cuda.deviceCount() >= 2) {
            verdict("D2D across devices cuda:0 -> cuda:1, 1 MiB + 13 bytes", () -> deviceToDevice(cuda, 0, 1, (1 << 20) + 13));
        }
        int other = cuda.deviceCount() >= 2 ? 1 : 0;
        long transferBytes = Math.min(bandwidthBytes, Integer.MAX_VALUE);
        verdict("GPU->GPU READ between two Connectors (embedded), cuda:0 -> cuda:" + other + ", "
                + (transferBytes >> 20) + " MiB", () -> connectorTransfer(cuda, 0, other, transferBytes, true));
        verdict("GPU->GPU WRITE between two Connectors (embedded), cuda:0 -> cuda:" + other + ", "
                + (transferBytes >> 20) + " MiB", () -> connectorTransfer(cuda, 0, other, transferBytes, false));

        if (failures.isEmpty()) {
            System.out.println("ALL PASSED");
            return EXIT_PASSED;
        }
        System.out.println("FAILED: " + failures.size() + " check(s): " + failures);
        return EXIT_FAILED;
    }

    // ---- verdicts -------------------------------------------------------------------------------

    interface Check {
        /** Returns null when the check passes, else what went wrong. */
        String run() throws Exception;
    }

    void verdict(String name, Check check) {
        String problem;
        try {
            problem = check.run();
        } catch (Exception | Error e) {
            problem = e.toString();
        }
        if (problem == null) {
            System.out.println("PASS  " + name);
        } else {
            System.out.println("FAIL  " + name + ": " + problem);
            failures.add(name);
        }
    }

    /** Moves a GPU buffer into another through two connectors on the embedded transport; returns GB/s. */
    private static String connectorTransfer(CudaMemory cuda, int sourceId, int targetId, long bytes, boolean read) {
        io.nixlconnect.ConnectorOptions.Builder options = io.nixlconnect.ConnectorOptions.builder()
                .transports(EmbeddedSettings.defaults());
        try (io.nixlconnect.Connector passive = new io.nixlconnect.Connector(options.workerId("gpu-passive").build());
             io.nixlconnect.Connector active = new io.nixlconnect.Connector(options.workerId("gpu-active").build());
             CudaDeviceBuffer source = cuda.allocate(sourceId, bytes);
             CudaDeviceBuffer target = cuda.allocate(targetId, bytes)) {
            ByteBuffer expected = ByteBuffer.allocateDirect((int) bytes);
            fill(expected, bytes);
            source.copyFrom(expected.duplicate(), 0);
            io.nixlconnect.Descriptor from = new io.nixlconnect.Descriptor(source);
            io.nixlconnect.Descriptor to = new io.nixlconnect.Descriptor(target);
            long start = System.nanoTime();
            if (read) {
                io.nixlconnect.ReadableOperation readable = passive.createReadable(from);
                active.beginRead(readable.metadata(), to).waitForCompletion(Duration.ofMinutes(2));
                readable.waitForCompletion(Duration.ofMinutes(2));
            } else {
                io.nixlconnect.WritableOperation writable = passive.createWritable(to);
                active.beginWrite(from, writable.metadata()).waitForCompletion(Duration.ofMinutes(2));
                writable.waitForCompletion(Duration.ofMinutes(2));
            }
            long elapsed = System.nanoTime() - start;
            ByteBuffer actual = ByteBuffer.allocateDirect((int) bytes);
            target.copyTo(0, actual);
            actual.flip();
            String mismatch = compare(expected, actual);
            if (mismatch != null) {
                return mismatch;
            }
            System.out.printf(Locale.ROOT, "RATE %s GPU->GPU via connectors: %.2f GB/s%n", read ? "READ" : "WRITE",
                    bytes / (double) elapsed);
            return null;
        }
    }

    private static String pinnedRoundTrip(CudaMemory cuda, int deviceId, long bytes) {
        try (PinnedHostBuffer out = cuda.allocatePinned(bytes);
             PinnedHostBuffer in = cuda.allocatePinned(bytes);
             CudaDeviceBuffer device = cuda.allocate(deviceId, bytes)) {
            fill(out.byteBuffer(), bytes);
            device.copyFrom(out, 0);
            device.copyTo(0, in);
            return compare(out.byteBuffer(), in.byteBuffer());
        }
    }

    /** Above 2 GiB there is no ByteBuffer view; the pattern goes into the first and last MiB. */
    static String largePinnedRoundTrip(CudaMemory cuda) {
        long bytes = (1L << 31) + 4096 + 13;
        int edge = 1 << 20;
        try (PinnedHostBuffer out = cuda.allocatePinned(bytes);
             PinnedHostBuffer in = cuda.allocatePinned(bytes);
             CudaDeviceBuffer device = cuda.allocate(0, bytes)) {
            if (out.hasByteBuffer()) {
                return "a " + bytes + "-byte buffer claims a ByteBuffer view";
            }
            for (long offset : new long[] {0, bytes - edge}) {
                fill(region(out, offset, edge), edge);
            }
            device.copyFrom(out, 0);
            device.copyTo(0, in);
            for (long offset : new long[] {0, bytes - edge}) {
                String problem = compare(region(out, offset, edge), region(in, offset, edge));
                if (problem != null) {
                    return "at offset " + offset + ": " + problem;
                }
            }
            return null;
        }
    }

    private static ByteBuffer region(PinnedHostBuffer buffer, long offset, int length) {
        return new Pointer(buffer.address()).getByteBuffer(offset, length);
    }

    private static String arrayRoundTrip(CudaMemory cuda, int deviceId, int bytes) {
        byte[] data = new byte[bytes];
        fill(ByteBuffer.wrap(data), bytes);
        byte[] back = new byte[bytes];
        try (CudaDeviceBuffer device = cuda.allocate(deviceId, bytes)) {
            device.copyFrom(data, 0);
            device.copyTo(0, back);
        }
        return compare(ByteBuffer.wrap(data), ByteBuffer.wrap(back));
    }

    private static String deviceToDevice(CudaMemory cuda, int sourceId, int destinationId, int bytes) {
        byte[] data = new byte[bytes];
        fill(ByteBuffer.wrap(data), bytes);
        byte[] back = new byte[bytes];
        try (CudaDeviceBuffer source = cuda.allocate(sourceId, bytes);
             CudaDeviceBuffer destination = cuda.allocate(destinationId, bytes)) {
            source.copyFrom(data, 0);
            destination.copyFrom(source, 0, 0, bytes);
            destination.copyTo(0, back);
        }
        return compare(ByteBuffer.wrap(data), ByteBuffer.wrap(back));
    }

    private static String stagingRoundTrip(CudaMemory cuda, int deviceId, int bytes) {
        try (PinnedHostBuffer staging = cuda.allocatePinned(bytes);
             PinnedHostBuffer expected = cuda.allocatePinned(bytes);
             CudaDeviceBuffer device = cuda.allocate(deviceId, bytes)) {
            fill(expected.byteBuffer(), bytes);
            staging.byteBuffer().put(expected.byteBuffer());
            CudaStaging.copyHostToDevice(staging.address(), device.address(), bytes);
            staging.byteBuffer().put(new byte[bytes]);
            CudaStaging.copyDeviceToHost(device.address(), staging.address(), bytes);
            if (!CudaStaging.isDevicePointer(device.address()) || CudaStaging.isDevicePointer(staging.address())) {
                return "isDevicePointer misjudged a device or pinned address";
            }
            return compare(expected.byteBuffer(), staging.byteBuffer());
        }
    }

    private static String crossThread(CudaMemory cuda, int deviceId) throws Exception {
        int bytes = 1 << 20;
        byte[] data = new byte[bytes];
        fill(ByteBuffer.wrap(data), bytes);
        CudaDeviceBuffer device = CompletableFuture.supplyAsync(() -> cuda.allocate(deviceId, bytes))
                .get(60, TimeUnit.SECONDS);
        device.copyFrom(data, 0);
        byte[] back = CompletableFuture.supplyAsync(() -> {
            byte[] copy = new byte[bytes];
            device.copyTo(0, copy);
            return copy;
        }).get(60, TimeUnit.SECONDS);
        Thread freer = new Thread(device::close);
        freer.start();
        freer.join();
        return device.isClosed() ? compare(ByteBuffer.wrap(data), ByteBuffer.wrap(back)) : "not closed";
    }

    private static String closeRefusedWhileInUse(CudaMemory cuda, int deviceId) {
        CudaDeviceBuffer device = cuda.allocate(deviceId, 4096);
        LiveUse use = device.acquireUse();
        try {
            device.close();
            return "close() succeeded while in use";
        } catch (IllegalStateException expected) {
            if (!String.valueOf(expected.getMessage()).contains("still registered in a live operation")) {
                return "unexpected message: " + expected.getMessage();
            }
        } finally {
            use.close();
        }
        device.close();
        device.close();
        return device.isClosed() ? null : "not closed after the use ended";
    }

    // ---- bandwidth ------------------------------------------------------------------------------

    private void bandwidth(CudaMemory cuda, int deviceId) {
        try (PinnedHostBuffer host = cuda.allocatePinned(bandwidthBytes);
             CudaDeviceBuffer device = cuda.allocate(deviceId, bandwidthBytes);
             CudaDeviceBuffer other = cuda.allocate(deviceId, bandwidthBytes)) {
            report("H2D pinned", deviceId, () -> device.copyFrom(host, 0));
            report("D2H pinned", deviceId, () -> device.copyTo(0, host));
            report("D2D", deviceId, () -> other.copyFrom(device, 0, 0, bandwidthBytes));
        } catch (RuntimeException e) {
            System.out.println("FAIL  bandwidth on cuda:" + deviceId + ": " + e);
            failures.add("bandwidth on cuda:" + deviceId);
        }
    }

    private void report(String what, int deviceId, Runnable copy) {
        copy.run(); // warm-up: first-touch costs stay out of the figure
        long start = System.nanoTime();
        for (int i = 0; i < iterations; i++) {
            copy.run();
        }
        double seconds = (System.nanoTime() - start) / 1e9;
        double gbPerSecond = bandwidthBytes * (double) iterations / seconds / 1e9;
        System.out.println(String.format(Locale.ROOT, "RATE  %-10s cuda:%d  %8.2f GB/s  (%d x %d MiB)", what,
                deviceId, gbPerSecond, iterations, bandwidthBytes >> 20));
    }

    // ---- data -----------------------------------------------------------------------------------

    /** Fills with a xorshift sequence, seeded differently per run so stale data cannot pass. */
    private static void fill(ByteBuffer buffer, long bytes) {
        ByteBuffer target = buffer.duplicate().order(ByteOrder.LITTLE_ENDIAN);
        long state = System.nanoTime() | 1;
        LongBuffer longs = target.asLongBuffer();
        while (longs.hasRemaining()) {
            state ^= state << 13;
            state ^= state >>> 7;
            state ^= state << 17;
            longs.put(state);
        }
        target.position((int) (bytes & ~7L));
        while (target.hasRemaining()) {
            target.put((byte) (state >>> (8 * (target.position() & 7))));
        }
    }

    private static String compare(ByteBuffer expected, ByteBuffer actual) {
        if (expected.remaining() != actual.remaining()) {
            return "size " + actual.remaining() + " instead of " + expected.remaining();
        }
        int at = expected.mismatch(actual);
        return at < 0 ? null : "first difference at byte " + at + " of " + expected.remaining();
    }
}
