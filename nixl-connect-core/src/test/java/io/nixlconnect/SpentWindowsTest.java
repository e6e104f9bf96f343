package io.nixlconnect;

import static org.assertj.core.api.Assertions.assertThat;

import java.nio.charset.StandardCharsets;
import org.junit.jupiter.api.Test;

/** Issue 22 item 2: which windows a connection has used up, remembered without an object per operation. */
class SpentWindowsTest {

    @Test
    void countsCompletedTransfersPerPeerAndKey() {
        SpentWindows spent = new SpentWindows();
        assertThat(spent.completed("producer-1", "k1")).isZero();
        spent.record("producer-1", "k1");
        spent.record("producer-1", "k1");
        spent.record("producer-2", "k2");
        assertThat(spent.completed("producer-1", "k1")).isEqualTo(2);
        assertThat(spent.completed("producer-2", "k2")).isEqualTo(1);
        assertThat(spent.completed("producer-2", "k1")).as("the same key from another peer").isZero();
        assertThat(spent.completed("producer-1", "k2")).isZero();
    }

    @Test
    void remembersAtLeastOneGenerationOfWindowsAndForgetsOlderOnes() {
        SpentWindows spent = new SpentWindows();
        spent.record("p", "first");
        for (int i = 0; i < SpentWindows.GENERATION; i++) {
            spent.record("p", "key-" + i);
        }
        assertThat(spent.completed("p", "first")).as("in the previous generation").isEqualTo(1);
        spent.record("p", "first"); // counted on from the previous generation
        assertThat(spent.completed("p", "first")).isEqualTo(2);
        for (int i = 0; i < 2 * SpentWindows.GENERATION; i++) {
            spent.record("p", "later-" + i);
        }
        assertThat(spent.completed("p", "key-0")).as("two generations later").isZero();
        assertThat(spent.completed("p", "later-" + (2 * SpentWindows.GENERATION - 1))).isEqualTo(1);
    }

    @Test
    void aFanOutKeySaysHowManyReadersItServesAndOthersServeOne() {
        String single = new String(NotificationKeys.next(1), StandardCharsets.US_ASCII);
        String fanOut = new String(NotificationKeys.next(3), StandardCharsets.US_ASCII);
        assertThat(single).hasSize(32);
        assertThat(fanOut).hasSize(35).endsWith(".r3");
        assertThat(NotificationKeys.readersOf(single)).isEqualTo(1);
        assertThat(NotificationKeys.readersOf(fanOut)).isEqualTo(3);
        assertThat(NotificationKeys.readersOf(fanOut.substring(0, 32) + ".r12")).isEqualTo(12);
        // Keys of other producers (Python's are UUIDs) and malformed marks serve one transfer.
        assertThat(NotificationKeys.readersOf("0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0")).isEqualTo(1);
        assertThat(NotificationKeys.readersOf("abc.r")).isEqualTo(1);
        assertThat(NotificationKeys.readersOf("abc.rx")).isEqualTo(1);
        assertThat(NotificationKeys.readersOf("abc.r0")).isEqualTo(1);
        assertThat(NotificationKeys.readersOf("abc.r99999999999")).isEqualTo(1);
    }

    @Test
    void aConnectorRefusesSpentMetadataButReadsAFanOutReadableAsOftenAsItServes() {
        byte[] data = TestData.random(4096);
        try (Connector producer = new Connector("spent-producer"); Connector consumer = new Connector("spent-consumer");
             Descriptor source = new Descriptor(data); Descriptor target = Descriptor.allocate(data.length)) {
            ReadableOperation once = producer.createReadable(source);
            consumer.read(once.metadata(), target);
            once.waitForCompletion(java.time.Duration.ofSeconds(30));
            ReadOperation again = consumer.beginRead(once.metadata(), target);
            assertThat(again.status()).isEqualTo(OperationStatus.ERRORED);
            assertThat(again.failure()).hasMessageContaining("the window this metadata describes is gone");

            ReadableOperation twice = producer.createReadable(2, source);
            consumer.read(twice.metadata(), target);
            consumer.read(twice.metadata(), target);
            twice.waitForCompletion(java.time.Duration.ofSeconds(30));
            assertThat(target.toByteArray()).isEqualTo(data);
            ReadOperation third = consumer.beginRead(twice.metadata(), target);
            assertThat(third.status()).isEqualTo(OperationStatus.ERRORED);
            assertThat(third.failure()).hasMessageContaining("Metadata serves 2 transfers (fan-out)");
        }
    }
}
