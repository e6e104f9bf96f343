package io.nixlconnect.benchmarks;

import io.nixlconnect.Connector;
import io.nixlconnect.Descriptor;
import io.nixlconnect.RdmaMetadata;
import io.nixlconnect.ReadOperation;
import io.nixlconnect.ReadableOperation;
import io.nixlconnect.WritableOperation;
import io.nixlconnect.WriteOperation;
import java.lang.management.ManagementFactory;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.List;
import java.util.Locale;
import java.util.Random;

/**
 * The shape of KV-cache transfers: N blocks of B bytes scattered over a registered pool on both sides, beside one
 * contiguous operation of the same bytes, READ and WRITE. Both connectors in one JVM; each iteration is a complete
 * operation (the passive side creates the readable or writable, its metadata goes through JSON, the active side
 * parses it, transfers, and both sides complete).
 *
 * <p>Scattered and contiguous iterations alternate within one loop, so that the machine's load (this benchmark is
 * run on shared 2-core machines) falls on both alike; the ratio of their medians is the figure to read.
 *
 * <p>Usage: {@code KvBenchmark [nixl|embedded] [NxB,...]} (default {@code 128x65536,1024x16384,4096x4096});
 * {@code -Dbench.sameHostCopy=false} keeps the embedded transport on TCP; {@code -Dbench.kv.iterations=N} per mode
 * and shape (default 200), {@code -Dbench.kv.warmup=N} (default 300 per shape and operation).
 */
public final class KvBenchmark {

    static final String DEFAULT_SHAPES = "128x65536,1024x16384,4096x4096";
    static final int ITERATIONS = Integer.getInteger("bench.kv.iterations", 200);
    static final int WARMUP = Integer.getInteger("bench.kv.warmup", 300);
    static final Duration WAIT = Duration.ofSeconds(60);

    private KvBenchmark() {
    }

    public static void main(String[] args) {
        String backend = args.length > 0 ? args[0] : "embedded";
        String shapes = args.length > 1 ? args[1] : DEFAULT_SHAPES;
        com.sun.management.OperatingSystemMXBean os =
                (com.sun.management.OperatingSystemMXBean) ManagementFactory.getOperatingSystemMXBean();
        String label = backend.toLowerCase(Locale.ROOT)
                + (backend.equalsIgnoreCase("embedded") ? (BenchmarkOptions.sameHostCopy() ? "/same-host" : "/tcp") : "");
        System.out.printf(Locale.ROOT, "%-20s %-5s %-12s %-10s %9s %9s %8s %14s %9s%n", "backend", "op", "shape", "mode",
                "p50 ms", "p99 ms", "GB/s", "GB/CPU-second", "p50 ratio");
        try (Connector passive = new Connector(BenchmarkOptions.connector("kv-passive", backend).build());
             Connector active = new Connector(BenchmarkOptions.connector("kv-active", backend).build())) {
            for (String shape : shapes.split(",")) {
                String[] parts = shape.strip().split("x");
                int blocks = Integer.parseInt(parts[0]);
                int blockSize = Integer.parseInt(parts[1]);
                run(os, label, passive, active, blocks, blockSize);
            }
        }
    }

    private static void run(com.sun.management.OperatingSystemMXBean os, String label, Connector passive,
            Connector active, int blocks, int blockSize) {
        long poolSize = 2L * blocks * blockSize;
        boolean hugePages = BenchmarkBuffer.hugePagesRequested();
        try (BenchmarkBuffer passivePool = new BenchmarkBuffer(poolSize, hugePages, (byte) 1);
             BenchmarkBuffer activePool = new BenchmarkBuffer(poolSize, hugePages, (byte) 2)) {
            passivePool.descriptor().registerMemory(passive);
            activePool.descriptor().registerMemory(active);
            Random order = new Random(blocks);
            List<Descriptor> passiveBlocks = scattered(passivePool.descriptor(), blocks, blockSize, order);
            List<Descriptor> activeBlocks = scattered(activePool.descriptor(), blocks, blockSize, order);
            List<Descriptor> passiveWhole = List.of(passivePool.descriptor().slice(0, (long) blocks * blockSize));
            List<Descriptor> activeWhole = List.of(activePool.descriptor().slice(0, (long) blocks * blockSize));
            for (boolean read : new boolean[] {true, false}) {
                for (int i = 0; i < WARMUP; i++) {
                    operation(read, passive, active, passiveBlocks, activeBlocks);
                    operation(read, passive, active, passiveWhole, activeWhole);
                }
                long[] scatteredNanos = new long[ITERATIONS];
                long[] contiguousNanos = new long[ITERATIONS];
                long scatteredCpu = 0;
                long contiguousCpu = 0;
                for (int i = 0; i < ITERATIONS; i++) {
                    long cpu = os.getProcessCpuTime();
                    scatteredNanos[i] = operation(read, passive, active, passiveBlocks, activeBlocks);
                    long between = os.getProcessCpuTime();
                    contiguousNanos[i] = operation(read, passive, active, passiveWhole, activeWhole);
                    scatteredCpu += between - cpu;
                    contiguousCpu += os.getProcessCpuTime() - between;
                }
                long bytes = (long) blocks * blockSize;
                String shape = blocks + "x" + (blockSize >= 1024 ? (blockSize >> 10) + "K" : blockSize);
                String op = read ? "READ" : "WRITE";
                double scatteredP50 = print(label, op, shape, "scattered", scatteredNanos, bytes, scatteredCpu, 0);
                print(label, op, shape, "contiguous", contiguousNanos, bytes, contiguousCpu, scatteredP50);
            }
        }
    }

    /** Prints one row; returns its p50 in ns. With {@code scatteredP50} given, the row's ratio is scattered/this. */
    private static double print(String label, String op, String shape, String mode, long[] nanos, long bytes,
            long cpuNanos, double scatteredP50) {
        long[] sorted = nanos.clone();
        Arrays.sort(sorted);
        double p50 = sorted[sorted.length / 2];
        double p99 = sorted[Math.min(sorted.length - 1, (int) Math.ceil(sorted.length * 0.99) - 1)];
        double gbps = bytes / p50;
        double perCpuSecond = bytes * (double) nanos.length / Math.max(1, cpuNanos);
        System.out.printf(Locale.ROOT, "%-20s %-5s %-12s %-10s %9.3f %9.3f %8.2f %14.2f %9s%n", label, op, shape, mode,
                p50 / 1e6, p99 / 1e6, gbps, perCpuSecond,
                scatteredP50 == 0 ? "" : String.format(Locale.ROOT, "%.2fx", scatteredP50 / p50));
        return p50;
    }

    /** One complete operation; returns its duration in ns. */
    private static long operation(boolean read, Connector passive, Connector active, List<Descriptor> passiveSide,
            List<Descriptor> activeSide) {
        long start = System.nanoTime();
        if (read) {
            ReadableOperation readable = passive.createReadable(passiveSide);
            String json = readable.metadata().toJson();
            ReadOperation operation = active.beginRead(RdmaMetadata.fromJson(json), activeSide);
            operation.waitForCompletion(WAIT);
            readable.waitForCompletion(WAIT);
        } else {
            WritableOperation writable = passive.createWritable(passiveSide);
            String json = writable.metadata().toJson();
            WriteOperation operation = active.beginWrite(activeSide, RdmaMetadata.fromJson(json));
            operation.waitForCompletion(WAIT);
            writable.waitForCompletion(WAIT);
        }
        return System.nanoTime() - start;
    }

    /** Every other block of the pool (so no two are adjacent and none merge), in a shuffled order. */
    private static List<Descriptor> scattered(Descriptor pool, int blocks, int blockSize, Random order) {
        List<Descriptor> slices = new ArrayList<>(blocks);
        for (int i = 0; i < blocks; i++) {
            slices.add(pool.slice((long) (2 * i + 1) * blockSize, blockSize));
        }
        Collections.shuffle(slices, order);
        return slices;
    }
}
