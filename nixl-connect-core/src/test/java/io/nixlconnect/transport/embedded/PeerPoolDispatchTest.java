package io.nixlconnect.transport.embedded;

import static org.assertj.core.api.Assertions.assertThat;

import io.nixlconnect.internal.NativeMemory;
import io.nixlconnect.transport.MemoryRegion;
import io.nixlconnect.transport.MemoryType;
import io.nixlconnect.transport.PassiveWindow;
import io.nixlconnect.transport.TransferOp;
import java.lang.ref.Reference;
import java.nio.ByteBuffer;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * A transfer handed to the workers is run by whoever claims it first: the thread waiting for it, or a worker. The
 * workers here are a queue the test runs by hand, so each order is exact.
 */
@Timeout(value = 60, unit = TimeUnit.SECONDS)
class PeerPoolDispatchTest {

    private static final Duration WAIT = Duration.ofSeconds(20);

    @Test
    void theWaitingThreadRunsATransferNoWorkerHasClaimedAndTheWorkerThenDoesNothing() throws Exception {
        byte[] content = EmbeddedCredentialTest.random(4096);
        try (ServedMemory served = new ServedMemory(ServedMemory.loopback(), "passive", TransferOp.READ, content);
             EmbeddedTransport reader = EmbeddedTransport.open(ServedMemory.loopback())) {
            EmbeddedAgent agent = (EmbeddedAgent) reader.createAgent("active");
            ByteBuffer target = ByteBuffer.allocateDirect(4096);
            MemoryRegion local = new MemoryRegion(NativeMemory.addressOf(target), 4096, MemoryType.DRAM, 0);
            agent.registerMemory(local);
            List<Runnable> workers = new ArrayList<>();
            PeerPool pool = new PeerPool(1, workers::add, new SameHostPeer("off in this test"), new PeerCounters());

            EmbeddedTransfer first = transfer(agent, served, local, served.address, served.credential);
            pool.submit(first);
            assertThat(workers).as("handed to a worker").hasSize(1);
            first.runOnWaitingThread();
            assertThat(first.completion()).as("ran on this thread, no worker ran").isCompleted();
            assertThat(first.path()).isEqualTo(SameHostPeer.TCP);
            assertThat(NativeMemory.copyOut(local.address(), 4096)).isEqualTo(content);
            assertThat(served.window.notified()).succeedsWithin(WAIT);
            workers.get(0).run(); // the worker's turn comes: it was claimed, nothing to do

            // A worker that claims first runs it; the waiting thread then leaves it alone. The connection the first
            // transfer returned to the pool is the one reused: the server still has one connection.
            byte[] second = EmbeddedCredentialTest.random(4096);
            NativeMemory.copyIn(second, served.address);
            byte[] credential = ServedMemory.newCredential();
            MemoryRegion published = new MemoryRegion(served.address, 4096, MemoryType.DRAM, 0);
            PassiveWindow window = served.agent.openWindow(TransferOp.READ, List.of(published), credential);
            EmbeddedTransfer next = transfer(agent, served, local, served.address, credential);
            pool.submit(next);
            assertThat(workers).hasSize(2);
            workers.get(1).run();
            assertThat(next.completion()).isCompleted();
            next.runOnWaitingThread(); // claimed by the worker: returns at once
            assertThat(NativeMemory.copyOut(local.address(), 4096)).isEqualTo(second);
            assertThat(window.notified()).succeedsWithin(WAIT);
            assertThat(served.transport.server().connectionCount()).isEqualTo(1);
            pool.close();
            Reference.reachabilityFence(target);
        }
    }

    private static EmbeddedTransfer transfer(EmbeddedAgent agent, ServedMemory served, MemoryRegion local, long remote,
            byte[] credential) {
        return new EmbeddedTransfer(agent, TransferOp.READ, List.of(local),
                LoadedPeer.of(new EmbeddedMetadata("passive", "127.0.0.1", served.port()), new byte[0]),
                List.of(new MemoryRegion(remote, 4096, MemoryType.DRAM, 0)), credential, false);
    }
}
