package io.nixlconnect.benchmarks;

import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.SplittableRandom;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicLong;

/**
 * A fleet (issue 32): {@code fleet.producers} producer JVMs of {@code fleet.connectors} connectors each (every one a
 * worker with its own agent), {@code fleet.consumers} consumer JVMs reading round-robin over all of them, each at
 * concurrency {@code fleet.concurrency}, while producers restart at random: about every {@code fleet.restartEvery}
 * seconds one connector closes and a new one (a new agent name) takes its place, and every
 * {@code fleet.jvmRestartOneIn}-th restart is a whole producer JVM killed with SIGKILL and started anew. This JVM
 * coordinates: it asks a producer for a new readable per read (as a request plane would), hands its metadata to a
 * consumer and counts the outcome. A failed read is <em>expected</em> when its producer (connector or JVM) was being
 * restarted before the read failed (clocks: {@link System#nanoTime()}, shared by the processes of one Linux host),
 * else <em>unexpected</em>; wrong bytes and untyped exceptions are never expected.
 *
 * <p>Every {@code INTERVAL} seconds it prints reads, p50/p99, failures by cause, restarts, and for every process its
 * file descriptors (sockets), threads, RSS, cached peers, open connections and peer counters (evictions, reconnects,
 * departed, idle-closed: {@code Connector.peerStatistics()}, summed over a producer JVM's connectors). At the end: the
 * reads stop, the embedded producers must see their connections from the consumers close (the consumers' idle limit),
 * the producers exit, and each consumer's sockets, descriptors, cached peers and open connections must come back to
 * their values before its first read, within a deadline of a few idle limits. Throughout, no process may hold more
 * sockets than its part of the fleet accounts for (its idle sockets plus 8 per peer and per concurrent read): a
 * connection leaked per operation or eviction shows within an interval. It exits 1 naming what failed: an
 * unexpected failure, a crash (a crash log, a child that died unbidden or exited non-zero), a process not back to idle
 * or holding more sockets than its fleet accounts for.
 *
 * <pre>
 * java -cp … io.nixlconnect.benchmarks.FleetBenchmark TRANSPORT SECONDS [INTERVAL_SECONDS]
 * </pre>
 * Settings (system properties, defaults in brackets): fleet.producers [2], fleet.connectors [8], fleet.consumers [1],
 * fleet.concurrency [4], fleet.restartEvery [1.0], fleet.jvmRestartOneIn [20], fleet.size [65536] bytes per read,
 * fleet.peerIdleMillis and fleet.maxPeers [the library's defaults] (the peer lifecycle, {@link FleetProcesses#transport}),
 * fleet.seed [32], fleet.listSockets [false] (every process's sockets, as the kernel describes them, every interval).
 * {@code benchmarks/run-fleet.sh} sets them from its environment.
 */
public final class FleetBenchmark {

    private final String transport;
    private final int producerJvms = Integer.getInteger("fleet.producers", 2);
    private final int connectors = Integer.getInteger("fleet.connectors", 8);
    private final int consumerJvms = Integer.getInteger("fleet.consumers", 1);
    private final int concurrency = Integer.getInteger("fleet.concurrency", 4);
    private final double restartEverySeconds = Double.parseDouble(System.getProperty("fleet.restartEvery", "1.0"));
    private final int jvmRestartOneIn = Integer.getInteger("fleet.jvmRestartOneIn", 20);
    private final SplittableRandom random = new SplittableRandom(Long.getLong("fleet.seed", 32));
    private final FleetFigures figures = new FleetFigures();
    private final List<ProducerJvm> producers = new ArrayList<>();
    private final List<ConsumerJvm> consumers = new ArrayList<>();
    private final List<String> failed = java.util.Collections.synchronizedList(new ArrayList<>());
    private final AtomicLong ids = new AtomicLong();
    private final AtomicLong cursor = new AtomicLong();
    private final Series consumerSeries = new Series();
    private final Series producerSeries = new Series();
    private volatile boolean stopping;

    private FleetBenchmark(String transport) {
        this.transport = transport;
    }

    /** Bytes per read ({@code fleet.size}, a multiple of 4 KiB). */
    static int size() {
        return Integer.getInteger("fleet.size", 64 << 10);
    }

    public static void main(String[] args) throws Exception {
        switch (args[0]) {
            case "producer" -> FleetProcesses.producer(args[1], Integer.parseInt(args[2]), Integer.parseInt(args[3]));
            case "consumer" -> FleetProcesses.consumer(args[1], Integer.parseInt(args[2]), Integer.parseInt(args[3]));
            default -> {
                boolean ok = new FleetBenchmark(args[0]).run(Long.parseLong(args.length > 1 ? args[1] : "60"),
                        Long.parseLong(args.length > 2 ? args[2] : "10"));
                System.exit(ok ? 0 : 1);
            }
        }
    }

    private boolean run(long seconds, long interval) throws Exception {
        System.out.printf(Locale.ROOT, "fleet: %s, %d producer JVMs x %d connectors = %d peers, %d consumer JVM(s) at "
                + "concurrency %d, %d-byte reads, a producer restart every ~%.1f s (1 in %d a whole JVM, SIGKILL), "
                + "peer idle limit %s ms, max peers %s; %d s, report every %d s%n", transport, producerJvms, connectors,
                producerJvms * connectors, consumerJvms, concurrency, size(), restartEverySeconds, jvmRestartOneIn,
                System.getProperty("fleet.peerIdleMillis", "(default)"), System.getProperty("fleet.maxPeers", "(default)"),
                seconds, interval);
        List<Thread> drivers = new ArrayList<>();
        Thread restarter = null;
        try {
            for (int j = 0; j < producerJvms; j++) {
                producers.add(new ProducerJvm(j));
            }
            for (int k = 0; k < consumerJvms; k++) {
                consumers.add(new ConsumerJvm(k));
            }
            for (ConsumerJvm consumer : consumers) {
                consumer.child.next("READY ");
            }
            for (ProducerJvm producer : producers) {
                producer.start();
            }
            // Idle: taken once the producers are up (seconds later), not at READY: a NIXL agent's UCX worker opens
            // a connection to itself in the background after it starts.
            for (ConsumerJvm consumer : consumers) {
                consumer.idle = consumer.stats();
                consumer.idleSockets = consumer.sockets();
                System.out.println("  consumer " + consumer.index + " idle: " + consumer.idle + "; sockets "
                        + consumer.idleSockets);
            }
            for (ConsumerJvm consumer : consumers) {
                for (int c = 0; c < concurrency; c++) {
                    Thread driver = new Thread(() -> drive(consumer), "fleet-driver-" + consumer.index + "-" + c);
                    driver.start();
                    drivers.add(driver);
                }
            }
            restarter = new Thread(this::restarts, "fleet-restarter");
            restarter.start();
            long start = System.nanoTime();
            long end = start + TimeUnit.SECONDS.toNanos(seconds);
            int number = 0;
            while (System.nanoTime() < end) {
                long next = Math.min(end, start + TimeUnit.SECONDS.toNanos(interval * (number + 1L)));
                TimeUnit.NANOSECONDS.sleep(Math.max(0, next - System.nanoTime())); // the report's pace, not a sync
                report(++number, (System.nanoTime() - start) / 1_000_000_000);
            }
            stopping = true;
            restarter.join();
            for (Thread driver : drivers) {
                driver.join();
            }
            report(++number, (System.nanoTime() - start) / 1_000_000_000);
            summary();
            backToIdle();
        } catch (Exception | Error e) {
            failed.add("the harness failed: " + e);
            e.printStackTrace();
        } finally {
            stopping = true;
            for (ProducerJvm producer : producers) {
                producer.stop();
            }
            for (ConsumerJvm consumer : consumers) {
                consumer.stop();
            }
        }
        Map<String, Long> unexpected = figures.totalUnexpected();
        if (!unexpected.isEmpty()) {
            failed.add(0, unexpected.values().stream().mapToLong(Long::longValue).sum() + " unexpected failure(s): "
                    + unexpected);
        }
        long crashLogs = SoakChild.crashLogs();
        if (crashLogs > 0) {
            failed.add(crashLogs + " crash log(s) in " + SoakChild.CRASH_DIR);
        }
        System.out.println(failed.isEmpty() ? "fleet " + transport + ": PASSED (no unexpected failure, no crash, every"
                + " process back to idle; 0 crash logs in " + SoakChild.CRASH_DIR + ")"
                : "fleet " + transport + ": FAILED: " + String.join("; ", failed));
        return failed.isEmpty();
    }

    // --- reads: a driver per consumer slot, round-robin over the live peers ---

    private void drive(ConsumerJvm consumer) {
        while (!stopping) {
            Peer peer = nextPeer();
            if (peer == null) {
                sleepMillis(10); // every peer restarting at once: wait for one
                continue;
            }
            String meta;
            try {
                meta = peer.jvm.publish(peer.slot, peer.incarnation);
            } catch (PublishRefused e) {
                figures.failed("publish: " + e.getMessage(), peer.incarnation.goneSince() <= e.nanoTime);
                continue;
            }
            String result;
            try {
                result = consumer.read(meta);
            } catch (Exception e) {
                figures.failed("consumer: " + e, false);
                continue;
            }
            // "OK nanos" or "FAIL nanoTime cause"
            if (result.startsWith("OK ")) {
                figures.succeeded(Long.parseLong(result.substring(3)));
            } else {
                int space = result.indexOf(' ', 5);
                long when = Long.parseLong(result.substring(5, space));
                figures.failed(result.substring(space + 1), peer.incarnation.goneSince() <= when);
            }
        }
    }

    /** The next peer round-robin that is not restarting; null if none is up. */
    private Peer nextPeer() {
        int all = producerJvms * connectors;
        for (int tries = 0; tries < all; tries++) {
            int n = (int) Math.floorMod(cursor.getAndIncrement(), (long) all);
            ProducerJvm jvm = producers.get(n / connectors);
            Incarnation incarnation = jvm.incarnations[n % connectors];
            if (incarnation != null && incarnation.goneSince() == Long.MAX_VALUE) {
                return new Peer(jvm, n % connectors, incarnation);
            }
        }
        return null;
    }

    private record Peer(ProducerJvm jvm, int slot, Incarnation incarnation) {
    }

    /** One life of a producer connector (a connector restart or its JVM's ends it). */
    private static final class Incarnation {
        private volatile long goneSince = Long.MAX_VALUE;

        long goneSince() {
            return goneSince;
        }

        void going() {
            goneSince = Math.min(goneSince, System.nanoTime());
        }
    }

    // --- restarts ---

    private void restarts() {
        long next = System.nanoTime();
        while (!stopping) {
            next += (long) (-Math.log(1 - random.nextDouble()) * restartEverySeconds * 1e9); // a Poisson process
            long wait = next - System.nanoTime();
            if (wait > 0) {
                sleepMillis(TimeUnit.NANOSECONDS.toMillis(wait)); // the restarts' pace, not a sync
            }
            if (stopping) {
                return;
            }
            ProducerJvm jvm = producers.get(random.nextInt(producerJvms));
            try {
                if (random.nextInt(jvmRestartOneIn) == 0) {
                    jvm.restart();
                    figures.restarted(true);
                } else {
                    jvm.restartConnector(random.nextInt(connectors));
                    figures.restarted(false);
                }
            } catch (Exception e) {
                failed.add("a restart failed: " + e);
                return;
            }
        }
    }

    // --- reports ---

    private void report(int number, long secondsIn) throws Exception {
        System.out.printf(Locale.ROOT, "interval %d (%d s): %s%n", number, secondsIn, figures.interval());
        for (ConsumerJvm consumer : consumers) {
            Stats stats = consumer.stats();
            consumerSeries.add(stats);
            System.out.println("  consumer " + consumer.index + " (pid " + consumer.child.process.pid() + "): " + stats);
            if (Boolean.getBoolean("fleet.listSockets")) {
                System.out.println("    sockets: " + consumer.sockets());
            }
            long bound = consumer.idle.sockets + 8L * (producerJvms * connectors + concurrency);
            if (stats.sockets > bound) {
                failed.add("consumer " + consumer.index + " held " + stats.sockets + " sockets in interval " + number
                        + ", more than its fleet accounts for (" + bound + ": idle " + consumer.idle.sockets
                        + " + 8 per peer and per concurrent read): a connection leaked per operation or peer");
            }
        }
        for (ProducerJvm producer : producers) {
            SoakChild child = producer.child;
            Stats stats = producer.stats();
            if (stats != null) {
                producerSeries.add(stats);
                long bound = producer.idle.sockets + 8L * (connectors + consumerJvms * concurrency);
                if (stats.sockets > bound) {
                    failed.add("producer " + producer.index + " held " + stats.sockets + " sockets in interval "
                            + number + ", more than its fleet accounts for (" + bound + ": at its start "
                            + producer.idle.sockets + " + 8 per connector and per concurrent read)");
                }
            }
            System.out.println("  producer " + producer.index + " (pid " + child.process.pid() + ", JVM started "
                    + (System.nanoTime() - producer.startedAt) / 1_000_000_000 + " s ago): "
                    + (stats == null ? "restarting" : stats));
            if (stats != null && Boolean.getBoolean("fleet.listSockets")) {
                System.out.println("    sockets: " + producer.sockets());
            }
        }
    }

    private void summary() {
        System.out.printf(Locale.ROOT, "fleet %s summary: %d reads; producer restarts %d (%d connectors + %d JVMs of %d,"
                + " %d agents replaced); expected failures %s; unexpected %s%n", transport, figures.totalReads(),
                figures.totalConnectorRestarts() + figures.totalJvmRestarts(), figures.totalConnectorRestarts(),
                figures.totalJvmRestarts(), connectors, figures.totalConnectorRestarts()
                        + figures.totalJvmRestarts() * connectors, figures.totalExpected(), figures.totalUnexpected());
        System.out.println("  consumers per interval: " + consumerSeries.describe());
        System.out.println("  producer JVMs per interval: " + producerSeries.describe());
    }

    /**
     * The end state, which machine load cannot move: the embedded producers' connections from the consumers close
     * (their idle limit), then the producers exit, then each consumer is back to its idle values; each within a
     * deadline of a few idle limits.
     */
    private void backToIdle() throws Exception {
        long idleMillis = Long.parseLong(System.getProperty("fleet.peerIdleMillis", "30000"));
        long deadline = TimeUnit.MILLISECONDS.toNanos(3 * idleMillis + 15_000);
        if (transport.equals("embedded")) {
            // NIXL 1.5.1 keeps a live peer's endpoint after unloading it (docs/nixl.md): its producers are checked
            // through their consumers once they exit.
            for (ProducerJvm producer : producers) {
                Stats idle = producer.idle;
                Stats now = waitFor(producer::stats, stats -> stats.openConnections == 0
                        && stats.sockets <= idle.sockets, deadline);
                if (now.openConnections != 0 || now.sockets > idle.sockets) {
                    failed.add("producer " + producer.index + " not back to idle after the reads stopped: " + now
                            + "; idle: " + idle);
                }
                System.out.println("  producer " + producer.index + " after the reads stopped: " + now);
            }
        }
        for (ProducerJvm producer : producers) {
            producer.stop();
        }
        // A NIXL peer loaded holds an endpoint: none may stay. The embedded transport keeps a departed peer's name and
        // endpoint (no connection) until its least-recently-used bound drops it: at most that many.
        int cachedBound = transport.equals("embedded") ? Integer.getInteger("fleet.maxPeers", 512) : 0;
        for (ConsumerJvm consumer : consumers) {
            Stats idle = consumer.idle;
            Stats now = waitFor(consumer::stats, stats -> stats.atIdle(idle, cachedBound), deadline);
            System.out.println("  consumer " + consumer.index + " after the producers stopped: " + now);
            if (!now.atIdle(idle, cachedBound)) {
                System.out.println("  consumer " + consumer.index + " sockets: idle " + consumer.idleSockets + ", now "
                        + consumer.sockets());
                failed.add("consumer " + consumer.index + " not back to idle "
                        + TimeUnit.NANOSECONDS.toSeconds(deadline) + " s after the producers stopped: " + now
                        + "; idle: " + idle);
            }
        }
    }

    private interface StatsSource {
        Stats get() throws Exception;
    }

    private static Stats waitFor(StatsSource source, java.util.function.Predicate<Stats> done, long deadline)
            throws Exception {
        long end = System.nanoTime() + deadline;
        Stats stats = source.get();
        while (stats != null && !done.test(stats) && System.nanoTime() < end) {
            sleepMillis(200); // polls a condition until its deadline
            stats = source.get();
        }
        return stats;
    }

    private static void sleepMillis(long millis) {
        try {
            Thread.sleep(millis);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    /** A child's "STATS" figures ({@link FleetProcesses}). */
    record Stats(long fds, long sockets, long threads, long rssKiB, long cachedPeers, long openConnections,
            long evictions, long reconnects, long departed, long idleClosed, long liveAgents, long heapKiB) {

        static Stats parse(String words) {
            long[] n = java.util.Arrays.stream(words.trim().split(" ")).mapToLong(Long::parseLong).toArray();
            return new Stats(n[0], n[1], n[2], n[3], n[4], n[5], n[6], n[7], n[8], n[9], n[10], n[11]);
        }

        /**
         * Back to its idle values: no more descriptors or sockets than then, no connection open, at most
         * {@code cachedBound} peers cached.
         */
        boolean atIdle(Stats idle, int cachedBound) {
            return fds <= idle.fds && sockets <= idle.sockets && cachedPeers <= cachedBound && openConnections == 0;
        }

        @Override
        public String toString() {
            return String.format(Locale.ROOT, "fds %d (sockets %d), threads %d, RSS %d MiB (heap committed %d MiB), "
                    + "cached peers %d, open connections %d; evictions %d, reconnects %d, departed %d, idle-closed %d",
                    fds, sockets, threads, rssKiB >> 10, heapKiB >> 10, cachedPeers, openConnections, evictions,
                    reconnects, departed, idleClosed);
        }
    }

    /** fds, threads and RSS per interval, for the summary: first, second, last and range. */
    private static final class Series {
        private final List<Stats> all = new ArrayList<>();

        void add(Stats stats) {
            all.add(stats);
        }

        String describe() {
            if (all.isEmpty()) {
                return "none";
            }
            return "fds " + range(Stats::fds) + ", sockets " + range(Stats::sockets) + ", threads " + range(Stats::threads)
                    + ", RSS MiB " + range(s -> s.rssKiB >> 10) + ", heap committed MiB " + range(s -> s.heapKiB >> 10)
                    + ", cached peers " + range(Stats::cachedPeers);
        }

        private String range(java.util.function.ToLongFunction<Stats> figure) {
            long min = all.stream().mapToLong(figure).min().orElse(0);
            long max = all.stream().mapToLong(figure).max().orElse(0);
            return "min " + min + " max " + max + " (first " + figure.applyAsLong(all.get(0)) + ", last "
                    + figure.applyAsLong(all.get(all.size() - 1)) + ")";
        }
    }

    // --- the child JVMs ---

    private List<String> childOptions(String heap) {
        List<String> options = new ArrayList<>(List.of(heap, "-Dorg.slf4j.simpleLogger.defaultLogLevel="
                + System.getProperty("fleet.childLogLevel", "error")));
        System.getProperties().forEach((key, value) -> {
            if (key.toString().startsWith("fleet.") || key.toString().startsWith("bench.")) {
                options.add("-D" + key + "=" + value);
            }
        });
        return options;
    }

    /** Thrown when a producer gives no metadata: at {@link #nanoTime}, for {@code getMessage()}'s reason. */
    private static final class PublishRefused extends Exception {
        final long nanoTime = System.nanoTime();

        PublishRefused(String reason) {
            super(reason, null, false, false);
        }
    }

    private final class ProducerJvm {
        final int index;
        final Incarnation[] incarnations = new Incarnation[connectors];
        /** Requests in flight to {@link #child}, which fail when it exits (each JVM its own, not its successor's). */
        private volatile Map<String, CompletableFuture<String>> pending;
        volatile SoakChild child;
        private boolean crashNoted;
        volatile Stats idle;
        volatile long startedAt;
        private boolean stopped;

        ProducerJvm(int index) throws Exception {
            this.index = index;
            launch();
        }

        private void launch() throws Exception {
            SoakChild started = SoakChild.java(FleetBenchmark.class, childOptions("-Xmx256m"), "producer", transport,
                    Integer.toString(index), Integer.toString(connectors));
            Map<String, CompletableFuture<String>> requests = new ConcurrentHashMap<>();
            for (String word : List.of("META", "NOMETA", "RESTARTED")) {
                started.route(word, line -> answer(requests, line));
            }
            started.process.onExit().thenRun(() -> requests.values().forEach(future ->
                    future.completeExceptionally(new PublishRefused("producer JVM exited"))));
            pending = requests;
            child = started;
            startedAt = System.nanoTime();
        }

        /** Waits for READY and opens its connectors to reads. */
        void start() throws Exception {
            idle = Stats.parse(child.next("READY ").substring(6));
            for (int m = 0; m < connectors; m++) {
                incarnations[m] = new Incarnation();
            }
        }

        private static void answer(Map<String, CompletableFuture<String>> requests, String line) {
            String[] words = line.split(" ", 3);
            CompletableFuture<String> future = requests.remove(words[1]);
            if (future != null) {
                if (words[0].equals("NOMETA")) {
                    future.completeExceptionally(new PublishRefused(words.length > 2 ? words[2] : "refused"));
                } else {
                    future.complete(words.length > 2 ? words[2] : "");
                }
            }
        }

        private String request(String command, long timeoutSeconds) throws PublishRefused {
            SoakChild to = child;
            Map<String, CompletableFuture<String>> requests = pending;
            String id = Long.toString(ids.incrementAndGet());
            CompletableFuture<String> future = new CompletableFuture<>();
            requests.put(id, future);
            if (!to.process.isAlive()) {
                requests.remove(id);
                throw new PublishRefused("producer JVM exited");
            }
            to.send(command.replace("ID", id));
            try {
                return future.get(timeoutSeconds, TimeUnit.SECONDS);
            } catch (ExecutionException e) {
                throw e.getCause() instanceof PublishRefused refused ? refused : new PublishRefused(e.getCause().toString());
            } catch (TimeoutException e) {
                requests.remove(id);
                throw new PublishRefused("no answer within " + timeoutSeconds + " s");
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                throw new PublishRefused("interrupted");
            }
        }

        String publish(int slot, Incarnation incarnation) throws PublishRefused {
            return request("publish ID " + slot, 30);
        }

        /** Connector {@code slot} closes and a new one takes its place; reads skip it meanwhile. */
        void restartConnector(int slot) throws Exception {
            Incarnation old = incarnations[slot];
            if (old == null || old.goneSince() != Long.MAX_VALUE) {
                return; // its JVM is being restarted
            }
            old.going();
            request("restart ID " + slot, 120);
            incarnations[slot] = new Incarnation();
        }

        /** The whole JVM killed (SIGKILL) and started anew: every connector a new agent. */
        synchronized void restart() throws Exception {
            for (Incarnation incarnation : incarnations) {
                incarnation.going();
            }
            child.kill();
            crashNoted = false;
            launch();
            start();
        }

        /** Its sockets, by description ({@link FleetProcesses#sockets}). */
        synchronized String sockets() throws Exception {
            child.send("sockets");
            String line = child.nextOrGone("SOCKETS ");
            return line == null ? "(gone)" : line.substring(8);
        }

        /** Null if it died (noted as a crash: the harness kills only under this JVM's lock). */
        synchronized Stats stats() throws Exception {
            if (!child.process.isAlive() && !crashNoted && !stopped) {
                failed.add("producer " + index + " (pid " + child.process.pid() + ") CRASHED: exited with "
                        + child.process.exitValue());
                crashNoted = true; // counted once
                return null;
            }
            child.send("stats");
            String line = child.nextOrGone("STATS ");
            return line == null ? null : Stats.parse(line.substring(6));
        }

        synchronized void stop() throws InterruptedException {
            if (stopped || child == null) {
                return;
            }
            stopped = true;
            for (Incarnation incarnation : incarnations) {
                if (incarnation != null) {
                    incarnation.going();
                }
            }
            String ended = child.stop();
            if (ended != null) {
                failed.add("producer " + index + " (pid " + child.process.pid() + ") " + ended);
            }
        }
    }

    private final class ConsumerJvm {
        final int index;
        final SoakChild child;
        private final Map<String, CompletableFuture<String>> pending = new ConcurrentHashMap<>();
        Stats idle;
        String idleSockets;
        private boolean stopped;

        ConsumerJvm(int index) throws Exception {
            this.index = index;
            child = SoakChild.java(FleetBenchmark.class, childOptions("-Xmx512m"), "consumer", transport,
                    Integer.toString(index), Integer.toString(concurrency));
            child.route("DONE", line -> {
                String[] words = line.split(" ", 3);
                CompletableFuture<String> future = pending.remove(words[1]);
                if (future != null) {
                    future.complete(words[2]);
                }
            });
            child.process.onExit().thenRun(() -> pending.values().forEach(future ->
                    future.completeExceptionally(new IllegalStateException("the consumer JVM exited"))));
        }

        /** Its sockets, by description ({@link FleetProcesses#sockets}). */
        synchronized String sockets() throws Exception {
            child.send("sockets");
            return child.next("SOCKETS ").substring(8);
        }

        /** "OK nanos" or "FAIL nanoTime cause". */
        String read(String json) throws Exception {
            String id = Long.toString(ids.incrementAndGet());
            CompletableFuture<String> future = new CompletableFuture<>();
            pending.put(id, future);
            child.send("read " + id + " " + json);
            return future.get(60, TimeUnit.SECONDS); // the operation timeout is 10 s: past 60 the consumer is stuck
        }

        synchronized Stats stats() throws Exception {
            child.send("stats");
            return Stats.parse(child.next("STATS ").substring(6));
        }

        synchronized void stop() throws InterruptedException {
            if (stopped) {
                return;
            }
            stopped = true;
            String ended = child.stop();
            if (ended != null) {
                failed.add("consumer " + index + " (pid " + child.process.pid() + ") " + ended);
            }
        }
    }
}
