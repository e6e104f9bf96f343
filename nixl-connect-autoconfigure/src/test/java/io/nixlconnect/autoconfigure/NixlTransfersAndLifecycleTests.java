package io.nixlconnect.autoconfigure;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

import io.nixlconnect.Connector;
import io.nixlconnect.ConnectorClosedException;
import io.nixlconnect.Descriptor;
import io.nixlconnect.OperationStatus;
import io.nixlconnect.RdmaMetadata;
import io.nixlconnect.ReadOperation;
import io.nixlconnect.ReadableOperation;
import io.nixlconnect.WaitTimeoutException;
import io.nixlconnect.WritableOperation;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.function.BooleanSupplier;
import org.junit.jupiter.api.Test;
import org.springframework.boot.autoconfigure.AutoConfigurations;
import org.springframework.boot.jackson.autoconfigure.JacksonAutoConfiguration;
import org.springframework.boot.test.context.runner.ApplicationContextRunner;
import org.springframework.context.ConfigurableApplicationContext;
import tools.jackson.databind.json.JsonMapper;

class NixlTransfersAndLifecycleTests {

    private final ApplicationContextRunner runner = new ApplicationContextRunner()
            .withConfiguration(AutoConfigurations.of(NixlConnectAutoConfiguration.class, JacksonAutoConfiguration.class));

    @Test
    void publishAndReadBytesBetweenTwoApplications() {
        byte[] tensor = "sixteen bytes!!!".getBytes(StandardCharsets.US_ASCII);
        runner.run(producer -> runner.run(consumer -> {
            NixlTransfers source = producer.getBean(NixlTransfers.class);
            ReadableOperation published = source.publish(tensor);
            RdmaMetadata metadata = published.metadata();
            assertThat(metadata.totalSize()).isEqualTo(16);

            assertThat(consumer.getBean(NixlTransfers.class).readBytes(metadata)).isEqualTo(tensor);
            assertThat(source.await(published).status()).isEqualTo(OperationStatus.COMPLETE);
            // The copy publish(byte[]) made is released with the operation.
            assertThat(producer.getBean(Connector.class).registeredBytes()).isZero();
        }));
    }

    @Test
    void publishToSeveralReadersFreesTheCopyAfterTheLast() {
        byte[] tensor = "fanned out to three readers".getBytes(StandardCharsets.US_ASCII);
        runner.run(producer -> runner.run(consumer -> {
            NixlTransfers source = producer.getBean(NixlTransfers.class);
            NixlTransfers reader = consumer.getBean(NixlTransfers.class);
            ReadableOperation published = source.publish(3, tensor);
            assertThat(published.readers()).isEqualTo(3);
            for (int i = 1; i <= 3; i++) {
                assertThat(reader.readBytes(published.metadata())).isEqualTo(tensor);
            }
            assertThat(source.await(published).readsCompleted()).isEqualTo(3);
            assertThat(producer.getBean(Connector.class).registeredBytes()).isZero();

            try (Descriptor buffer = new Descriptor(tensor)) {
                ReadableOperation twice = producer.getBean(Connector.class).createReadable(2, List.of(buffer));
                reader.readInto(twice.metadata()).forEach(Descriptor::close);
                reader.readInto(twice.metadata()).forEach(Descriptor::close);
                assertThat(source.await(twice).status()).isEqualTo(OperationStatus.COMPLETE);
            }
        }));
    }

    @Test
    void slicesOfOneRegisteredBufferTravelBetweenTwoApplications() {
        byte[] tensor = "0123456789abcdefghijklmnopqrstuv".getBytes(StandardCharsets.US_ASCII);
        runner.run(producer -> runner.run(consumer -> {
            NixlTransfers source = producer.getBean(NixlTransfers.class);
            NixlTransfers reader = consumer.getBean(NixlTransfers.class);
            Connector producing = producer.getBean(Connector.class);
            Connector reading = consumer.getBean(Connector.class);
            try (Descriptor buffer = new Descriptor(tensor); Descriptor landing = Descriptor.allocate(32)) {
                buffer.registerMemory(producing);
                ReadableOperation head = producing.createReadable(buffer.slice(0, 10));
                ReadableOperation tail = producing.createReadable(buffer.slice(20, 12));
                assertThat(producing.registeredBytes()).as("one registration for both slices").isEqualTo(32);
                reader.await(reading.beginRead(head.metadata(), landing.slice(0, 10)));
                reader.await(reading.beginRead(tail.metadata(), landing.slice(10, 12)));
                source.await(head);
                source.await(tail);
                assertThat(landing.asByteBuffer(0, 22)).isEqualTo(java.nio.ByteBuffer.wrap(
                        "0123456789klmnopqrstuv".getBytes(StandardCharsets.US_ASCII)));
            }
            assertThat(producing.registeredBytes()).isZero();
        }));
    }

    @Test
    void readIntoReturnsOneFilledBufferPerRemoteDescriptor() {
        runner.run(producer -> runner.run(consumer -> {
            try (Descriptor first = new Descriptor(new byte[] {1, 2, 3}); Descriptor second = new Descriptor(new byte[] {9})) {
                ReadableOperation published = producer.getBean(Connector.class).createReadable(first, second);
                List<Descriptor> buffers = consumer.getBean(NixlTransfers.class).readInto(published.metadata());
                try {
                    assertThat(buffers).hasSize(2);
                    assertThat(buffers.get(0).toByteArray()).containsExactly(1, 2, 3);
                    assertThat(buffers.get(1).toByteArray()).containsExactly(9);
                } finally {
                    buffers.forEach(Descriptor::close);
                }
                published.waitForCompletion(Duration.ofSeconds(10));
            }
        }));
    }

    @Test
    void writeIntoAPeersWritableBuffer() {
        runner.run(receiver -> runner.run(sender -> {
            try (Descriptor target = Descriptor.allocate(4); Descriptor payload = new Descriptor(new byte[] {4, 3, 2, 1})) {
                NixlTransfers receiving = receiver.getBean(NixlTransfers.class);
                WritableOperation writable = receiver.getBean(Connector.class).createWritable(target);
                sender.getBean(NixlTransfers.class).await(
                        sender.getBean(Connector.class).beginWrite(payload, writable.metadata()));
                receiving.await(writable);
                assertThat(target.toByteArray()).containsExactly(4, 3, 2, 1);
            }
        }));
    }

    @Test
    void blockingReadAndWriteReturnOnceTheBytesHaveLanded() {
        runner.run(peer -> runner.run(self -> {
            Connector remote = peer.getBean(Connector.class);
            Connector local = self.getBean(Connector.class);
            NixlTransfers remoteTransfers = peer.getBean(NixlTransfers.class);
            try (Descriptor source = new Descriptor(new byte[] {1, 2, 3, 4}); Descriptor target = Descriptor.allocate(4)) {
                ReadableOperation readable = remote.createReadable(source);
                local.read(readable.metadata(), target);
                assertThat(target.toByteArray()).containsExactly(1, 2, 3, 4);
                assertThat(remoteTransfers.await(readable).status()).isEqualTo(OperationStatus.COMPLETE);
            }
            try (Descriptor target = Descriptor.allocate(4); Descriptor payload = new Descriptor(new byte[] {4, 3, 2, 1})) {
                WritableOperation writable = remote.createWritable(target);
                local.write(payload, writable.metadata());
                remoteTransfers.await(writable);
                assertThat(target.toByteArray()).containsExactly(4, 3, 2, 1);
            }
            assertThat(local.inFlightOperations()).isZero();
        }));
    }

    @Test
    void awaitGivesUpAfterTheOperationTimeoutButTheOperationGoesOn() {
        runner.withPropertyValues("nixl.connect.operation-timeout=100ms").run(context -> {
            NixlTransfers transfers = context.getBean(NixlTransfers.class);
            try (ReadableOperation unread = transfers.publish(new byte[4])) {
                assertThatThrownBy(() -> transfers.await(unread)).isInstanceOf(WaitTimeoutException.class)
                        .hasMessageContaining("PT0.1S");
                assertThat(unread.status()).isEqualTo(OperationStatus.INITIALIZED);
            }
        });
    }

    @Test
    void shutdownLetsInFlightOperationsFinishWithinTheGracePeriod() {
        runner.withPropertyValues("nixl.connect.shutdown.grace-period=10s").run(producer -> runner.run(consumer -> {
            ReadableOperation published = producer.getBean(NixlTransfers.class).publish(new byte[] {7, 7});
            Connector connector = producer.getBean(Connector.class);
            CompletableFuture<Void> closing = CompletableFuture.runAsync(
                    ((ConfigurableApplicationContext) producer.getSourceApplicationContext())::close);
            awaitUntil(() -> !connector.isAccepting());
            assertThatThrownBy(() -> connector.createReadable(Descriptor.allocate(1)))
                    .isInstanceOf(ConnectorClosedException.class).hasMessageContaining("shutting down");

            try (Descriptor target = Descriptor.allocate(2);
                 ReadOperation read = consumer.getBean(Connector.class).beginRead(published.metadata(), target)) {
                read.waitForCompletion(Duration.ofSeconds(5));
                assertThat(target.toByteArray()).containsExactly(7, 7);
            }
            closing.get(5, TimeUnit.SECONDS); // well before the 10s grace period: it ended as soon as the read did
            assertThat(published.status()).isEqualTo(OperationStatus.COMPLETE);
            assertThat(connector.isServing()).isFalse();
        }));
    }

    @Test
    void shutdownCancelsWhatIsLeftAfterTheGracePeriod() {
        ReadableOperation[] published = new ReadableOperation[1];
        long[] closeStarted = new long[1];
        runner.withPropertyValues("nixl.connect.shutdown.grace-period=300ms").run(context -> {
            published[0] = context.getBean(NixlTransfers.class).publish(new byte[8]);
            closeStarted[0] = System.nanoTime();
        });
        assertThat(Duration.ofNanos(System.nanoTime() - closeStarted[0])).isGreaterThanOrEqualTo(Duration.ofMillis(300));
        assertThat(published[0].status()).isEqualTo(OperationStatus.CANCELLED);
    }

    @Test
    void lifecycleRefusesToRestartAStoppedConnector() {
        runner.run(context -> {
            NixlConnectorLifecycle lifecycle = context.getBean(NixlConnectorLifecycle.class);
            lifecycle.stop();
            assertThat(lifecycle.isRunning()).isFalse();
            assertThat(context.getBean(Connector.class).isServing()).isFalse();
            assertThatThrownBy(lifecycle::start).isInstanceOf(IllegalStateException.class)
                    .hasMessageContaining("cannot be restarted");
        });
    }

    @Test
    void applicationJsonMapperWritesAndReadsMetadataExactlyLikeToJson() {
        runner.run(context -> {
            JsonMapper mapper = context.getBean(JsonMapper.class);
            try (ReadableOperation published = context.getBean(NixlTransfers.class).publish(new byte[32])) {
                RdmaMetadata metadata = published.metadata();
                String json = mapper.writeValueAsString(metadata);
                assertThat(json).isEqualTo(metadata.toJson());
                assertThat(mapper.readValue(json, RdmaMetadata.class)).isEqualTo(metadata);
            }
        });
    }

    private static void awaitUntil(BooleanSupplier condition) {
        await().atMost(Duration.ofSeconds(5)).pollInterval(Duration.ofMillis(5)).until(condition::getAsBoolean);
    }
}
