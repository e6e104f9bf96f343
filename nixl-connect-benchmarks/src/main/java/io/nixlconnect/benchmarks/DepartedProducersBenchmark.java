package io.nixlconnect.benchmarks;

import io.nixlconnect.Connector;
import io.nixlconnect.Descriptor;
import io.nixlconnect.PeerStatistics;
import io.nixlconnect.RdmaMetadata;
import io.nixlconnect.ReadableOperation;
import io.nixlconnect.TransportStatus;
import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.DirectoryStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Locale;

/**
 * A consumer that reads once from each of many producers that start, serve and leave (issue 32, "embedded fleet"):
 * what does it keep of them? Producers run in a child JVM, each a connector of its own (a new agent on a new port)
 * serving one 4 KiB readable and closing once it is read; the child JVM itself is replaced every
 * {@code -Dbench.departed.perJvm} producers (default 100), so departures are both connectors closing and processes
 * exiting. The consumer (this JVM, embedded transport, library defaults) reads each once.
 *
 * <p>Every {@code -Dbench.departed.every} producers (default 100), and at the end (at once, and again after
 * {@code -Dbench.departed.settleMillis}, default 1000, a few checks of the idle connections later), it prints the
 * consumer's sockets (entries of /proc/self/fd that are sockets), its cached peers, open connections, the peer
 * counters, the size of its transport's health details ({@code Connector.transportStatus().details()}, as
 * {@code toString()} prints it and as the health endpoint's JSON would be, within a few characters), reads that
 * failed (with the first failure's message), and the p50 of the reads. Only public API that 125fd11 already had is
 * used, so the same class runs against that commit's nixl-connect-core for the "before" figures
 * ({@code benchmarks/run-departed-producers.sh}).
 *
 * <p>Usage: {@code DepartedProducersBenchmark [producers]} (default 600).
 */
public final class DepartedProducersBenchmark {

    private static final int SIZE = 4096;

    private DepartedProducersBenchmark() {
    }

    public static void main(String[] args) throws Exception {
        if (args.length > 0 && args[0].equals("producers")) {
            producers();
            return;
        }
        int producers = args.length > 0 ? Integer.parseInt(args[0]) : 600;
        int perJvm = Integer.getInteger("bench.departed.perJvm", 100);
        int every = Integer.getInteger("bench.departed.every", 100);
        long settleMillis = Long.getLong("bench.departed.settleMillis", 1000);
        List<Long> readNanos = new ArrayList<>();
        int failures = 0;
        String firstFailure = null;
        try (Connector consumer = new Connector(BenchmarkOptions.connector("departed-consumer", "embedded").build());
             Descriptor target = Descriptor.allocate(SIZE)) {
            target.registerMemory(consumer);
            System.out.printf(Locale.ROOT, "consumer %s (embedded, library defaults), %d producers of one %d-byte read "
                    + "each, a new producer JVM every %d%n", consumer.name(), producers, SIZE, perJvm);
            report("before any producer", consumer, readNanos, failures);
            ProducerJvm jvm = null;
            for (int i = 0; i < producers; i++) {
                if (i % perJvm == 0) {
                    if (jvm != null) {
                        jvm.close();
                    }
                    jvm = new ProducerJvm();
                }
                RdmaMetadata metadata = jvm.serve(i);
                long start = System.nanoTime();
                try {
                    consumer.read(metadata, target);
                    readNanos.add(System.nanoTime() - start);
                } catch (RuntimeException e) {
                    failures++;
                    if (firstFailure == null) {
                        firstFailure = "producer " + i + ": " + e.getMessage();
                    }
                }
                jvm.gone();
                if ((i + 1) % every == 0 && i + 1 < producers) {
                    report("after " + (i + 1) + " producers", consumer, readNanos, failures);
                }
            }
            if (jvm != null) {
                jvm.close();
            }
            report("after " + producers + " producers, at once", consumer, readNanos, failures);
            Thread.sleep(settleMillis);
            report("after " + producers + " producers, " + settleMillis + " ms later", consumer, readNanos, failures);
            if (firstFailure != null) {
                System.out.println("first failure: " + firstFailure);
            }
        }
    }

    private static void report(String when, Connector consumer, List<Long> readNanos, int failures) throws IOException {
        PeerStatistics peers = consumer.peerStatistics();
        TransportStatus status = consumer.transportStatus();
        long[] sorted = readNanos.stream().mapToLong(Long::longValue).sorted().toArray();
        System.out.printf(Locale.ROOT, "%-40s sockets %4d, cached peers %4d, open connections %4d, departed %4d, "
                + "idle-closed %4d, evicted %4d; health details %6d chars; reads ok %4d, failed %4d, p50 %.3f ms%n",
                when, socketFds(), peers.cachedPeers(), peers.openConnections(), peers.departedPeersClosed(),
                peers.idleConnectionsClosed(), peers.evictions(), status.details().toString().length(),
                sorted.length, failures, sorted.length == 0 ? 0.0 : sorted[sorted.length / 2] / 1e6);
    }

    /** This process's open sockets: the entries of /proc/self/fd that are sockets. */
    static long socketFds() throws IOException {
        long sockets = 0;
        try (DirectoryStream<Path> fds = Files.newDirectoryStream(Path.of("/proc/self/fd"))) {
            for (Path fd : fds) {
                try {
                    if (Files.readSymbolicLink(fd).toString().startsWith("socket:")) {
                        sockets++;
                    }
                } catch (IOException e) {
                    // closed meanwhile
                }
            }
        } catch (IOException e) {
            return -1; // out of descriptors to list them with
        }
        return sockets;
    }

    /**
     * The producers' JVM: {@code serve SEED} starts a producer and prints its META line; the next line ({@code done})
     * says the consumer is done with it: it leaves (closes its connector) and prints GONE.
     */
    private static void producers() throws Exception {
        PrintStream out = new PrintStream(System.out, true, StandardCharsets.UTF_8);
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        out.println("READY");
        String line;
        while ((line = in.readLine()) != null && line.startsWith("serve ")) {
            byte[] data = new byte[SIZE];
            Arrays.fill(data, (byte) Long.parseLong(line.substring(6).trim()));
            try (Connector producer = new Connector(BenchmarkOptions.connector("producer-" + line.substring(6).trim()
                    + "-" + ProcessHandle.current().pid(), "embedded").build());
                 Descriptor source = new Descriptor(data);
                 ReadableOperation readable = producer.createReadable(source)) {
                out.println("META " + readable.metadata().toJson());
                // The consumer says when it is done, read or failed: the producer then leaves, read or not (a
                // producer waiting for a read that failed would wait for its passive timeout).
                if (!"done".equals(in.readLine())) {
                    return;
                }
            }
            out.println("GONE");
        }
    }

    /** A child JVM of producers, driven over its stdin. */
    private static final class ProducerJvm implements AutoCloseable {
        private final Process process;
        private final BufferedReader lines;
        private final PrintStream commands;

        ProducerJvm() throws IOException {
            List<String> command = ChildJvms.command(DepartedProducersBenchmark.class,
                    List.of("-Xmx256m", "-Dorg.slf4j.simpleLogger.defaultLogLevel=warn"), "producers");
            process = new ProcessBuilder(command).redirectError(ProcessBuilder.Redirect.INHERIT).start();
            lines = new BufferedReader(new InputStreamReader(process.getInputStream(), StandardCharsets.UTF_8));
            commands = new PrintStream(process.getOutputStream(), true, StandardCharsets.UTF_8);
            expect("READY");
        }

        RdmaMetadata serve(int seed) throws IOException {
            commands.println("serve " + seed);
            return RdmaMetadata.fromJson(expect("META ").substring(5));
        }

        /** Tells the producer the consumer is done with it, and waits until it has left. */
        void gone() throws IOException {
            commands.println("done");
            expect("GONE");
        }

        private String expect(String prefix) throws IOException {
            String line;
            while ((line = lines.readLine()) != null) {
                if (line.startsWith(prefix)) {
                    return line;
                }
            }
            throw new IOException("the producers' JVM ended before printing " + prefix);
        }

        @Override
        public void close() throws Exception {
            commands.close(); // end of input: the JVM exits
            process.waitFor();
        }
    }
}
