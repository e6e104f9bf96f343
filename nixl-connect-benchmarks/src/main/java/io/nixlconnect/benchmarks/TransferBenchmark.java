package io.nixlconnect.benchmarks;

import io.nixlconnect.Connector;
import io.nixlconnect.Descriptor;
import io.nixlconnect.RdmaMetadata;
import io.nixlconnect.ReadOperation;
import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.TimeUnit;

/**
 * Two JVMs on loopback: this one reads, a {@link BenchmarkPeer} publishes. Reports READ bandwidth per size and
 * the latency of one complete small operation (peer creates the readable → metadata JSON → this side
 * parses it and begins the read → both sides complete).
 *
 * <p>Usage: {@code TransferBenchmark [EMBEDDED|NIXL] [maxSizeBytes]}; {@code -Dbench.sameHostCopy=false} keeps the
 * embedded transport on TCP, {@code -Dbench.tcpStreams=N} stripes its large transfers over N connections,
 * {@code -Dbench.sizes=a,b,…} measures those sizes (bytes) instead of 4 KiB … 1 GiB. Per size it also prints the bytes
 * moved per CPU-second of both JVMs together (process CPU time, user + system, over the measured iterations), and
 * which path the reads took (" xN": striped over N connections).
 */
public final class TransferBenchmark {

    private static final long[] SIZES = {4L << 10, 64L << 10, 1L << 20, 16L << 20, 64L << 20, 256L << 20, 1L << 30};
    /** {@code -Dbench.sizes=16777216,33554432}: the bandwidth sizes in bytes, instead of {@link #SIZES}. */
    static final String SIZES_PROPERTY = "bench.sizes";
    /**
     * Complete 4 KiB operations run before anything is measured, so that both JVMs measure steady-state
     * (C2-compiled) code: after the former 300 warm-ups the small-operation path was still partly
     * interpreted or C1 code and a 4 KiB READ took ~2x longer than after 15,000. {@code nixl_direct.py}
     * runs the same number, so both sides do the same work before measuring.
     */
    static final int WARMUP_OPERATIONS = Integer.getInteger("bench.warmup", 20_000);

    private final BufferedReader fromPeer;
    private final PrintStream toPeer;
    private final ProcessHandle peer;
    private String path;

    private TransferBenchmark(Process peer) {
        this.peer = peer.toHandle();
        this.fromPeer = new BufferedReader(new InputStreamReader(peer.getInputStream(), StandardCharsets.UTF_8));
        this.toPeer = new PrintStream(peer.getOutputStream(), true, StandardCharsets.UTF_8);
    }

    public static void main(String[] args) throws Exception {
        String backend = args.length > 0 ? args[0] : "embedded";
        long maxSize = args.length > 1 ? Long.parseLong(args[1]) : 1L << 30;
        String java = Path.of(System.getProperty("java.home"), "bin", "java").toString();
        List<String> command = new ArrayList<>(List.of(java, "-Xmx256m", "-cp", System.getProperty("java.class.path")));
        command.add("-Dbench.hugepages=" + BenchmarkBuffer.hugePagesRequested());
        command.add("-D" + BenchmarkOptions.SAME_HOST_COPY_PROPERTY + "=" + BenchmarkOptions.sameHostCopy());
        command.add("-D" + BenchmarkOptions.TCP_STREAMS_PROPERTY + "=" + BenchmarkOptions.tcpStreams());
        if (BenchmarkOptions.nixlLibraryDir() != null) {
            command.add("-D" + BenchmarkOptions.LIBRARY_PATH_PROPERTY + "=" + BenchmarkOptions.nixlLibraryDir());
        }
        for (String property : BenchmarkOptions.FORWARDED) {
            if (!property.equals(BenchmarkOptions.LIBRARY_PATH_PROPERTY) && System.getProperty(property) != null) {
                command.add("-D" + property + "=" + System.getProperty(property));
            }
        }
        command.add(BenchmarkPeer.class.getName());
        command.add(backend);
        Process peer = new ProcessBuilder(command).redirectError(ProcessBuilder.Redirect.INHERIT).start();
        try (Connector connector = new Connector(BenchmarkOptions.connector("bench-reader", backend).build())) {
            TransferBenchmark bench = new TransferBenchmark(peer);
            System.out.println("peer: " + bench.expect("READY") + "; reader: " + connector.backendName()
                    + "; buffers with huge-page advice: " + BenchmarkBuffer.hugePagesRequested() + "; same-host copy allowed: "
                    + BenchmarkOptions.sameHostCopy() + "; TCP streams per large transfer: " + BenchmarkOptions.tcpStreams());
            // Latency first, straight after the warm-up: once the bandwidth sizes have run, HotSpot has
            // deoptimized parts of the small-operation path (new type and branch profiles) and a few hundred
            // operations do not bring it back to steady state.
            bench.latency(connector, 4096, WARMUP_OPERATIONS, 3000);
            System.out.printf(Locale.ROOT, "%-10s %6s %12s %12s %14s  %s%n", "size", "iters", "median GB/s", "best GB/s",
                    "GB/CPU-second", "path");
            String sizes = System.getProperty(SIZES_PROPERTY);
            long[] measured = sizes == null || sizes.isBlank() ? SIZES
                    : Arrays.stream(sizes.split(",")).map(String::trim).mapToLong(Long::parseLong).toArray();
            for (long size : measured) {
                if (size > maxSize) {
                    break;
                }
                bench.bandwidth(connector, size);
            }
            bench.toPeer.println("exit");
        } finally {
            if (!peer.waitFor(10, TimeUnit.SECONDS)) {
                peer.destroyForcibly();
            }
        }
    }

    private String expect(String prefix) throws IOException {
        String line = fromPeer.readLine();
        if (line == null || !line.startsWith(prefix)) {
            throw new IllegalStateException("peer said '" + line + "', expected " + prefix);
        }
        return line;
    }

    private RdmaMetadata publish() throws IOException {
        toPeer.println("publish");
        return RdmaMetadata.fromJson(expect("META ").substring(5));
    }

    private void bandwidth(Connector connector, long size) throws IOException {
        toPeer.println("alloc " + size);
        expect("OK");
        int iterations = (int) Math.max(20, Math.min(2000, (4L << 30) / size));
        int warmup = Math.max(2, iterations / 10);
        double[] gbps = new double[iterations];
        long cpu;
        try (BenchmarkBuffer buffer = new BenchmarkBuffer(size, BenchmarkBuffer.hugePagesRequested(), (byte) 0)) {
            Descriptor target = buffer.descriptor();
            target.registerMemory(connector);
            long cpuAtStart = 0;
            for (int i = -warmup; i < iterations; i++) {
                if (i == 0) {
                    cpuAtStart = cpuNanos();
                }
                RdmaMetadata metadata = publish();
                long start = System.nanoTime();
                ReadOperation read = connector.beginRead(metadata, target);
                read.waitForCompletion();
                long elapsed = System.nanoTime() - start;
                expect("DONE");
                Object streams = read.attributes().get("streams"); // set when the transfer was striped
                path = read.transferPath() + (streams == null ? "" : " x" + streams);
                if (i >= 0) {
                    gbps[i] = size / (double) elapsed; // bytes per ns = GB/s
                }
            }
            cpu = cpuNanos() - cpuAtStart;
        }
        Arrays.sort(gbps);
        System.out.printf(Locale.ROOT, "%-10s %6d %12.2f %12.2f %14.2f  %s%n", human(size), iterations, gbps[iterations / 2],
                gbps[iterations - 1], size * (double) iterations / cpu, path);
    }

    private void latency(Connector connector, long size, int warmup, int iterations) throws IOException {
        toPeer.println("alloc " + size);
        expect("OK");
        long[] nanos = new long[iterations];
        long[] readNanos = new long[iterations];
        try (BenchmarkBuffer buffer = new BenchmarkBuffer(size, BenchmarkBuffer.hugePagesRequested(), (byte) 0)) {
            Descriptor target = buffer.descriptor();
            target.registerMemory(connector);
            for (int i = -warmup; i < iterations; i++) {
                long start = System.nanoTime();
                RdmaMetadata metadata = publish();
                long readStart = System.nanoTime();
                ReadOperation read = connector.beginRead(metadata, target);
                read.waitForCompletion();
                long readEnd = System.nanoTime();
                expect("DONE");
                path = read.transferPath();
                if (i >= 0) {
                    nanos[i] = System.nanoTime() - start;
                    readNanos[i] = readEnd - readStart;
                }
            }
        }
        Arrays.sort(nanos);
        Arrays.sort(readNanos);
        // The part comparable with one NIXL request (create + post + wait): beginRead to completion.
        System.out.printf(Locale.ROOT,
                "latency of one %s ReadOperation (beginRead to completion): p50 %.1f us, p99 %.1f us (%d iterations, %s)%n",
                human(size), readNanos[iterations / 2] / 1e3, readNanos[(int) (iterations * 0.99)] / 1e3, iterations, path);
        System.out.printf(Locale.ROOT,
                "latency of a complete %s operation across processes (create, metadata JSON, read, both complete): "
                        + "p50 %.1f us, p99 %.1f us (%d iterations)%n",
                human(size), nanos[iterations / 2] / 1e3, nanos[(int) (iterations * 0.99)] / 1e3, iterations);
    }

    /**
     * CPU time (user + system) of both JVMs so far, in ns. The peer's is read from /proc through ProcessHandle,
     * at the kernel's tick resolution (10 ms): fine over the hundreds of milliseconds a size runs.
     */
    private long cpuNanos() {
        long own = ((com.sun.management.OperatingSystemMXBean) java.lang.management.ManagementFactory
                .getOperatingSystemMXBean()).getProcessCpuTime();
        long peerCpu = peer.info().totalCpuDuration().map(java.time.Duration::toNanos).orElseThrow(
                () -> new IllegalStateException("cannot read the peer's CPU time (ProcessHandle.Info)"));
        return own + peerCpu;
    }

    private static String human(long size) {
        if (size >= 1L << 30) {
            return (size >> 30) + " GiB";
        }
        if (size >= 1L << 20) {
            return (size >> 20) + " MiB";
        }
        return (size >> 10) + " KiB";
    }
}
