package io.nixlconnect.benchmarks;

import io.nixlconnect.Connector;
import io.nixlconnect.ConnectorOptions;
import io.nixlconnect.Descriptor;
import io.nixlconnect.RdmaMetadata;
import io.nixlconnect.transport.nixl.NixlSettings;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.SplittableRandom;
import java.util.concurrent.TimeUnit;

/**
 * A soak of the NIXL backend as a service sees it (issue 22): a producer JVM publishes KV-cache shaped readables and
 * writables (hundreds of blocks scattered over a registered pool) per request and closes each once done; a consumer
 * reads and writes them — this JVM (pass "java") or the real Python {@code dynamo.nixl_connect} (pass "python",
 * {@link PythonSoakConsumer}) — and at random: requests are aborted before they are read, spent metadata is read
 * again, readers in their own process (of the consumer's kind) are killed with SIGKILL mid-read or stopped with
 * SIGSTOP past the drain limit and then killed, and the producer is restarted under its name. Every interval it prints
 * operations, failures by cause, p50/p99, heap and RSS of both sides, kept bytes, loaded peers, registrations and file
 * descriptors; at the end it checks the targets ({@link SoakFigures}) and exits 1 if one is missed. Test-only:
 * {@code NIXL_SOAK_INJECT_LEAK} makes the Java consumer leak per operation ({@link JavaSoakConsumer}).
 *
 * <pre>
 * java -cp … io.nixlconnect.benchmarks.NixlSoak SECONDS [INTERVAL_SECONDS [java|python]]  (-Dnixl.library.path=DIR)
 * </pre>
 */
public final class NixlSoak {

    static final int POOL = 64 << 20;
    static final int BLOCKS = 256;
    static final int BLOCK = 16 << 10;
    static final long BIG = 64L << 20; // what the readers that are killed or stopped read
    static final Duration TIMEOUT = Duration.ofSeconds(10);
    static final Duration DRAIN_LIMIT = Duration.ofMillis(500);
    static final String PRODUCER = "soak-producer";

    private final SplittableRandom random = new SplittableRandom(Long.getLong("soak.seed", 22));
    private final SoakFigures figures = new SoakFigures();
    private SoakChild producer;
    private SoakChild spareReader; // started ahead: a reader's start-up (a JVM, or Python and its imports) is slow

    private NixlSoak() {
    }

    public static void main(String[] args) throws Exception {
        String role = args.length > 0 ? args[0] : "180";
        if (role.equals("producer")) {
            SoakProcesses.producer();
        } else if (role.equals("reader")) {
            SoakProcesses.reader();
        } else {
            System.exit(new NixlSoak().run(Long.parseLong(role), Long.parseLong(args.length > 1 ? args[1] : "60"),
                    args.length > 2 ? args[2] : "java") ? 0 : 1);
        }
    }

    boolean run(long seconds, long interval, String consumerKind) throws Exception {
        System.out.printf("soak: %s consumer, %d s, report every %d s, UCX_TLS=%s, %d blocks x %d bytes per operation%n",
                consumerKind, seconds, interval, System.getenv().getOrDefault("UCX_TLS", "(default)"), BLOCKS, BLOCK);
        producer = SoakChild.java("producer");
        producer.next("READY");
        boolean python = consumerKind.equals("python");
        if (python && !JavaSoakConsumer.injectedLeaks().isEmpty()) {
            System.out.println("soak: " + JavaSoakConsumer.LEAK_VARIABLE + " is for the Java consumer only: no leak"
                    + " injected into the Python one");
        }
        SoakConsumer consumer = python ? new PythonSoakConsumer(figures) : new JavaSoakConsumer(figures, random);
        // The Python consumer moves about 1/20 as many requests (the module registers every block per operation):
        // rarer faults five times as often, so that a short pass still meets each several times.
        int rare = python ? 10 : 2;
        try {
            long start = System.nanoTime();
            long nextReport = start + TimeUnit.SECONDS.toNanos(interval);
            long end = start + TimeUnit.SECONDS.toNanos(seconds);
            int minute = 0;
            while (System.nanoTime() < end) {
                step(consumer, rare);
                if (System.nanoTime() >= nextReport) {
                    figures.report(++minute, consumer.describe(), consumer.rssKiB(), producer.stats());
                    nextReport += TimeUnit.SECONDS.toNanos(interval);
                    if (minute == 1) { // warmed up: compiled, pool touched, peers loaded; growth counts from here
                        consumer.warmedUp();
                        long liveHeap = consumer.liveHeapKiB();
                        figures.warmedUp(consumer.rssKiB(), consumer.fds(), liveHeap);
                    }
                }
            }
            // Targets: the producer is usable after all of it, and everything is back to idle.
            long cleanFailures = 0;
            for (int i = 0; i < 20; i++) {
                RdmaMetadata metadata = publish(i % 2 == 0);
                if (metadata == null || !consumer.transfer(metadata, i % 2 == 0, false)) {
                    cleanFailures++;
                }
            }
            if (cleanFailures > 0) {
                figures.miss(cleanFailures + " of 20 clean operations at the end failed: a peer was left unusable");
            }
            consumer.notIdle().forEach(figures::miss);
            String[] stats = producerIdle();
            if (!stats[5].equals("0") || !stats[6].equals("0")) {
                figures.miss("producer not back to idle within 30 s: registrations beyond its pool " + stats[5]
                        + " bytes, in flight " + stats[6]);
            }
            figures.report(++minute, consumer.describe(), consumer.rssKiB(), producer.stats());
            long liveHeap = consumer.liveHeapKiB();
            figures.judgeGrowth(new SoakFigures.Footprint(figures.operations(), consumer.rssKiB(), consumer.fds(),
                    liveHeap), consumer.runtimeGrowth());
        } finally {
            if (spareReader != null) {
                spareReader.kill();
            }
            String ended = consumer.end();
            if (ended != null) {
                figures.miss(ended);
            }
            String stopped = producer.stop();
            if (stopped != null) {
                figures.miss("the producer " + stopped);
            }
        }
        return figures.verdict(SoakChild.crashLogs(), seconds);
    }

    /**
     * One request, with at random one of the disturbances a service meets: per thousand requests {@code rare} producer
     * restarts, {@code rare} readers stopped and {@code rare} killed, 54 aborted, 60 read or written twice.
     */
    private void step(SoakConsumer consumer, int rare) throws Exception {
        int roll = random.nextInt(1000);
        if (roll < rare) {
            restartProducer();
        } else if (roll < 3 * rare) {
            stalledOrKilledReader(consumer, roll < 2 * rare);
        } else if (roll < 3 * rare + 54) {
            producer.send("abort " + BLOCKS + " " + BLOCK);
            producer.next("META ");
            figures.count("aborted before read (expected)");
        } else {
            RdmaMetadata metadata = publish(roll % 2 == 0);
            if (metadata != null) {
                consumer.transfer(metadata, roll % 2 == 0, roll < 3 * rare + 114);
            }
        }
    }

    /**
     * The producer's stats once it is back to idle (no registration beyond its pool, nothing in flight), or after 30 s:
     * a window closed mid-read is released at its drain limit (1.2 s for 64 MiB), which a loaded machine may run late.
     */
    private String[] producerIdle() throws InterruptedException {
        long began = System.nanoTime();
        long deadline = began + TimeUnit.SECONDS.toNanos(30);
        String[] stats = producer.stats();
        while ((!stats[5].equals("0") || !stats[6].equals("0")) && System.nanoTime() < deadline) {
            Thread.sleep(100);
            stats = producer.stats();
        }
        long waited = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - began);
        if (waited >= 100) {
            System.out.println("producer back to idle after " + waited + " ms");
        }
        return stats;
    }

    /** The producer's metadata for a new KV-shaped readable or writable; null (counted) if it is gone. */
    private RdmaMetadata publish(boolean readable) throws InterruptedException {
        producer.send((readable ? "readable " : "writable ") + BLOCKS + " " + BLOCK);
        String line = producer.nextOrGone("META ");
        if (line == null) {
            figures.count("producer gone");
            return null;
        }
        return RdmaMetadata.fromJson(line.substring(5));
    }

    /** A reader process starts a read of {@link #BIG} bytes and is killed (SIGKILL), or stopped past the drain limit first. */
    private void stalledOrKilledReader(SoakConsumer consumer, boolean stop) throws Exception {
        producer.send("big " + BIG);
        String metadata = producer.nextOrGone("META ");
        if (metadata == null) {
            return;
        }
        SoakChild reader = spareReader != null ? spareReader : consumer.startDoomedReader();
        spareReader = consumer.startDoomedReader();
        try {
            reader.next("READY");
            reader.send("read " + metadata.substring(5));
            reader.next("STARTED");
            if (stop) {
                reader.signal("STOP");
                producer.send("close-big");
                producer.next("CLOSED");
                Thread.sleep(DRAIN_LIMIT.toMillis() + BIG / 100_000 + 500); // past the drain limit
                figures.count("reader stopped past the drain limit, then killed (expected)");
            } else {
                Thread.sleep(random.nextInt(50));
                figures.count("reader killed mid-read (expected)");
            }
        } finally {
            reader.kill();
        }
        if (!stop) {
            producer.send("close-big");
            producer.next("CLOSED");
        }
    }

    private void restartProducer() throws Exception {
        producer.kill();
        figures.count("producer restarted (expected)");
        producer = SoakChild.java("producer");
        producer.next("READY");
    }

    /** {@code count} distinct blocks of {@code size} bytes of {@code pool} ({@link #POOL} bytes), in random order. */
    static List<Descriptor> randomBlocks(Descriptor pool, SplittableRandom random, int count, int size) {
        int[] slots = random.ints(0, POOL / size).distinct().limit(count).toArray();
        List<Descriptor> blocks = new ArrayList<>(count);
        for (int slot : slots) {
            blocks.add(pool.slice((long) slot * size, size));
        }
        return blocks;
    }

    static long rssKiB(Path status) throws IOException {
        for (String line : Files.readAllLines(status)) {
            if (line.startsWith("VmRSS:")) {
                return Long.parseLong(line.replaceAll("[^0-9]", ""));
            }
        }
        return -1;
    }

    static Connector connector(String name) {
        String library = System.getProperty("nixl.library.path", System.getenv("NIXL_LIBRARY_DIR"));
        return new Connector(ConnectorOptions.builder().workerId(name)
                .transports(NixlSettings.defaults().withLibraryDir(Path.of(library)).withDrainLimit(DRAIN_LIMIT))
                .operationTimeout(TIMEOUT).passiveTimeout(Duration.ofSeconds(30)).build());
    }
}
