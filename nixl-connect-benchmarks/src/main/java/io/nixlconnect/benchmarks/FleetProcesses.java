package io.nixlconnect.benchmarks;

import io.nixlconnect.Connector;
import io.nixlconnect.Descriptor;
import io.nixlconnect.NixlConnectException;
import io.nixlconnect.PeerStatistics;
import io.nixlconnect.RdmaMetadata;
import io.nixlconnect.ReadableOperation;
import io.nixlconnect.transport.TransportSettings;
import io.nixlconnect.transport.embedded.EmbeddedSettings;
import io.nixlconnect.transport.nixl.NixlSettings;
import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.PrintStream;
import java.lang.reflect.Method;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.nio.file.DirectoryStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ArrayBlockingQueue;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReferenceArray;

/**
 * The fleet's child JVMs ({@link FleetBenchmark}), driven line by line over stdin/stdout: a producer JVM of M
 * connectors that publishes a readable per request, and a consumer JVM that reads what it is given at concurrency C.
 * Both answer {@code stats} with {@code STATS} and the figures of {@link #stats}.
 */
final class FleetProcesses {

    /** Slices of a producer connector's registered pool that requests rotate over. */
    static final int SLOTS = 16;

    private FleetProcesses() {
    }

    // --- a producer JVM: M connectors, each a worker of the fleet under a name no earlier one had ---

    /**
     * {@code publish ID M}: connector M publishes a readable over a slice of its pool (every 4 KiB of which starts with
     * its own address) and answers {@code META ID json}, or {@code NOMETA ID why}; it closes the readable once read.
     * {@code restart ID M}: connector M closes and a new one (a new agent name) takes its place: {@code RESTARTED ID}.
     */
    static void producer(String transport, int jvm, int connectors) throws Exception {
        PrintStream out = new PrintStream(System.out, true, StandardCharsets.UTF_8);
        AtomicReferenceArray<ProducerAgent> agents = new AtomicReferenceArray<>(connectors);
        AtomicInteger incarnations = new AtomicInteger();
        for (int m = 0; m < connectors; m++) {
            agents.set(m, new ProducerAgent(transport, jvm, m, incarnations.getAndIncrement()));
        }
        // Restarts take a connector's start (NIXL: an agent and its UCX worker): off the command thread, one at a time.
        ExecutorService restarts = Executors.newSingleThreadExecutor();
        out.println("READY " + stats(agents));
        try (BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8))) {
            String line;
            while ((line = in.readLine()) != null) {
                String[] words = line.trim().split(" ");
                switch (words[0]) {
                    case "publish" -> {
                        ProducerAgent agent = agents.get(Integer.parseInt(words[2]));
                        if (agent == null) {
                            out.println("NOMETA " + words[1] + " restarting");
                        } else {
                            out.println(agent.publish(words[1]));
                        }
                    }
                    case "restart" -> {
                        int m = Integer.parseInt(words[2]);
                        ProducerAgent old = agents.getAndSet(m, null);
                        restarts.execute(() -> {
                            old.close();
                            agents.set(m, new ProducerAgent(transport, jvm, m, incarnations.getAndIncrement()));
                            out.println("RESTARTED " + words[1]);
                        });
                    }
                    case "stats" -> out.println("STATS " + stats(agents));
                    case "sockets" -> out.println("SOCKETS " + sockets());
                    case "exit" -> {
                        restarts.shutdown();
                        restarts.awaitTermination(60, TimeUnit.SECONDS);
                        for (int m = 0; m < connectors; m++) {
                            ProducerAgent agent = agents.getAndSet(m, null);
                            if (agent != null) {
                                agent.close();
                            }
                        }
                        return;
                    }
                    default -> out.println("ERROR unknown command " + words[0]);
                }
            }
        }
    }

    /** One connector of a producer JVM with its registered pool. */
    private static final class ProducerAgent {
        final Connector connector;
        final Descriptor pool;
        private final AtomicInteger next = new AtomicInteger();

        ProducerAgent(String transport, int jvm, int m, int incarnation) {
            // Every restart is a new agent name, as when a worker is replaced.
            connector = new Connector(BenchmarkOptions.connector("fleet-p" + jvm + "-" + ProcessHandle.current().pid()
                    + "-c" + m + "-i" + incarnation, transport).transports(transport(transport))
                    .passiveTimeout(Duration.ofSeconds(10)).build());
            int size = FleetBenchmark.size();
            pool = Descriptor.allocate((long) size * SLOTS);
            var memory = pool.asByteBuffer().order(ByteOrder.LITTLE_ENDIAN);
            for (long offset = 0; offset + 8 <= pool.size(); offset += 4096) {
                memory.putLong((int) offset, pool.ptr() + offset);
            }
            pool.registerMemory(connector);
        }

        String publish(String id) {
            Descriptor slice = pool.slice((long) Math.floorMod(next.getAndIncrement(), SLOTS) * FleetBenchmark.size(),
                    FleetBenchmark.size());
            try {
                ReadableOperation readable = connector.createReadable(slice);
                readable.completion().whenComplete((ok, error) -> {
                    readable.close();
                    slice.close();
                });
                return "META " + id + " " + readable.metadata().toJson();
            } catch (RuntimeException e) {
                slice.close();
                return "NOMETA " + id + " " + FleetFigures.cause(e);
            }
        }

        void close() {
            connector.close();
            pool.close();
        }
    }

    // --- a consumer JVM: one connector reading what it is given, C at a time ---

    /**
     * {@code read ID json}: reads the window into a registered buffer, checks the first 8 bytes of every 4 KiB (the
     * producer's address of it) and answers {@code DONE ID OK nanos} or {@code DONE ID FAIL nanoTime cause} (the
     * failure's {@link System#nanoTime()}, which on Linux the coordinator's clock shares).
     */
    static void consumer(String transport, int index, int concurrency) throws Exception {
        PrintStream out = new PrintStream(System.out, true, StandardCharsets.UTF_8);
        int size = FleetBenchmark.size();
        try (Connector connector = new Connector(BenchmarkOptions.connector("fleet-consumer-" + index + "-"
                + ProcessHandle.current().pid(), transport).transports(transport(transport))
                .operationTimeout(Duration.ofSeconds(10)).build())) {
            BlockingQueue<Descriptor> targets = new ArrayBlockingQueue<>(concurrency);
            for (int i = 0; i < concurrency; i++) {
                Descriptor target = Descriptor.allocate(size);
                target.registerMemory(connector);
                targets.add(target);
            }
            ExecutorService readers = Executors.newFixedThreadPool(concurrency);
            out.println("READY " + stats(List.of(connector)));
            try (BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8))) {
                String line;
                while ((line = in.readLine()) != null) {
                    if (line.startsWith("read ")) {
                        int space = line.indexOf(' ', 5);
                        String id = line.substring(5, space);
                        String json = line.substring(space + 1);
                        readers.execute(() -> out.println("DONE " + id + " " + read(connector, json, targets)));
                    } else if (line.equals("stats")) {
                        out.println("STATS " + stats(List.of(connector)));
                    } else if (line.equals("sockets")) {
                        out.println("SOCKETS " + sockets());
                    } else if (line.equals("exit")) {
                        break;
                    }
                }
            }
            readers.shutdown();
            readers.awaitTermination(60, TimeUnit.SECONDS);
            targets.forEach(Descriptor::close);
        }
    }

    private static String read(Connector connector, String json, BlockingQueue<Descriptor> targets) {
        Descriptor target = targets.remove();
        try {
            RdmaMetadata metadata = RdmaMetadata.fromJson(json);
            long began = System.nanoTime();
            connector.read(metadata, target);
            long nanos = System.nanoTime() - began;
            var bytes = target.asByteBuffer().order(ByteOrder.LITTLE_ENDIAN);
            long remote = metadata.descriptors().get(0).ptr();
            for (int offset = 0; offset + 8 <= target.size(); offset += 4096) {
                if (bytes.getLong(offset) != remote + offset) {
                    return "FAIL " + System.nanoTime() + " " + FleetFigures.WRONG_BYTES;
                }
            }
            return "OK " + nanos;
        } catch (NixlConnectException e) {
            return "FAIL " + System.nanoTime() + " " + FleetFigures.cause(e);
        } catch (RuntimeException | Error e) {
            return "FAIL " + System.nanoTime() + " " + FleetFigures.UNTYPED + " " + FleetFigures.cause(e);
        } finally {
            targets.add(target);
        }
    }

    // --- what every child reports ---

    /**
     * "fds sockets threads rssKiB cachedPeers openConnections evictions reconnects departed idleClosed liveAgents
     * heapCommittedKiB": this process's open file descriptors and sockets (/proc/self/fd), its threads (the kernel's
     * count: the JVM's and native ones), RSS, its connectors' peer statistics summed, and the Java heap committed (what
     * of the RSS the heap may account for; the rest is native memory: NIXL, UCX, the JVM's own).
     */
    private static String stats(AtomicReferenceArray<ProducerAgent> agents) throws IOException {
        List<Connector> connectors = new ArrayList<>();
        for (int m = 0; m < agents.length(); m++) {
            ProducerAgent agent = agents.get(m);
            if (agent != null) {
                connectors.add(agent.connector);
            }
        }
        return stats(connectors);
    }

    private static String stats(List<Connector> connectors) throws IOException {
        long cached = 0, open = 0, evictions = 0, reconnects = 0, departed = 0, idle = 0;
        int live = 0;
        for (Connector connector : connectors) {
            try {
                PeerStatistics peers = connector.peerStatistics();
                cached += peers.cachedPeers();
                open += peers.openConnections();
                evictions += peers.evictions();
                reconnects += peers.reconnects();
                departed += peers.departedPeersClosed();
                idle += peers.idleConnectionsClosed();
                live++;
            } catch (RuntimeException e) {
                // closed by a restart meanwhile
            }
        }
        long fds = 0;
        try (DirectoryStream<Path> entries = Files.newDirectoryStream(Path.of("/proc/self/fd"))) {
            for (Path ignored : entries) {
                fds++;
            }
        }
        return fds + " " + DepartedProducersBenchmark.socketFds() + " " + threads() + " "
                + NixlSoak.rssKiB(Path.of("/proc/self/status")) + " " + cached + " " + open + " " + evictions + " "
                + reconnects + " " + departed + " " + idle + " " + live + " "
                + (Runtime.getRuntime().totalMemory() >> 10);
    }

    /**
     * This process's sockets, each as the kernel lists it (/proc/self/net: protocol, local and remote address, TCP
     * state; or the unix socket's path, the netlink family), counted by description: what a process not back to idle
     * holds.
     */
    static String sockets() throws IOException {
        java.util.Map<String, String> byInode = new java.util.HashMap<>();
        for (String table : List.of("tcp", "tcp6", "udp", "udp6")) {
            List<String> rows = readLines(Path.of("/proc/self/net", table));
            for (String row : rows.subList(Math.min(1, rows.size()), rows.size())) {
                String[] f = row.trim().split("\\s+");
                if (f.length > 9) {
                    byInode.put(f[9], table + " " + port(f[1]) + "->" + port(f[2]) + " state " + f[3]);
                }
            }
        }
        List<String> unix = readLines(Path.of("/proc/self/net/unix"));
        for (String row : unix.subList(Math.min(1, unix.size()), unix.size())) {
            String[] f = row.trim().split("\\s+");
            if (f.length > 6) {
                byInode.put(f[6], "unix" + (f.length > 7 ? " " + f[7] : ""));
            }
        }
        List<String> netlink = readLines(Path.of("/proc/self/net/netlink"));
        for (String row : netlink.subList(Math.min(1, netlink.size()), netlink.size())) {
            String[] f = row.trim().split("\\s+");
            if (f.length > 9) {
                byInode.put(f[9], "netlink family " + f[1]);
            }
        }
        java.util.Map<String, Integer> counted = new java.util.TreeMap<>();
        try (DirectoryStream<Path> entries = Files.newDirectoryStream(Path.of("/proc/self/fd"))) {
            for (Path fd : entries) {
                try {
                    String link = Files.readSymbolicLink(fd).toString();
                    if (link.startsWith("socket:[")) {
                        String inode = link.substring(8, link.length() - 1);
                        counted.merge(byInode.getOrDefault(inode, "socket (other)"), 1, Integer::sum);
                    }
                } catch (IOException e) {
                    // closed meanwhile
                }
            }
        }
        return counted.toString();
    }

    /** "0100007F:1F90" as "port 8080" (addresses on one host say little; the port says which end). */
    private static String port(String hexAddress) {
        int colon = hexAddress.lastIndexOf(':');
        return colon < 0 ? hexAddress : ":" + Integer.parseInt(hexAddress.substring(colon + 1), 16);
    }

    private static List<String> readLines(Path file) {
        try {
            return Files.readAllLines(file);
        } catch (IOException e) {
            return List.of();
        }
    }

    private static long threads() throws IOException {
        for (String line : Files.readAllLines(Path.of("/proc/self/status"))) {
            if (line.startsWith("Threads:")) {
                return Long.parseLong(line.replaceAll("[^0-9]", ""));
            }
        }
        return -1;
    }

    // --- the peer lifecycle settings of the fleet ---

    private static boolean warned;

    /**
     * {@code backend}'s settings ({@link BenchmarkOptions#transport}) with the fleet's peer lifecycle:
     * {@code -Dfleet.peerIdleMillis} (unset: the library's default) and {@code -Dfleet.maxPeers} (unset: default) as
     * the embedded transport's peer idle timeout and cached-peer bound, NIXL's peer idle limit and loaded-peer bound.
     * Looked up by name, so that the harness also runs on a library from before these settings existed
     * ({@code BASELINE=} in run-fleet.sh), which then runs with what it had: the check shows what it misses.
     */
    static TransportSettings transport(String backend) {
        TransportSettings settings = BenchmarkOptions.transport(backend);
        String idleMillis = System.getProperty("fleet.peerIdleMillis", "");
        String maxPeers = System.getProperty("fleet.maxPeers", "");
        try {
            if (settings instanceof EmbeddedSettings) {
                if (!idleMillis.isEmpty() || !maxPeers.isEmpty()) {
                    Duration idle = idleMillis.isEmpty() ? (Duration) EmbeddedSettings.class
                            .getField("DEFAULT_PEER_IDLE_TIMEOUT").get(null) : Duration.ofMillis(Long.parseLong(idleMillis));
                    int max = maxPeers.isEmpty() ? EmbeddedSettings.class.getField("DEFAULT_MAX_CACHED_PEERS")
                            .getInt(null) : Integer.parseInt(maxPeers);
                    settings = (TransportSettings) EmbeddedSettings.class.getMethod("withPeerLifecycle", Duration.class,
                            int.class).invoke(settings, idle, max);
                }
            } else if (settings instanceof NixlSettings) {
                if (!idleMillis.isEmpty()) {
                    Method with = NixlSettings.class.getMethod("withPeerIdleLimit", Duration.class);
                    settings = (TransportSettings) with.invoke(settings, Duration.ofMillis(Long.parseLong(idleMillis)));
                }
                if (!maxPeers.isEmpty()) {
                    Method with = NixlSettings.class.getMethod("withMaxLoadedPeers", int.class);
                    settings = (TransportSettings) with.invoke(settings, Integer.parseInt(maxPeers));
                }
            }
        } catch (NoSuchMethodException | NoSuchFieldException e) {
            synchronized (FleetProcesses.class) {
                if (!warned) {
                    warned = true;
                    System.err.println("fleet: this library has no " + e.getMessage() + ": its peers live as it keeps them");
                }
            }
        } catch (ReflectiveOperationException e) {
            throw new IllegalStateException("cannot apply the fleet's peer settings: " + e, e);
        }
        return settings;
    }
}
