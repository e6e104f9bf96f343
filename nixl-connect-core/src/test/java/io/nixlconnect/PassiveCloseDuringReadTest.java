package io.nixlconnect;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import io.nixlconnect.transport.embedded.EmbeddedSettings;
import io.nixlconnect.transport.nixl.NixlDrainLimitForTests;
import io.nixlconnect.transport.nixl.NixlSettings;
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * Issue 12 item 1: a peer reads a large readable; its owner closes the operation and then the
 * descriptor (freeing the memory) while the read is in flight. The owner must survive: no byte of
 * the freed memory may be touched by the transport once {@code Descriptor.close()} returned. Over
 * NIXL with {@code UCX_TLS=tcp,self} the owner's UCX worker serves the peer's GET from the buffer in
 * fragments while it progresses, whatever was deregistered; before the fix the owner died with
 * SIGSEGV in {@code nixl-progress}.
 *
 * <p>Both sides are child JVMs (so both run UCX over TCP, and a crash fails the test instead of
 * killing the test JVM): {@link #main} plays the owner or the reader.
 */
@Tag(TestTags.CROSS_PROCESS)
@Timeout(value = 240, unit = TimeUnit.SECONDS)
class PassiveCloseDuringReadTest {

    private static final long SIZE = 1L << 30;
    private static final String LIBRARY_DIR = System.getenv("NIXL_LIBRARY_DIR");

    @ParameterizedTest
    @ValueSource(strings = {EmbeddedSettings.NAME, NixlSettings.NAME})
    void ownerSurvivesClosingOperationAndDescriptorDuringAPeersRead(String backend) throws Exception {
        assumeBackendInstalled(backend);
        // -DpassiveClose.rounds=N repeats it (each round ~10-20 s on 2 cores).
        int rounds = Integer.getInteger("passiveClose.rounds", 1);
        for (int round = 0; round < rounds; round++) {
            try (PeerLines owner = start("owner", backend); PeerLines reader = start("reader", backend)) {
                startReading(owner, reader, SIZE);
                // Once the first bytes have landed (a 1 GiB read over TCP takes far longer), free under the read.
                reader.next("FLOWING");
                owner.send("close");
                assertThat(owner.next("CLOSED")).startsWith("CLOSED");
                reader.next("RESULT");
                assertOwnerSurvives(owner, "round " + round + ": owner alive after freeing");
            }
        }
    }

    /**
     * The rest of item 1, "whatever the peer does": a reader that stops (SIGSTOP) mid-read outlasts the
     * drain limit, so the owner's {@code Descriptor.close()} returns without the notification; then the
     * reader resumes and asks for the rest. Over UCX TCP the owner's worker serves those requests from the
     * raw address, so the memory must not have been freed: it is kept until the connector closes.
     */
    @ParameterizedTest
    @ValueSource(strings = {EmbeddedSettings.NAME, NixlSettings.NAME})
    void ownerSurvivesAReaderThatStallsPastTheDrainLimit(String backend) throws Exception {
        assumeBackendInstalled(backend);
        long size = 256L << 20; // drain limit: 200 ms + 2.7 s
        try (PeerLines owner = start("owner", backend); PeerLines reader = start("reader", backend)) {
            startReading(owner, reader, size);
            signal("STOP", reader.process());
            try {
                owner.send("close");
                assertThat(owner.next("CLOSED")).startsWith("CLOSED");
            } finally {
                signal("CONT", reader.process());
            }
            reader.next("RESULT");
            assertOwnerSurvives(owner, "owner alive after the stalled reader resumed");
        }
    }

    private static void assumeBackendInstalled(String backend) {
        if (backend.equals(NixlSettings.NAME)) {
            assumeTrue(LIBRARY_DIR != null && !LIBRARY_DIR.isBlank(),
                    "NIXL_LIBRARY_DIR is not set: run `eval \"$(.ci/nixl-setup.sh)\"` to test against a real NIXL");
        }
    }

    /** Both peers ready, the owner publishes {@code size} bytes, the reader has begun reading them. */
    private static void startReading(PeerLines owner, PeerLines reader, long size) throws Exception {
        owner.next("READY");
        reader.next("READY");
        owner.send("publish " + size);
        String metadata = owner.next("META ").substring(5);
        reader.send("read " + metadata);
        reader.next("STARTED");
    }

    /** The owner, which keeps progressing its transport for a while, still answers and exits cleanly. */
    private static void assertOwnerSurvives(PeerLines owner, String what) throws Exception {
        Thread.sleep(1500);
        assertThat(owner.process().isAlive()).as("%s (exit status %s)", what,
                owner.process().isAlive() ? "-" : owner.process().exitValue()).isTrue();
        owner.send("ping");
        assertThat(owner.next("PONG")).as(what).isEqualTo("PONG");
        owner.send("exit");
        assertThat(owner.process().waitFor(60, TimeUnit.SECONDS)).isTrue();
        assertThat(owner.process().exitValue()).as("%s: exit status", what).isZero();
    }

    private static void signal(String signal, Process process) throws Exception {
        Process kill = new ProcessBuilder("kill", "-" + signal, Long.toString(process.pid())).inheritIO().start();
        assertThat(kill.waitFor(10, TimeUnit.SECONDS) && kill.exitValue() == 0).as("kill -%s", signal).isTrue();
    }

    private static PeerLines start(String role, String backend) throws Exception {
        return PeerLines.startJvmOverUcxTcp(PassiveCloseDuringReadTest.class, role, backend);
    }

    private static Connector connector(String role, String backend) {
        ConnectorOptions.Builder options = ConnectorOptions.builder().workerId(role + "-" + ProcessHandle.current().pid())
                .transports(backend.equals(NixlSettings.NAME)
                        ? NixlSettings.defaults().withLibraryDir(Path.of(LIBRARY_DIR))
                        : EmbeddedSettings.defaults())
                .operationTimeout(Duration.ofSeconds(60));
        return new Connector(options.build());
    }

    /** {@code owner|reader BACKEND}, driven over stdin (see the test). */
    public static void main(String[] args) throws Exception {
        PrintStream out = new PrintStream(System.out, true, StandardCharsets.UTF_8);
        String role = args[0];
        String backend = args[1];
        NixlDrainLimitForTests.setBase(Duration.ofMillis(200)); // both tests: the drain limit is 200 ms + size
        try (Connector connector = connector(role, backend);
             BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8))) {
            out.println("READY");
            Descriptor published = null;
            ReadableOperation readable = null;
            Descriptor target = null;
            String line;
            while ((line = in.readLine()) != null) {
                String[] words = line.trim().split("\\s+", 2);
                switch (words[0]) {
                    case "publish" -> {
                        published = Descriptor.allocate(Long.parseLong(words[1]));
                        published.asByteBuffer(0, 1).put(0, (byte) 1); // the reader sees it land: FLOWING
                        readable = connector.createReadable(published);
                        out.println("META " + readable.metadata().toJson());
                    }
                    case "close" -> {
                        readable.close();
                        published.close();
                        out.println("CLOSED " + readable.status());
                    }
                    case "read" -> {
                        target = Descriptor.allocate(RdmaMetadata.fromJson(words[1]).descriptors().get(0).size());
                        ReadOperation read = connector.beginRead(RdmaMetadata.fromJson(words[1]), target);
                        out.println("STARTED");
                        Descriptor landing = target;
                        Thread flowing = new Thread(() -> {
                            await().atMost(Duration.ofSeconds(60)).pollInterval(Duration.ofMillis(1)).until(
                                    () -> landing.asByteBuffer(0, 1).get(0) != 0 || read.status().isTerminal());
                            out.println("FLOWING");
                        }, "flowing");
                        flowing.setDaemon(true);
                        flowing.start();
                        read.completion().whenComplete((ok, error) -> out.println("RESULT " + read.status()));
                    }
                    case "ping" -> out.println("PONG");
                    case "exit" -> {
                        return;
                    }
                    default -> out.println("ERROR unknown command " + words[0]);
                }
            }
        }
    }
}
