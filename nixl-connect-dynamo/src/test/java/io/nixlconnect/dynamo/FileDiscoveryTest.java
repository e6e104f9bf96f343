package io.nixlconnect.dynamo;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.nixlconnect.dynamo.internal.discovery.InstanceRecord;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.FileTime;
import java.time.Duration;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** Dynamo's file discovery: records as Dynamo writes them, kept alive, expired, removed, garbage refused. */
class FileDiscoveryTest {

    @TempDir
    Path kv;

    private Path instances() {
        return kv.resolve("v1").resolve("instances");
    }

    private static String fileName(EndpointId endpoint, long id) {
        return InstanceRecord.key(endpoint, id).substring(InstanceRecord.PREFIX.length()).replace("/", "%2F");
    }

    @Test
    void aServedEndpointIsAFileNamedAsDynamoNamesItKeptAliveAndRemovedOnClose() throws Exception {
        EndpointId endpoint = EndpointId.parse("demo.files.generate");
        try (DynamoRuntime worker = DynamoRuntime.start(TestRuntimes.file(kv).fileKvTtl(Duration.ofSeconds(3)).build())) {
            ServedEndpoint served = worker.serve(endpoint, DynamoHandler.unary(payload -> payload));
            Path file = instances().resolve(fileName(endpoint, served.instanceId()));
            assertThat(file).exists();
            DynamoInstance instance = InstanceRecord.parse(Files.readAllBytes(file));
            assertThat(instance.instanceId()).isEqualTo(served.instanceId());
            assertThat(instance.codec()).isEqualTo(PayloadCodec.MSGPACK);
            try (var listing = Files.list(instances())) {
                assertThat(listing.map(path -> path.getFileName().toString())).noneMatch(name -> name.startsWith(".tmp_"));
            }
            FileTime before = Files.getLastModifiedTime(file);
            Files.setLastModifiedTime(file, FileTime.fromMillis(before.toMillis() - 2000));
            await().atMost(Duration.ofSeconds(10)).until(() -> Files.getLastModifiedTime(file).toMillis()
                    > before.toMillis() - 500);
            Files.delete(file); // as another process does to a file it thinks expired
            await().atMost(Duration.ofSeconds(10)).until(() -> Files.exists(file));
            served.close();
            assertThat(file).doesNotExist();
            assertThat(served.isRegistered()).isFalse();
        }
    }

    @Test
    void aRecordNoLongerTouchedExpiresIsDeletedAndLeavesTheClientsView() throws Exception {
        try (DynamoRuntime caller = DynamoRuntime.start(TestRuntimes.file(kv).fileKvTtl(Duration.ofSeconds(2)).build());
                FakeWorker worker = new FakeWorker(kv, "demo.expiring.generate", PayloadCodec.JSON, request -> { })) {
            DynamoClient client = caller.client(worker.endpoint, RouterMode.ROUND_ROBIN);
            assertThat(client.waitForInstances(Duration.ofSeconds(10))).hasSize(1);
            // the fake worker never touches its file: like a SIGKILLed process, it expires
            await().atMost(Duration.ofSeconds(15)).until(() -> client.instances().isEmpty());
            try (var listing = Files.list(instances())) {
                assertThat(listing.count()).as("the expired file was deleted").isZero();
            }
        }
    }

    @Test
    void garbageEntriesAreRefusedCountedOnceAndTheGoodOnesStillFound() throws Exception {
        EndpointId endpoint = EndpointId.parse("demo.garbage.generate");
        Files.createDirectories(instances());
        Files.writeString(instances().resolve(fileName(endpoint, 1)), "{not json");
        Files.writeString(instances().resolve(fileName(endpoint, 2)), "{\"type\":\"Endpoint\"}");
        Files.write(instances().resolve(fileName(endpoint, 3)), new byte[200_000]);
        Files.createDirectories(instances().resolve(fileName(endpoint, 4)));
        Files.writeString(instances().resolve(fileName(endpoint, 5)), new String(InstanceRecord.write(new DynamoInstance(
                endpoint, 6, "127.0.0.1", 1, "6/demo/garbage/generate", PayloadCodec.JSON, null)),
                StandardCharsets.UTF_8)); // the record of another instance id than its name
        Files.writeString(instances().resolve(fileName(endpoint, 7)), new String(InstanceRecord.write(new DynamoInstance(
                endpoint, 7, "127.0.0.1", 1, "7/demo/garbage/generate", PayloadCodec.JSON, null)),
                StandardCharsets.UTF_8).replace("\"tcp\"", "\"nats\""));
        Files.writeString(instances().resolve("demo%2Fgarbage%2F%ZZ"), "x");
        try (DynamoRuntime caller = TestRuntimes.fileRuntime(kv);
                DynamoRuntime worker = TestRuntimes.fileRuntime(kv)) {
            DynamoClient client = caller.client(endpoint, RouterMode.ROUND_ROBIN);
            assertThat(client.instances()).isEmpty();
            ServedEndpoint served = worker.serve(endpoint, DynamoHandler.unary(payload -> "good"));
            assertThat(client.waitForInstances(Duration.ofSeconds(10))).extracting(DynamoInstance::instanceId)
                    .containsExactly(served.instanceId());
            long rejected = caller.counters().discoveryEntriesRejected();
            assertThat(rejected).isEqualTo(7);
            try (ResponseStream stream = client.call(Map.of())) {
                assertThat(stream.readAll()).extracting(DynamoResponse::data).containsExactly("good");
            }
            Thread.sleep(1500); // more rescans: each garbage entry counts once
            assertThat(caller.counters().discoveryEntriesRejected()).isEqualTo(rejected);
        }
    }

    @Test
    void instancesAppearAndLeaveWhileTheClientRuns() throws IOException {
        EndpointId endpoint = EndpointId.parse("demo.churn.generate");
        try (DynamoRuntime caller = TestRuntimes.fileRuntime(kv)) {
            DynamoClient client = caller.client(endpoint, RouterMode.ROUND_ROBIN);
            DynamoRuntime a = TestRuntimes.fileRuntime(kv);
            DynamoRuntime b = TestRuntimes.fileRuntime(kv);
            ServedEndpoint servedA = a.serve(endpoint, DynamoHandler.unary(payload -> "a"));
            ServedEndpoint servedB = b.serve(endpoint, DynamoHandler.unary(payload -> "b"));
            await().atMost(Duration.ofSeconds(10)).until(() -> client.instances().size() == 2);
            // round robin alternates
            String first = (String) client.call(1L).readAll().get(0).data();
            String second = (String) client.call(2L).readAll().get(0).data();
            assertThat(first).isNotEqualTo(second);
            assertThat((String) client.callInstance(servedB.instanceId(), 3L).readAll().get(0).data()).isEqualTo("b");
            a.close();
            await().atMost(Duration.ofSeconds(10)).until(() -> client.instances().size() == 1);
            assertThat(client.instances().get(0).instanceId()).isEqualTo(servedB.instanceId());
            for (int i = 0; i < 4; i++) {
                assertThat(client.call(i).readAll().get(0).data()).isEqualTo("b");
            }
            assertThat(servedA.isRegistered()).isFalse();
            b.close();
            await().atMost(Duration.ofSeconds(10)).until(() -> client.instances().isEmpty());
        }
    }
}
