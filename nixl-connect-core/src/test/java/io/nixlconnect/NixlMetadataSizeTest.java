package io.nixlconnect;

import static org.assertj.core.api.Assertions.assertThat;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import io.nixlconnect.transport.nixl.NixlSettings;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;

/**
 * A readable's agent metadata describes this operation's registrations and the connection, not everything the agent
 * has registered: a worker with 10,000 regions registered publishes a single-descriptor readable in at most 2 KiB of
 * JSON (NIXL's full metadata would be ~440 KB, ~44 KiB of JSON), and a reader still reads it byte-exact.
 */
@Tag(TestTags.NIXL)
class NixlMetadataSizeTest {

    private static final String LIBRARY_DIR = System.getenv("NIXL_LIBRARY_DIR");
    private static final Duration WAIT = Duration.ofSeconds(60);
    private static final int REGISTERED = 10_000;

    @BeforeAll
    static void requireNixl() {
        assumeTrue(LIBRARY_DIR != null && !LIBRARY_DIR.isBlank(),
                "NIXL_LIBRARY_DIR is not set: run `eval \"$(.ci/nixl-setup.sh)\"` to test against a real NIXL");
    }

    private static Connector connector(String name) {
        return new Connector(ConnectorOptions.builder().workerId(name)
                .transports(NixlSettings.defaults().withLibraryDir(Path.of(LIBRARY_DIR))).build());
    }

    @Test
    void aSingleDescriptorReadableStaysSmallWithTenThousandRegionsRegistered() {
        List<Descriptor> others = new ArrayList<>(REGISTERED);
        try (Connector producer = connector("md-producer"); Connector consumer = connector("md-consumer");
             Descriptor payload = Descriptor.allocate(4096); Descriptor target = Descriptor.allocate(4096);
             Descriptor pool = Descriptor.allocate(64L * 1024)) {
            try {
                for (int i = 0; i < REGISTERED; i++) {
                    Descriptor other = Descriptor.allocate(64);
                    others.add(other);
                    other.registerMemory(producer);
                }
                byte[] data = new byte[4096];
                new Random(3).nextBytes(data);
                payload.asByteBuffer().put(data);

                ReadableOperation readable = producer.createReadable(payload);
                String json = readable.metadata().toJson();
                assertThat(json.getBytes(StandardCharsets.UTF_8).length).as("JSON of a single-descriptor readable")
                        .isLessThanOrEqualTo(2048);
                consumer.read(RdmaMetadata.fromJson(json), target);
                readable.waitForCompletion(WAIT);
                assertThat(target.toByteArray()).isEqualTo(data);

                // A block list over a registered pool: one registration described, the same small agent metadata.
                pool.registerMemory(producer);
                List<Descriptor> blocks = new ArrayList<>();
                for (int i = 0; i < 16; i++) {
                    blocks.add(pool.slice(i * 4096L, 1024));
                }
                ReadableOperation blockList = producer.createReadable(blocks.subList(0, 4));
                RdmaMetadata published = blockList.metadata();
                assertThat(published.decodeNixlMetadata().length).as("agent metadata of a block list")
                        .isLessThan(4096);
                blockList.close();
            } finally {
                others.forEach(Descriptor::close);
            }
        }
    }
}
