package io.nixlconnect.transport.embedded;

import static org.assertj.core.api.Assertions.assertThat;

import io.nixlconnect.ChildJvm;
import io.nixlconnect.transport.MemoryRegion;
import io.nixlconnect.transport.MemoryType;
import io.nixlconnect.transport.TransferOp;
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.condition.EnabledIfSystemProperty;

/**
 * Nothing without a live window's credential holds a connection slot: a request's head is bounded and read first,
 * its credential checked before its ranges, a refused request's ranges are read while the connection still counts
 * as waiting (evicted first, timed out from its last served request), and every request's ranges must all arrive
 * within the read timeout, however they trickle.
 */
@Timeout(value = 120, unit = TimeUnit.SECONDS)
class EmbeddedSlotHoldingTest {

    /**
     * Another process holds more connections than the per-address limit, each in the middle of a refused request
     * whose ranges trickle in a byte at a time. Before, each such connection counted as busy mid-request, never
     * evicted, and every legitimate read from that address was refused.
     */
    @Test
    void tricklingRefusedRequestsFromAnotherProcessCannotLockOutAPeer() throws Exception {
        int maxConnections = 48;
        int perAddress = 32;
        EmbeddedSettings settings = ServedMemory.loopback().withServerConnectionLimits(maxConnections, perAddress);
        byte[] content = EmbeddedCredentialTest.random(1 << 16);
        try (ServedMemory served = new ServedMemory(settings, "victim", TransferOp.READ, content)) {
            Process attacker = startAttacker(served.port(), 3 * maxConnections, 1, 40, 500);
            try {
                awaitLine(attacker, "READY");
                Thread.sleep(1000); // every head is in and every connection is trickling
                try (EmbeddedTransport client = EmbeddedTransport.open(ServedMemory.loopback())) {
                    for (int i = 0; i < 5; i++) {
                        byte[] credential = ServedMemory.newCredential();
                        var window = served.agent.openWindow(TransferOp.READ, List.of(new MemoryRegion(served.address,
                                content.length, MemoryType.DRAM, 0)), credential);
                        assertThat(EmbeddedHostileLoadTest.read(client, served, credential, content.length))
                                .isEqualTo(content);
                        window.notified().get(10, TimeUnit.SECONDS);
                    }
                }
                assertThat(served.transport.server().connectionCount()).isLessThanOrEqualTo(maxConnections);
            } finally {
                attacker.destroy();
                attacker.waitFor(10, TimeUnit.SECONDS);
            }
        }
    }

    /** A key holder's ranges that trickle in (each byte is progress) are dropped at the read timeout all the same. */
    @Test
    void aRequestsRangesMustAllArriveWithinTheReadTimeout() throws Exception {
        EmbeddedSettings settings = ServedMemory.loopback().withTimeouts(Duration.ofSeconds(30), Duration.ofMillis(600));
        try (ServedMemory served = new ServedMemory(settings, "victim", TransferOp.READ, new byte[64]);
             RawPeer trickling = new RawPeer(served.port())) {
            trickling.send(RawPeer.head(Wire.READ, 6, served.credential.length, 64)).send(RawPeer.utf8("victim"))
                    .send(served.credential);
            boolean closed = false;
            for (int i = 0; i < 40 && !closed; i++) { // 6 s of one byte every 150 ms: progress ten times a timeout
                try {
                    trickling.send(new byte[] {0});
                } catch (java.io.IOException e) {
                    closed = true;
                }
                closed |= trickling.closedWithin(150);
            }
            assertThat(closed).isTrue();
            assertThat(served.window.notified()).isNotDone(); // dropped before it started on the window
        }
    }

    /**
     * The floor rate: with the default read timeout (30 s) and idle timeout (60 s), a key holder's one range trickled
     * at a byte a second, and a stranger's begun head trickled at two bytes a second, are each dropped before they
     * are complete (16 s and 23 s of sending). Before, each held its connection for the whole read or idle timeout.
     */
    @Test
    void aBegunHeadAndARequestsRangesSentSlowerThanTheFloorRateAreDropped() throws Exception {
        try (ServedMemory served = new ServedMemory(ServedMemory.loopback(), "victim", TransferOp.READ, new byte[64]);
             RawPeer ranges = new RawPeer(served.port());
             RawPeer head = new RawPeer(served.port())) {
            ranges.send(RawPeer.head(Wire.READ, 6, served.credential.length, 1)).send(RawPeer.utf8("victim"))
                    .send(served.credential);
            byte[] range = java.nio.ByteBuffer.allocate(16).putLong(served.address).putLong(64).array();
            byte[] stranger = RawPeer.request(Wire.READ, "victim", ServedMemory.newCredential(), served.address, 64);
            head.send(java.util.Arrays.copyOf(stranger, 4)); // the magic: from here the head is begun
            boolean rangesClosed = false;
            boolean headClosed = false;
            for (int i = 0; i < 2 * range.length && !(rangesClosed && headClosed); i++) {
                if (!rangesClosed && i % 2 == 0) {
                    rangesClosed = trickle(ranges, range[i / 2]);
                }
                if (!headClosed && 4 + i < Wire.HEAD + 6 + 32) {
                    headClosed = trickle(head, stranger[4 + i]);
                }
                rangesClosed |= ranges.closedWithin(250);
                headClosed |= head.closedWithin(250);
            }
            assertThat(rangesClosed).as("a key holder's range, a byte a second").isTrue();
            assertThat(headClosed).as("a begun head, two bytes a second").isTrue();
            assertThat(served.window.notified()).isNotDone();
        }
    }

    private static boolean trickle(RawPeer peer, byte value) {
        try {
            peer.send(new byte[] {value});
            return false;
        } catch (java.io.IOException closed) {
            return true;
        }
    }

    /**
     * The measurement of issue 23 (not a test of speed; run by hand with -Dnixl.measureSlotHolding=true): 1,100
     * trickling connections from 127.0.0.1 to 127.0.0.5 against the default limits, and how many of a peer's reads
     * on fresh connections get through meanwhile.
     */
    @Test
    @EnabledIfSystemProperty(named = "nixl.measureSlotHolding", matches = "true")
    @Timeout(value = 300, unit = TimeUnit.SECONDS)
    void measureAPeerUnderElevenHundredTricklingConnections() throws Exception {
        byte[] content = EmbeddedCredentialTest.random(1 << 16);
        try (ServedMemory served = new ServedMemory(ServedMemory.loopback(), "victim", TransferOp.READ, content)) {
            Process attacker = startAttacker(served.port(), 1100, 5, 90, 5000);
            try {
                awaitLine(attacker, "READY");
                Thread.sleep(5000);
                int ok = 0;
                int failed = 0;
                long worst = 0;
                long start = System.nanoTime();
                while (System.nanoTime() - start < TimeUnit.SECONDS.toNanos(60)) {
                    try (EmbeddedTransport client = EmbeddedTransport.open(ServedMemory.loopback())) { // fresh connections
                        byte[] credential = ServedMemory.newCredential();
                        var window = served.agent.openWindow(TransferOp.READ, List.of(new MemoryRegion(served.address,
                                content.length, MemoryType.DRAM, 0)), credential);
                        long began = System.nanoTime();
                        try {
                            EmbeddedHostileLoadTest.read(client, served, credential, content.length);
                            ok++;
                        } catch (Exception e) {
                            failed++;
                            window.close();
                        }
                        worst = Math.max(worst, System.nanoTime() - began);
                    }
                }
                System.out.printf("MEASURE slot holding: %d reads ok, %d failed, slowest %d ms, server connections %d%n",
                        ok, failed, TimeUnit.NANOSECONDS.toMillis(worst), served.transport.server().connectionCount());
            } finally {
                attacker.destroy();
                attacker.waitFor(10, TimeUnit.SECONDS);
            }
        }
    }

    static Process startAttacker(int port, int connections, int addresses, int seconds, int intervalMillis)
            throws Exception {
        return new ProcessBuilder(ChildJvm.command("-Xmx128m", "-XX:ErrorFile=/dev/null", "-cp",
                System.getProperty("java.class.path"), SlotHoldingPeer.class.getName(),
                Integer.toString(port), Integer.toString(connections), Integer.toString(addresses),
                Integer.toString(seconds), Integer.toString(intervalMillis)))
                .redirectError(ProcessBuilder.Redirect.INHERIT).start();
    }

    static void awaitLine(Process process, String prefix) throws Exception {
        BufferedReader lines = new BufferedReader(new InputStreamReader(process.getInputStream(), StandardCharsets.UTF_8));
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
        String line;
        while ((line = lines.readLine()) != null && System.nanoTime() < deadline) {
            if (line.startsWith(prefix)) {
                return;
            }
        }
        throw new AssertionError("the attacker process never printed " + prefix);
    }
}
