package io.nixlconnect.benchmarks;

import io.nixlconnect.Connector;
import io.nixlconnect.Descriptor;
import io.nixlconnect.PeerStatistics;
import io.nixlconnect.RdmaMetadata;
import io.nixlconnect.ReadableOperation;
import java.io.BufferedReader;
import java.io.FileDescriptor;
import java.io.FileOutputStream;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;
import java.util.stream.Stream;

/**
 * A consumer reading round-robin from a fleet of producers (issue 32): {@code jvms} producer JVMs of {@code perJvm}
 * connectors each (one agent, one peer each), every read a complete operation on its producer (a readable published,
 * read, completed; the producer publishes the next one on the same buffer as each completes, a few ahead per peer, so
 * the consumer never waits for a round trip to learn metadata). The consumer reads with {@code concurrency} threads,
 * operation {@code i} from peer {@code i mod peers}. Phases: a warm-up of every peer read once and {@code warmup}
 * more reads, then {@code ops} measured reads. Prints ops/s, read p50/p99, failures, and the sockets of the consumer
 * and of each producer JVM before and after the measured reads, the CPU time of the consumer and of the producer JVMs
 * over them, with the consumer's {@link PeerStatistics}.
 *
 * <p>Usage: {@code PeerFleetBenchmark [nixl|embedded] jvms perJvm sizeBytes concurrency ops [warmup]}; for example
 * {@code nixl 4 25 65536 8 4000}. Producers use UCX over the default transports ({@code UCX_TLS} is inherited).
 */
public final class PeerFleetBenchmark {

    /** Readables each peer keeps published ahead of the consumer. */
    private static final int AHEAD = 4;

    private PeerFleetBenchmark() {
    }

    public static void main(String[] args) throws Exception {
        if (args.length > 0 && args[0].equals("producers")) {
            producers(args);
            return;
        }
        String backend = args.length > 0 ? args[0] : "nixl";
        int jvms = args.length > 1 ? Integer.parseInt(args[1]) : 4;
        int perJvm = args.length > 2 ? Integer.parseInt(args[2]) : 25;
        int size = args.length > 3 ? Integer.parseInt(args[3]) : 64 << 10;
        int concurrency = args.length > 4 ? Integer.parseInt(args[4]) : 8;
        int ops = args.length > 5 ? Integer.parseInt(args[5]) : 4000;
        int warmup = args.length > 6 ? Integer.parseInt(args[6]) : 2000;
        int peers = jvms * perJvm;
        List<Process> producers = new ArrayList<>();
        List<BlockingQueue<String>> published = new ArrayList<>();
        for (int i = 0; i < peers; i++) {
            published.add(new LinkedBlockingQueue<>());
        }
        try (Connector consumer = new Connector(BenchmarkOptions.connector("fleet-consumer", backend).build())) {
            CountDownLatch ready = new CountDownLatch(jvms);
            for (int j = 0; j < jvms; j++) {
                producers.add(startProducers(j, perJvm, size, backend, published, ready));
            }
            long startDeadline = System.nanoTime() + TimeUnit.MINUTES.toNanos(10);
            while (!ready.await(1, TimeUnit.SECONDS)) {
                // A producer JVM that exits before it is ready (its agent failed to start) ends the run at once.
                for (Process producer : producers) {
                    if (!producer.isAlive()) {
                        throw new IllegalStateException("a producer JVM exited with " + producer.exitValue()
                                + " before it was ready (its output above says why)");
                    }
                }
                if (System.nanoTime() > startDeadline) {
                    throw new IllegalStateException("producer JVMs did not start within 10 minutes");
                }
            }
            List<Descriptor> targets = new ArrayList<>();
            for (int t = 0; t < concurrency; t++) {
                Descriptor target = Descriptor.allocate(size);
                target.registerMemory(consumer);
                targets.add(target);
            }
            try {
                run(consumer, published, targets, peers, 0, peers, null); // every peer loaded once
                run(consumer, published, targets, peers, peers, warmup, null);
                long consumerBefore = sockets(ProcessHandle.current().pid());
                long[] producersBefore = producers.stream().mapToLong(p -> sockets(p.pid())).toArray();
                long consumerCpuBefore = cpuTicks(ProcessHandle.current().pid());
                long producersCpuBefore = producers.stream().mapToLong(p -> cpuTicks(p.pid())).sum();
                long[] latencies = new long[ops];
                long start = System.nanoTime();
                int failures = run(consumer, published, targets, peers, peers + warmup, ops, latencies);
                double seconds = (System.nanoTime() - start) / 1e9;
                double consumerCpu = (cpuTicks(ProcessHandle.current().pid()) - consumerCpuBefore) / (double) TICKS;
                double producersCpu = (producers.stream().mapToLong(p -> cpuTicks(p.pid())).sum() - producersCpuBefore)
                        / (double) TICKS;
                long consumerAfter = sockets(ProcessHandle.current().pid());
                long[] producersAfter = producers.stream().mapToLong(p -> sockets(p.pid())).toArray();
                Arrays.sort(latencies);
                PeerStatistics statistics = consumer.peerStatistics();
                System.out.printf(Locale.ROOT, "%-8s %d peers (%d JVMs x %d), %d B, concurrency %d: %.0f ops/s over %d"
                        + " ops (%.1f s), read p50 %.3f ms p99 %.3f ms, %d failed%n", backend, peers, jvms, perJvm,
                        size, concurrency, ops / seconds, ops, seconds, latencies[ops / 2] / 1e6,
                        latencies[(int) (ops * 0.99)] / 1e6, failures);
                System.out.printf(Locale.ROOT, "  sockets: consumer %d -> %d (%+d); producer JVMs %s -> %s (%s)%n",
                        consumerBefore, consumerAfter, consumerAfter - consumerBefore,
                        Arrays.toString(producersBefore), Arrays.toString(producersAfter),
                        deltas(producersBefore, producersAfter));
                System.out.printf(Locale.ROOT, "  CPU over the measured reads: consumer %.1f s, producer JVMs %.1f s"
                        + " (%.2f cores together)%n", consumerCpu, producersCpu, (consumerCpu + producersCpu) / seconds);
                System.out.printf(Locale.ROOT, "  consumer peers: %s; load average %s%n", statistics, loadAverage());
            } finally {
                for (Descriptor target : targets) {
                    target.close();
                }
            }
        } finally {
            for (Process producer : producers) {
                producer.getOutputStream().close();
            }
            for (Process producer : producers) {
                if (!producer.waitFor(30, TimeUnit.SECONDS)) {
                    producer.destroyForcibly();
                }
            }
        }
    }

    /**
     * Reads operations {@code first .. first + count - 1}, operation {@code i} from peer {@code i mod peers}, with one
     * thread per target; records each read's nanoseconds into {@code latencies} (when given); returns the failures.
     */
    private static int run(Connector consumer, List<BlockingQueue<String>> published, List<Descriptor> targets,
            int peers, int first, int count, long[] latencies) throws InterruptedException {
        AtomicInteger next = new AtomicInteger();
        AtomicInteger failures = new AtomicInteger();
        AtomicReference<Throwable> firstFailure = new AtomicReference<>();
        List<Thread> threads = new ArrayList<>();
        for (Descriptor target : targets) {
            Thread thread = new Thread(() -> {
                int i;
                while ((i = next.getAndIncrement()) < count) {
                    int operation = first + i;
                    try {
                        String json = published.get(operation % peers).poll(5, TimeUnit.MINUTES);
                        if (json == null) {
                            throw new IllegalStateException("peer " + operation % peers + " published nothing");
                        }
                        long start = System.nanoTime();
                        consumer.read(RdmaMetadata.fromJson(json), target);
                        if (latencies != null) {
                            latencies[i] = System.nanoTime() - start;
                        }
                    } catch (InterruptedException e) {
                        Thread.currentThread().interrupt();
                        return;
                    } catch (RuntimeException e) {
                        failures.incrementAndGet();
                        firstFailure.compareAndSet(null, e);
                    }
                }
            }, "fleet-reader");
            threads.add(thread);
            thread.start();
        }
        for (Thread thread : threads) {
            thread.join();
        }
        if (firstFailure.get() != null) {
            System.err.println("first failure: " + firstFailure.get());
        }
        return failures.get();
    }

    private static Process startProducers(int jvm, int perJvm, int size, String backend,
            List<BlockingQueue<String>> published, CountDownLatch ready) throws IOException {
        List<String> options = new ArrayList<>(List.of("-Xmx512m"));
        options.addAll(ChildJvms.forwardedProperties());
        List<String> command = ChildJvms.command(PeerFleetBenchmark.class, options, "producers", backend,
                Integer.toString(perJvm), Integer.toString(size));
        Process process = new ProcessBuilder(command).redirectError(ProcessBuilder.Redirect.INHERIT).start();
        Thread reader = new Thread(() -> {
            try (BufferedReader in = new BufferedReader(new InputStreamReader(process.getInputStream(),
                    StandardCharsets.UTF_8))) {
                String line;
                while ((line = in.readLine()) != null) {
                    if (line.equals("READY")) {
                        ready.countDown();
                    } else if (line.startsWith("META ")) {
                        int space = line.indexOf(' ', 5);
                        int peer = jvm * perJvm + Integer.parseInt(line.substring(5, space));
                        published.get(peer).add(line.substring(space + 1));
                    }
                }
            } catch (IOException e) {
                // the producer went away
            }
        }, "fleet-producer-" + jvm);
        reader.setDaemon(true);
        reader.start();
        return process;
    }

    /**
     * A producer JVM: {@code producers BACKEND PEERS SIZE} opens PEERS connectors, each publishing {@link #AHEAD}
     * readables of SIZE bytes ahead ({@code META i json}), and another on the same buffer as each completes; until
     * stdin closes.
     */
    private static void producers(String[] args) throws Exception {
        String backend = args[1];
        int peers = Integer.parseInt(args[2]);
        int size = Integer.parseInt(args[3]);
        PrintStream out = new PrintStream(new FileOutputStream(FileDescriptor.out), false, StandardCharsets.UTF_8);
        List<Connector> connectors = new ArrayList<>();
        List<Descriptor> buffers = new ArrayList<>();
        AtomicLong publishedCount = new AtomicLong();
        try {
            String prefix = "fleet-" + ProcessHandle.current().pid() + "-";
            for (int i = 0; i < peers; i++) {
                connectors.add(new Connector(BenchmarkOptions.connector(prefix + i, backend).build()));
            }
            for (int i = 0; i < peers; i++) {
                for (int k = 0; k < AHEAD; k++) {
                    Descriptor buffer = Descriptor.allocate(size);
                    buffers.add(buffer);
                    publish(connectors.get(i), i, buffer, out, publishedCount);
                }
            }
            synchronized (out) {
                out.println("READY");
                out.flush();
            }
            BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
            while (in.readLine() != null) {
                // until the consumer closes our stdin
            }
        } finally {
            for (Connector connector : connectors) {
                connector.close();
            }
            for (Descriptor buffer : buffers) {
                try {
                    buffer.close();
                } catch (IllegalStateException ignored) {
                    // a readable still open on it: the process ends anyway
                }
            }
        }
    }

    /** Publishes a readable of {@code buffer} on {@code connector}, and the next one on it once this one completes. */
    private static void publish(Connector connector, int peer, Descriptor buffer, PrintStream out, AtomicLong count) {
        ReadableOperation readable;
        try {
            readable = connector.createReadable(buffer);
        } catch (RuntimeException e) {
            return; // closing
        }
        String line = "META " + peer + " " + readable.metadata().toJson();
        readable.completion().whenComplete((done, failure) -> {
            readable.close();
            if (failure == null) {
                publish(connector, peer, buffer, out, count);
            }
        });
        count.incrementAndGet();
        synchronized (out) {
            out.println(line);
            out.flush();
        }
    }

    /** Sockets process {@code pid} holds open now. */
    static long sockets(long pid) {
        try (Stream<Path> fds = Files.list(Path.of("/proc", Long.toString(pid), "fd"))) {
            return fds.filter(fd -> {
                try {
                    return Files.readSymbolicLink(fd).toString().startsWith("socket:");
                } catch (IOException e) {
                    return false;
                }
            }).count();
        } catch (IOException e) {
            return -1;
        }
    }

    /** Clock ticks per second of {@code /proc/PID/stat}'s times (USER_HZ: 100 on Linux). */
    private static final int TICKS = 100;

    /** User and system CPU time of process {@code pid}, in clock ticks. */
    static long cpuTicks(long pid) {
        try {
            String stat = Files.readString(Path.of("/proc", Long.toString(pid), "stat"));
            String[] fields = stat.substring(stat.lastIndexOf(')') + 2).split(" ");
            return Long.parseLong(fields[11]) + Long.parseLong(fields[12]); // utime, stime (fields 14 and 15)
        } catch (IOException | RuntimeException e) {
            return 0;
        }
    }

    private static String deltas(long[] before, long[] after) {
        StringBuilder text = new StringBuilder();
        for (int i = 0; i < before.length; i++) {
            text.append(i == 0 ? "" : ", ").append(String.format(Locale.ROOT, "%+d", after[i] - before[i]));
        }
        return text.toString();
    }

    private static String loadAverage() {
        try {
            String[] fields = Files.readString(Path.of("/proc/loadavg")).split(" ");
            return fields[0] + " " + fields[1] + " " + fields[2];
        } catch (IOException e) {
            return "?";
        }
    }
}
