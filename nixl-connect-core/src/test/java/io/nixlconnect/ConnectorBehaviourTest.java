package io.nixlconnect;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.assertj.core.api.Assertions.catchThrowableOfType;
import static org.awaitility.Awaitility.await;

import io.nixlconnect.transport.TransportException;
import io.nixlconnect.transport.embedded.EmbeddedSettings;
import java.io.ByteArrayOutputStream;
import java.io.DataOutputStream;
import java.io.IOException;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.nio.ByteBuffer;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/** Connector, Connection and Remote behaviour beyond moving bytes: timeouts, limits, life cycle, configuration. */
@Timeout(value = 60, unit = TimeUnit.SECONDS)
class ConnectorBehaviourTest {

    private static ConnectorOptions.Builder embedded() {
        return ConnectorOptions.builder().transports(EmbeddedSettings.defaults());
    }

    /** Agent metadata of the embedded transport pointing at an arbitrary endpoint. */
    static byte[] embeddedAgentMetadata(String agent, String host, int port) throws IOException {
        ByteArrayOutputStream bytes = new ByteArrayOutputStream();
        try (DataOutputStream out = new DataOutputStream(bytes)) {
            out.writeInt(0x4E58434D);
            out.writeByte(1);
            out.writeUTF(agent);
            out.writeUTF(host);
            out.writeInt(port);
        }
        return bytes.toByteArray();
    }

    @Test
    void workerIdDefaultsToADashlessUuidAndNamesTheConnection() {
        try (Connector connector = new Connector(embedded().build())) {
            assertThat(connector.name()).matches("[0-9a-f]{32}");
            assertThat(connector.connection().name()).isEqualTo(connector.name() + "-1");
            assertThat(connector.backendName()).isEqualTo("embedded");
            assertThat(connector.transportStatus().agent()).isEqualTo(connector.name() + "-1");
        }
    }

    @Test
    void connectionNumbersMustBePositive() {
        try (Connector connector = new Connector(embedded().workerId("w").build())) {
            assertThatThrownBy(() -> new Connection(connector, 0)).isInstanceOf(IllegalArgumentException.class)
                    .hasMessageContaining("positive");
            Connection second = new Connection(connector, 2);
            try {
                assertThat(second.name()).isEqualTo("w-2");
                second.initialize();
                assertThat(second.metadata()).isNotEmpty();
            } finally {
                second.close();
            }
        }
    }

    @Test
    void loadingAPeerAgainIsALookupAndTheAgentKeepsItUntilClose() {
        try (Connector a = new Connector(embedded().workerId("a").build());
             Connector b = new Connector(embedded().workerId("b").build())) {
            Connection local = a.connection();
            byte[] peer = b.connection().metadata();
            String first = local.loadRemote(peer);
            String second = local.loadRemote(peer);
            assertThat(first).isEqualTo("b-1").isEqualTo(second);
            assertThat(local.remoteAgentCount()).isEqualTo(1);
            assertThat(a.remoteAgentCount()).isEqualTo(1);
            assertThatThrownBy(() -> local.loadRemote(new byte[0])).isInstanceOf(IllegalArgumentException.class)
                    .hasMessageContaining("must not be empty");
            local.close();
            assertThat(local.remoteAgentCount()).isZero();
        }
    }

    @Test
    void aPeerThatPresentsChangedMetadataIsReloadedUnderItsName() throws IOException {
        try (Connector connector = new Connector(embedded().build())) {
            Connection local = connector.connection();
            byte[] before = embeddedAgentMetadata("peer", "127.0.0.1", 1111);
            byte[] after = embeddedAgentMetadata("peer", "127.0.0.1", 2222);
            String old = local.loadRemote(before);
            String reloaded = local.loadRemote(after);
            String again = local.loadRemote(after);
            String back = local.loadRemote(before);
            assertThat(List.of(old, reloaded, again, back)).containsOnly("peer");
            assertThat(local.remoteAgentCount()).isEqualTo(1);
        }
    }

    @Test
    void metadataOfAnotherBackendEndsTheOperationErroredWithAClearReason() {
        try (Connector connector = new Connector(embedded().build()); Descriptor target = Descriptor.allocate(16)) {
            RdmaMetadata foreign = RdmaMetadata.of(List.of(new SerializedDescriptor("cpu", 4096, 16)),
                    "NIXLAGENT: not ours".getBytes(), "k", OperationKind.READ);
            ReadOperation read = connector.beginRead(foreign, target);
            assertThat(read.status()).isEqualTo(OperationStatus.ERRORED);
            assertThat(read.failure()).isInstanceOf(TransportFailureException.class)
                    .hasCauseInstanceOf(TransportException.class)
                    .hasMessageContaining("not from an embedded-transport peer");
            assertThatThrownBy(read::waitForCompletion).isInstanceOf(TransferException.class)
                    .hasMessageContaining("not from an embedded-transport peer");
            assertThat(connector.inFlightOperations()).isZero();
            assertThat(connector.registeredBytes()).isZero();
        }
    }

    @Test
    void silentPeerEndsErroredAtTheOperationTimeout() throws Exception {
        try (ServerSocket blackHole = new ServerSocket(0, 50, InetAddress.getLoopbackAddress());
             Connector connector = new Connector(embedded().operationTimeout(Duration.ofMillis(300)).build());
             Descriptor target = Descriptor.allocate(64)) {
            RdmaMetadata metadata = RdmaMetadata.of(List.of(new SerializedDescriptor("cpu", 4096, 64)),
                    embeddedAgentMetadata("silent", "127.0.0.1", blackHole.getLocalPort()), "k", OperationKind.READ);
            long start = System.nanoTime();
            ReadOperation read = connector.beginRead(metadata, target);
            assertThatThrownBy(() -> read.waitForCompletion(Duration.ofSeconds(10)))
                    .isInstanceOf(TransferTimeoutException.class).hasMessageContaining("operation timeout")
                    .extracting(e -> ((TransferException) e).status()).isEqualTo(OperationStatus.ERRORED);
            Duration took = Duration.ofNanos(System.nanoTime() - start);
            assertThat(read.status()).isEqualTo(OperationStatus.ERRORED);
            assertThat(took).isBetween(Duration.ofMillis(250), Duration.ofSeconds(5));
            assertThat(connector.registeredBytes()).isZero();
            // The agent keeps the peer loaded for a next operation (it owns peer lifetime); close releases it.
            assertThat(connector.remoteAgentCount()).isEqualTo(1);
        }
    }

    @Test
    void refusedConnectionEndsErroredAtOnce() throws Exception {
        int closedPort;
        try (ServerSocket probe = new ServerSocket(0, 1, InetAddress.getLoopbackAddress())) {
            closedPort = probe.getLocalPort();
        }
        try (Connector connector = new Connector(embedded().build()); Descriptor target = Descriptor.allocate(64)) {
            RdmaMetadata metadata = RdmaMetadata.of(List.of(new SerializedDescriptor("cpu", 4096, 64)),
                    embeddedAgentMetadata("gone", "127.0.0.1", closedPort), "k", OperationKind.READ);
            ReadOperation read = connector.beginRead(metadata, target);
            assertThatThrownBy(() -> read.waitForCompletion(Duration.ofSeconds(10))).isInstanceOf(TransferException.class)
                    .hasMessageContaining("127.0.0.1:" + closedPort);
            assertThat(read.failure()).isInstanceOf(TransportFailureException.class)
                    .hasCauseInstanceOf(TransportException.class);
        }
    }

    @Test
    void aTransportsFailureReachesTheCallerOnlyAsAnExceptionOfTheApiWithTheSpisAsCause() throws Exception {
        int closedPort;
        try (ServerSocket probe = new ServerSocket(0, 1, InetAddress.getLoopbackAddress())) {
            closedPort = probe.getLocalPort();
        }
        try (Connector connector = new Connector(embedded().build()); Descriptor target = Descriptor.allocate(64)) {
            RdmaMetadata metadata = RdmaMetadata.of(List.of(new SerializedDescriptor("cpu", 4096, 64)),
                    embeddedAgentMetadata("gone", "127.0.0.1", closedPort), "k", OperationKind.READ);
            ReadOperation read = connector.beginRead(metadata, target);
            TransferException thrown = catchThrowableOfType(TransferException.class,
                    () -> read.waitForCompletion(Duration.ofSeconds(10)));
            Throwable failure = read.failure();
            // returned, thrown and through the future: the API's exceptions, the SPI's only as a cause
            assertThat(failure).isInstanceOf(TransportFailureException.class);
            assertThat(failure.getClass().getPackageName()).isEqualTo("io.nixlconnect");
            assertThat(((TransportFailureException) failure).backend()).isEqualTo(connector.backendName());
            assertThat(failure.getCause()).isInstanceOf(TransportException.class);
            assertThat(failure.getMessage()).contains(failure.getCause().getMessage());
            assertThat(thrown.getCause()).isSameAs(failure);
            assertThatThrownBy(() -> read.completion().get(10, TimeUnit.SECONDS))
                    .cause().isInstanceOf(TransferException.class).cause().isSameAs(failure);
        }
    }

    @Test
    void bindAddressPortAndAdvertisedAddressAreHonoured() throws Exception {
        int port;
        try (ServerSocket probe = new ServerSocket(0, 1, InetAddress.getLoopbackAddress())) {
            port = probe.getLocalPort();
        }
        try (Connector producer = new Connector(ConnectorOptions.builder().transports(EmbeddedSettings.defaults()
                .withBindAddress("127.0.0.1").withPort(port).withAdvertisedAddress("localhost")).build());
             Connector consumer = new Connector(embedded().build());
             Descriptor source = new Descriptor(TestData.random(100)); Descriptor target = Descriptor.allocate(100)) {
            assertThat(producer.transportStatus().endpoint()).isEqualTo("localhost:" + port);
            ReadableOperation readable = producer.createReadable(source);
            consumer.beginRead(readable.metadata(), target).waitForCompletion(Duration.ofSeconds(10));
            readable.waitForCompletion(Duration.ofSeconds(10)); // its notification may trail the reader's completion
            assertThat(target.toByteArray()).isEqualTo(source.toByteArray());
            assertThatThrownBy(() -> new Connector(ConnectorOptions.builder()
                    .transports(EmbeddedSettings.defaults().withPort(port)).build()))
                    .isInstanceOf(TransportFailureException.class)
                    .hasMessageStartingWith("The embedded transport failed to start: ")
                    .hasMessageContaining("cannot listen on 127.0.0.1:" + port)
                    .hasCauseExactlyInstanceOf(TransportException.class);
        }
        try (Connector defaults = new Connector(embedded().build())) {
            assertThat(defaults.transportStatus().endpoint()).startsWith("127.0.0.1:");
        }
    }

    @Test
    void inFlightLimitRefusesExtraOperations() {
        try (Connector connector = new Connector(embedded().maxInFlightOperations(2).build());
             Descriptor a = Descriptor.allocate(8); Descriptor b = Descriptor.allocate(8); Descriptor c = Descriptor.allocate(8)) {
            ReadableOperation first = connector.createReadable(a);
            ReadableOperation second = connector.createReadable(b);
            assertThatThrownBy(() -> connector.createReadable(c)).isInstanceOf(TooManyOperationsException.class)
                    .isInstanceOf(NixlConnectException.class).hasMessageContaining("Too many operations in flight")
                    .hasMessageContaining("maxInFlightOperations");
            first.close();
            connector.createReadable(c).close();
            assertThat(connector.inFlightOperations()).isEqualTo(1);
            second.close();
        }
    }

    @Test
    void listenersSeeStartAndFinish() {
        List<String> events = new CopyOnWriteArrayList<>();
        try (Connector producer = new Connector(embedded().build()); Connector consumer = new Connector(embedded().build());
             Descriptor source = Descriptor.allocate(32); Descriptor target = Descriptor.allocate(32)) {
            OperationListener listener = new OperationListener() {
                @Override
                public void operationStarted(Operation operation) {
                    events.add("start " + operation.getClass().getSimpleName());
                }

                @Override
                public void operationFinished(Operation operation) {
                    events.add("end " + operation.getClass().getSimpleName() + " " + operation.status() + " "
                            + operation.totalBytes());
                }
            };
            producer.addListener(listener);
            consumer.addListener(listener);
            consumer.addListener(new OperationListener() {
                @Override
                public void operationStarted(Operation operation) {
                    throw new IllegalStateException("a broken listener must not break transfers");
                }
            });
            ReadableOperation readable = producer.createReadable(source);
            consumer.beginRead(readable.metadata(), target).waitForCompletion(Duration.ofSeconds(10));
            readable.waitForCompletion(Duration.ofSeconds(10));
        }
        assertThat(events).containsExactlyInAnyOrder("start ReadableOperation", "start ReadOperation",
                "end ReadOperation DONE 32", "end ReadableOperation DONE 32");
    }

    @Test
    void gracefulShutdownRefusesNewWorkAndWaitsForInFlight() throws Exception {
        Connector producer = new Connector(embedded().build());
        try (Connector consumer = new Connector(embedded().build());
             Descriptor source = new Descriptor(TestData.random(1024)); Descriptor target = Descriptor.allocate(1024)) {
            ReadableOperation readable = producer.createReadable(source);
            // shutdown() runs while the readable waits: it stops accepting first, then waits for what is in flight.
            Thread shutdown = new Thread(() -> producer.shutdown(Duration.ofSeconds(10)));
            shutdown.start();
            await().atMost(Duration.ofSeconds(10)).until(() -> !producer.isAccepting());
            assertThatThrownBy(() -> producer.createReadable(source)).isInstanceOf(ConnectorClosedException.class)
                    .isInstanceOf(NixlConnectException.class).hasMessageContaining("shutting down");
            assertThat(shutdown.isAlive()).as("still waiting for the readable").isTrue();
            // The read arrives within the grace period, after new work was refused.
            consumer.beginRead(readable.metadata(), target).waitForCompletion(Duration.ofSeconds(10));
            shutdown.join();
            assertThat(readable.status()).isEqualTo(OperationStatus.COMPLETE);
            assertThat(target.toByteArray()).isEqualTo(source.toByteArray());
            assertThat(producer.isServing()).isFalse();
        }
        assertThat(producer.shutdown(Duration.ofMillis(1))).isTrue(); // already closed: nothing to wait for
    }

    @Test
    void closingTheConnectorCancelsEveryOperationStillInFlight() {
        Connector connector = new Connector(embedded().build());
        try (Descriptor buffer = Descriptor.allocate(64)) {
            List<PassiveOperation> operations = new java.util.ArrayList<>();
            for (int i = 0; i < 10; i++) {
                operations.add(i % 2 == 0 ? connector.createReadable(buffer) : connector.createWritable(buffer));
            }
            // Ended before the close: the newest, one in the middle and the oldest (whatever order they are kept in).
            for (int i : new int[] {9, 4, 0}) {
                operations.get(i).close();
            }
            assertThat(connector.inFlightOperations()).isEqualTo(7);

            connector.close();

            assertThat(operations).allSatisfy(operation -> assertThat(operation.status()).isEqualTo(OperationStatus.CANCELLED));
            assertThat(connector.inFlightOperations()).isZero();
        }
    }

    @Test
    void operationsStartedAndEndedFromManyThreadsLeaveNothingInFlight() throws Exception {
        try (Connector producer = new Connector(embedded().build()); Connector consumer = new Connector(embedded().build());
             Descriptor source = new Descriptor(TestData.random(256))) {
            List<Thread> threads = new java.util.ArrayList<>();
            List<Throwable> failures = new CopyOnWriteArrayList<>();
            for (int t = 0; t < 4; t++) {
                Thread thread = new Thread(() -> {
                    try (Descriptor target = Descriptor.allocate(256)) {
                        for (int i = 0; i < 100; i++) {
                            ReadableOperation readable = producer.createReadable(source);
                            if (i % 3 == 0) {
                                readable.close(); // ended without a peer
                                continue;
                            }
                            consumer.beginRead(readable.metadata(), target).waitForCompletion(Duration.ofSeconds(10));
                            readable.waitForCompletion(Duration.ofSeconds(10));
                        }
                    } catch (Throwable e) {
                        failures.add(e);
                    }
                });
                threads.add(thread);
                thread.start();
            }
            for (Thread thread : threads) {
                thread.join();
            }
            assertThat(failures).isEmpty();
            assertThat(producer.inFlightOperations()).isZero();
            assertThat(consumer.inFlightOperations()).isZero();
            assertThat(consumer.transportStatus().details()).containsEntry("transfersInFlight", 0)
                    .containsEntry("openWindows", 0);
            assertThat(producer.transportStatus().details()).containsEntry("openWindows", 0);
        }
    }

    @Test
    void passiveTimeoutEndsAnUnansweredOperation() {
        try (Connector connector = new Connector(embedded().passiveTimeout(Duration.ofMillis(200)).build());
             Descriptor buffer = Descriptor.allocate(8)) {
            WritableOperation writable = connector.createWritable(buffer);
            assertThatThrownBy(() -> writable.waitForCompletion(Duration.ofSeconds(5)))
                    .isInstanceOf(TransferException.class).hasMessageContaining("passive timeout");
            assertThat(writable.status()).isEqualTo(OperationStatus.ERRORED);
            assertThat(connector.registeredBytes()).isZero();
        }
    }

    @Test
    void remoteDescriptorsCannotBeUsedLocally() {
        try (Connector connector = new Connector(embedded().build())) {
            Descriptor remote = Descriptor.fromSerialized(new SerializedDescriptor("cpu", 4096, 16));
            assertThat(remote.isRemote()).isTrue();
            assertThatThrownBy(() -> connector.createReadable(remote)).isInstanceOf(IllegalArgumentException.class)
                    .hasMessageContaining("remote descriptor");
            assertThatThrownBy(() -> remote.registerMemory(connector)).isInstanceOf(IllegalStateException.class);
            assertThatThrownBy(remote::toByteArray).isInstanceOf(IllegalStateException.class);
        }
    }

    @Test
    void theEmbeddedTransportRefusesXpuMemoryClearly() {
        try (Connector connector = new Connector(embedded().build());
             Descriptor xpu = new Descriptor(4096, 64, "xpu:0", null)) {
            assertThat(xpu.device()).isEqualTo(Device.xpu(0));
            assertThat(xpu.metadata().device()).isEqualTo("xpu:0");
            assertThatThrownBy(xpu::toByteArray).hasMessageContaining("GPU memory");
            // The transport's own refusal reaches the caller only as the cause of the API's exception.
            assertThatThrownBy(() -> connector.createReadable(xpu)).isInstanceOf(TransportFailureException.class)
                    .hasMessageContaining("XPU").hasMessageContaining("NIXL backend")
                    .hasCauseExactlyInstanceOf(TransportException.class);
            assertThatThrownBy(() -> xpu.registerMemory(connector)).isInstanceOf(TransportFailureException.class)
                    .hasMessageContaining("XPU").hasCauseExactlyInstanceOf(TransportException.class)
                    .satisfies(e -> assertThat(((TransportFailureException) e).backend()).isEqualTo("embedded"));
            assertThat(connector.registeredBytes()).isZero();
            assertThat(connector.inFlightOperations()).isZero();
        }
    }

    @Test
    void descriptorsValidateTheirArguments() {
        assertThatThrownBy(() -> new Descriptor(0, 8, Device.CPU, null)).hasMessageContaining("ptr must not be 0");
        assertThatThrownBy(() -> new Descriptor(4096, -1, "cpu", null)).hasMessageContaining(">= 0");
        assertThatThrownBy(() -> new Descriptor(ByteBuffer.allocate(8))).hasMessageContaining("direct");
        assertThatThrownBy(() -> new Descriptor((byte[]) null)).hasMessageContaining("data must not be null");
        try (Descriptor gpu = new Descriptor(4096, 8, "cuda:1", null)) {
            assertThat(gpu.metadata()).isEqualTo(new SerializedDescriptor("cuda:1", 4096, 8));
            assertThatThrownBy(gpu::toByteArray).hasMessageContaining("GPU memory");
        }
        try (Descriptor empty = new Descriptor(new byte[0])) {
            assertThat(empty.size()).isZero();
            assertThat(empty.ptr()).isNotZero();
            assertThat(empty.toByteArray()).isEmpty();
        }
    }
}
