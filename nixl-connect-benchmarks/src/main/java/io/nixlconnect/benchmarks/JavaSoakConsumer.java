package io.nixlconnect.benchmarks;

import static io.nixlconnect.benchmarks.NixlSoak.BLOCK;
import static io.nixlconnect.benchmarks.NixlSoak.BLOCKS;
import static io.nixlconnect.benchmarks.NixlSoak.POOL;

import io.nixlconnect.Connector;
import io.nixlconnect.Descriptor;
import io.nixlconnect.NixlConnectException;
import io.nixlconnect.RdmaMetadata;
import io.nixlconnect.SerializedDescriptor;
import io.nixlconnect.TransferTimeoutException;
import java.io.IOException;
import java.lang.management.ManagementFactory;
import java.lang.management.MemoryUsage;
import java.io.UncheckedIOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Set;
import java.util.SplittableRandom;
import java.util.TreeSet;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;

/**
 * The first pass's consumer: this JVM, a Connector on NIXL with one registered pool the blocks are slices of.
 *
 * <p>Test-only: {@value #LEAK_VARIABLE} (read by the soak only) makes it leak per operation, to show that the soak
 * fails on a leak: "registration" keeps a 4 KiB descriptor registered with the connector, "fd" keeps a file open,
 * "memory" keeps a 64 KiB descriptor it wrote to, "heap" keeps a 16 KiB array (several, comma-separated).
 */
final class JavaSoakConsumer implements SoakConsumer {

    static final String LEAK_VARIABLE = "NIXL_SOAK_INJECT_LEAK";
    static final Set<String> LEAKS = Set.of("registration", "fd", "memory", "heap");

    private final SoakFigures figures;
    private final SplittableRandom random;
    private final Connector connector = NixlSoak.connector("soak-consumer");
    private final Descriptor pool = Descriptor.allocate(POOL);
    private final long idleRegistrations;
    private final int idleRegistrationCount;
    private final Set<String> leaks = injectedLeaks();
    private final List<AutoCloseable> leaked = new ArrayList<>();

    JavaSoakConsumer(SoakFigures figures, SplittableRandom random) {
        this.figures = figures;
        this.random = random;
        pool.registerMemory(connector);
        idleRegistrations = connector.registeredBytes();
        idleRegistrationCount = registrationCount();
        if (!leaks.isEmpty()) {
            System.out.println("soak: LEAK INJECTED (" + LEAK_VARIABLE + "=" + String.join(",", leaks)
                    + "): the consumer keeps that much per operation; this pass must fail");
        }
    }

    /** The leaks {@value #LEAK_VARIABLE} asks for; an unknown one stops the soak before it starts. */
    static Set<String> injectedLeaks() {
        String value = System.getenv().getOrDefault(LEAK_VARIABLE, "").trim();
        Set<String> leaks = new TreeSet<>();
        for (String leak : value.isEmpty() ? new String[0] : value.split("\\s*,\\s*")) {
            if (!LEAKS.contains(leak)) {
                throw new IllegalArgumentException(LEAK_VARIABLE + "=" + value + ": unknown leak '" + leak
                        + "' (one or more of " + new TreeSet<>(LEAKS) + ")");
            }
            leaks.add(leak);
        }
        return leaks;
    }

    /** The injected leaks, once per operation: each something real that a consumer could forget to close. */
    private void leak() {
        try {
            if (leaks.contains("registration")) {
                Descriptor kept = Descriptor.allocate(4096);
                kept.registerMemory(connector);
                leaked.add(kept);
            }
            if (leaks.contains("fd")) {
                leaked.add(FileChannel.open(Path.of("/dev/null")));
            }
            if (leaks.contains("memory")) {
                Descriptor kept = Descriptor.allocate(64 << 10);
                ByteBuffer bytes = kept.asByteBuffer();
                for (int page = 0; page < bytes.capacity(); page += 4096) {
                    bytes.put(page, (byte) 1); // resident, as memory a consumer used is
                }
                leaked.add(kept);
            }
            if (leaks.contains("heap")) {
                byte[] kept = new byte[16 << 10];
                leaked.add(() -> Arrays.fill(kept, (byte) 0));
            }
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    /** Registrations the library counts for this connector (its transport's health figure). */
    private int registrationCount() {
        return ((Number) connector.transportStatus().details().get("registrations")).intValue();
    }

    @Override
    public boolean transfer(RdmaMetadata metadata, boolean read, boolean again) {
        List<Descriptor> blocks = blocks();
        long began = System.nanoTime();
        boolean ok = attempt(metadata, blocks, read);
        if (ok) {
            figures.succeeded(System.nanoTime() - began);
            if (read) {
                List<SerializedDescriptor> remote = metadata.descriptors();
                for (int i = 0; i < blocks.size(); i++) {
                    long got = blocks.get(i).asByteBuffer(0, 8).order(ByteOrder.LITTLE_ENDIAN).getLong(0);
                    if (got != remote.get(i).ptr()) {
                        figures.count("WRONG BYTES");
                        figures.miss("a READ returned wrong bytes");
                        break;
                    }
                }
            }
        }
        if (again && attempt(metadata, blocks, read)) {
            figures.miss("spent metadata was read again without an error");
        }
        blocks.forEach(Descriptor::close);
        return ok;
    }

    private boolean attempt(RdmaMetadata metadata, List<Descriptor> blocks, boolean read) {
        figures.operation();
        if (!leaks.isEmpty()) {
            leak();
        }
        long began = System.nanoTime();
        try {
            if (read) {
                connector.read(metadata, blocks);
            } else {
                connector.write(blocks, metadata);
            }
            return true;
        } catch (NixlConnectException e) {
            figures.failed(cause(e), System.nanoTime() - began);
            return false;
        } catch (RuntimeException e) {
            figures.count("UNTYPED " + e.getClass().getSimpleName() + ": " + e.getMessage());
            figures.miss("an operation failed with an untyped exception: " + e);
            return false;
        }
    }

    private static String cause(NixlConnectException e) {
        String message = String.valueOf(e.getMessage());
        if (e instanceof TransferTimeoutException) {
            return "timeout";
        } else if (message.contains("window this metadata describes is gone")) {
            return message.contains("already completed") ? "spent metadata refused (expected)" : "window gone / peer failed";
        } else if (message.contains("cannot take new metadata")) {
            return "peer busy";
        }
        return e.getClass().getSimpleName() + ": " + message.substring(0, Math.min(90, message.length()));
    }

    /** {@link NixlSoak#BLOCKS} distinct blocks of the pool, in random order. */
    private List<Descriptor> blocks() {
        return NixlSoak.randomBlocks(pool, random, BLOCKS, BLOCK);
    }

    @Override
    public SoakChild startDoomedReader() throws Exception {
        return SoakChild.java("reader");
    }

    @Override
    public long rssKiB() throws Exception {
        return NixlSoak.rssKiB(Path.of("/proc/self/status"));
    }

    @Override
    public long fds() throws IOException {
        try (Stream<Path> open = Files.list(Path.of("/proc/self/fd"))) {
            return open.count() - 1; // less the one listing them
        }
    }

    @Override
    public void warmedUp() {
        NativeMemoryTracking.baseline();
    }

    @Override
    public RuntimeGrowth runtimeGrowth() {
        return NativeMemoryTracking.growthSinceBaseline();
    }

    /** After a full collection (the soak's JVM does not disable explicit ones): what the consumer keeps on the heap. */
    @Override
    public long liveHeapKiB() {
        System.gc();
        MemoryUsage heap = ManagementFactory.getMemoryMXBean().getHeapMemoryUsage();
        return heap.getUsed() >> 10;
    }

    @Override
    public String describe() throws Exception {
        Runtime runtime = Runtime.getRuntime();
        return String.format("heap %d KiB, RSS %d KiB, peers %d, registrations %d (%d bytes), in flight %d, fds %d",
                (runtime.totalMemory() - runtime.freeMemory()) >> 10, rssKiB(), connector.remoteAgentCount(),
                registrationCount(), connector.registeredBytes(), connector.inFlightOperations(), fds());
    }

    @Override
    public List<String> notIdle() throws InterruptedException {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
        while (!idle() && System.nanoTime() < deadline) {
            Thread.sleep(50);
        }
        List<String> problems = new ArrayList<>();
        if (!idle()) {
            problems.add("consumer registrations or operations not back to idle: " + registrationCount()
                    + " registrations of " + connector.registeredBytes() + " bytes (idle " + idleRegistrationCount
                    + " of " + idleRegistrations + "), in flight " + connector.inFlightOperations());
        }
        if (connector.remoteAgentCount() > 2) {
            problems.add("consumer holds " + connector.remoteAgentCount() + " peers");
        }
        return problems;
    }

    private boolean idle() {
        return connector.registeredBytes() == idleRegistrations && registrationCount() == idleRegistrationCount
                && connector.inFlightOperations() == 0;
    }

    @Override
    public String end() throws Exception {
        for (AutoCloseable kept : leaked) {
            kept.close();
        }
        pool.close();
        connector.close();
        return null;
    }
}
