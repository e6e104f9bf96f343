package io.nixlconnect.dynamo;

import java.nio.file.Path;
import java.time.Duration;

/** Settings for tests: loopback, free ports, file discovery in a test's own directory, short timeouts. */
final class TestRuntimes {

    private TestRuntimes() {
    }

    static DynamoSettings.Builder file(Path directory) {
        return DynamoSettings.builder().discoveryBackend(DiscoveryBackend.FILE).fileKvDirectory(directory)
                .rpcHost("127.0.0.1").responseStreamHost("127.0.0.1").ackTimeout(Duration.ofSeconds(30))
                .callHomeTimeout(Duration.ofSeconds(30)).shutdownGrace(Duration.ofSeconds(5));
    }

    static DynamoRuntime fileRuntime(Path directory) {
        return DynamoRuntime.start(file(directory).build());
    }
}
