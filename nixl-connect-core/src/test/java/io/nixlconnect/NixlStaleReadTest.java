package io.nixlconnect;

import static org.assertj.core.api.Assertions.assertThat;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import io.nixlconnect.transport.nixl.NixlSettings;
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * Issue 22 item 2: a service publishes a buffer per request and closes it once read (the documented pattern); a
 * consumer that reads the same metadata again (a retry, a duplicate message) must get a {@link TransferException}
 * saying the window is gone, and every later read with fresh metadata from that producer must still succeed. Before
 * the fix the stale read broke UCX's endpoint to the producer, NIXL marked the peer disconnected, and every later
 * read failed ({@code could not load remote agent metadata … ERROR_INVALID_PARAM}) until the consumer restarted.
 *
 * <p>Producer and consumer are two child JVMs ({@link #main}); a crash fails the test instead of killing this JVM.
 * Over {@code UCX_TLS=tcp,self} and over the default transports.
 */
@Tag(TestTags.CROSS_PROCESS)
@Tag(TestTags.NIXL)
@Timeout(value = 240, unit = TimeUnit.SECONDS)
class NixlStaleReadTest {

    private static final String LIBRARY_DIR = System.getenv("NIXL_LIBRARY_DIR");
    private static final int SIZE = 1 << 20;
    private static final int FRESH_READS = 5;
    private static final int BIG = 64 << 20;

    /**
     * The same consumer reads spent metadata: refused before a byte moves, so the producer's freed memory is not
     * reached (over UCX's TCP the stale read made the producer's worker copy from the unmapped window: SIGSEGV, exit
     * 134, in every run before this); fresh metadata then reads as before.
     */
    @ParameterizedTest(name = "UCX_TLS={0}")
    @ValueSource(strings = {"tcp,self", ""})
    void spentMetadataReadAgainIsRefusedAndFreshReadsSucceed(String ucxTls) throws Exception {
        assumeNixl();
        try (PeerLines producer = start("producer", ucxTls); PeerLines consumer = start("consumer", ucxTls)) {
            producer.next("READY");
            consumer.next("READY");

            String spent = publish(producer, 1);
            consumer.send("read consumer " + spent);
            assertThat(consumer.next("RESULT ")).isEqualTo("RESULT OK " + PeerProcess.crcOfData(1, SIZE));
            assertThat(producer.next("DONE ")).isEqualTo("DONE COMPLETE");

            consumer.send("read consumer " + spent); // a retry: the window was closed after the first read
            String stale = consumer.next("RESULT ");
            assertThat(stale).startsWith("RESULT FAIL " + TransferException.class.getName() + " ");
            assertThat(stale).as("what the refusal of spent metadata says")
                    .contains("the window this metadata describes is gone: this connector already completed a transfer"
                            + " with it").doesNotContain("UCX_TLS");

            assertFreshReadsSucceed(producer, consumer, "consumer");
            assertThat(health(consumer, "consumer")).contains("peersReconnected=0 ");
            assertBothExitCleanly(producer, consumer);
        }
    }

    /**
     * The duplicate message reaches another worker, which has never read that metadata: NIXL posts it and the peer's
     * endpoint fails (here UCX refuses the released memory key), NIXL marks the peer disconnected. Before the fix
     * every later read from that producer failed ({@code could not load remote agent metadata … ERROR_INVALID_PARAM},
     * with a hint at UCX_TLS) until the process restarted; now the error says the window is gone, the peer's
     * connection is made anew with the next metadata, and health counts it. Not over UCX's TCP: there such a read
     * reaches the producer's freed memory, which no reader-side check can stop (docs/security.md).
     */
    @Test
    void aFailedTransferLeavesThePeerUsableForFreshMetadata() throws Exception {
        assumeNixl();
        try (PeerLines producer = start("producer", ""); PeerLines consumer = start("consumer", "")) {
            producer.next("READY");
            consumer.next("READY");

            // 64 MiB: glibc maps it on its own and unmaps it when freed, so the stale read finds no memory there (a
            // smaller window's freed memory may still be mapped, and cross-memory attach would read what is there).
            producer.send("publish-big 1");
            String spent = producer.next("META ").substring(5);
            consumer.send("read consumer " + spent);
            assertThat(consumer.next("RESULT ")).isEqualTo("RESULT OK " + PeerProcess.crcOfData(1, BIG));
            assertThat(producer.next("DONE ")).isEqualTo("DONE COMPLETE");
            consumer.send("read other " + publish(producer, 2)); // the other worker knows the producer
            assertThat(consumer.next("RESULT ")).isEqualTo("RESULT OK " + PeerProcess.crcOfData(2, SIZE));

            consumer.send("read other " + spent);
            String failed = consumer.next("RESULT ");
            assertThat(failed).startsWith("RESULT FAIL " + TransferException.class.getName() + " ");
            assertThat(failed).as("what the failure says").contains("the window this metadata describes is gone")
                    .contains("made anew with the next metadata").doesNotContain("UCX_TLS");

            assertFreshReadsSucceed(producer, consumer, "other");
            assertThat(health(consumer, "other")).as("the other worker's health counts the peer it reconnected")
                    .contains("peersReconnected=1 ").contains("peersToReconnect=0 ");
            assertBothExitCleanly(producer, consumer);
        }
    }

    private static void assumeNixl() {
        assumeTrue(LIBRARY_DIR != null && !LIBRARY_DIR.isBlank(),
                "NIXL_LIBRARY_DIR is not set: run `eval \"$(.ci/nixl-setup.sh)\"` to test against a real NIXL");
    }

    private static void assertFreshReadsSucceed(PeerLines producer, PeerLines consumer, String connector)
            throws InterruptedException {
        List<String> fresh = new ArrayList<>();
        List<String> expected = new ArrayList<>();
        for (int i = 0; i < FRESH_READS; i++) {
            consumer.send("read " + connector + " " + publish(producer, 10 + i));
            fresh.add(consumer.next("RESULT "));
            expected.add("RESULT OK " + PeerProcess.crcOfData(10 + i, SIZE));
        }
        assertThat(fresh).as("fresh reads from the same producer afterwards").isEqualTo(expected);
    }

    private static String health(PeerLines consumer, String connector) throws InterruptedException {
        consumer.send("health " + connector);
        String health = consumer.next("HEALTH ");
        assertThat(health).contains("serving=true");
        return health;
    }

    private static void assertBothExitCleanly(PeerLines producer, PeerLines consumer) throws InterruptedException {
        consumer.send("exit");
        producer.send("exit");
        assertThat(consumer.process().waitFor(60, TimeUnit.SECONDS)).isTrue();
        assertThat(consumer.process().exitValue()).as("consumer exit status").isZero();
        assertThat(producer.process().waitFor(60, TimeUnit.SECONDS)).isTrue();
        assertThat(producer.process().exitValue()).as("producer exit status").isZero();
    }

    /** A fresh readable of {@link #SIZE} bytes from {@code seed}; its metadata JSON. */
    private static String publish(PeerLines producer, long seed) throws InterruptedException {
        assertThat(producer.process().isAlive()).as("the producer is alive (exit status %s)",
                producer.process().isAlive() ? "-" : producer.process().exitValue()).isTrue();
        producer.send("publish " + seed);
        return producer.next("META ").substring(5);
    }

    private static PeerLines start(String role, String ucxTls) throws Exception {
        List<String> command = ChildJvm.command("-Xmx256m", "-XX:ErrorFile=/dev/null", "-cp",
                System.getProperty("java.class.path"), NixlStaleReadTest.class.getName(), role);
        ProcessBuilder builder = new ProcessBuilder(command);
        if (ucxTls.isEmpty()) {
            builder.environment().remove("UCX_TLS");
        } else {
            builder.environment().put("UCX_TLS", ucxTls);
        }
        return PeerLines.start(builder, role);
    }

    /**
     * {@code producer}: {@code publish SEED} → "META json", then "DONE status" once read; the readable and its
     * descriptor are closed when it ends, as a service does per request. {@code consumer} (two connectors,
     * {@code consumer} and {@code other}): {@code read CONNECTOR JSON} → "RESULT OK crc" or "RESULT FAIL
     * exceptionClass message"; {@code health CONNECTOR} → "HEALTH key=value …".
     */
    public static void main(String[] args) throws Exception {
        PrintStream out = new PrintStream(System.out, true, StandardCharsets.UTF_8);
        String role = args[0];
        Map<String, Connector> connectors = new java.util.LinkedHashMap<>();
        connectors.put(role, connector(role));
        if (role.equals("consumer")) {
            connectors.put("other", connector("other"));
        }
        try (BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8))) {
            Connector connector = connectors.get(role);
            out.println("READY");
            String line;
            while ((line = in.readLine()) != null) {
                String[] words = line.trim().split("\\s+", 3);
                switch (words[0]) {
                    case "publish", "publish-big" -> {
                        Descriptor source = new Descriptor(PeerProcess.data(Long.parseLong(words[1]),
                                words[0].equals("publish") ? SIZE : BIG));
                        ReadableOperation readable = connector.createReadable(source);
                        out.println("META " + readable.metadata().toJson());
                        readable.completion().whenComplete((ok, error) -> {
                            readable.close();
                            source.close();
                            out.println("DONE " + readable.status().name());
                        });
                    }
                    case "read" -> {
                        RdmaMetadata metadata = RdmaMetadata.fromJson(words[2]);
                        try (Descriptor target = Descriptor.allocate(metadata.totalSize())) {
                            try {
                                connectors.get(words[1]).read(metadata, target);
                                out.println("RESULT OK " + PeerProcess.crc(target.toByteArray()));
                            } catch (RuntimeException e) {
                                out.println("RESULT FAIL " + e.getClass().getName() + " "
                                        + String.valueOf(e.getMessage()).replace('\n', ' '));
                            }
                        }
                    }
                    case "health" -> {
                        TransportStatus status = connectors.get(words[1]).transportStatus();
                        StringBuilder health = new StringBuilder("HEALTH serving=" + status.serving() + " ");
                        for (Map.Entry<String, Object> detail : status.details().entrySet()) {
                            health.append(detail.getKey()).append('=').append(detail.getValue()).append(' ');
                        }
                        out.println(health);
                    }
                    case "exit" -> {
                        return;
                    }
                    default -> out.println("ERROR unknown command " + words[0]);
                }
            }
        } finally {
            connectors.values().forEach(Connector::close);
        }
    }

    private static Connector connector(String role) {
        return new Connector(ConnectorOptions.builder().workerId(role + "-" + ProcessHandle.current().pid())
                .transports(NixlSettings.defaults().withLibraryDir(Path.of(LIBRARY_DIR)))
                .operationTimeout(Duration.ofSeconds(30)).build());
    }
}
