package io.nixlconnect;

import io.nixlconnect.transport.TransportSettings;
import io.nixlconnect.transport.embedded.EmbeddedSettings;
import io.nixlconnect.transport.nixl.NixlSettings;
import java.nio.file.Path;
import io.nixlconnect.cuda.Cuda;
import io.nixlconnect.cuda.CudaDeviceBuffer;
import io.nixlconnect.cuda.CudaMemory;
import io.nixlconnect.cuda.GpuTests;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Locale;

/**
 * The device script's bandwidth table: GPU memory moved between two connectors, by READ and WRITE,
 * VRAM to VRAM and between VRAM and host memory, over the embedded transport (staged through pinned host
 * memory) and over NIXL (when {@code NIXL_LIBRARY_DIR} is set). Each row's last transfer is checked byte
 * for byte. One line per row: {@code BANDWIDTH <backend> <transfer> <size> <GB/s>}.
 *
 * <p>Exit status: 0 every row measured and verified, 1 a row failed, 2 no GPU, 3 no GPU where one is
 * expected (see {@link GpuTests}). Options: {@code --size-mib N} (default 64), {@code --iterations N}
 * (default 5).
 */
public final class GpuBandwidth {

    private static final Duration WAIT = Duration.ofMinutes(2);

    private GpuBandwidth() {
    }

    public static void main(String[] args) {
        int sizeMib = 64;
        int iterations = 5;
        for (int i = 0; i < args.length; i++) {
            switch (args[i]) {
                case "--size-mib" -> sizeMib = Integer.parseInt(args[++i]);
                case "--iterations" -> iterations = Integer.parseInt(args[++i]);
                default -> {
                    System.err.println("usage: GpuBandwidth [--size-mib N] [--iterations N]");
                    System.exit(64);
                }
            }
        }
        if (!Cuda.isAvailable()) {
            boolean required = GpuTests.gpuRequired();
            System.out.println((required ? "GPU EXPECTED, NONE USABLE: " : "NO GPU: ") + Cuda.availability().reason());
            System.exit(required ? 3 : 2);
        }
        System.exit(run(Cuda.open(), sizeMib << 20, iterations) ? 0 : 1);
    }

    static boolean run(CudaMemory cuda, int bytes, int iterations) {
        List<String> failures = new ArrayList<>();
        String nixl = System.getenv("NIXL_LIBRARY_DIR");
        List<TransportSettings> backends = new ArrayList<>(List.of(EmbeddedSettings.defaults()));
        if (nixl != null && !nixl.isBlank()) {
            backends.add(NixlSettings.defaults().withLibraryDir(Path.of(nixl)));
        } else {
            System.out.println("BANDWIDTH nixl: not measured, NIXL_LIBRARY_DIR is not set");
        }
        System.out.printf(Locale.ROOT, "BANDWIDTH %-8s %-22s %8s %9s%n", "backend", "transfer", "MiB", "GB/s");
        for (TransportSettings settings : backends) {
            String backend = settings.name();
            ConnectorOptions.Builder options = ConnectorOptions.builder().transports(settings);
            try (Connector passive = new Connector(options.workerId("bw-passive").build());
                 Connector active = new Connector(options.workerId("bw-active").build());
                 CudaDeviceBuffer gpuA = cuda.allocate(0, bytes);
                 CudaDeviceBuffer gpuB = cuda.allocate(cuda.deviceCount() > 1 ? 1 : 0, bytes);
                 Descriptor hostA = Descriptor.allocate(bytes);
                 Descriptor hostB = Descriptor.allocate(bytes)) {
                byte[] data = TestData.random(bytes);
                gpuA.copyFrom(data, 0);
                hostA.asByteBuffer().put(data);
                try (Descriptor a = new Descriptor(gpuA); Descriptor b = new Descriptor(gpuB)) {
                    row(failures, backend, "READ VRAM->VRAM", bytes, iterations, passive, active, a, b, true,
                            () -> bytesOf(gpuB), data);
                    row(failures, backend, "WRITE VRAM->VRAM", bytes, iterations, passive, active, a, b, false,
                            () -> bytesOf(gpuB), data);
                    row(failures, backend, "READ VRAM->host", bytes, iterations, passive, active, a, hostB, true,
                            hostB::toByteArray, data);
                    row(failures, backend, "WRITE host->VRAM", bytes, iterations, passive, active, hostA, b, false,
                            () -> bytesOf(gpuB), data);
                }
            } catch (RuntimeException e) {
                System.out.println("BANDWIDTH " + backend + " FAILED: " + e);
                failures.add(backend + ": " + e);
            }
        }
        if (!failures.isEmpty()) {
            System.out.println("BANDWIDTH FAILED: " + failures);
        }
        return failures.isEmpty();
    }

    /** Moves {@code source} into {@code target}: a READ by the active side, or a WRITE into the passive side. */
    private static void row(List<String> failures, String backend, String name, int bytes, int iterations,
                            Connector passive, Connector active, Descriptor source, Descriptor target, boolean read,
                            java.util.function.Supplier<byte[]> landed, byte[] expected) {
        try {
            move(passive, active, source, target, read); // warm-up: registration and connection set-up
            long start = System.nanoTime();
            for (int i = 0; i < iterations; i++) {
                move(passive, active, source, target, read);
            }
            double seconds = (System.nanoTime() - start) / 1e9;
            String verdict = Arrays.equals(landed.get(), expected) ? "" : "  MISMATCH";
            System.out.printf(Locale.ROOT, "BANDWIDTH %-8s %-22s %8d %9.2f%s%n", backend,
                    name, bytes >> 20, (double) bytes * iterations / seconds / 1e9, verdict);
            if (!verdict.isEmpty()) {
                failures.add(backend + " " + name + ": bytes differ");
            }
        } catch (RuntimeException e) {
            System.out.println("BANDWIDTH " + backend + " " + name + " FAILED: " + e);
            failures.add(backend + " " + name + ": " + e);
        }
    }

    private static void move(Connector passive, Connector active, Descriptor source, Descriptor target, boolean read) {
        if (read) {
            try (ReadableOperation readable = passive.createReadable(source)) {
                active.beginRead(readable.metadata(), target).waitForCompletion(WAIT);
                readable.waitForCompletion(WAIT);
            }
        } else {
            try (WritableOperation writable = passive.createWritable(target)) {
                active.beginWrite(source, writable.metadata()).waitForCompletion(WAIT);
                writable.waitForCompletion(WAIT);
            }
        }
    }

    private static byte[] bytesOf(CudaDeviceBuffer buffer) {
        byte[] bytes = new byte[(int) buffer.size()];
        buffer.copyTo(0, bytes);
        return bytes;
    }
}
