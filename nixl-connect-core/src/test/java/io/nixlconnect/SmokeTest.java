package io.nixlconnect;

import static org.assertj.core.api.Assertions.assertThat;

import java.time.Duration;
import org.junit.jupiter.api.Test;

class SmokeTest {

    @Test
    void readAndWriteBetweenTwoConnectors() {
        try (Connector producer = new Connector(ConnectorOptions.builder().workerId("p").backend(TransportBackend.EMBEDDED).build());
             Connector consumer = new Connector(ConnectorOptions.builder().workerId("c").backend(TransportBackend.EMBEDDED).build())) {
            byte[] data = TestData.random(4096);
            try (Descriptor source = new Descriptor(data); Descriptor target = Descriptor.allocate(4096)) {
                ReadableOperation readable = producer.createReadable(source);
                RdmaMetadata metadata = RdmaMetadata.fromJson(readable.metadata().toJson());
                ReadOperation read = consumer.beginRead(metadata, target);
                read.waitForCompletion(Duration.ofSeconds(10));
                readable.waitForCompletion(Duration.ofSeconds(10));
                assertThat(target.toByteArray()).isEqualTo(data);
                assertThat(readable.status()).isEqualTo(OperationStatus.COMPLETE);
                assertThat(read.status()).isEqualTo(OperationStatus.COMPLETE);

                byte[] more = TestData.random(4096);
                try (Descriptor payload = new Descriptor(more)) {
                    WritableOperation writable = producer.createWritable(source);
                    WriteOperation write = consumer.beginWrite(payload, writable.metadata());
                    write.waitForCompletion(Duration.ofSeconds(10));
                    writable.waitForCompletion(Duration.ofSeconds(10));
                    assertThat(source.toByteArray()).isEqualTo(more);
                }
            }
            assertThat(producer.registeredBytes()).isZero();
            assertThat(consumer.registeredBytes()).isZero();
            assertThat(producer.inFlightOperations()).isZero();
        }
    }
}
