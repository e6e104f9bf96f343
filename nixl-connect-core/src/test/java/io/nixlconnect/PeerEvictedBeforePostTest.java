package io.nixlconnect;

import static org.assertj.core.api.Assertions.assertThat;

import io.nixlconnect.transport.embedded.EmbeddedSettings;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import org.junit.jupiter.api.Test;

/**
 * A consumer whose bounded peer cache is smaller than the peers its concurrent operations load: a peer may be evicted
 * by another operation's load between this operation's load and its post. The operation loads it again and posts
 * once more, so no read fails for it (the fleet harness saw one such failure in 46,000 reads before).
 */
class PeerEvictedBeforePostTest {

    private static final int THREADS = 8;
    private static final int READS_PER_THREAD = 150;

    @Test
    void readsFromMorePeersThanTheCacheHoldsAtConcurrencyEightAllComplete() throws Exception {
        EmbeddedSettings oneCachedPeer = EmbeddedSettings.defaults().withPeerLifecycle(Duration.ofSeconds(30), 1);
        List<Connector> producers = new ArrayList<>();
        ExecutorService threads = Executors.newFixedThreadPool(THREADS);
        try (Connector consumer = new Connector(ConnectorOptions.builder().workerId("evicting-consumer")
                .transports(oneCachedPeer).build())) {
            for (int i = 0; i < 3; i++) {
                producers.add(new Connector(ConnectorOptions.builder().workerId("producer-" + i)
                        .transports(EmbeddedSettings.defaults()).build()));
            }
            List<Future<Integer>> failures = new ArrayList<>();
            for (int t = 0; t < THREADS; t++) {
                int thread = t;
                failures.add(threads.submit(() -> {
                    int failed = 0;
                    for (int i = 0; i < READS_PER_THREAD; i++) {
                        Connector producer = producers.get((thread + i) % producers.size());
                        byte[] tensor = new byte[4096];
                        tensor[0] = (byte) i;
                        try (Descriptor source = new Descriptor(tensor);
                             ReadableOperation readable = producer.createReadable(source);
                             Descriptor target = new Descriptor(new byte[4096])) {
                            try {
                                consumer.read(readable.metadata(), target);
                            } catch (NixlConnectException e) {
                                failed++;
                            }
                        }
                    }
                    return failed;
                }));
            }
            int failed = 0;
            for (Future<Integer> f : failures) {
                failed += f.get();
            }
            assertThat(failed).as("reads failed of " + THREADS * READS_PER_THREAD).isZero();
            assertThat(consumer.peerStatistics().evictions()).as("the cache of one evicted peers all along")
                    .isGreaterThan(0);
        } finally {
            threads.shutdownNow();
            for (Connector producer : producers) {
                producer.close();
            }
        }
    }
}
