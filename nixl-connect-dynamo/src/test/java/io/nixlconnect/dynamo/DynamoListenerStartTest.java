package io.nixlconnect.dynamo;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import org.awaitility.Awaitility;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * {@link DynamoListener#callStarted} and {@link DynamoListener#requestStarted}: one start before each end, so that
 * in-flight gauges return to zero; a request's start and end on the thread that runs its handler, around it, so that
 * an observation opened at the start is current in the handler.
 */
class DynamoListenerStartTest {

    @TempDir
    Path kv;

    @Test
    void everyCallAndRequestThatEndsStartedFirstAndRequestsStartAndEndOnTheHandlersThread() throws Exception {
        List<String> heard = new CopyOnWriteArrayList<>();
        DynamoListener listener = new DynamoListener() {
            @Override
            public void callStarted(EndpointId endpoint) {
                heard.add("call started " + endpoint);
            }

            @Override
            public void callEnded(EndpointId endpoint, Duration elapsed, DynamoException failure) {
                heard.add("call ended " + endpoint);
            }

            @Override
            public void requestStarted(EndpointId endpoint) {
                heard.add("request started " + endpoint + " on " + Thread.currentThread().getName());
            }

            @Override
            public void requestEnded(EndpointId endpoint, Duration elapsed, Throwable failure) {
                heard.add("request ended " + endpoint + " on " + Thread.currentThread().getName());
            }
        };
        try (DynamoRuntime worker = DynamoRuntime.start(TestRuntimes.file(kv).maxConcurrentRequests(1).build());
             DynamoRuntime caller = TestRuntimes.fileRuntime(kv)) {
            worker.addListener(listener);
            caller.addListener(listener);
            CountDownLatch release = new CountDownLatch(1);
            worker.serve("demo.started.generate", (request, responder) -> {
                heard.add("handler on " + Thread.currentThread().getName());
                if ("hold".equals(request.payload())) {
                    responder.send("held");
                    release.await(30, TimeUnit.SECONDS);
                }
                responder.send("ok");
            });
            DynamoClient client = caller.client("demo.started.generate");
            client.waitForInstances(Duration.ofSeconds(10));
            client.call("x").readAll();
            Awaitility.await().atMost(Duration.ofSeconds(10)).until(() -> heard.size() == 5);

            // The handler thread is told of the start, runs the handler, is told of the end.
            List<String> served = heard.stream().filter(line -> !line.startsWith("call")).toList();
            String thread = served.get(1).substring("handler on ".length());
            assertThat(served).containsExactly("request started demo.started.generate on " + thread,
                    "handler on " + thread, "request ended demo.started.generate on " + thread);
            assertThat(heard.stream().filter(line -> line.startsWith("call")))
                    .containsExactly("call started demo.started.generate", "call ended demo.started.generate");

            // A refused call (the one slot is held) starts and ends; the request it was refused by never starts.
            heard.clear();
            ResponseStream held = client.call("hold");
            assertThat(held.read().data()).isEqualTo("held");
            assertThatThrownBy(() -> client.call("x")).isInstanceOf(DynamoRefusedException.class);
            held.kill();
            release.countDown();
            Awaitility.await().atMost(Duration.ofSeconds(10)).until(() -> heard.stream()
                    .filter(line -> line.startsWith("request ended")).count() == 1 && heard.stream()
                    .filter(line -> line.startsWith("call ended")).count() == 2);
            assertThat(heard.stream().filter(line -> line.startsWith("call started"))).hasSize(2);
            assertThat(heard.stream().filter(line -> line.startsWith("request started"))).hasSize(1);
        }
    }
}
