package io.nixlconnect.dynamo;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

import io.nixlconnect.Connector;
import io.nixlconnect.ConnectorOptions;
import io.nixlconnect.Descriptor;
import io.nixlconnect.RdmaMetadata;
import io.nixlconnect.transport.nixl.NixlSettings;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.MessageDigest;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HexFormat;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.api.io.TempDir;

/**
 * A Java caller and Python workers on the real {@code ai-dynamo-runtime} 1.6.1 ({@code interop/dynamo_worker.py}):
 * both codecs, streams, errors, a worker dying mid-stream, stop and kill, an instance leaving discovery, overload,
 * etcd discovery, and the encode worker's tensor and a 1,024-block KV list read through nixl_connect (NIXL backend).
 * Skipped with the reason without the runtime (.ci/dynamo-setup.sh); an error under CI=true.
 */
@Tag("python-interop")
@Timeout(value = 900, unit = TimeUnit.SECONDS)
class JavaCallsPythonInteropTest {

    private static final Duration START = Duration.ofSeconds(180); // Python start-ups on a loaded machine

    @TempDir
    Path kv;

    @RegisterExtension
    final ClosedAfterEach closed = new ClosedAfterEach();

    private PythonProcess worker(String endpoint, Map<String, String> env, String... args) throws Exception {
        List<String> all = new ArrayList<>(List.of("--endpoint", endpoint, "--file-kv", kv.toString()));
        all.addAll(Arrays.asList(args));
        PythonProcess worker = closed.later(PythonProcess.start("worker " + endpoint, "dynamo_worker.py", env, all));
        worker.await("READY", START);
        return worker;
    }

    private PythonProcess worker(String endpoint, String... args) throws Exception {
        return worker(endpoint, Map.of(), args);
    }

    private DynamoClient client(String endpoint) {
        DynamoRuntime runtime = closed.later(TestRuntimes.fileRuntime(kv));
        DynamoClient client = runtime.client(endpoint);
        client.waitForInstances(Duration.ofSeconds(120));
        return client;
    }

    @Test
    void echoInBothCodecsReturnsTheRequestsValues() throws Exception {
        PythonProcess msgpack = worker("interop.echo.msgpack", "--mode", "echo", "--codec", "msgpack");
        PythonProcess json = worker("interop.echo.json", "--mode", "echo", "--codec", "json");
        Map<String, Object> request = new LinkedHashMap<>();
        request.put("request", 1L);
        request.put("text", "héllo ✓");
        request.put("list", Arrays.asList(1L, 2.5, null, true, "x"));
        request.put("nested", Map.of("big", 1L << 40, "negative", -7L));
        for (String endpoint : List.of("interop.echo.msgpack", "interop.echo.json")) {
            DynamoClient client = client(endpoint);
            assertThat(client.instances().get(0).codec()).isEqualTo(endpoint.endsWith("json") ? PayloadCodec.JSON
                    : PayloadCodec.MSGPACK);
            try (ResponseStream stream = client.call(request)) {
                assertThat(stream.readAll()).extracting(DynamoResponse::data).containsExactly(request);
                assertThat(stream.isComplete()).isTrue();
            }
        }
        assertThat(PythonProcess.field(msgpack.await("REQUEST", START), "body")).contains("\"text\":\"h\\u00e9llo");
        assertThat(json.await("REQUEST", START)).contains("\"request\":1");
    }

    @Test
    void streamsErrorsAndAWorkerDyingMidStream() throws Exception {
        worker("interop.stream.generate", "--mode", "stream", "--count", "5");
        worker("interop.error.generate", "--mode", "error", "--count", "2");
        PythonProcess dying = worker("interop.die.generate", "--mode", "die", "--count", "2");
        try (ResponseStream stream = client("interop.stream.generate").call(Map.of("request", 1L))) {
            assertThat(stream.readAll()).extracting(DynamoResponse::data).containsExactly(
                    Map.of("index", 0L, "count", 5L), Map.of("index", 1L, "count", 5L), Map.of("index", 2L, "count", 5L),
                    Map.of("index", 3L, "count", 5L), Map.of("index", 4L, "count", 5L));
        }
        ResponseStream failing = client("interop.error.generate").call(Map.of("request", 2L));
        assertThat(failing.read()).isNotNull();
        assertThat(failing.read()).isNotNull();
        assertThatThrownBy(failing::read).isInstanceOf(DynamoWorkerException.class)
                .hasMessageContaining("dynamo_worker: error after 2 responses");
        ResponseStream dies = client("interop.die.generate").call(Map.of("request", 3L));
        List<DynamoResponse> before = new ArrayList<>();
        // os._exit may beat the runtime's writer to the socket: the responses before the death may or may not come
        assertThatThrownBy(() -> {
            for (DynamoResponse response; (response = dies.read()) != null; ) {
                before.add(response);
            }
        }).isInstanceOf(DynamoStreamException.class).hasMessageContaining("before it was complete");
        assertThat(before.size()).isLessThanOrEqualTo(2);
        dying.await("DYING", START);
    }

    @Test
    void stopAndKillCancelThePythonHandler() throws Exception {
        PythonProcess slow = worker("interop.slow.generate", "--mode", "slow", "--count", "1000", "--delay-ms", "50");
        DynamoClient client = client("interop.slow.generate");
        ResponseStream stopped = client.call(Map.of("request", 1L));
        assertThat(stopped.read()).isNotNull();
        assertThat(stopped.read()).isNotNull();
        stopped.stop();
        int after = 0;
        while (stopped.read() != null) {
            after++;
        }
        assertThat(after).as("responses already on their way").isLessThan(50);
        assertThat(stopped.isComplete()).isFalse();
        slow.await("CANCELLED", START);
        ResponseStream killed = client.call(Map.of("request", 2L));
        assertThat(killed.read()).isNotNull();
        killed.kill();
        assertThat(killed.read()).isNull();
        slow.await("CANCELLED", START);
    }

    @Test
    void anInstanceLeavingDiscoveryGetsNoNewCallsWhileItsOpenStreamGoesOn() throws Exception {
        PythonProcess worker = worker("interop.leaving.generate", "--mode", "slow", "--count", "30", "--delay-ms", "20");
        DynamoClient client = client("interop.leaving.generate");
        ResponseStream stream = client.call(Map.of("request", 1L));
        assertThat(stream.read()).isNotNull();
        try (var files = Files.list(kv.resolve("v1").resolve("instances"))) {
            for (Path file : files.toList()) {
                Files.delete(file); // the instance's record goes: it has left discovery
            }
        }
        await().atMost(Duration.ofSeconds(10)).until(() -> client.instances().isEmpty());
        assertThatThrownBy(() -> client.call(Map.of("request", 2L))).isInstanceOf(DynamoInstanceUnavailableException.class)
                .hasMessageContaining("no instance");
        assertThat(stream.readAll()).hasSize(29); // as Dynamo's client: the open stream is the worker's to finish
        assertThat(stream.isComplete()).isTrue();
        assertThat(worker.all("CANCELLED")).isEmpty();
    }

    /**
     * A worker restarted at the same address: the pooled connection to the one that died is found closed before the
     * next request is written on it and dropped, and the call goes over a new connection on its first try.
     */
    @Test
    void aCallAfterThePythonWorkerRestartedOnTheSamePortGoesOverANewConnection() throws Exception {
        int port;
        try (java.net.ServerSocket probe = new java.net.ServerSocket(0, 1, java.net.InetAddress.getLoopbackAddress())) {
            port = probe.getLocalPort();
        }
        Map<String, String> samePort = Map.of("DYN_TCP_RPC_PORT", String.valueOf(port));
        PythonProcess first = worker("interop.restart.generate", samePort, "--mode", "echo");
        DynamoRuntime runtime = closed.later(TestRuntimes.fileRuntime(kv));
        DynamoClient client = runtime.client("interop.restart.generate");
        DynamoInstance before = client.waitForInstances(START).get(0);
        assertThat(before.port()).isEqualTo(port);
        try (ResponseStream stream = client.callInstance(before.instanceId(), Map.of("request", 1L))) {
            assertThat(stream.readAll()).extracting(DynamoResponse::data).containsExactly(Map.of("request", 1L));
        }
        first.kill();
        first.awaitExit(START);
        PythonProcess second = worker("interop.restart.generate", samePort, "--mode", "echo");
        long restarted = Long.parseUnsignedLong(PythonProcess.field(second.all("READY").get(0), "instance"), 16);
        await().atMost(START).until(() -> client.instances().stream().anyMatch(i -> i.instanceId() == restarted));
        DynamoCounters beforeCall = runtime.counters();
        try (ResponseStream stream = client.callInstance(restarted, Map.of("request", 2L))) {
            assertThat(stream.readAll()).extracting(DynamoResponse::data).containsExactly(Map.of("request", 2L));
        }
        DynamoCounters after = runtime.counters();
        assertThat(after.callsFailed()).isZero();
        assertThat(after.requestConnectionsOpened() - beforeCall.requestConnectionsOpened())
                .as("one new connection for the restarted worker").isEqualTo(1);
    }

    @Test
    void anOverloadedPythonWorkerRefusesWithServerOverloaded() throws Exception {
        worker("interop.busy.generate", Map.of("DYN_TCP_WORKER_POOL_SIZE", "1", "DYN_TCP_WORK_QUEUE_SIZE", "1"),
                "--mode", "slow", "--count", "40", "--delay-ms", "50");
        DynamoClient client = client("interop.busy.generate");
        List<CompletableFuture<ResponseStream>> calls = new ArrayList<>();
        for (int i = 0; i < 4; i++) {
            calls.add(client.callAsync(Map.of("request", (long) i)));
        }
        int refused = 0;
        for (CompletableFuture<ResponseStream> call : calls) {
            try {
                call.get(30, TimeUnit.SECONDS).kill();
            } catch (java.util.concurrent.ExecutionException e) {
                assertThat(e.getCause()).isInstanceOf(DynamoRefusedException.class)
                        .hasMessageContaining("Server overloaded");
                assertThat(((DynamoRefusedException) e.getCause()).overloaded()).isTrue();
                refused++;
            }
        }
        assertThat(refused).isGreaterThanOrEqualTo(1);
    }

    @Test
    void etcdDiscoveryFindsAPythonWorker() throws Exception {
        EtcdServer etcd = closed.later(new EtcdServer(kv.resolve("etcd")));
        PythonProcess worker = closed.later(PythonProcess.start("etcd worker", "dynamo_worker.py", Map.of(), List.of(
                "--endpoint", "interop.etcd.generate", "--discovery", "etcd", "--etcd-endpoints", etcd.endpoint.toString(),
                "--mode", "echo")));
        String ready = worker.await("READY", START);
        DynamoRuntime runtime = closed.later(DynamoRuntime.start(etcd.settings(Duration.ofSeconds(10)).build()));
        DynamoClient client = runtime.client("interop.etcd.generate");
        DynamoInstance instance = client.waitForInstances(Duration.ofSeconds(120)).get(0);
        assertThat(instance.instanceIdHex()).isEqualTo(PythonProcess.field(ready, "instance"));
        try (ResponseStream stream = client.callInstance(instance.instanceId(), Map.of("request", 7L))) {
            assertThat(stream.readAll()).extracting(DynamoResponse::data).containsExactly(Map.of("request", 7L));
        }
    }

    // ---- nixl_connect inside the messages (NIXL backend: Python's NIXL agents only talk to NIXL) ----

    private Connector nixlConnector() {
        String library = RequiredEnvironment.require("NIXL_LIBRARY_DIR",
                "reading a Python worker's tensor needs the NIXL backend (.ci/nixl-setup.sh)");
        return closed.later(new Connector(ConnectorOptions.builder().workerId("java-dynamo-caller")
                .transports(NixlSettings.defaults().withLibraryDir(Path.of(library)))
                .operationTimeout(Duration.ofSeconds(120)).build()));
    }

    private static String sha256(byte[] bytes) throws Exception {
        return HexFormat.of().formatHex(MessageDigest.getInstance("SHA-256").digest(bytes));
    }

    @Test
    void theEncodeWorkersTensorIsReadThroughItsReply() throws Exception {
        Connector connector = nixlConnector();
        int bytes = 1 << 20;
        PythonProcess worker = worker("interop.encoder.generate", "--mode", "encode", "--bytes", String.valueOf(bytes));
        DynamoClient client = client("interop.encoder.generate");
        try (ResponseStream stream = client.call(Map.of("request", 0L))) {
            EncodeReply reply = EncodeReply.fromValue(stream.read().data());
            assertThat(reply.embeddingsShape()).containsExactly((long) bytes);
            assertThat(reply.embeddingsDtype()).isEqualTo("torch.uint8");
            try (Descriptor tensor = Descriptor.allocate(bytes)) {
                connector.read(reply.nixlReadableMetadata(), tensor);
                String served = worker.await("SERVED", START);
                assertThat(sha256(tensor.toByteArray())).isEqualTo(PythonProcess.field(served, "sha256"));
            }
            assertThat(stream.read()).isNull();
        }
    }

    @Test
    void aKvReplyOfAThousandAndTwentyFourBlocksIsReadBlockByBlock() throws Exception {
        Connector connector = nixlConnector();
        PythonProcess worker = worker("interop.kv.generate", "--mode", "kv", "--blocks", "1024", "--block-bytes", "4096");
        DynamoClient client = client("interop.kv.generate");
        try (ResponseStream stream = client.call(Map.of("request", 0L))) {
            Map<?, ?> reply = (Map<?, ?>) stream.read().data();
            RdmaMetadata metadata = DynamoValues.toRdmaMetadata(reply.get("nixl_readable_metadata"));
            assertThat(metadata.descriptors()).hasSize(1024);
            assertThat((List<?>) reply.get("block_ids")).hasSize(1024);
            try (Descriptor pool = Descriptor.allocate(1024 * 4096)) {
                List<Descriptor> blocks = new ArrayList<>();
                for (int i = 0; i < 1024; i++) {
                    blocks.add(pool.slice((long) i * 4096, 4096));
                }
                connector.read(metadata, blocks);
                String served = worker.await("SERVED", START);
                assertThat(PythonProcess.field(served, "bytes")).isEqualTo(String.valueOf(1024 * 4096));
                assertThat(sha256(pool.toByteArray())).isEqualTo(PythonProcess.field(served, "sha256"));
            }
        }
    }
}
