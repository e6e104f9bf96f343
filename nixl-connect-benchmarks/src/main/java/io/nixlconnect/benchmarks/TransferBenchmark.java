package io.nixlconnect.benchmarks;

import io.nixlconnect.Connector;
import io.nixlconnect.Descriptor;
import io.nixlconnect.Operation;
import io.nixlconnect.OperationListener;
import io.nixlconnect.RdmaMetadata;
import io.nixlconnect.ReadOperation;
import java.io.BufferedReader;
import java.io.Closeable;
import java.io.DataInputStream;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.OutputStream;
import java.io.PrintStream;
import java.net.InetAddress;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
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
    /**
     * Each bandwidth size also warms up for at least this long (besides a tenth of its iterations) before it is
     * measured: a new size's first READs meet new type and branch profiles, HotSpot deoptimizes parts of the
     * operation path ({@code Connector.beginRead} among them) and runs profiling (C1) code until C2 has compiled
     * it again, which took ~1.5 s on 2 cores and left a 1 MiB size measured partly on C1 code (5.25 GB/s, against
     * 6.04 once recompiled). {@code nixl_direct.py} warms up for as long, so both sides do the same work first.
     */
    static final long SIZE_WARMUP_NANOS = TimeUnit.MILLISECONDS.toNanos(Long.getLong("bench.sizeWarmupMillis", 2000));
    /** {@code -Dbench.bareExchange=false}: the complete 4 KiB operations alone, without their library-free twin. */
    static final boolean BARE_EXCHANGE = Boolean.parseBoolean(System.getProperty("bench.bareExchange", "true"));

    private final BufferedReader fromPeer;
    private final PrintStream toPeer;
    private final ProcessHandle peer;
    private String path;
    private int lastMetadataLength;

    private TransferBenchmark(Process peer) {
        this.peer = peer.toHandle();
        this.fromPeer = new BufferedReader(new InputStreamReader(peer.getInputStream(), StandardCharsets.UTF_8));
        this.toPeer = new PrintStream(peer.getOutputStream(), true, StandardCharsets.UTF_8);
    }

    public static void main(String[] args) throws Exception {
        String backend = args.length > 0 ? args[0] : "embedded";
        long maxSize = args.length > 1 ? Long.parseLong(args[1]) : 1L << 30;
        // Native access for JNA: Java 24+ warns without it, 17 accepts it.
        List<String> options = new ArrayList<>(List.of("--enable-native-access=ALL-UNNAMED", "-Xmx256m"));
        options.add("-Dbench.hugepages=" + BenchmarkBuffer.hugePagesRequested());
        options.add("-D" + BenchmarkOptions.SAME_HOST_COPY_PROPERTY + "=" + BenchmarkOptions.sameHostCopy());
        options.add("-D" + BenchmarkOptions.TCP_STREAMS_PROPERTY + "=" + BenchmarkOptions.tcpStreams());
        if (BenchmarkOptions.nixlLibraryDir() != null) {
            options.add("-D" + BenchmarkOptions.LIBRARY_PATH_PROPERTY + "=" + BenchmarkOptions.nixlLibraryDir());
        }
        options.addAll(ChildJvms.forwardedProperties(BenchmarkOptions.LIBRARY_PATH_PROPERTY));
        Process peer = new ProcessBuilder(ChildJvms.command(BenchmarkPeer.class, options, backend))
                .redirectError(ProcessBuilder.Redirect.INHERIT).start();
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
        String json = expect("META ").substring(5);
        lastMetadataLength = json.length();
        return RdmaMetadata.fromJson(json);
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
            long warmupStart = System.nanoTime();
            for (int i = 0; i < warmup || System.nanoTime() - warmupStart < SIZE_WARMUP_NANOS; i++) {
                readOnce(connector, target);
            }
            long cpuAtStart = cpuNanos();
            for (int i = 0; i < iterations; i++) {
                gbps[i] = size / (double) readOnce(connector, target); // bytes per ns = GB/s
            }
            cpu = cpuNanos() - cpuAtStart;
        }
        Arrays.sort(gbps);
        System.out.printf(Locale.ROOT, "%-10s %6d %12.2f %12.2f %14.2f  %s%n", human(size), iterations, gbps[iterations / 2],
                gbps[iterations - 1], size * (double) iterations / cpu, path);
    }

    /** One READ of a freshly published readable: returns beginRead to completion in ns. */
    private long readOnce(Connector connector, Descriptor target) throws IOException {
        RdmaMetadata metadata = publish();
        long start = System.nanoTime();
        ReadOperation read = connector.beginRead(metadata, target);
        read.waitForCompletion();
        long elapsed = System.nanoTime() - start;
        expect("DONE");
        int streams = read.attributes().streams(); // more than one when the transfer was striped
        path = read.transferPath() + (streams == 1 ? "" : " x" + streams);
        return elapsed;
    }

    private void latency(Connector connector, long size, int warmup, int iterations) throws IOException {
        toPeer.println("alloc " + size);
        expect("OK");
        long[] nanos = new long[iterations];
        long[] readNanos = new long[iterations];
        long[] bareNanos = new long[iterations];
        long[] socketNanos = new long[iterations];
        toPeer.println("listen");
        int port = Integer.parseInt(expect("PORT ").substring(5));
        OperationListener pathOfTheLastRead = new OperationListener() {
            @Override
            public void operationFinished(Operation operation) {
                path = operation.transferPath();
            }
        };
        connector.addListener(pathOfTheLastRead);
        try (Closeable removeListener = () -> connector.removeListener(pathOfTheLastRead);
             BenchmarkBuffer buffer = new BenchmarkBuffer(size, BenchmarkBuffer.hugePagesRequested(), (byte) 0);
             Socket bare = new Socket(InetAddress.getLoopbackAddress(), port)) {
            bare.setTcpNoDelay(true);
            DataInputStream bareIn = new DataInputStream(bare.getInputStream());
            OutputStream bareOut = bare.getOutputStream();
            byte[] request = new byte[32];
            byte[] answer = new byte[(int) size];
            Descriptor target = buffer.descriptor();
            target.registerMemory(connector);
            // The complete operation and its library-free twin alternate, so both meet the machine in the same state.
            for (int i = -warmup; i < iterations; i++) {
                long start = System.nanoTime();
                RdmaMetadata metadata = publish();
                long readStart = System.nanoTime();
                connector.read(metadata, target);
                long readEnd = System.nanoTime();
                expect("DONE");
                long end = System.nanoTime();
                if (i >= 0) {
                    nanos[i] = end - start;
                    readNanos[i] = readEnd - readStart;
                }
                if (!BARE_EXCHANGE) {
                    continue;
                }
                toPeer.println("bare " + lastMetadataLength + " " + size);
                expect("META ");
                long socketStart = System.nanoTime();
                bareOut.write(request);
                bareOut.flush();
                bareIn.readFully(answer);
                long socketEnd = System.nanoTime();
                expect("DONE");
                long bareEnd = System.nanoTime();
                if (i >= 0) {
                    bareNanos[i] = bareEnd - end;
                    socketNanos[i] = socketEnd - socketStart;
                }
            }
        }
        Arrays.sort(nanos);
        Arrays.sort(readNanos);
        Arrays.sort(bareNanos);
        Arrays.sort(socketNanos);
        // The part comparable with one NIXL request (create + post + wait): Connector.read, the blocking read.
        System.out.printf(Locale.ROOT,
                "latency of one %s ReadOperation (Connector.read: begin to completion): p50 %.1f us, p99 %.1f us (%d iterations, %s)%n",
                human(size), readNanos[iterations / 2] / 1e3, readNanos[(int) (iterations * 0.99)] / 1e3, iterations, path);
        System.out.printf(Locale.ROOT,
                "latency of a complete %s operation across processes (create, metadata JSON, read, both complete): "
                        + "p50 %.1f us, p99 %.1f us (%d iterations)%n",
                human(size), nanos[iterations / 2] / 1e3, nanos[(int) (iterations * 0.99)] / 1e3, iterations);
        if (!BARE_EXCHANGE) {
            return;
        }
        System.out.printf(Locale.ROOT,
                "  the same exchange without the library (pipe round trip with a line as long as the metadata, %s over "
                        + "a loopback socket, peer thread hand-off, DONE), alternating with it: p50 %.1f us, p99 %.1f us; "
                        + "its socket round trip alone: p50 %.1f us%n",
                human(size), bareNanos[iterations / 2] / 1e3, bareNanos[(int) (iterations * 0.99)] / 1e3,
                socketNanos[iterations / 2] / 1e3);
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
