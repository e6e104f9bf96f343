package io.nixlconnect.dynamo;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.api.io.TempDir;

/** Java calls Java over the real request plane, found through file discovery in a temporary directory. */
class DynamoLoopbackTest {

    @TempDir
    Path kv;

    @RegisterExtension
    final ClosedAfterEach closed = new ClosedAfterEach();

    @Test
    void aCallStreamsTheHandlersResponsesInOrder() {
        DynamoRuntime worker = closed.later(TestRuntimes.fileRuntime(kv));
        worker.serve("demo.echo.generate", (request, responder) -> {
            for (long i = 0; i < 3; i++) {
                responder.send(Map.of("i", i, "echo", request.payload()));
            }
        });
        DynamoRuntime caller = closed.later(TestRuntimes.fileRuntime(kv));
        DynamoClient client = caller.client("demo.echo.generate");
        client.waitForInstances(Duration.ofSeconds(10));
        try (ResponseStream stream = client.call(Map.of("x", 1L))) {
            List<DynamoResponse> responses = stream.readAll();
            assertThat(responses).extracting(DynamoResponse::data).containsExactly(
                    Map.of("i", 0L, "echo", Map.of("x", 1L)), Map.of("i", 1L, "echo", Map.of("x", 1L)),
                    Map.of("i", 2L, "echo", Map.of("x", 1L)));
            assertThat(stream.isComplete()).isTrue();
        }
        assertThat(caller.counters().callsStarted()).isEqualTo(1);
        assertThat(worker.counters().requestsServed()).isEqualTo(1);
    }

    @Test
    void aHandlerThatThrowsFailsTheCallWithItsMessage() {
        DynamoRuntime worker = closed.later(TestRuntimes.fileRuntime(kv));
        worker.serve("demo.fail.generate", (request, responder) -> {
            responder.send("first");
            throw new IllegalStateException("boom from the handler");
        });
        DynamoRuntime caller = closed.later(TestRuntimes.fileRuntime(kv));
        DynamoClient client = caller.client("demo.fail.generate");
        client.waitForInstances(Duration.ofSeconds(10));
        ResponseStream stream = client.call("x");
        assertThat(stream.read().data()).isEqualTo("first");
        assertThatThrownBy(stream::read).isInstanceOf(DynamoWorkerException.class)
                .hasMessageContaining("IllegalStateException: boom from the handler")
                .satisfies(e -> assertThat(((DynamoWorkerException) e).workerMessage())
                        .isEqualTo("IllegalStateException: boom from the handler"));
        assertThat(worker.counters().handlerErrors()).isEqualTo(1);
    }

    @Test
    void overloadIsRefusedWithDynamosWords() throws Exception {
        DynamoRuntime worker =
                closed.later(DynamoRuntime.start(TestRuntimes.file(kv).maxConcurrentRequests(1).build()));
        CountDownLatch entered = new CountDownLatch(1);
        CountDownLatch release = new CountDownLatch(1);
        worker.serve("demo.slow.generate", (request, responder) -> {
            entered.countDown();
            release.await(30, TimeUnit.SECONDS);
            responder.send("done");
        });
        DynamoRuntime caller = closed.later(TestRuntimes.fileRuntime(kv));
        DynamoClient client = caller.client("demo.slow.generate");
        client.waitForInstances(Duration.ofSeconds(10));
        ResponseStream first = client.call(1L);
        assertThat(entered.await(10, TimeUnit.SECONDS)).isTrue();
        assertThatThrownBy(() -> client.call(2L)).isInstanceOf(DynamoRefusedException.class)
                .hasMessageContaining("Server overloaded")
                .satisfies(e -> assertThat(((DynamoRefusedException) e).overloaded()).isTrue());
        release.countDown();
        assertThat(first.readAll()).extracting(DynamoResponse::data).containsExactly("done");
        assertThat(worker.counters().requestsRefusedOverloaded()).isEqualTo(1);
    }

    @Test
    void jsonAndMsgpackServeTheSameValues() {
        Map<String, Object> value = Map.of("text", "héllo", "n", -5L, "f", 2.5, "b", true, "list", List.of(1L, "two"));
        for (PayloadCodec codec : PayloadCodec.values()) {
            Path dir = kv.resolve(codec.name());
            DynamoRuntime worker = closed.later(DynamoRuntime.start(TestRuntimes.file(dir).servedCodec(codec).build()));
            worker.serve("demo.echo.generate", (request, responder) -> {
                assertThat(request.codec()).isEqualTo(codec);
                responder.send(request.payload());
            });
            DynamoRuntime caller = closed.later(TestRuntimes.fileRuntime(dir));
            DynamoClient client = caller.client("demo.echo.generate");
            assertThat(client.waitForInstances(Duration.ofSeconds(10)).get(0).codec()).isEqualTo(codec);
            try (ResponseStream stream = client.call(value)) {
                assertThat(stream.readAll()).extracting(DynamoResponse::data).containsExactly(value);
            }
        }
    }

    private static void awaitIdle(DynamoRuntime worker) {
        org.awaitility.Awaitility.await().atMost(Duration.ofSeconds(30))
                .until(() -> worker.counters().requestsInFlight() == 0);
    }

    @Test
    void listenersHearEachCallAndRequestEndPerEndpoint() throws Exception {
        DynamoRuntime worker =
                closed.later(DynamoRuntime.start(TestRuntimes.file(kv).maxConcurrentRequests(1).build()));
        DynamoRuntime caller = closed.later(TestRuntimes.fileRuntime(kv));
        List<String> heard = new java.util.concurrent.CopyOnWriteArrayList<>();
        java.util.Set<String> started = java.util.concurrent.ConcurrentHashMap.newKeySet();
        DynamoListener listener = new DynamoListener() {
            @Override
            public void callStarted(EndpointId endpoint, String requestId) {
                started.add("call " + requestId);
            }

            @Override
            public void callEnded(EndpointId endpoint, String requestId, Duration elapsed, DynamoException failure) {
                assertThat(elapsed).isPositive();
                assertThat(started).contains("call " + requestId);
                heard.add("call " + endpoint + " " + (failure == null ? "ok" : failure.getClass().getSimpleName()));
            }

            @Override
            public void requestStarted(EndpointId endpoint, String requestId) {
                started.add("request " + requestId + " " + Thread.currentThread().getName());
            }

            @Override
            public void requestEnded(EndpointId endpoint, String requestId, Duration elapsed, Throwable failure) {
                assertThat(started).as("started on the same thread").contains("request " + requestId + " "
                        + Thread.currentThread().getName());
                heard.add("request " + endpoint + " " + (failure == null ? "ok" : failure.getClass().getSimpleName()));
            }

            @Override
            public void requestRefused(EndpointId endpoint, String requestId, String reason) {
                heard.add("refused " + endpoint + " " + reason);
            }
        };
        worker.addListener(listener);
        caller.addListener(listener);
        CountDownLatch release = new CountDownLatch(1);
        worker.serve("demo.observed.generate", (request, responder) -> {
            if ("fail".equals(request.payload())) {
                throw new IllegalStateException("no");
            }
            if ("hold".equals(request.payload())) {
                responder.send("held");
                release.await(30, TimeUnit.SECONDS);
            }
            responder.send("ok");
        });
        DynamoClient client = caller.client("demo.observed.generate");
        client.waitForInstances(Duration.ofSeconds(10));
        // With room for one request, each call waits until the worker has finished the one before: a caller can read
        // a stream's end before the worker's handler thread has given its slot back.
        client.call("x").readAll();
        awaitIdle(worker);
        assertThatThrownBy(() -> client.call("fail").readAll()).isInstanceOf(DynamoWorkerException.class);
        awaitIdle(worker);
        ResponseStream held = client.call("hold");
        assertThat(held.read().data()).isEqualTo("held");
        assertThatThrownBy(() -> client.call("x")).isInstanceOf(DynamoRefusedException.class);
        held.kill();
        release.countDown();
        org.awaitility.Awaitility.await().atMost(Duration.ofSeconds(10)).until(() -> heard.size() >= 8);
        assertThat(heard).containsExactlyInAnyOrder(
                "request demo.observed.generate ok", "call demo.observed.generate ok",
                "request demo.observed.generate IllegalStateException", "call demo.observed.generate DynamoWorkerException",
                "refused demo.observed.generate Server overloaded: worker at capacity",
                "call demo.observed.generate DynamoRefusedException",
                "call demo.observed.generate DynamoCancelledException",
                "request demo.observed.generate DynamoCancelledException");
    }
}
