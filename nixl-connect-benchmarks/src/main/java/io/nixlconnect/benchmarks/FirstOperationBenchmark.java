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
 * {@code -Dbench.first.steady} more (default 50). Prints the p50 of the first operations and of the steady ones, and
 * the p50 of each phase of both (publish: create the readable and its JSON; begin read: parse, load the peer, post;
 * read done; readable done). The JIT is warmed up first on another producer ({@code -Dbench.first.warmup}, default
 * 3,000), so the first operations measure the new peer, not interpreted code.
 *
 * <p>{@code -Dbench.first.warmProducer=true}: each round's producer first serves one READ to a second long-lived
 * reader, so that the timed first operation is between two agents that have each connected to someone before (a new
 * pair of warm agents, as when a long-lived worker meets a new peer), not a brand-new agent's first connection.
 * {@code -Dbench.first.phases=true} also prints each first operation's phases.
 *
 * <p>{@code -Dbench.first.introduce=true} (issue 32): each round's producer is introduced to the reader
 * ({@link Connector#introducePeer}) from the metadata of a readable it publishes as it starts, as a service does when
 * it discovers a new worker; its first request comes {@code -Dbench.first.introducePauseMillis} later (default 20),
 * and the timed first operation is that request's. The introduction itself is printed apart.
 *
 * <p>Usage: {@code FirstOperationBenchmark [nixl|embedded] [rounds]} (default nixl, 15).
 */
public final class FirstOperationBenchmark {

    private static final Duration WAIT = Duration.ofSeconds(60);
    private static final int SIZE = 4096;
    private static final String[] PHASES = {"publish", "begin read", "read done", "readable done"};

    private FirstOperationBenchmark() {
    }

    public static void main(String[] args) {
        String backend = args.length > 0 ? args[0] : "nixl";
        int rounds = args.length > 1 ? Integer.parseInt(args[1]) : 15;
        int steady = Integer.getInteger("bench.first.steady", 50);
        int warmup = Integer.getInteger("bench.first.warmup", 3000);
        boolean warmProducer = Boolean.getBoolean("bench.first.warmProducer");
        boolean printPhases = Boolean.getBoolean("bench.first.phases");
        boolean introduce = Boolean.getBoolean("bench.first.introduce");
        long introducePause = Long.getLong("bench.first.introducePauseMillis", 20);
        long[] introductions = new long[rounds];
        long[] first = new long[rounds];
        long[] steadyNanos = new long[rounds * steady];
        long[][] firstPhases = new long[rounds][];
        long[][] steadyPhases = new long[rounds * steady][];
        long[] producerStart = new long[rounds];
        try (Connector reader = new Connector(BenchmarkOptions.connector("first-reader", backend).build());
             Connector otherReader = warmProducer
                     ? new Connector(BenchmarkOptions.connector("first-other-reader", backend).build()) : null;
             Descriptor target = Descriptor.allocate(SIZE);
             Descriptor otherTarget = Descriptor.allocate(SIZE)) {
            target.registerMemory(reader);
            if (otherReader != null) {
                otherTarget.registerMemory(otherReader);
            }
            try (Connector producer = new Connector(BenchmarkOptions.connector("first-warmup", backend).build());
                 Descriptor source = Descriptor.allocate(SIZE)) {
                source.registerMemory(producer);
                for (int i = 0; i < warmup; i++) {
                    operation(producer, source, reader, target);
                    if (otherReader != null && i % 10 == 0) {
                        operation(producer, source, otherReader, otherTarget);
                    }
                }
            }
            for (int round = 0; round < rounds; round++) {
                long start = System.nanoTime();
                try (Connector producer = new Connector(
                        BenchmarkOptions.connector("first-producer-" + round, backend).build());
                     Descriptor source = Descriptor.allocate(SIZE)) {
                    source.registerMemory(producer);
                    producerStart[round] = System.nanoTime() - start;
                    if (otherReader != null) {
                        operation(producer, source, otherReader, otherTarget);
                    }
                    if (introduce) {
                        introductions[round] = introduce(producer, source, reader, introducePause);
                    }
                    firstPhases[round] = operation(producer, source, reader, target);
                    first[round] = total(firstPhases[round]);
                    if (printPhases) {
                        System.out.println("  " + describe(firstPhases[round]));
                    }
                    for (int i = 0; i < steady; i++) {
                        steadyPhases[round * steady + i] = operation(producer, source, reader, target);
                        steadyNanos[round * steady + i] = total(steadyPhases[round * steady + i]);
                    }
                }
            }
        }
        double firstP50 = p50(first);
        double steadyP50 = p50(steadyNanos);
        System.out.printf(Locale.ROOT, "%-9s first operation to a new peer%s: p50 %.3f ms, max %.3f ms (%d rounds); "
                + "steady p50 %.3f ms (%d); first/steady %.2fx%n", backend,
                (warmProducer ? " (warm producer)" : "") + (introduce ? " (introduced " + introducePause + " ms before)" : ""),
                firstP50 / 1e6, Arrays.stream(first).max().orElse(0) / 1e6, rounds, steadyP50 / 1e6,
                steadyNanos.length, firstP50 / steadyP50);
        System.out.println("  phase p50, first: " + describe(phaseP50s(firstPhases)));
        System.out.println("  phase p50, steady: " + describe(phaseP50s(steadyPhases)));
        System.out.printf(Locale.ROOT, "  new producer connector (create, register): p50 %.3f ms%n",
                p50(producerStart) / 1e6);
        if (introduce) {
            System.out.printf(Locale.ROOT, "  introducePeer: p50 %.3f ms%n", p50(introductions) / 1e6);
        }
    }

    /**
     * Introduces {@code producer} to {@code reader} from a readable it publishes (closed unread), then waits
     * {@code pauseMillis}; returns the nanoseconds {@link Connector#introducePeer} took.
     */
    private static long introduce(Connector producer, Descriptor source, Connector reader, long pauseMillis) {
        ReadableOperation announced = producer.createReadable(List.of(source));
        RdmaMetadata metadata = RdmaMetadata.fromJson(announced.metadata().toJson());
        long start = System.nanoTime();
        reader.introducePeer(metadata);
        long took = System.nanoTime() - start;
        announced.close();
        try {
            Thread.sleep(pauseMillis); // the gap between a worker's discovery and its first request
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
        return took;
    }

    private static long[] phaseP50s(long[][] operations) {
        long[] p50s = new long[PHASES.length];
        for (int phase = 0; phase < PHASES.length; phase++) {
            long[] values = new long[operations.length];
            for (int i = 0; i < operations.length; i++) {
                values[i] = operations[i][phase];
            }
            p50s[phase] = (long) p50(values);
        }
        return p50s;
    }

    private static String describe(long[] phases) {
        StringBuilder text = new StringBuilder();
        for (int phase = 0; phase < PHASES.length; phase++) {
            text.append(phase == 0 ? "" : ", ").append(String.format(Locale.ROOT, "%s %.3f ms", PHASES[phase],
                    phases[phase] / 1e6));
        }
        return text.toString();
    }

    private static long total(long[] phases) {
        return Arrays.stream(phases).sum();
    }

    private static double p50(long[] nanos) {
        long[] sorted = nanos.clone();
        Arrays.sort(sorted);
        return sorted[sorted.length / 2];
    }

    /** One complete operation; returns the nanoseconds of each of {@link #PHASES}. */
    private static long[] operation(Connector producer, Descriptor source, Connector reader, Descriptor target) {
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
        return new long[] {published - start, posted - published, readDone - posted, end - readDone};
    }
}
