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
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * Issue 22 item 5: a second agent that publishes under a producer's agent name must not block reads of the real
 * producer. While a read from the squatter (here a child JVM, stopped with SIGSTOP so that the read stays in flight)
 * is in flight, a read from the real producer failed at once ({@code cannot take new metadata for peer 'victim-1' …
 * while 1 transfer(s) to it are in flight}); now it waits until that transfer has ended (at its operation timeout)
 * and then reads the right bytes.
 */
@Tag(TestTags.CROSS_PROCESS)
@Tag(TestTags.NIXL)
@Timeout(value = 180, unit = TimeUnit.SECONDS)
class NixlPeerNameSquatterTest {

    private static final String LIBRARY_DIR = System.getenv("NIXL_LIBRARY_DIR");
    private static final int SIZE = 64 << 20;

    @Test
    void aReadFromTheRealProducerWaitsForTheSquattersTransferAndSucceeds() throws Exception {
        assumeTrue(LIBRARY_DIR != null && !LIBRARY_DIR.isBlank(),
                "NIXL_LIBRARY_DIR is not set: run `eval \"$(.ci/nixl-setup.sh)\"` to test against a real NIXL");
        byte[] data = TestData.random(4096);
        try (PeerLines squatter = PeerLines.startJvmOverUcxTcp(NixlPeerNameSquatterTest.class, "squatter");
             Connector victim = connector("victim", Duration.ofSeconds(30));
             Connector consumer = connector("consumer", Duration.ofSeconds(5));
             Descriptor source = new Descriptor(data);
             Descriptor fromSquatter = Descriptor.allocate(SIZE);
             Descriptor fromVictim = Descriptor.allocate(data.length)) {
            RdmaMetadata squatted = RdmaMetadata.fromJson(squatter.next("META ").substring(5));
            ReadableOperation real = victim.createReadable(source);
            assertThat(real.metadata().toJson()).isNotEqualTo(squatted.toJson());

            signal("STOP", squatter.process()); // its UCX worker no longer answers: the read stays in flight
            try {
                ReadOperation stuck = consumer.beginRead(squatted, fromSquatter);
                assertThat(stuck.status()).isEqualTo(OperationStatus.IN_PROGRESS);

                consumer.read(real.metadata(), fromVictim); // failed at once before
                assertThat(fromVictim.toByteArray()).isEqualTo(data);
                assertThat(stuck.status()).as("the squatter's read ended first (its timeout)")
                        .isEqualTo(OperationStatus.ERRORED);
                real.waitForCompletion(Duration.ofSeconds(30));
            } finally {
                signal("CONT", squatter.process());
            }
            squatter.process().destroyForcibly().waitFor(30, TimeUnit.SECONDS);
        }
    }

    private static Connector connector(String workerId, Duration timeout) {
        return new Connector(ConnectorOptions.builder().workerId(workerId)
                .transports(NixlSettings.defaults().withLibraryDir(Path.of(LIBRARY_DIR)))
                .operationTimeout(timeout).build());
    }

    private static void signal(String signal, Process process) throws Exception {
        Process kill = new ProcessBuilder("kill", "-" + signal, Long.toString(process.pid())).inheritIO().start();
        assertThat(kill.waitFor(10, TimeUnit.SECONDS) && kill.exitValue() == 0).as("kill -%s", signal).isTrue();
    }

    /** The squatter: a connector named like the victim publishes {@link #SIZE} bytes ("META json"), then waits. */
    public static void main(String[] args) throws Exception {
        PrintStream out = new PrintStream(System.out, true, StandardCharsets.UTF_8);
        try (Connector squatter = connector("victim", Duration.ofSeconds(60));
             Descriptor published = Descriptor.allocate(SIZE);
             BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8))) {
            ReadableOperation readable = squatter.createReadable(published);
            out.println("META " + readable.metadata().toJson());
            while (in.readLine() != null) {
                // until told to exit (or killed)
            }
        }
    }
}
