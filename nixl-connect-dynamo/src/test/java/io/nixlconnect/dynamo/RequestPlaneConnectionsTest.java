package io.nixlconnect.dynamo;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.nixlconnect.dynamo.internal.wire.ControlMessages;
import io.nixlconnect.dynamo.internal.wire.TwoPart;
import java.io.ByteArrayOutputStream;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * The caller's pooled request-plane connections: one the worker closed or reset (a worker that restarted, or dropped
 * it) is replaced before a request is written on it, so the call goes through on its first try and the worker gets
 * each request once; connections idle past their limit are closed on either side, and the next call opens a new one.
 */
class RequestPlaneConnectionsTest {

    private static final Duration WAIT = Duration.ofSeconds(60);

    @TempDir
    Path kv;

    private final List<AutoCloseable> toClose = new ArrayList<>();

    private <T extends AutoCloseable> T later(T closeable) {
        toClose.add(0, closeable);
        return closeable;
    }

    @AfterEach
    void closeAll() throws Exception {
        for (AutoCloseable closeable : toClose) {
            closeable.close();
        }
    }

    private static byte[] body(String json) {
        return TwoPart.bodyOnly(json.getBytes(StandardCharsets.UTF_8)).encode();
    }

    /** A whole, good stream: one response {@code "ok"}. */
    private static void answerOk(FakeWorker.Request request) throws Exception {
        request.ack("");
        ByteArrayOutputStream stream = new ByteArrayOutputStream();
        stream.write(TwoPart.headerOnly(ControlMessages.prologue(null)).encode());
        stream.write(body("{\"data\":{\"data\":\"ok\"},\"complete_final\":false}"));
        stream.write(body("{\"complete_final\":true}"));
        stream.write(TwoPart.headerOnly(ControlMessages.Control.SENTINEL.header()).encode());
        try (Socket home = request.callHome()) {
            FakeWorker.Request.send(home, stream.toByteArray());
        }
    }

    private static void callOk(DynamoClient client, long round) {
        try (ResponseStream stream = client.call(Map.of("round", round))) {
            assertThat(stream.readAll()).extracting(DynamoResponse::data).containsExactly("ok");
        }
    }

    /**
     * Each round the worker closes (FIN) or resets (RST) the caller's pooled connection, and the caller calls at once,
     * before its reader may have noticed: the request must go over a new connection, never fail, and reach the worker
     * once. Before the fix most such calls failed ("the worker … closed the connection").
     */
    @ParameterizedTest(name = "reset={0}")
    @ValueSource(booleans = {false, true})
    void aPooledConnectionTheWorkerClosedIsReplacedBeforeTheRequestIsWritten(boolean reset) throws Exception {
        FakeWorker worker = later(new FakeWorker(kv, "pool.closed.generate", PayloadCodec.JSON,
                RequestPlaneConnectionsTest::answerOk));
        DynamoRuntime caller = later(TestRuntimes.fileRuntime(kv));
        DynamoClient client = caller.client("pool.closed.generate");
        client.waitForInstances(WAIT);
        int rounds = 20;
        callOk(client, 0);
        for (int round = 1; round <= rounds; round++) {
            worker.closeConnections(reset);
            callOk(client, round);
        }
        DynamoCounters counters = caller.counters();
        assertThat(counters.callsFailed()).isZero();
        assertThat(worker.framesReceived()).as("each request reached the worker once").isEqualTo(rounds + 1);
        assertThat(counters.requestConnectionsOpened()).isEqualTo(rounds + 1)
                .isEqualTo(worker.connectionsAccepted());
    }

    /** A Java worker restarted on the same port: the next call reaches the new one over a new connection. */
    @Test
    void aCallAfterTheWorkerRestartedOnTheSamePortGoesOverANewConnection() {
        DynamoRuntime first = DynamoRuntime.start(TestRuntimes.file(kv).build());
        first.serve("pool.restart.generate", DynamoHandler.unary(payload -> "first"));
        DynamoRuntime caller = later(TestRuntimes.fileRuntime(kv));
        DynamoClient client = caller.client("pool.restart.generate");
        int port = client.waitForInstances(WAIT).get(0).port();
        try (ResponseStream stream = client.call("x")) {
            assertThat(stream.readAll()).extracting(DynamoResponse::data).containsExactly("first");
        }
        first.close(); // deregisters, closes its connections
        DynamoRuntime second = later(DynamoRuntime.start(TestRuntimes.file(kv).rpcPort(port).build()));
        ServedEndpoint served = second.serve("pool.restart.generate", DynamoHandler.unary(payload -> "second"));
        await().atMost(WAIT).until(() -> client.instances().stream()
                .anyMatch(instance -> instance.instanceId() == served.instanceId()));
        try (ResponseStream stream = client.call("y")) {
            assertThat(stream.readAll()).extracting(DynamoResponse::data).containsExactly("second");
        }
        assertThat(caller.counters().callsFailed()).isZero();
        assertThat(caller.counters().requestConnectionsOpened()).isEqualTo(2);
    }

    /**
     * Three workers, one idle connection to each: the caller closes all three once idle past its limit (never
     * before: the assertion below can only fail on an early close), and calls after that open new ones.
     */
    @Test
    void theCallerClosesConnectionsIdlePastItsLimitAndCallsAfterThatWork() {
        Duration limit = Duration.ofMillis(300);
        List<DynamoClient> clients = new ArrayList<>();
        DynamoRuntime caller = later(DynamoRuntime.start(TestRuntimes.file(kv).requestConnectionIdleTimeout(limit)
                .build()));
        for (int i = 0; i < 3; i++) {
            DynamoRuntime worker = later(DynamoRuntime.start(TestRuntimes.file(kv).build()));
            worker.serve("pool.idle" + i + ".generate", DynamoHandler.unary(payload -> "ok"));
            DynamoClient client = caller.client("pool.idle" + i + ".generate");
            client.waitForInstances(WAIT);
            clients.add(client);
        }
        long started = System.nanoTime(); // before any acknowledgement: every idle clock starts after this
        for (DynamoClient client : clients) {
            try (ResponseStream stream = client.call("x")) {
                assertThat(stream.readAll()).hasSize(1);
            }
        }
        assertThat(caller.counters().requestConnectionsOpened()).isEqualTo(3);
        awaitCount(() -> caller.counters().idleConnectionsClosed(), 3, started, limit);
        for (DynamoClient client : clients) {
            try (ResponseStream stream = client.call("y")) {
                assertThat(stream.readAll()).hasSize(1);
            }
        }
        DynamoCounters counters = caller.counters();
        assertThat(counters.callsFailed()).isZero();
        assertThat(counters.requestConnectionsOpened()).isEqualTo(6);
        assertThat(counters.requestConnectionsReplaced()).as("closed connections left the pool").isZero();
    }

    /** A worker closes request connections that bring nothing past its limit (two callers: two); callers recover. */
    @Test
    void theServerClosesConnectionsIdlePastItsLimitAndCallsAfterThatWork() {
        Duration limit = Duration.ofMillis(300);
        DynamoRuntime worker = later(DynamoRuntime.start(TestRuntimes.file(kv).serverConnectionIdleTimeout(limit)
                .build()));
        worker.serve("pool.serveridle.generate", DynamoHandler.unary(payload -> "ok"));
        List<DynamoRuntime> callers = new ArrayList<>();
        List<DynamoClient> clients = new ArrayList<>();
        for (int i = 0; i < 2; i++) {
            DynamoRuntime caller = later(TestRuntimes.fileRuntime(kv));
            DynamoClient client = caller.client("pool.serveridle.generate");
            client.waitForInstances(WAIT);
            callers.add(caller);
            clients.add(client);
        }
        long started = System.nanoTime();
        for (DynamoClient client : clients) {
            try (ResponseStream stream = client.call("x")) {
                assertThat(stream.readAll()).hasSize(1);
            }
        }
        awaitCount(() -> worker.counters().idleConnectionsClosed(), 2, started, limit);
        for (DynamoClient client : clients) {
            try (ResponseStream stream = client.call("y")) {
                assertThat(stream.readAll()).hasSize(1);
            }
        }
        for (DynamoRuntime caller : callers) {
            assertThat(caller.counters().callsFailed()).isZero();
            assertThat(caller.counters().requestConnectionsOpened()).isEqualTo(2);
        }
        assertThat(worker.counters().requestsServed()).isEqualTo(4);
    }

    /**
     * Waits until {@code count} reaches {@code expected}. Each time some closes are seen, they must have come at
     * least {@code limit} after {@code started} (which precedes every idle clock's start): load can delay a close,
     * never bring one forward, so this fails only on an early close.
     */
    private static void awaitCount(java.util.function.LongSupplier count, long expected, long started, Duration limit) {
        AtomicLong seen = new AtomicLong();
        await().atMost(WAIT).pollInterval(Duration.ofMillis(20)).until(() -> {
            long now = count.getAsLong();
            long at = System.nanoTime();
            if (now > 0) {
                assertThat(at - started).as("closed after the idle limit").isGreaterThanOrEqualTo(limit.toNanos());
            }
            seen.set(now);
            return now >= expected;
        });
        assertThat(seen.get()).isEqualTo(expected);
    }
}
