package io.nixlconnect.transport.embedded;

import static org.assertj.core.api.Assertions.assertThat;

import io.nixlconnect.internal.NativeMemory;
import io.nixlconnect.transport.MemoryRegion;
import io.nixlconnect.transport.MemoryType;
import io.nixlconnect.transport.TransferOp;
import java.lang.management.ManagementFactory;
import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.condition.EnabledIfSystemProperty;

/**
 * The measurement of issue 23, item 4 (not a test of speed; run by hand with -Dnixl.measureRangeChecks=true and
 * -Dnixl.measureRangeChecks.counts=65536,1048576): the owner's CPU to check one credential holder's READ of N
 * ranges against a window of 65,536 regions.
 */
@EnabledIfSystemProperty(named = "nixl.measureRangeChecks", matches = "true")
class EmbeddedRangeCheckCostMeasurement {

    private static final int REGIONS = 65_536;

    @Test
    @Timeout(value = 600, unit = TimeUnit.SECONDS)
    void measureTheOwnersCpuPerRequest() throws Exception {
        ByteBuffer memory = ByteBuffer.allocateDirect(REGIONS * 64);
        long base = NativeMemory.addressOf(memory);
        try (EmbeddedTransport transport = EmbeddedTransport.open(ServedMemory.loopback())) {
            EmbeddedAgent agent = (EmbeddedAgent) transport.createAgent("victim");
            List<MemoryRegion> regions = new ArrayList<>(REGIONS);
            for (int i = 0; i < REGIONS; i++) {
                MemoryRegion region = new MemoryRegion(base + 64L * i, 64, MemoryType.DRAM, 0);
                agent.registerMemory(region);
                regions.add(region);
            }
            var os = (com.sun.management.OperatingSystemMXBean) ManagementFactory.getOperatingSystemMXBean();
            for (String count : System.getProperty("nixl.measureRangeChecks.counts", "65536,1048576").split(",")) {
                int ranges = Integer.parseInt(count.trim());
                byte[] credential = ServedMemory.newCredential();
                var window = agent.openWindow(TransferOp.READ, regions, credential);
                long[] pairs = new long[2 * ranges];
                Random random = new Random(ranges);
                for (int i = 0; i < ranges; i++) {
                    pairs[2 * i] = base + 64L * random.nextInt(REGIONS);
                    pairs[2 * i + 1] = 0; // checked like any range, moves no byte
                }
                byte[] request = RawPeer.request(Wire.READ, "victim", credential, pairs);
                long cpuBefore = os.getProcessCpuTime();
                long wallBefore = System.nanoTime();
                try (RawPeer peer = new RawPeer(transport.port())) {
                    peer.socket.setSoTimeout(0);
                    assertThat(peer.send(request).answer(600_000)).isEqualTo(RawPeer.Answer.OK);
                }
                System.out.printf("MEASURE range checks: %,d ranges against %,d regions: owner CPU %.2f s, wall %.2f s%n",
                        ranges, REGIONS, (os.getProcessCpuTime() - cpuBefore) / 1e9,
                        (System.nanoTime() - wallBefore) / 1e9);
                window.close();
            }
        } finally {
            java.lang.ref.Reference.reachabilityFence(memory);
        }
    }
}
