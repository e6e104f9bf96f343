package io.nixlconnect.sample.docs;

import static org.assertj.core.api.Assertions.assertThat;

import org.junit.jupiter.api.Test;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.boot.test.context.SpringBootTest;
import org.springframework.boot.test.web.server.LocalServerPort;

/** The getting-started snippets work as the guide says. */
@SpringBootTest(classes = io.nixlconnect.sample.SampleApplication.class,
        webEnvironment = SpringBootTest.WebEnvironment.RANDOM_PORT,
        properties = {"sample.tensor-size=8MB", "sample.run-demo=false", "sample.exit-after-demo=false"})
class GettingStartedTests {

    @LocalServerPort
    int port;

    @Autowired
    GreetingClient client;

    @Autowired
    io.nixlconnect.autoconfigure.NixlTransfers transfers;

    @Autowired
    io.nixlconnect.Connector connector;

    @Autowired
    org.springframework.web.client.RestClient.Builder http;

    @Test
    void aPublishedBufferIsReadThroughItsMetadata() {
        assertThat(client.fetch("http://127.0.0.1:" + port)).isEqualTo("hello from nixl-connect");
        assertThat(client.fetch("http://127.0.0.1:" + port)).isEqualTo("hello from nixl-connect");
    }

    @Test
    void ownedMemoryIsFreedThroughCompletionOnceThePeerHasRead() throws Exception {
        long before = connector.registeredBytes();
        String json = http.build().get().uri("http://127.0.0.1:" + port + "/tensor/metadata").retrieve().body(String.class);
        byte[] read = transfers.readBytes(io.nixlconnect.RdmaMetadata.fromJson(json));
        assertThat(read).hasSize(TensorMetadataController.size);
        assertThat(read[255]).isEqualTo((byte) 255);
        long deadline = System.nanoTime() + java.time.Duration.ofSeconds(10).toNanos();
        while (connector.registeredBytes() > before && System.nanoTime() < deadline) {
            Thread.sleep(5); // the passive side completes when the peer's notification arrives
        }
        assertThat(connector.registeredBytes()).isEqualTo(before);
    }
}
