package io.nixlconnect.benchmarks;

import io.nixlconnect.Connector;
import io.nixlconnect.ConnectorOptions;
import io.nixlconnect.Descriptor;
import io.nixlconnect.NixlConnectException;
import io.nixlconnect.Operation;
import io.nixlconnect.OperationStatus;
import io.nixlconnect.RdmaMetadata;
import io.nixlconnect.ReadableOperation;
import io.nixlconnect.TransferTimeoutException;
import io.nixlconnect.WritableOperation;
import io.nixlconnect.transport.nixl.NixlSettings;
import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.SplittableRandom;
import java.util.TreeMap;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;

/**
 * A soak of the NIXL backend as a service sees it (issue 22): a producer JVM publishes KV-cache shaped readables and
 * writables (hundreds of blocks scattered over a registered pool) per request and closes each once done; this JVM
 * consumes them with READ and WRITE, and at random: aborts requests before they are read, reads spent metadata
 * again, starts readers in their own JVM that are killed with SIGKILL mid-read or stopped with SIGSTOP past the
 * drain limit and then killed, and restarts the producer. Every interval it prints operations, failures by cause,
 * p50/p99, heap and RSS of both sides, kept bytes, loaded peers and registrations; at the end it checks the targets
 * and exits 1 if one is missed.
 *
 * <pre>
 * java -cp … io.nixlconnect.benchmarks.NixlSoak SECONDS [INTERVAL_SECONDS]    (-Dnixl.library.path=DIR)
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

    private NixlSoak() {
    }

    public static void main(String[] args) throws Exception {
        if (args.length > 0 && args[0].equals("producer")) {
            producer();
        } else if (args.length > 0 && args[0].equals("reader")) {
            reader();
        } else {
            System.exit(new NixlSoak().run(Long.parseLong(args.length > 0 ? args[0] : "180"),
                    Long.parseLong(args.length > 1 ? args[1] : "60")) ? 0 : 1);
        }
    }

    // --- the coordinator, which is also the consumer ---

    private final SplittableRandom random = new SplittableRandom(Long.getLong("soak.seed", 22));
    private final Map<String, Long> failures = new TreeMap<>();
    private final List<Long> latencies = new ArrayList<>();
    private final List<Long> rssPerInterval = new ArrayList<>();
    private final List<Long> heapPerInterval = new ArrayList<>();
    private final List<String> missed = new ArrayList<>();
    private long operations;
    private long crashes;
    private long slowFailures;

    boolean run(long seconds, long interval) throws Exception {
        System.out.printf("soak: %d s, report every %d s, UCX_TLS=%s, %d blocks x %d bytes per operation%n", seconds,
                interval, System.getenv().getOrDefault("UCX_TLS", "(default)"), BLOCKS, BLOCK);
        Child producer = Child.start("producer");
        producer.next("READY");
        long idleRegistrations;
        int idlePeers;
        try (Connector consumer = connector("soak-consumer"); Descriptor pool = Descriptor.allocate(POOL)) {
            pool.registerMemory(consumer);
            idleRegistrations = consumer.registeredBytes();
            idlePeers = 0;
            long start = System.nanoTime();
            long nextReport = start + TimeUnit.SECONDS.toNanos(interval);
            long end = start + TimeUnit.SECONDS.toNanos(seconds);
            int minute = 0;
            while (System.nanoTime() < end) {
                producer = step(consumer, pool, producer);
                if (System.nanoTime() >= nextReport) {
                    report(++minute, consumer, producer);
                    nextReport += TimeUnit.SECONDS.toNanos(interval);
                }
            }
            // Targets: the producer is usable after all of it, and everything is back to idle.
            long cleanFailures = 0;
            for (int i = 0; i < 20; i++) {
                if (!transfer(consumer, pool, producer, i % 2 == 0, false)) {
                    cleanFailures++;
                }
            }
            if (cleanFailures > 0) {
                missed.add(cleanFailures + " of 20 clean operations at the end failed: a peer was left unusable");
            }
            report(++minute, consumer, producer);
            awaitIdle(consumer, idleRegistrations);
            if (consumer.registeredBytes() != idleRegistrations || consumer.inFlightOperations() != 0) {
                missed.add("consumer not back to idle: registered " + consumer.registeredBytes() + " (idle "
                        + idleRegistrations + "), in flight " + consumer.inFlightOperations());
            }
            String[] stats = producer.stats();
            if (!stats[5].equals("0") || !stats[6].equals("0")) {
                missed.add("producer not back to idle: registrations beyond its pool " + stats[5] + ", in flight "
                        + stats[6]);
            }
            if (Long.parseLong(stats[3]) > NixlSettings.DEFAULT_MAX_KEPT_BYTES) {
                missed.add("producer keeps " + stats[3] + " bytes resident, over the cap");
            }
            if (consumer.remoteAgentCount() > 2 + idlePeers) {
                missed.add("consumer holds " + consumer.remoteAgentCount() + " peers");
            }
        } finally {
            producer.stop();
        }
        crashes = crashLogs();
        if (crashes > 0) {
            missed.add(crashes + " JVM crash(es)");
        }
        if (slowFailures > 0) {
            missed.add(slowFailures + " failed operation(s) ended later than their timeout plus 5 s");
        }
        if (rssPerInterval.size() >= 3) {
            long second = rssPerInterval.get(1);
            long last = rssPerInterval.get(rssPerInterval.size() - 1);
            if (last > second * 1.1) {
                missed.add("consumer RSS grew: " + second + " KiB in the second interval, " + last + " KiB in the last");
            }
        }
        System.out.println(missed.isEmpty() ? "soak: every target met (0 crash logs in " + CRASH_DIR + ")"
                : "soak: MISSED " + missed);
        return missed.isEmpty();
    }

    /** One request, with at random one of the disturbances a service meets; returns the producer (restarted or not). */
    private Child step(Connector consumer, Descriptor pool, Child producer) throws Exception {
        int roll = random.nextInt(1000);
        if (roll < 2) {
            return restart(producer);
        } else if (roll < 6) {
            stalledOrKilledReader(producer, roll < 4);
        } else if (roll < 60) {
            producer.send("abort " + BLOCKS + " " + BLOCK);
            producer.next("META ");
            count("aborted before read (expected)");
        } else {
            transfer(consumer, pool, producer, roll % 2 == 0, roll < 120);
        }
        return producer;
    }

    /** A KV-shaped READ or WRITE; {@code again}: then the same metadata once more, which must be refused. */
    private boolean transfer(Connector consumer, Descriptor pool, Child producer, boolean read, boolean again)
            throws Exception {
        producer.send((read ? "readable " : "writable ") + BLOCKS + " " + BLOCK);
        String line = producer.nextOrGone("META ");
        if (line == null) {
            count("producer gone");
            return false;
        }
        RdmaMetadata metadata = RdmaMetadata.fromJson(line.substring(5));
        List<Descriptor> blocks = blocks(pool);
        long began = System.nanoTime();
        boolean ok = attempt(consumer, metadata, blocks, read);
        if (ok) {
            synchronized (latencies) {
                latencies.add(System.nanoTime() - began);
            }
            if (read) {
                List<io.nixlconnect.SerializedDescriptor> remote = metadata.descriptors();
                for (int i = 0; i < blocks.size(); i++) {
                    long expected = remote.get(i).ptr();
                    long got = blocks.get(i).asByteBuffer(0, 8).order(java.nio.ByteOrder.LITTLE_ENDIAN).getLong(0);
                    if (got != expected) {
                        count("WRONG BYTES");
                        missed.add("a READ returned wrong bytes");
                        break;
                    }
                }
            }
        }
        if (again) {
            if (attempt(consumer, metadata, blocks, read)) {
                missed.add("spent metadata was read again without an error");
            }
        }
        blocks.forEach(Descriptor::close);
        return ok;
    }

    private boolean attempt(Connector consumer, RdmaMetadata metadata, List<Descriptor> blocks, boolean read) {
        operations++;
        long began = System.nanoTime();
        try {
            if (read) {
                consumer.read(metadata, blocks);
            } else {
                consumer.write(blocks, metadata);
            }
            return true;
        } catch (NixlConnectException e) {
            if (System.nanoTime() - began > TIMEOUT.plusSeconds(5).toNanos()) {
                slowFailures++;
            }
            count(cause(e));
            return false;
        } catch (RuntimeException e) {
            count("UNTYPED " + e.getClass().getSimpleName() + ": " + e.getMessage());
            missed.add("an operation failed with an untyped exception: " + e);
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

    private void count(String cause) {
        failures.merge(cause, 1L, Long::sum);
    }

    /** {@link #BLOCKS} distinct blocks of the consumer's pool, in random order. */
    private List<Descriptor> blocks(Descriptor pool) {
        int slots = POOL / BLOCK;
        int[] order = random.ints(0, slots).distinct().limit(BLOCKS).toArray();
        List<Descriptor> blocks = new ArrayList<>(BLOCKS);
        for (int slot : order) {
            blocks.add(pool.slice((long) slot * BLOCK, BLOCK));
        }
        return blocks;
    }

    /** A reader JVM starts a read of {@link #BIG} bytes and is killed (SIGKILL), or stopped past the drain limit first. */
    private void stalledOrKilledReader(Child producer, boolean stop) throws Exception {
        producer.send("big " + BIG);
        String metadata = producer.nextOrGone("META ");
        if (metadata == null) {
            return;
        }
        Child reader = Child.start("reader");
        try {
            reader.next("READY");
            reader.send("read " + metadata.substring(5));
            reader.next("STARTED");
            if (stop) {
                signal("STOP", reader.process);
                producer.send("close-big");
                producer.next("CLOSED");
                Thread.sleep(DRAIN_LIMIT.toMillis() + BIG / 100_000 + 500); // past the drain limit
                count("reader stopped past the drain limit, then killed (expected)");
            } else {
                Thread.sleep(random.nextInt(50));
                count("reader killed mid-read (expected)");
            }
        } finally {
            reader.process.destroyForcibly().waitFor(30, TimeUnit.SECONDS);
        }
        if (!stop) {
            producer.send("close-big");
            producer.next("CLOSED");
        }
    }

    private Child restart(Child producer) throws Exception {
        producer.process.destroyForcibly().waitFor(30, TimeUnit.SECONDS);
        count("producer restarted (expected)");
        Child fresh = Child.start("producer");
        fresh.next("READY");
        return fresh;
    }

    private void report(int interval, Connector consumer, Child producer) throws Exception {
        long[] sorted;
        synchronized (latencies) {
            sorted = latencies.stream().mapToLong(Long::longValue).sorted().toArray();
            latencies.clear();
        }
        Runtime runtime = Runtime.getRuntime();
        long heap = (runtime.totalMemory() - runtime.freeMemory()) >> 10;
        long rss = rssKiB();
        rssPerInterval.add(rss);
        heapPerInterval.add(heap);
        String[] stats = producer.stats();
        System.out.printf("interval %d: %d operations, p50 %.2f ms, p99 %.2f ms; failures %s%n", interval, operations,
                percentile(sorted, 0.50) / 1e6, percentile(sorted, 0.99) / 1e6, failures);
        System.out.printf("  consumer: heap %d KiB, RSS %d KiB, peers %d, registered %d bytes, in flight %d%n", heap, rss,
                consumer.remoteAgentCount(), consumer.registeredBytes(), consumer.inFlightOperations());
        System.out.printf("  producer: heap %s KiB, RSS %s KiB, kept %s bytes (%s resident, cap %d), registrations"
                + " beyond its pool %s, in flight %s%n", stats[1], stats[2], stats[4], stats[3],
                NixlSettings.DEFAULT_MAX_KEPT_BYTES, stats[5], stats[6]);
        operations = 0;
        failures.clear();
    }

    private static double percentile(long[] sorted, double p) {
        return sorted.length == 0 ? 0 : sorted[Math.min(sorted.length - 1, (int) (p * sorted.length))];
    }

    private static void awaitIdle(Connector consumer, long idle) throws InterruptedException {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
        while ((consumer.registeredBytes() != idle || consumer.inFlightOperations() != 0)
                && System.nanoTime() < deadline) {
            Thread.sleep(50);
        }
    }

    static long rssKiB() throws IOException {
        for (String line : Files.readAllLines(Path.of("/proc/self/status"))) {
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

    static void signal(String signal, Process process) throws Exception {
        new ProcessBuilder("kill", "-" + signal, Long.toString(process.pid())).inheritIO().start().waitFor();
    }

    // --- the producer: a service that publishes per request and closes once done ---

    static void producer() throws Exception {
        PrintStream out = new PrintStream(System.out, true, StandardCharsets.UTF_8);
        try (Connector connector = connector(PRODUCER); Descriptor pool = Descriptor.allocate(POOL);
             Descriptor inbox = Descriptor.allocate(POOL);
             BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8))) {
            pool.registerMemory(connector);
            inbox.registerMemory(connector); // what consumers write lands apart from what they read
            long poolRegistration = connector.registeredBytes();
            // Each block starts with its own address, which the consumer checks.
            long base = pool.ptr();
            java.nio.ByteBuffer memory = pool.asByteBuffer().order(java.nio.ByteOrder.LITTLE_ENDIAN);
            for (int offset = 0; offset + 8 <= POOL; offset += 4096) {
                memory.putLong(offset, base + offset); // every block size used is a multiple of 4 KiB
            }
            SplittableRandom random = new SplittableRandom(ProcessHandle.current().pid());
            Descriptor big = null;
            ReadableOperation bigReadable = null;
            out.println("READY");
            String line;
            while ((line = in.readLine()) != null) {
                String[] words = line.trim().split("\\s+");
                switch (words[0]) {
                    case "readable", "writable", "abort" -> {
                        int count = Integer.parseInt(words[1]);
                        int size = Integer.parseInt(words[2]);
                        int[] slots = random.ints(0, POOL / size).distinct().limit(count).toArray();
                        List<Descriptor> blocks = new ArrayList<>();
                        Descriptor from = words[0].equals("writable") ? inbox : pool;
                        for (int slot : slots) {
                            blocks.add(from.slice((long) slot * size, size));
                        }
                        Operation operation = words[0].equals("writable") ? connector.createWritable(blocks)
                                : connector.createReadable(blocks);
                        RdmaMetadata metadata = operation instanceof ReadableOperation r ? r.metadata()
                                : ((WritableOperation) operation).metadata();
                        out.println("META " + metadata.toJson());
                        Runnable done = () -> {
                            try {
                                operation.close();
                            } catch (RuntimeException e) {
                                System.err.println("producer: closing failed: " + e);
                            }
                            blocks.forEach(Descriptor::close);
                        };
                        if (words[0].equals("abort")) {
                            done.run(); // the client went away: closed unread
                        } else {
                            operation.completion().whenComplete((ok, error) -> done.run());
                        }
                    }
                    case "big" -> {
                        big = Descriptor.allocate(Long.parseLong(words[1]));
                        bigReadable = connector.createReadable(big);
                        out.println("META " + bigReadable.metadata().toJson());
                    }
                    case "close-big" -> {
                        bigReadable.close();
                        big.close(); // returns at once: the library frees or keeps it after the drain
                        out.println("CLOSED");
                    }
                    case "stats" -> {
                        Runtime runtime = Runtime.getRuntime();
                        Map<String, Object> details = connector.transportStatus().details();
                        out.println("STATS " + ((runtime.totalMemory() - runtime.freeMemory()) >> 10) + " " + rssKiB()
                                + " " + details.get("bytesKeptResident") + " " + details.get("bytesKeptAfterDrainLimit")
                                + " " + (connector.registeredBytes() - poolRegistration) + " "
                                + connector.inFlightOperations());
                    }
                    case "exit" -> {
                        return;
                    }
                    default -> out.println("ERROR unknown command " + words[0]);
                }
            }
        }
    }

    // --- a reader in its own JVM, to be killed or stopped ---

    static void reader() throws Exception {
        PrintStream out = new PrintStream(System.out, true, StandardCharsets.UTF_8);
        try (Connector connector = connector("soak-reader-" + ProcessHandle.current().pid());
             BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8))) {
            out.println("READY");
            String line = in.readLine();
            RdmaMetadata metadata = RdmaMetadata.fromJson(line.substring(5));
            Descriptor target = Descriptor.allocate(metadata.totalSize());
            connector.beginRead(metadata, target);
            out.println("STARTED");
            while (in.readLine() != null) {
                // until killed
            }
        }
    }

    /** A child JVM of this class, driven line by line. */
    static final class Child {
        final Process process;
        private final PrintStream input;
        private final BlockingQueue<String> lines = new LinkedBlockingQueue<>();

        private Child(Process process) {
            this.process = process;
            this.input = new PrintStream(process.getOutputStream(), true, StandardCharsets.UTF_8);
            Thread reader = new Thread(() -> {
                try (BufferedReader in = new BufferedReader(new InputStreamReader(process.getInputStream(),
                        StandardCharsets.UTF_8))) {
                    String line;
                    while ((line = in.readLine()) != null) {
                        lines.add(line);
                    }
                } catch (IOException ignored) {
                    // gone
                }
            }, "soak-child-" + process.pid());
            reader.setDaemon(true);
            reader.start();
        }

        static Child start(String role) throws IOException {
            List<String> command = new ArrayList<>(Arrays.asList(Path.of(System.getProperty("java.home"), "bin", "java")
                    .toString(), "-Xmx512m", "-XX:ErrorFile=" + CRASH_DIR.resolve("hs_err_pid%p.log"), "-Dsoak.crashDir=" + CRASH_DIR,
                    "-Dnixl.library.path=" + System.getProperty("nixl.library.path", System.getenv("NIXL_LIBRARY_DIR")),
                    "-cp", System.getProperty("java.class.path"), NixlSoak.class.getName(), role));
            return new Child(new ProcessBuilder(command).redirectError(ProcessBuilder.Redirect.INHERIT).start());
        }

        void send(String command) {
            input.println(command);
        }

        String next(String prefix) throws InterruptedException {
            String line = nextOrGone(prefix);
            if (line == null) {
                throw new IllegalStateException("child " + process.pid() + " gave no '" + prefix + "' line (alive: "
                        + process.isAlive() + ")");
            }
            return line;
        }

        /** The next line starting with {@code prefix}; null if the child died or said nothing for 60 s. */
        String nextOrGone(String prefix) throws InterruptedException {
            while (true) {
                String line = lines.poll(process.isAlive() ? 60 : 1, TimeUnit.SECONDS);
                if (line == null) {
                    return null;
                }
                if (line.startsWith(prefix)) {
                    return line;
                }
            }
        }

        /** "STATS heapKiB rssKiB keptResident keptTotal registrationsBeyondPool inFlight". */
        String[] stats() throws InterruptedException {
            send("stats");
            return next("STATS ").split(" ");
        }

        void stop() throws InterruptedException {
            send("exit");
            if (!process.waitFor(30, TimeUnit.SECONDS)) {
                process.destroyForcibly().waitFor(30, TimeUnit.SECONDS);
            } else if (process.exitValue() != 0) {
                System.out.println("soak: the producer exited with " + process.exitValue());
            }
        }
    }

    /** Where child JVMs write their crash logs: a crash is a file here. */
    static final Path CRASH_DIR = crashDir();

    private static Path crashDir() {
        try {
            String given = System.getProperty("soak.crashDir"); // children write into their coordinator's
            return given != null ? Path.of(given) : Files.createTempDirectory("nixl-soak-");
        } catch (IOException e) {
            throw new java.io.UncheckedIOException(e);
        }
    }

    static long crashLogs() throws IOException {
        try (var files = Files.list(CRASH_DIR)) {
            return files.filter(file -> file.getFileName().toString().startsWith("hs_err")).count();
        }
    }
}
