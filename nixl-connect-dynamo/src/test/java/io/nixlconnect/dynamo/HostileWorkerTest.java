package io.nixlconnect.dynamo;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

import io.nixlconnect.dynamo.internal.wire.ControlMessages;
import io.nixlconnect.dynamo.internal.wire.TwoPart;
import java.net.Socket;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * A caller facing workers that misbehave: each ends the call with its own {@link DynamoException} subclass, within
 * the configured time, counted; the caller's runtime goes on calling.
 */
class HostileWorkerTest {

    @TempDir
    Path kv;

    private DynamoRuntime caller;
    private final List<AutoCloseable> toClose = new ArrayList<>();

    @BeforeEach
    void start() {
        // Generous times for what must succeed (a loaded machine); each timeout test shortens only what it times.
        caller = DynamoRuntime.start(TestRuntimes.file(kv).ackTimeout(Duration.ofSeconds(20))
                .callHomeTimeout(Duration.ofSeconds(20)).frameReadTimeout(Duration.ofSeconds(20))
                .streamIdleTimeout(Duration.ofSeconds(30)).maxMessageSize(64 * 1024).build());
    }

    @AfterEach
    void stop() throws Exception {
        caller.close();
        for (AutoCloseable closeable : toClose) {
            closeable.close();
        }
    }

    private DynamoClient clientOf(FakeWorker.Script script) throws Exception {
        return clientOf(script, null);
    }

    /** A worker, and a client of it from a runtime whose settings {@code shorten} changes (null: the shared caller). */
    private DynamoClient clientOf(FakeWorker.Script script,
            java.util.function.UnaryOperator<DynamoSettings.Builder> shorten) throws Exception {
        // Each worker its own endpoint, so that a test's calls reach the worker it just made.
        FakeWorker worker = new FakeWorker(kv, "hostile.worker" + toClose.size() + ".generate", PayloadCodec.JSON, script);
        toClose.add(worker);
        DynamoRuntime runtime = caller;
        if (shorten != null) {
            runtime = DynamoRuntime.start(shorten.apply(TestRuntimes.file(kv).ackTimeout(Duration.ofSeconds(20))
                    .callHomeTimeout(Duration.ofSeconds(20)).frameReadTimeout(Duration.ofSeconds(20))
                    .streamIdleTimeout(Duration.ofSeconds(30)).maxMessageSize(64 * 1024)).build());
            toClose.add(runtime);
        }
        DynamoClient client = runtime.client(worker.endpoint, RouterMode.ROUND_ROBIN);
        client.waitForInstances(Duration.ofSeconds(10));
        return client;
    }

    private static byte[] body(String json) {
        return TwoPart.bodyOnly(json.getBytes(java.nio.charset.StandardCharsets.UTF_8)).encode();
    }

    private static Socket startStream(FakeWorker.Request request) throws Exception {
        Socket home = request.callHome();
        FakeWorker.Request.send(home, TwoPart.headerOnly(ControlMessages.prologue(null)).encode());
        return home;
    }

    @Test
    void aRefusalIsARefusedExceptionWithTheWorkersWords() throws Exception {
        DynamoClient client = clientOf(request -> request.ack("Server unavailable: not today"));
        assertThatThrownBy(() -> client.call(Map.of())).isInstanceOf(DynamoRefusedException.class)
                .hasMessageContaining("Server unavailable: not today")
                .satisfies(e -> assertThat(((DynamoRefusedException) e).overloaded()).isFalse());
        assertThat(caller.counters().callsRefused()).isEqualTo(1);
    }

    @Test
    void anAcknowledgementThatNeverComesTimesOut() throws Exception {
        DynamoClient client = clientOf(request -> { }, settings -> settings.ackTimeout(Duration.ofMillis(800)));
        assertThatThrownBy(() -> client.call(Map.of())).isInstanceOf(DynamoTimeoutException.class)
                .hasMessageContaining("did not acknowledge");
    }

    @Test
    void aCallHomeThatNeverComesTimesOut() throws Exception {
        DynamoClient client = clientOf(request -> request.ack(""),
                settings -> settings.callHomeTimeout(Duration.ofMillis(800)));
        assertThatThrownBy(() -> client.call(Map.of())).isInstanceOf(DynamoTimeoutException.class)
                .hasMessageContaining("did not call home");
    }

    /** The deadlines have no timer per call, but one sweep armed while calls wait: each call still gets its own. */
    @Test
    void everyCallWhoseAcknowledgementOrCallHomeNeverComesTimesOutNoEarlierThanItsLimit() throws Exception {
        DynamoClient silent = clientOf(request -> { }, settings -> settings.ackTimeout(Duration.ofMillis(400))
                .callHomeTimeout(Duration.ofMillis(400)));
        DynamoClient acknowledging = clientOf(request -> request.ack(""), settings -> settings
                .ackTimeout(Duration.ofMillis(400)).callHomeTimeout(Duration.ofMillis(400)));
        for (int i = 0; i < 3; i++) {
            long started = System.nanoTime();
            assertThatThrownBy(() -> silent.call(Map.of())).isInstanceOf(DynamoTimeoutException.class)
                    .hasMessageContaining("did not acknowledge");
            assertThat(System.nanoTime() - started).isGreaterThanOrEqualTo(Duration.ofMillis(400).toNanos());
            started = System.nanoTime();
            assertThatThrownBy(() -> acknowledging.call(Map.of())).isInstanceOf(DynamoTimeoutException.class)
                    .hasMessageContaining("did not call home");
            assertThat(System.nanoTime() - started).isGreaterThanOrEqualTo(Duration.ofMillis(400).toNanos());
        }
        // overlapping calls, each timed out on its own
        List<java.util.concurrent.CompletableFuture<ResponseStream>> calls = new java.util.ArrayList<>();
        for (int i = 0; i < 3; i++) {
            calls.add(acknowledging.callAsync(Map.of()));
        }
        for (java.util.concurrent.CompletableFuture<ResponseStream> call : calls) {
            assertThatThrownBy(() -> call.get(30, java.util.concurrent.TimeUnit.SECONDS))
                    .hasCauseInstanceOf(DynamoTimeoutException.class);
        }
    }

    @Test
    void aCallHomeForAnotherSubjectIsRefusedAndCounted() throws Exception {
        DynamoClient client = clientOf(request -> {
            request.ack("");
            Socket home = new Socket(request.control.host(), request.control.port());
            FakeWorker.Request.send(home, TwoPart.headerOnly(ControlMessages.handshake("not-" + request.control.subject()))
                    .encode());
        }, settings -> settings.callHomeTimeout(Duration.ofMillis(800)));
        assertThatThrownBy(() -> client.call(Map.of())).isInstanceOf(DynamoTimeoutException.class);
        await().atMost(Duration.ofSeconds(10)).until(() -> toClose.stream().filter(DynamoRuntime.class::isInstance)
                .map(DynamoRuntime.class::cast).anyMatch(runtime -> runtime.counters().protocolErrors() >= 1));
    }

    @Test
    void anErrorPrologueIsTheWorkersError() throws Exception {
        DynamoClient client = clientOf(request -> {
            request.ack("");
            Socket home = request.callHome();
            FakeWorker.Request.send(home, TwoPart.headerOnly(ControlMessages.prologue("engine not ready")).encode());
        });
        assertThatThrownBy(() -> client.call(Map.of())).isInstanceOf(DynamoWorkerException.class)
                .hasMessageContaining("engine not ready");
    }

    @Test
    void aWorkerThatDiesMidStreamBreaksTheStreamAfterWhatItSent() throws Exception {
        DynamoClient client = clientOf(request -> {
            request.ack("");
            Socket home = startStream(request);
            FakeWorker.Request.send(home, body("{\"data\":{\"data\":1},\"complete_final\":false}"));
            home.close();
        });
        ResponseStream stream = client.call(Map.of());
        assertThat(stream.read().data()).isEqualTo(1L);
        assertThatThrownBy(stream::read).isInstanceOf(DynamoStreamException.class)
                .hasMessageContaining("before it was complete");
        assertThatThrownBy(stream::read).as("the failure again").isInstanceOf(DynamoStreamException.class);
    }

    @Test
    void anOversizedFrameIsRefusedBeforeItIsAllocated() throws Exception {
        DynamoClient client = clientOf(request -> {
            request.ack("");
            Socket home = startStream(request);
            byte[] prefix = new byte[24];
            java.util.Arrays.fill(prefix, 8, 16, (byte) 0x7f); // a body of ~9 exabytes
            FakeWorker.Request.send(home, prefix);
        });
        ResponseStream stream = client.call(Map.of());
        assertThatThrownBy(stream::read).isInstanceOf(DynamoProtocolException.class)
                .hasMessageContaining("larger than the limit");
        assertThat(caller.counters().oversizedFrames()).isEqualTo(1);
    }

    @Test
    void malformedPayloadsAndUnknownFramesAreProtocolErrors() throws Exception {
        String[] bodies = {"{\"data\":", "[1,2]", "{\"nothing\":true}", "{\"data\":{\"event\":7}}"};
        for (String garbage : bodies) {
            DynamoClient client = clientOf(request -> {
                request.ack("");
                Socket home = startStream(request);
                FakeWorker.Request.send(home, body(garbage));
            });
            assertThatThrownBy(() -> client.call(Map.of()).read()).as(garbage)
                    .isInstanceOf(DynamoProtocolException.class);
        }
        DynamoClient client = clientOf(request -> {
            request.ack("");
            Socket home = startStream(request);
            FakeWorker.Request.send(home, TwoPart.headerOnly("\"resume\"".getBytes()).encode());
        });
        assertThatThrownBy(() -> client.call(Map.of()).read()).isInstanceOf(DynamoProtocolException.class)
                .hasMessageContaining("unknown header frame");
    }

    @Test
    void aStalledFrameEndsTheStreamWithinTheFrameTimeout() throws Exception {
        DynamoClient client = clientOf(request -> {
            request.ack("");
            Socket home = startStream(request);
            FakeWorker.Request.send(home, new byte[] {0, 0, 0}); // three bytes of a 24-byte prefix, then nothing
        }, settings -> settings.frameReadTimeout(Duration.ofMillis(800)));
        ResponseStream stream = client.call(Map.of());
        long started = System.nanoTime();
        assertThatThrownBy(stream::read).isInstanceOf(DynamoProtocolException.class).hasMessageContaining("stalled");
        assertThat(Duration.ofNanos(System.nanoTime() - started)).isLessThan(Duration.ofSeconds(30));
    }

    @Test
    void aSilentStreamTimesOutAfterTheIdleTimeout() throws Exception {
        DynamoClient client = clientOf(request -> {
            request.ack("");
            startStream(request);
        }, settings -> settings.streamIdleTimeout(Duration.ofMillis(800)));
        ResponseStream stream = client.call(Map.of());
        assertThatThrownBy(stream::read).isInstanceOf(DynamoTimeoutException.class)
                .hasMessageContaining("streamIdleTimeout");
    }

    private void deleteRecords() throws java.io.IOException {
        try (var files = java.nio.file.Files.list(kv.resolve("v1").resolve("instances"))) {
            for (Path file : files.toList()) {
                java.nio.file.Files.delete(file);
            }
        }
    }

    @Test
    void anInstanceThatLeavesDiscoveryBeforeCallingHomeFailsTheCallAtOnce() throws Exception {
        CountDownLatch acknowledged = new CountDownLatch(1);
        FakeWorker worker = new FakeWorker(kv, "hostile.leaving.generate", PayloadCodec.JSON, request -> {
            request.ack("");
            acknowledged.countDown();
        });
        toClose.add(worker);
        try (DynamoRuntime patient = DynamoRuntime.start(TestRuntimes.file(kv).callHomeTimeout(Duration.ofSeconds(60))
                .build())) {
            DynamoClient client = patient.client(worker.endpoint, RouterMode.ROUND_ROBIN);
            client.waitForInstances(Duration.ofSeconds(10));
            java.util.concurrent.CompletableFuture<ResponseStream> call = client.callAsync(Map.of());
            assertThat(acknowledged.await(10, TimeUnit.SECONDS)).isTrue();
            deleteRecords();
            assertThatThrownBy(() -> call.get(20, TimeUnit.SECONDS)).hasCauseInstanceOf(
                    DynamoInstanceUnavailableException.class).hasMessageContaining("left discovery before it called home");
            assertThatThrownBy(() -> client.call(Map.of())).isInstanceOf(DynamoInstanceUnavailableException.class);
        }
    }

    @Test
    void anOpenStreamGoesOnWhenItsInstanceLeavesDiscovery() throws Exception {
        CountDownLatch left = new CountDownLatch(1);
        DynamoClient client = clientOf(request -> {
            request.ack("");
            Socket home = startStream(request);
            FakeWorker.Request.send(home, body("{\"data\":{\"data\":1},\"complete_final\":false}"));
            left.await(10, TimeUnit.SECONDS); // a worker shutting down gracefully: out of discovery, then finishing
            FakeWorker.Request.send(home, body("{\"data\":{\"data\":2},\"complete_final\":false}"));
            FakeWorker.Request.send(home, body("{\"complete_final\":true}"));
            home.close();
        });
        ResponseStream stream = client.call(Map.of());
        assertThat(stream.read().data()).isEqualTo(1L);
        deleteRecords();
        await().atMost(Duration.ofSeconds(10)).until(() -> client.instances().isEmpty());
        left.countDown();
        assertThat(stream.readAll()).extracting(DynamoResponse::data).containsExactly(2L);
        assertThat(stream.isComplete()).isTrue();
    }

    @Test
    void callingAnInstanceIdNotInDiscoveryIsRefusedAtOnce() throws Exception {
        DynamoClient client = clientOf(request -> request.ack(""));
        assertThatThrownBy(() -> client.callInstance(42, Map.of())).isInstanceOf(DynamoInstanceUnavailableException.class)
                .hasMessageContaining("2a");
    }

    /** Random corruptions of a good stream: each read ends in data, the end, or a DynamoException; never a hang. */
    @Test
    void fuzzedStreamsEndInDataOrADynamoException() throws Exception {
        byte[] good = concat(
                TwoPart.headerOnly(ControlMessages.prologue(null)).encode(),
                body("{\"data\":{\"data\":{\"k\":[1,2,3]}},\"complete_final\":false}"),
                body("{\"complete_final\":true}"),
                TwoPart.headerOnly(ControlMessages.Control.SENTINEL.header()).encode());
        Random random = new Random(33);
        byte[][] next = new byte[1][];
        DynamoClient client = clientOf(request -> {
            request.ack("");
            Socket home = request.callHome();
            FakeWorker.Request.send(home, next[0]);
            home.shutdownOutput();
        }, settings -> settings.callHomeTimeout(Duration.ofSeconds(5)).frameReadTimeout(Duration.ofSeconds(5))
                .streamIdleTimeout(Duration.ofSeconds(5)));
        int failures = 0;
        for (int round = 0; round < 60; round++) {
            byte[] mutated = good.clone();
            int flips = 1 + random.nextInt(4);
            for (int i = 0; i < flips; i++) {
                mutated[random.nextInt(mutated.length)] = (byte) random.nextInt(256);
            }
            if (random.nextBoolean()) {
                mutated = java.util.Arrays.copyOf(mutated, random.nextInt(mutated.length));
            }
            next[0] = mutated;
            try (ResponseStream stream = client.call(Map.of())) {
                stream.readAll();
            } catch (DynamoException expected) {
                failures++;
            }
        }
        assertThat(failures).as("most corruptions are caught").isGreaterThan(10);
        next[0] = good;
        try (ResponseStream stream = client.call(Map.of())) {
            assertThat(stream.readAll()).extracting(DynamoResponse::data).containsExactly(Map.of("k", List.of(1L, 2L, 3L)));
        }
    }

    private static byte[] concat(byte[]... parts) {
        java.io.ByteArrayOutputStream out = new java.io.ByteArrayOutputStream();
        for (byte[] part : parts) {
            out.writeBytes(part);
        }
        return out.toByteArray();
    }
}
