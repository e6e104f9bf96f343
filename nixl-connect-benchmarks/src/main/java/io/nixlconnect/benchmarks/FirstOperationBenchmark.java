package io.nixlconnect.benchmarks;

import io.nixlconnect.Connector;
import io.nixlconnect.Descriptor;
import io.nixlconnect.RdmaMetadata;
import io.nixlconnect.ReadOperation;
import io.nixlconnect.ReadableOperation;
import java.time.Duration;
import java.util.Arrays;
import java.util.List;
import java.util.Locale;

/**
 * The first operation to a new peer against the steady state: a long-lived reader, and per round a producer with a
 * fresh agent (a new peer to the reader: its metadata is loaded and, on NIXL, UCX wires up on first use). Each round
 * times the first complete 4 KiB READ (create the readable, metadata through JSON, read, both sides complete), then
 * {@code -Dbench.first.steady} more (default 50). Prints the p50 of the first operations and of the steady ones.
 * The JIT is warmed up first on another producer ({@code -Dbench.first.warmup}, default 3,000), so the first
 * operations measure the new peer, not interpreted code.
 *
 * <p>Usage: {@code FirstOperationBenchmark [nixl|embedded] [rounds]} (default nixl, 15).
 */
public final class FirstOperationBenchmark {

    private static final Duration WAIT = Duration.ofSeconds(60);
    private static final int SIZE = 4096;
    /** {@code -Dbench.first.phases=true}: print where each first operation's time went. */
    private static final boolean PHASES = Boolean.getBoolean("bench.first.phases");

    private FirstOperationBenchmark() {
    }

    public static void main(String[] args) {
        String backend = args.length > 0 ? args[0] : "nixl";
        int rounds = args.length > 1 ? Integer.parseInt(args[1]) : 15;
        int steady = Integer.getInteger("bench.first.steady", 50);
        int warmup = Integer.getInteger("bench.first.warmup", 3000);
        long[] first = new long[rounds];
        long[] steadyNanos = new long[rounds * steady];
        try (Connector reader = new Connector(BenchmarkOptions.connector("first-reader", backend).build());
             Descriptor target = Descriptor.allocate(SIZE)) {
            target.registerMemory(reader);
            try (Connector producer = new Connector(BenchmarkOptions.connector("first-warmup", backend).build());
                 Descriptor source = Descriptor.allocate(SIZE)) {
                source.registerMemory(producer);
                for (int i = 0; i < warmup; i++) {
                    operation(producer, source, reader, target);
                }
            }
            for (int round = 0; round < rounds; round++) {
                try (Connector producer = new Connector(
                        BenchmarkOptions.connector("first-producer-" + round, backend).build());
                     Descriptor source = Descriptor.allocate(SIZE)) {
                    source.registerMemory(producer);
                    first[round] = phased(producer, source, reader, target);
                    for (int i = 0; i < steady; i++) {
                        steadyNanos[round * steady + i] = operation(producer, source, reader, target);
                    }
                }
            }
        }
        double firstP50 = p50(first);
        double steadyP50 = p50(steadyNanos);
        System.out.printf(Locale.ROOT, "%-9s first operation to a new peer: p50 %.3f ms, max %.3f ms (%d rounds); "
                + "steady p50 %.3f ms (%d); first/steady %.2fx%n", backend, firstP50 / 1e6,
                Arrays.stream(first).max().orElse(0) / 1e6, rounds, steadyP50 / 1e6, steadyNanos.length,
                firstP50 / steadyP50);
    }

    private static double p50(long[] nanos) {
        long[] sorted = nanos.clone();
        Arrays.sort(sorted);
        return sorted[sorted.length / 2];
    }

    private static long phased(Connector producer, Descriptor source, Connector reader, Descriptor target) {
        boolean before = phases;
        phases = PHASES;
        try {
            return operation(producer, source, reader, target);
        } finally {
            phases = before;
        }
    }

    private static boolean phases;

    private static long operation(Connector producer, Descriptor source, Connector reader, Descriptor target) {
        long start = System.nanoTime();
        ReadableOperation readable = producer.createReadable(List.of(source));
        String json = readable.metadata().toJson();
        long published = System.nanoTime();
        ReadOperation read = reader.beginRead(RdmaMetadata.fromJson(json), List.of(target));
        long posted = System.nanoTime();
        read.waitForCompletion(WAIT);
        long readDone = System.nanoTime();
        readable.waitForCompletion(WAIT);
        long end = System.nanoTime();
        readable.close();
        read.close();
        if (phases) {
            System.out.printf(Locale.ROOT, "  publish %.3f ms, begin read %.3f ms, read done %.3f ms, readable done %.3f ms%n",
                    (published - start) / 1e6, (posted - published) / 1e6, (readDone - posted) / 1e6,
                    (end - readDone) / 1e6);
        }
        return end - start;
    }
}
