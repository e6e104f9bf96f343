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

    @Test
    void aPublishedBufferIsReadThroughItsMetadata() {
        assertThat(client.fetch("http://127.0.0.1:" + port)).isEqualTo("hello from nixl-connect");
        assertThat(client.fetch("http://127.0.0.1:" + port)).isEqualTo("hello from nixl-connect");
    }
}
