package io.nixlconnect;

import static org.assertj.core.api.Assertions.assertThat;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import io.nixlconnect.transport.nixl.NixlSettings;
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.LockSupport;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * Issue 22 items 3 and 4: what an aborted request and a stalled peer cost a NIXL service.
 *
 * <p>Item 3: closing a readable nobody read, over memory the library owns, no longer blocks the closer for the drain
 * limit ({@code Descriptor.close()} waited 2 s per request); the library frees the memory once the transport releases
 * it. Item 4: memory kept for a peer that stalled past the drain limit no longer stays resident until the connector
 * closes (six stalled readers of 256 MiB kept 1.6 GB): its pages are given back to the system while the addresses stay
 * mapped, so the peer, once resumed, reads zeros instead of freed memory.
 */
@Tag(TestTags.NIXL)
@Timeout(value = 240, unit = TimeUnit.SECONDS)
class NixlKeptMemoryTest {

    private static final String LIBRARY_DIR = System.getenv("NIXL_LIBRARY_DIR");

    @Test
    void closingAnUnreadReadableOverLibraryMemoryReturnsAtOnceAndTheMemoryIsFreedLater() {
        assumeNixl();
        int requests = 10;
        int size = 1 << 20;
        try (Connector service = new Connector(ConnectorOptions.builder().workerId("service")
                .transports(settings().withDrainLimit(Duration.ofSeconds(3))).build())) {
            for (int i = 0; i < requests; i++) {
                Descriptor response = Descriptor.allocate(size);
                ReadableOperation readable = service.createReadable(response);
                readable.metadata(); // sent to a client that went away
                readable.close();
                response.close();
                assertThat(details(service).get("windowsDraining")).as("request %s: close returned while its window"
                        + " still drains (it waited for the drain limit before)", i).isEqualTo(i + 1);
            }
            awaitDrained(service);
            // Each window's memory is counted at its release, and the closed descriptor's memory handed over just
            // after: glibc puts a large allocation's data 16 bytes into a page, so one partial page of each stays.
            awaitKept(service, (long) requests * size, (long) requests * 4096);
            Map<String, Object> details = details(service);
            assertThat(service.registeredBytes()).isZero();
            assertThat(details.get("bytesKeptAfterDrainLimit")).isEqualTo((long) requests * size);
            assertThat((long) details.get("bytesKeptResident")).as("pages given back").isLessThan((long) requests * 8192);
            assertThat(details.get("maxKeptBytes")).isEqualTo(NixlSettings.DEFAULT_MAX_KEPT_BYTES);
        }
    }

    @Test
    void memoryKeptForAReaderStoppedPastTheDrainLimitIsGivenBackAndTheOwnerSurvivesItsResume() throws Exception {
        assumeNixl();
        long size = 256L << 20;
        try (PeerLines owner = start("owner"); PeerLines reader = start("reader")) {
            owner.next("READY");
            reader.next("READY");
            long rssBefore = Long.parseLong(owner.sendAndNext("rss", "RSS ").substring(4));
            owner.send("publish " + size);
            String metadata = owner.next("META ").substring(5);
            reader.send("read " + metadata);
            reader.next("STARTED");
            signal("STOP", reader.process());
            try {
                assertThat(owner.sendAndNext("close", "CLOSED ")).as("the owner's close returned before the drain limit")
                        .isEqualTo("CLOSED draining=1");
                String kept = owner.sendAndNext("await-release " + size, "KEPT ");
                String[] words = kept.split(" ");
                assertThat(Long.parseLong(words[1])).as("bytes kept: %s", kept).isEqualTo(size);
                assertThat(Long.parseLong(words[2])).as("bytes kept resident: %s", kept).isLessThan(1 << 16);
                long rssAfter = Long.parseLong(words[3]);
                System.out.println("NixlKeptMemoryTest: owner RSS " + rssBefore + " KiB before publishing " + size
                        + " bytes, " + rssAfter + " KiB after the drain limit; " + kept);
                assertThat(rssAfter).as("the owner's RSS (KiB) after the drain limit, before publishing %s", rssBefore)
                        .isLessThan(rssBefore + (64 << 10));
            } finally {
                signal("CONT", reader.process());
            }
            reader.next("RESULT");
            assertThat(owner.sendAndNext("ping", "PONG")).isEqualTo("PONG");
            reader.process().destroyForcibly().waitFor(30, TimeUnit.SECONDS);
            owner.send("exit");
            assertThat(owner.process().waitFor(60, TimeUnit.SECONDS)).isTrue();
            assertThat(owner.process().exitValue()).as("owner exit status").isZero();
        }
    }

    private static void assumeNixl() {
        assumeTrue(LIBRARY_DIR != null && !LIBRARY_DIR.isBlank(),
                "NIXL_LIBRARY_DIR is not set: run `eval \"$(.ci/nixl-setup.sh)\"` to test against a real NIXL");
    }

    private static NixlSettings settings() {
        return NixlSettings.defaults().withLibraryDir(Path.of(LIBRARY_DIR));
    }

    private static Map<String, Object> details(Connector connector) {
        return connector.transportStatus().details();
    }

    private static void awaitDrained(Connector connector) {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
        while (((Number) details(connector).get("windowsDraining")).intValue() > 0 && System.nanoTime() < deadline) {
            LockSupport.parkNanos(20_000_000);
        }
        assertThat(details(connector).get("windowsDraining")).isEqualTo(0);
    }

    /** Waits (at most 30 s) until {@code kept} bytes are kept, at least {@code resident} of them resident. */
    private static void awaitKept(Connector connector, long kept, long resident) {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
        while (((long) details(connector).get("bytesKeptAfterDrainLimit") < kept
                || (long) details(connector).get("bytesKeptResident") < resident) && System.nanoTime() < deadline) {
            LockSupport.parkNanos(10_000_000);
        }
    }

    private static void signal(String signal, Process process) throws Exception {
        Process kill = new ProcessBuilder("kill", "-" + signal, Long.toString(process.pid())).inheritIO().start();
        assertThat(kill.waitFor(10, TimeUnit.SECONDS) && kill.exitValue() == 0).as("kill -%s", signal).isTrue();
    }

    private static PeerLines start(String role) throws Exception {
        return PeerLines.startJvmOverUcxTcp(NixlKeptMemoryTest.class, role);
    }

    /** This process's resident set in KiB ({@code VmRSS}). */
    static long rssKiB() throws Exception {
        for (String line : Files.readAllLines(Path.of("/proc/self/status"))) {
            if (line.startsWith("VmRSS:")) {
                return Long.parseLong(line.replaceAll("[^0-9]", ""));
            }
        }
        return -1;
    }

    /** {@code owner|reader}, driven over stdin (see the test); the drain limit is 200 ms plus the size at 100 MB/s. */
    public static void main(String[] args) throws Exception {
        PrintStream out = new PrintStream(System.out, true, StandardCharsets.UTF_8);
        String role = args[0];
        try (Connector connector = new Connector(ConnectorOptions.builder().workerId(role + "-" + ProcessHandle.current().pid())
                .transports(settings().withDrainLimit(Duration.ofMillis(200))).operationTimeout(Duration.ofSeconds(60))
                .build());
             BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8))) {
            out.println("READY");
            Descriptor published = null;
            ReadableOperation readable = null;
            List<Descriptor> targets = new ArrayList<>();
            String line;
            while ((line = in.readLine()) != null) {
                String[] words = line.trim().split("\\s+", 2);
                switch (words[0]) {
                    case "rss" -> out.println("RSS " + rssKiB());
                    case "publish" -> {
                        published = Descriptor.allocate(Long.parseLong(words[1]));
                        readable = connector.createReadable(published);
                        out.println("META " + readable.metadata().toJson());
                    }
                    case "close" -> {
                        readable.close();
                        published.close();
                        out.println("CLOSED draining=" + details(connector).get("windowsDraining"));
                    }
                    case "await-release" -> { // SIZE
                        awaitDrained(connector);
                        // The library gives back the closed descriptor's memory just after the release.
                        awaitKept(connector, Long.parseLong(words[1]), 1);
                        Map<String, Object> details = details(connector);
                        out.println("KEPT " + details.get("bytesKeptAfterDrainLimit") + " "
                                + details.get("bytesKeptResident") + " " + rssKiB());
                    }
                    case "read" -> {
                        RdmaMetadata metadata = RdmaMetadata.fromJson(words[1]);
                        Descriptor target = Descriptor.allocate(metadata.descriptors().get(0).size());
                        targets.add(target);
                        ReadOperation read = connector.beginRead(metadata, target);
                        out.println("STARTED");
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
