package io.nixlconnect.dynamo;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

import io.nixlconnect.dynamo.internal.discovery.EtcdGateway;
import io.nixlconnect.dynamo.internal.discovery.InstanceRecord;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** Dynamo's etcd discovery against a real etcd: leases, records, watches, Java calling Java. */
class EtcdDiscoveryTest {

    @TempDir
    Path directory;

    private EtcdServer etcd;

    @BeforeEach
    void startEtcd() throws Exception {
        etcd = new EtcdServer(directory);
    }

    @AfterEach
    void stopEtcd() {
        if (etcd != null) {
            etcd.close();
        }
    }

    @Test
    void javaCallsJavaThroughEtcdAndTheRecordIsDynamosUnderTheLease() {
        EndpointId endpoint = EndpointId.parse("demo.etcd.generate");
        try (DynamoRuntime worker = DynamoRuntime.start(etcd.settings(Duration.ofSeconds(10)).build());
                DynamoRuntime caller = DynamoRuntime.start(etcd.settings(Duration.ofSeconds(10)).build())) {
            ServedEndpoint served = worker.serve(endpoint, (request, responder) -> {
                responder.send(Map.of("echo", request.payload()));
                responder.send("second");
            });
            try (EtcdGateway gateway = new EtcdGateway(List.of(etcd.endpoint), Duration.ofSeconds(5))) {
                EtcdGateway.Range range = gateway.range(InstanceRecord.endpointPrefix(endpoint));
                assertThat(range.kvs()).hasSize(1);
                EtcdGateway.KeyValue kv = range.kvs().get(0);
                assertThat(kv.key()).isEqualTo("v1/instances/demo/etcd/generate/" + Long.toHexString(served.instanceId()));
                assertThat(kv.lease()).as("the instance id is the lease id").isEqualTo(served.instanceId());
                assertThat(new String(kv.value(), StandardCharsets.UTF_8)).startsWith("{\"type\":\"Endpoint\"");
            }
            DynamoClient client = caller.client("demo.etcd.generate");
            assertThat(client.waitForInstances(Duration.ofSeconds(10))).extracting(DynamoInstance::instanceId)
                    .containsExactly(served.instanceId());
            try (ResponseStream stream = client.call(List.of(1L, 2L))) {
                assertThat(stream.readAll()).extracting(DynamoResponse::data)
                        .containsExactly(Map.of("echo", List.of(1L, 2L)), "second");
            }
            assertThat(worker.isDiscoveryHealthy()).isTrue();
            served.close();
            await().atMost(Duration.ofSeconds(10)).until(() -> client.instances().isEmpty());
        }
    }

    @Test
    void aLeaseNoLongerKeptAliveExpiresAndItsInstanceLeavesTheWatch() throws Exception {
        EndpointId endpoint = EndpointId.parse("demo.lease.generate");
        try (DynamoRuntime caller = DynamoRuntime.start(etcd.settings(Duration.ofSeconds(10)).build());
                EtcdGateway gateway = new EtcdGateway(List.of(etcd.endpoint), Duration.ofSeconds(5))) {
            DynamoClient client = caller.client(endpoint, RouterMode.ROUND_ROBIN);
            long lease = gateway.grant(Duration.ofSeconds(2)); // nobody keeps it alive: a SIGKILLed worker
            DynamoInstance instance = new DynamoInstance(endpoint, lease, "127.0.0.1", 9, InstanceRecord.subject(endpoint,
                    lease), PayloadCodec.MSGPACK, "cpu");
            assertThat(gateway.createIfAbsent(InstanceRecord.key(endpoint, lease), InstanceRecord.write(instance), lease))
                    .isTrue();
            assertThat(gateway.createIfAbsent(InstanceRecord.key(endpoint, lease), InstanceRecord.write(instance), lease))
                    .as("created only if absent").isFalse();
            await().atMost(Duration.ofSeconds(10)).until(() -> client.instances().size() == 1);
            await().atMost(Duration.ofSeconds(15)).until(() -> client.instances().isEmpty());
            // garbage under the prefix is refused and counted
            long garbageLease = gateway.grant(Duration.ofSeconds(30));
            gateway.createIfAbsent(InstanceRecord.endpointPrefix(endpoint) + "ff", "{garbage".getBytes(StandardCharsets.UTF_8),
                    garbageLease);
            await().atMost(Duration.ofSeconds(10)).until(() -> caller.counters().discoveryEntriesRejected() == 1);
            assertThat(client.instances()).isEmpty();
        }
    }

    @Test
    void aLostLeaseIsReplacedAndTheEndpointRegisteredAgainUnderTheNewId() throws Exception {
        EndpointId endpoint = EndpointId.parse("demo.relapse.generate");
        try (DynamoRuntime worker = DynamoRuntime.start(etcd.settings(Duration.ofSeconds(3)).build());
                DynamoRuntime caller = DynamoRuntime.start(etcd.settings(Duration.ofSeconds(10)).build());
                EtcdGateway gateway = new EtcdGateway(List.of(etcd.endpoint), Duration.ofSeconds(5))) {
            ServedEndpoint served = worker.serve(endpoint, DynamoHandler.unary(payload -> "still here"));
            DynamoClient client = caller.client(endpoint, RouterMode.ROUND_ROBIN);
            assertThat(client.waitForInstances(Duration.ofSeconds(10))).extracting(DynamoInstance::instanceId)
                    .containsExactly(served.instanceId());
            gateway.revoke(served.instanceId()); // as if etcd lost it (expired while this process was paused)
            await().atMost(Duration.ofSeconds(20)).until(() -> client.instances().size() == 1
                    && client.instances().get(0).instanceId() != served.instanceId());
            try (ResponseStream stream = client.call("x")) {
                assertThat(stream.readAll()).extracting(DynamoResponse::data).containsExactly("still here");
            }
            assertThat(worker.counters().discoveryErrors()).isPositive();
            await().atMost(Duration.ofSeconds(10)).until(worker::isDiscoveryHealthy);
        }
    }

    @Test
    void aWatchClosesPromptlyFromAnotherThread() throws Exception {
        try (EtcdGateway gateway = new EtcdGateway(List.of(etcd.endpoint), Duration.ofSeconds(5))) {
            CountDownLatch heard = new CountDownLatch(1);
            AtomicReference<Throwable> ended = new AtomicReference<>();
            EtcdGateway.WatchHandle watch = gateway.watch("v1/instances/", 1, new EtcdGateway.WatchListener() {
                @Override
                public void events(List<EtcdGateway.Event> events, long revision) {
                    heard.countDown();
                }

                @Override
                public void ended(Throwable cause) {
                    ended.set(cause);
                }
            });
            long lease = gateway.grant(Duration.ofSeconds(30));
            gateway.createIfAbsent("v1/instances/a/b/c/1", new byte[] {'x'}, lease);
            assertThat(heard.await(10, TimeUnit.SECONDS)).isTrue();
            Thread closer = new Thread(watch::close);
            long started = System.nanoTime();
            closer.start();
            closer.join(5000);
            assertThat(closer.isAlive()).isFalse();
            assertThat(Duration.ofNanos(System.nanoTime() - started)).isLessThan(Duration.ofSeconds(2));
            assertThat(ended.get()).as("a watch closed here is not reported as ended").isNull();
        }
    }

    @Test
    void closingTheRuntimeRevokesItsLeaseAtOnce() {
        EndpointId endpoint = EndpointId.parse("demo.revoke.generate");
        try (DynamoRuntime caller = DynamoRuntime.start(etcd.settings(Duration.ofSeconds(30)).build())) {
            DynamoClient client = caller.client(endpoint, RouterMode.ROUND_ROBIN);
            DynamoRuntime worker = DynamoRuntime.start(etcd.settings(Duration.ofSeconds(30)).build());
            worker.serve(endpoint, DynamoHandler.unary(payload -> payload));
            await().atMost(Duration.ofSeconds(10)).until(() -> client.instances().size() == 1);
            worker.close();
            await().atMost(Duration.ofSeconds(5)).until(() -> client.instances().isEmpty());
        }
    }

    @Test
    void anUnreachableEtcdIsADiscoveryException() {
        etcd.close();
        try (DynamoRuntime worker = DynamoRuntime.start(etcd.settings(Duration.ofSeconds(10))
                .etcdRequestTimeout(Duration.ofSeconds(2)).build())) {
            assertThatThrownBy(() -> worker.serve("demo.down.generate", DynamoHandler.unary(payload -> payload)))
                    .isInstanceOf(DynamoDiscoveryException.class).hasMessageContaining("unreachable");
            assertThat(worker.isDiscoveryHealthy()).isFalse();
            assertThat(worker.counters().discoveryErrors()).isPositive();
        }
        etcd = null;
    }
}
