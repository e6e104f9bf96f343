package io.nixlconnect.transport.embedded;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assumptions.assumeThat;

import io.nixlconnect.Connector;
import io.nixlconnect.ConnectorOptions;
import io.nixlconnect.Descriptor;
import io.nixlconnect.ReadableOperation;
import io.nixlconnect.SerializedDescriptor;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * A reader granted a same-host copy cannot outlive the window: closing the readable revokes the grant (the reader
 * is told on its connection, and cut off if it does not stop), returns at once without an exception, and memory
 * the reader's copy could still reach is kept until the agent closes rather than freed.
 */
@Timeout(value = 60, unit = TimeUnit.SECONDS)
class EmbeddedGrantRevocationTest {

    /** Before: the close waited 30 s for the silent reader, threw, and the descriptor's memory was freed at once. */
    @Test
    void closingAReadableWhoseReaderHoldsAGrantAndNeverReportsRevokesIt() throws Exception {
        try (Connector owner = new Connector(ConnectorOptions.builder().transports(EmbeddedSettings.defaults())
                .workerId("owner").build());
             Descriptor published = new Descriptor(EmbeddedCredentialTest.random(1 << 20))) {
            ReadableOperation readable = owner.createReadable(published);
            EmbeddedMetadata metadata = EmbeddedMetadata.decode(readable.metadata().decodeNixlMetadata());
            SerializedDescriptor region = readable.metadata().descriptors().get(0);
            try (RawPeer reader = new RawPeer(metadata.port())) {
                reader.send(RawPeer.request(Wire.READ_GRANT, metadata.agent(),
                        RawPeer.utf8(readable.metadata().notificationKey()), region.ptr(), region.size()))
                        .send(GrantProof.challenge());
                int status = reader.readBytes(1)[0];
                assumeThat(status).as("same-host copy is available here").isEqualTo(Wire.OK);
                reader.readBytes(16); // the granting pid and its proof; the reader now "copies" and never reports
                CompletableFuture<Void> closing = CompletableFuture.runAsync(readable::close);
                closing.get(10, TimeUnit.SECONDS); // returns without an exception, long before 30 s
                RawPeer.Answer told = reader.answer(5000);
                assertThat(told.kind()).isEqualTo("ERROR");
                assertThat(told.message()).isEqualTo(Wire.REVOKED_MESSAGE);
                assertThat(reader.closedWithin(5000)).as("cut off: it did not stop when told").isTrue();
            }
        }
    }
}
