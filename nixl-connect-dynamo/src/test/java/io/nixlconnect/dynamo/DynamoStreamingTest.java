package io.nixlconnect.dynamo;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.Flow;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** Responses as an iterator and as a Flow.Publisher with backpressure; cancellation; async calls; shutdown order. */
class DynamoStreamingTest {

    @TempDir
    Path kv;

    private static final String PAD = "x".repeat(16 * 1024);

    private DynamoRuntime worker;
    private DynamoRuntime caller;
    private final AtomicLong sent = new AtomicLong();
    private final AtomicBoolean sawStop = new AtomicBoolean();
    private final AtomicReference<Throwable> handlerEnd = new AtomicReference<>();

    @BeforeEach
    void start() {
        worker = TestRuntimes.fileRuntime(kv);
        worker.serve("demo.numbers.generate", (request, responder) -> {
            long count = (Long) request.payload();
            try {
                for (long i = 0; i < count; i++) {
                    if (request.isStopped()) {
                        sawStop.set(true);
                        return;
                    }
                    responder.send(Map.of("i", i, "pad", PAD));
                    sent.incrementAndGet();
                }
            } catch (RuntimeException e) {
                handlerEnd.set(e);
                throw e;
            }
        });
        caller = TestRuntimes.fileRuntime(kv);
    }

    @AfterEach
    void stop() {
        caller.close();
        worker.close();
    }

    private DynamoClient client() {
        DynamoClient client = caller.client("demo.numbers.generate");
        client.waitForInstances(Duration.ofSeconds(10));
        return client;
    }

    @Test
    void theIteratorReadsEveryResponseInOrder() {
        int index = 0;
        try (ResponseStream stream = client().call(100L)) {
            for (DynamoResponse response : stream) {
                assertThat(((Map<?, ?>) response.data()).get("i")).isEqualTo((long) index++);
            }
            assertThat(stream.isComplete()).isTrue();
        }
        assertThat(index).isEqualTo(100);
    }

    @Test
    void aSubscriberGetsOnlyWhatItRequestsAndTheWorkerIsHeldBackMeanwhile() throws Exception {
        ResponseStream stream = client().call(100_000L);
        List<Object> received = new ArrayList<>();
        AtomicReference<Flow.Subscription> subscription = new AtomicReference<>();
        CountDownLatch three = new CountDownLatch(3);
        stream.subscribe(new Flow.Subscriber<>() {
            @Override
            public void onSubscribe(Flow.Subscription s) {
                subscription.set(s);
                s.request(3);
            }

            @Override
            public void onNext(DynamoResponse item) {
                synchronized (received) {
                    received.add(((Map<?, ?>) item.data()).get("i"));
                }
                three.countDown();
            }

            @Override
            public void onError(Throwable throwable) {
            }

            @Override
            public void onComplete() {
            }
        });
        assertThat(three.await(10, TimeUnit.SECONDS)).isTrue();
        // No more demand: the worker fills the sockets' buffers (a few MiB) and blocks; it never sends all 100,000
        // responses (1.6 GB). Wait until it has stopped making progress, however loaded the machine.
        AtomicLong last = new AtomicLong(-1);
        await().pollInterval(Duration.ofMillis(500)).atMost(Duration.ofSeconds(60))
                .until(() -> last.getAndSet(sent.get()) == sent.get());
        assertThat(sent.get()).isLessThan(5_000);
        synchronized (received) {
            assertThat(received).containsExactly(0L, 1L, 2L);
        }
        subscription.get().cancel();
        await().atMost(Duration.ofSeconds(10)).until(() -> handlerEnd.get() != null);
        assertThat(handlerEnd.get()).isInstanceOf(DynamoCancelledException.class);
    }

    @Test
    void aSubscriberThatRequestsAllGetsAllThenComplete() throws Exception {
        CountDownLatch done = new CountDownLatch(1);
        AtomicInteger count = new AtomicInteger();
        client().call(500L).subscribe(new Flow.Subscriber<>() {
            @Override
            public void onSubscribe(Flow.Subscription s) {
                s.request(Long.MAX_VALUE);
            }

            @Override
            public void onNext(DynamoResponse item) {
                count.incrementAndGet();
            }

            @Override
            public void onError(Throwable throwable) {
            }

            @Override
            public void onComplete() {
                done.countDown();
            }
        });
        assertThat(done.await(20, TimeUnit.SECONDS)).isTrue();
        assertThat(count.get()).isEqualTo(500);
    }

    @Test
    void aSecondReaderIsRefused() throws Exception {
        ResponseStream stream = client().call(3L);
        stream.read();
        AtomicReference<Throwable> error = new AtomicReference<>();
        stream.subscribe(new Flow.Subscriber<>() {
            @Override
            public void onSubscribe(Flow.Subscription s) {
            }

            @Override
            public void onNext(DynamoResponse item) {
            }

            @Override
            public void onError(Throwable throwable) {
                error.set(throwable);
            }

            @Override
            public void onComplete() {
            }
        });
        assertThat(error.get()).isInstanceOf(IllegalStateException.class);
        stream.close();
    }

    @Test
    void stopLetsTheWorkerFinishAndTheStreamEndsWithoutError() {
        ResponseStream stream = client().call(1_000_000L);
        stream.read();
        stream.stop();
        List<DynamoResponse> rest = stream.readAll(); // what was on its way, then the end
        assertThat(rest.size()).isLessThan(1_000_000);
        await().atMost(Duration.ofSeconds(10)).until(sawStop::get);
        assertThat(stream.isComplete()).isTrue(); // the handler returned: complete_final came after the stop
    }

    @Test
    void callAsyncCompletesWithTheStream() throws Exception {
        DynamoClient client = client();
        List<CompletableFuture<ResponseStream>> calls = new ArrayList<>();
        for (long i = 1; i <= 8; i++) {
            calls.add(client.callAsync(i));
        }
        for (int i = 0; i < calls.size(); i++) {
            assertThat(calls.get(i).get(20, TimeUnit.SECONDS).readAll()).hasSize(i + 1);
        }
    }

    @Test
    void closingTheWorkerRuntimeDeregistersFirstThenLetsRequestsInFlightFinish() throws Exception {
        DynamoRuntime slowWorker = DynamoRuntime.start(TestRuntimes.file(kv.resolve("slow")).build());
        CountDownLatch inside = new CountDownLatch(1);
        CountDownLatch release = new CountDownLatch(1);
        slowWorker.serve("demo.draining.generate", (request, responder) -> {
            inside.countDown();
            release.await(30, TimeUnit.SECONDS);
            responder.send("finished");
        });
        DynamoRuntime slowCaller = TestRuntimes.fileRuntime(kv.resolve("slow"));
        try {
            DynamoClient client = slowCaller.client("demo.draining.generate");
            client.waitForInstances(Duration.ofSeconds(10));
            ResponseStream stream = client.call("x");
            assertThat(inside.await(10, TimeUnit.SECONDS)).isTrue();
            Thread closer = new Thread(slowWorker::close);
            closer.start();
            await().atMost(Duration.ofSeconds(10)).until(() -> client.instances().isEmpty());
            assertThat(closer.isAlive()).as("closing waits for the request in flight").isTrue();
            release.countDown();
            assertThat(stream.readAll()).extracting(DynamoResponse::data).containsExactly("finished");
            closer.join(10_000);
            assertThat(closer.isAlive()).isFalse();
        } finally {
            release.countDown();
            slowCaller.close();
            slowWorker.close();
        }
    }

    @Test
    void aClosedRuntimeRefusesNewWork() {
        DynamoRuntime closed = TestRuntimes.fileRuntime(kv);
        closed.close();
        assertThatThrownBy(() -> closed.client("demo.numbers.generate")).isInstanceOf(IllegalStateException.class);
        assertThatThrownBy(() -> closed.serve("demo.x.y", DynamoHandler.unary(p -> p)))
                .isInstanceOf(IllegalStateException.class);
    }
}
