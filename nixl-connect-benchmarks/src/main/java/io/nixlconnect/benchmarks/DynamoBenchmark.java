package io.nixlconnect.benchmarks;

import io.nixlconnect.Connector;
import io.nixlconnect.Descriptor;
import io.nixlconnect.ReadableOperation;
import io.nixlconnect.dynamo.DiscoveryBackend;
import io.nixlconnect.dynamo.DynamoClient;
import io.nixlconnect.dynamo.DynamoHandler;
import io.nixlconnect.dynamo.DynamoResponse;
import io.nixlconnect.dynamo.DynamoRuntime;
import io.nixlconnect.dynamo.DynamoSettings;
import io.nixlconnect.dynamo.DynamoValues;
import io.nixlconnect.dynamo.EncodeReply;
import io.nixlconnect.dynamo.ResponseStream;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.HexFormat;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.SplittableRandom;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * The Java side of the Dynamo request-plane benchmarks (issue 33; benchmarks/run-dynamo.sh runs it beside the
 * Python baselines of benchmarks/dynamo_baseline.py, on the real ai-dynamo-runtime 1.6.1, file discovery, loopback).
 *
 * <pre>
 * DynamoBenchmark client --endpoint E --file-kv DIR [--requests N] [--warmup W] [--concurrency C] [--read true|false]
 *                        [--request JSON] [--verbose true] [--stdin-batches true]
 *                        a caller doing what interop/dynamo_client.py does, the same SUMMARY line; --verbose prints,
 *                        as the Python client does, a READ line per read (ms: the read and its hash; reply_ms: the
 *                        call to the reply carrying the metadata; call_ms: the call to the read's end) and an END line
 *                        per measured call (ms: the call to its stream's end; open_ms: to the worker's call home with
 *                        its prologue; first_ms: to the first response); --stdin-batches: after the warm-up it
 *                        prints READY and runs N calls (and their SUMMARY, then BATCH_DONE) per line read on stdin
 * DynamoBenchmark worker --file-kv DIR [--prefix bench] [--bytes B] [--hash-rounds R]
 *                        a worker serving PREFIX.echo.generate, PREFIX.encoder.generate, PREFIX.hash.generate with
 *                        interop/dynamo_worker.py's work (echo; a fresh tensor of B random bytes and its SHA-256,
 *                        readable until read; R chained SHA-256 of str(n)); prints READY, serves until SIGTERM
 * </pre>
 *
 * The client times each call from {@code call} to the end of its stream, and with {@code --read} also to the end of
 * the read of its reply's tensor (allocated, read through the connector and hashed, as the Python client does): the
 * {@code p*_ms} and {@code read_p*_ms} figures of the SUMMARY line. The NIXL backend ({@code NIXL_LIBRARY_DIR}) reads
 * and serves tensors, as Python peers need.
 */
public final class DynamoBenchmark {

    private DynamoBenchmark() {
    }

    public static void main(String[] args) throws Exception {
        if (args.length == 0 || !(args[0].equals("client") || args[0].equals("worker"))) {
            System.err.println("usage: DynamoBenchmark client|worker --file-kv DIR ... (see the class comment)");
            System.exit(2);
        }
        Map<String, String> options = options(args);
        if (args[0].equals("client")) {
            System.exit(client(options));
        }
        worker(options);
    }

    private static Map<String, String> options(String[] args) {
        Map<String, String> options = new LinkedHashMap<>();
        for (int i = 1; i < args.length; i += 2) {
            if (!args[i].startsWith("--") || i + 1 >= args.length) {
                throw new IllegalArgumentException("expected --name value pairs, at " + args[i]);
            }
            options.put(args[i].substring(2), args[i + 1]);
        }
        return options;
    }

    private static String required(Map<String, String> options, String name) {
        String value = options.get(name);
        if (value == null) {
            throw new IllegalArgumentException("--" + name + " is required");
        }
        return value;
    }

    private static DynamoSettings settings(Map<String, String> options) {
        return DynamoSettings.fromEnvironment().toBuilder().discoveryBackend(DiscoveryBackend.FILE)
                .fileKvDirectory(Path.of(required(options, "file-kv"))).rpcHost("127.0.0.1")
                .responseStreamHost("127.0.0.1").build();
    }

    private static Connector connector(String workerId) {
        return new Connector(BenchmarkOptions.connector(workerId, "nixl").build());
    }

    static String sha256Hex(ByteBuffer data) {
        MessageDigest digest = sha256();
        digest.update(data);
        return HexFormat.of().formatHex(digest.digest());
    }

    private static MessageDigest sha256() {
        try {
            return MessageDigest.getInstance("SHA-256");
        } catch (NoSuchAlgorithmException e) {
            throw new IllegalStateException(e);
        }
    }

    /** interop/dynamo_worker.py's hash work: d = str(n) in UTF-8, then d = SHA-256(d) {@code rounds} times. */
    static String hashWork(long n, int rounds) {
        MessageDigest digest = sha256();
        byte[] d = Long.toString(n).getBytes(StandardCharsets.UTF_8);
        for (int i = 0; i < rounds; i++) {
            d = digest.digest(d);
        }
        return HexFormat.of().formatHex(d);
    }

    // ---- the worker ----

    private static void worker(Map<String, String> options) throws InterruptedException {
        String prefix = options.getOrDefault("prefix", "bench");
        long bytes = Long.parseLong(options.getOrDefault("bytes", String.valueOf(16 << 20)));
        int rounds = Integer.parseInt(options.getOrDefault("hash-rounds", "2000"));
        Connector connector = connector("bench-dynamo-worker");
        DynamoRuntime runtime = DynamoRuntime.start(settings(options));
        CountDownLatch stopped = new CountDownLatch(1);
        Runtime.getRuntime().addShutdownHook(new Thread(() -> {
            runtime.close(); // out of discovery first, then drained
            connector.close();
            System.out.println("DONE");
            System.out.flush();
            stopped.countDown();
        }, "bench-dynamo-stop"));
        runtime.serve(prefix + ".echo.generate", DynamoHandler.unary(request -> request));
        runtime.serve(prefix + ".hash.generate", DynamoHandler.unary(request -> {
            long n = request instanceof Map<?, ?> map && map.get("n") instanceof Long number ? number : 0L;
            Map<String, Object> reply = new LinkedHashMap<>();
            reply.put("n", n);
            reply.put("sha256", hashWork(n, rounds));
            return reply;
        }));
        SplittableRandom seeds = new SplittableRandom();
        runtime.serve(prefix + ".encoder.generate", (request, responder) -> {
            SplittableRandom random;
            synchronized (seeds) {
                random = seeds.split();
            }
            try (Descriptor tensor = Descriptor.allocate(bytes)) {
                ByteBuffer data = tensor.asByteBuffer().order(ByteOrder.LITTLE_ENDIAN);
                while (data.remaining() >= Long.BYTES) {
                    data.putLong(random.nextLong());
                }
                while (data.hasRemaining()) {
                    data.put((byte) random.nextInt());
                }
                sha256Hex(tensor.asByteBuffer()); // the Python worker hashes each tensor it serves too
                try (ReadableOperation readable = connector.createReadable(tensor)) {
                    responder.send(EncodeReply.ofBytes(readable.metadata(), bytes));
                    readable.waitForCompletion(Duration.ofSeconds(60));
                }
            }
        });
        System.out.println("READY prefix=" + prefix + " bytes=" + bytes + " hash_rounds=" + rounds + " backend="
                + connector.backendName());
        System.out.flush();
        stopped.await();
    }

    // ---- the client ----

    private static int client(Map<String, String> options) throws Exception {
        String endpoint = required(options, "endpoint");
        int requests = Integer.parseInt(options.getOrDefault("requests", "1"));
        int warmup = Integer.parseInt(options.getOrDefault("warmup", "0"));
        int concurrency = Math.max(1, Integer.parseInt(options.getOrDefault("concurrency", "1")));
        boolean read = Boolean.parseBoolean(options.getOrDefault("read", "false"));
        String template = options.getOrDefault("request", "{\"request\": {i}}");
        try (DynamoRuntime runtime = DynamoRuntime.start(settings(options));
             Connector connector = read ? connector("bench-dynamo-client") : null) {
            DynamoClient client = runtime.client(endpoint);
            client.waitForInstances(Duration.ofSeconds(Long.parseLong(options.getOrDefault("wait-timeout", "60"))));
            Calls calls = new Calls(client, connector, template,
                    Boolean.parseBoolean(options.getOrDefault("verbose", "false")));
            calls.runAll(warmup, -warmup, concurrency, false);
            if (!Boolean.parseBoolean(options.getOrDefault("stdin-batches", "false"))) {
                return batch(calls, requests, 0, concurrency);
            }
            // One batch per line on stdin, this JVM (and its JIT) staying warm between them, as a service's would.
            System.out.println("READY");
            System.out.flush();
            java.io.BufferedReader in = new java.io.BufferedReader(new java.io.InputStreamReader(System.in,
                    StandardCharsets.UTF_8));
            int first = 0;
            int failed = 0;
            while (in.readLine() != null) {
                failed |= batch(calls, requests, first, concurrency);
                first += requests;
                System.out.println("BATCH_DONE");
                System.out.flush();
            }
            return failed;
        }
    }

    /** Runs {@code requests} recorded calls and prints their SUMMARY; returns the exit code they earn. */
    private static int batch(Calls calls, int requests, int first, int concurrency) throws InterruptedException {
        calls.latencies.clear();
        calls.readLatencies.clear();
        calls.errors.set(0);
        long started = System.nanoTime();
        calls.runAll(requests, first, concurrency, true);
        double seconds = (System.nanoTime() - started) / 1e9;
        List<Double> latencies = sorted(calls.latencies);
        List<Double> reads = sorted(calls.readLatencies);
        double mean = latencies.stream().mapToDouble(Double::doubleValue).average().orElse(Double.NaN);
        System.out.printf(Locale.ROOT, "SUMMARY requests=%d ok=%d errors=%d p50_ms=%.3f p90_ms=%.3f p99_ms=%.3f"
                        + " mean_ms=%.3f seconds=%.3f rps=%.1f%s%n", requests, latencies.size(), calls.errors.get(),
                percentile(latencies, 0.5), percentile(latencies, 0.9), percentile(latencies, 0.99), mean, seconds,
                requests / seconds, reads.isEmpty() ? "" : String.format(Locale.ROOT,
                        " read_p50_ms=%.3f read_p90_ms=%.3f", percentile(reads, 0.5), percentile(reads, 0.9)));
        System.out.flush();
        return calls.errors.get() == 0 && latencies.size() == requests ? 0 : 1;
    }

    private static List<Double> sorted(List<Double> values) {
        List<Double> copy = new ArrayList<>(values);
        Collections.sort(copy);
        return copy;
    }

    /** Nearest rank, as interop/dynamo_client.py computes it. */
    static double percentile(List<Double> sorted, double fraction) {
        if (sorted.isEmpty()) {
            return Double.NaN;
        }
        int rank = (int) Math.ceil(fraction * sorted.size()) - 1;
        return sorted.get(Math.min(sorted.size() - 1, Math.max(0, rank)));
    }

    private static final class Calls {
        private final DynamoClient client;
        private final Connector connector;
        private final String template;
        private final boolean verbose;
        final List<Double> latencies = Collections.synchronizedList(new ArrayList<>());
        final List<Double> readLatencies = Collections.synchronizedList(new ArrayList<>());
        final AtomicInteger errors = new AtomicInteger();

        Calls(DynamoClient client, Connector connector, String template, boolean verbose) {
            this.client = client;
            this.connector = connector;
            this.template = template;
            this.verbose = verbose;
        }

        void runAll(int count, int firstIndex, int concurrency, boolean record) throws InterruptedException {
            AtomicInteger next = new AtomicInteger(firstIndex);
            int end = firstIndex + count;
            List<Thread> lanes = new ArrayList<>();
            for (int lane = 0; lane < concurrency; lane++) {
                Thread thread = new Thread(() -> {
                    for (int index; (index = next.getAndIncrement()) < end; ) {
                        call(index, record);
                    }
                }, "bench-caller-" + lane);
                thread.start();
                lanes.add(thread);
            }
            for (Thread thread : lanes) {
                thread.join();
            }
        }

        private void call(int index, boolean record) {
            Object request = DynamoValues.fromJson(template.replace("{i}", Integer.toString(index)));
            long started = System.nanoTime();
            long readDone = 0;
            long streamOpen;
            long firstResponse = 0;
            try (ResponseStream stream = client.call(request)) {
                streamOpen = System.nanoTime();
                for (DynamoResponse response = stream.read(); response != null; response = stream.read()) {
                    if (firstResponse == 0) {
                        firstResponse = System.nanoTime();
                    }
                    if (connector != null && readDone == 0 && response.data() instanceof Map<?, ?> map
                            && map.containsKey("nixl_readable_metadata")) {
                        long replied = System.nanoTime();
                        EncodeReply reply = EncodeReply.fromValue(response.data());
                        String sha256;
                        long size = reply.nixlReadableMetadata().totalSize();
                        try (Descriptor tensor = Descriptor.allocate(size)) {
                            connector.read(reply.nixlReadableMetadata(), tensor);
                            sha256 = sha256Hex(tensor.asByteBuffer());
                        }
                        readDone = System.nanoTime();
                        if (verbose) {
                            System.out.printf(Locale.ROOT, "READ i=%d bytes=%d sha256=%s ms=%.3f reply_ms=%.3f"
                                    + " call_ms=%.3f%n", index, size, sha256, (readDone - replied) / 1e6,
                                    (replied - started) / 1e6, (readDone - started) / 1e6);
                        }
                    }
                }
            } catch (RuntimeException e) {
                if (record) {
                    errors.incrementAndGet();
                }
                System.out.println("ERROR i=" + index + " type=" + e.getClass().getSimpleName() + " message="
                        + String.valueOf(e.getMessage()).replace('\n', ' '));
                return;
            }
            long ended = System.nanoTime();
            if (verbose && record) {
                System.out.printf(Locale.ROOT, "END i=%d ms=%.3f open_ms=%.3f first_ms=%.3f%n", index,
                        (ended - started) / 1e6, (streamOpen - started) / 1e6,
                        ((firstResponse == 0 ? ended : firstResponse) - started) / 1e6);
            }
            if (record) {
                latencies.add((ended - started) / 1e6);
                if (readDone != 0) {
                    readLatencies.add((readDone - started) / 1e6);
                }
            }
        }
    }
}
