package io.nixlconnect.transport.embedded;

import static org.assertj.core.api.Assertions.assertThat;

import io.nixlconnect.internal.NativeMemory;
import io.nixlconnect.transport.MemoryRegion;
import io.nixlconnect.transport.MemoryType;
import io.nixlconnect.transport.PassiveWindow;
import io.nixlconnect.transport.TransferHandle;
import io.nixlconnect.transport.TransportException;
import io.nixlconnect.transport.TransferOp;
import java.io.ByteArrayOutputStream;
import java.lang.ref.Reference;
import java.nio.ByteBuffer;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * Issue 25 on the embedded transport: {@code reportFailure} sends the peer a FAIL report, and the window it names
 * ends failed at once with the reporter's name and cause. It matters most where nothing else could tell the peer: a
 * transfer cancelled while it still waited in the pool's queue for a connection never reached the peer, so no
 * dropped connection reveals it. Hostile reports are bounded and answered like any unknown credential.
 */
@Timeout(value = 60, unit = TimeUnit.SECONDS)
class EmbeddedFailureReportTest {

    private static final Duration WAIT = Duration.ofSeconds(20);

    private static byte[] failReport(String agent, byte[] credential, String reporter, String cause) {
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        out.writeBytes(RawPeer.head(Wire.FAIL, RawPeer.utf8(agent).length, credential.length, 0));
        out.writeBytes(RawPeer.utf8(agent));
        out.writeBytes(credential);
        for (String text : new String[] {reporter, cause}) {
            byte[] bytes = RawPeer.utf8(text);
            out.write(bytes.length >> 8);
            out.write(bytes.length);
            out.writeBytes(bytes);
        }
        return out.toByteArray();
    }

    private static Throwable failureOf(CompletableFuture<Void> notified) {
        assertThat(notified).failsWithin(WAIT);
        try {
            notified.get();
            throw new AssertionError("completed normally");
        } catch (ExecutionException e) {
            return e.getCause();
        } catch (InterruptedException e) {
            throw new AssertionError(e);
        }
    }

    @Test
    void aTransferCancelledWhileQueuedForAConnectionEndsThePeersWindowWhenReported() throws Exception {
        byte[] content = EmbeddedCredentialTest.random(4096);
        try (ServedMemory served = new ServedMemory(ServedMemory.loopback(), "passive", TransferOp.READ, content);
             EmbeddedTransport readerTransport = EmbeddedTransport.open(ServedMemory.loopback().withMaxConnectionsPerPeer(1))) {
            EmbeddedAgent reader = (EmbeddedAgent) readerTransport.createAgent("active");
            ByteBuffer targets = ByteBuffer.allocateDirect(2 * 4096);
            MemoryRegion first = new MemoryRegion(NativeMemory.addressOf(targets), 4096, MemoryType.DRAM, 0);
            MemoryRegion second = new MemoryRegion(first.address() + 4096, 4096, MemoryType.DRAM, 0);
            reader.registerMemory(new MemoryRegion(first.address(), 2 * 4096, MemoryType.DRAM, 0));
            String peer = reader.loadRemoteAgent(new EmbeddedMetadata("passive", "127.0.0.1", served.port()).encode());
            byte[] otherCredential = ServedMemory.newCredential();
            MemoryRegion published = new MemoryRegion(served.address, 4096, MemoryType.DRAM, 0);
            PassiveWindow other = served.agent.openWindow(TransferOp.READ, List.of(published), otherCredential);
            List<MemoryRegion> remote = List.of(published);

            // The first transfer holds the one connection allowed (left for a waiting caller that has not run it yet);
            // the second waits in the queue for it, and is cancelled there.
            TransferHandle holding = reader.postTransferForWaitingCaller(TransferOp.READ, List.of(first), peer, remote,
                    served.credential);
            TransferHandle queued = reader.postTransfer(TransferOp.READ, List.of(second), peer, remote, otherCredential);
            queued.cancel();
            assertThat(queued.path()).as("never ran").isNull();

            reader.reportFailure(peer, otherCredential, "ReadOperation of worker 'active' was cancelled");

            Throwable failure = failureOf(other.notified());
            assertThat(failure).isInstanceOf(TransportException.class)
                    .hasMessageContaining("the peer 'active'")
                    .hasMessageContaining("reported that its transfer ended without notifying")
                    .hasMessageContaining("was cancelled");
            assertThat(served.window.notified()).as("the other window is untouched").isNotDone();

            holding.runOnWaitingThread();
            assertThat(holding.completion()).succeedsWithin(WAIT);
            assertThat(served.window.notified()).succeedsWithin(WAIT);
            assertThat(NativeMemory.copyOut(first.address(), 4096)).isEqualTo(content);
            Reference.reachabilityFence(targets);
        }
    }

    @Test
    void aReportIsAnsweredOkForALiveWindowAndLikeAnyUnknownCredentialOtherwise() throws Exception {
        try (ServedMemory served = new ServedMemory(ServedMemory.loopback(), "passive", TransferOp.WRITE, new byte[4096])) {
            try (RawPeer peer = new RawPeer(served.port())) {
                peer.send(failReport("passive", ServedMemory.newCredential(), "prober", "guessing"));
                assertThat(peer.answer().kind()).isEqualTo("ERROR");
                assertThat(peer.closedWithin(5_000)).as("the unread report drops the connection").isTrue();
            }
            assertThat(served.window.notified()).isNotDone();
            try (RawPeer peer = new RawPeer(served.port())) {
                peer.send(failReport("passive", served.credential, "writer\nFORGED LOG LINE", "timed out\r\n"));
                assertThat(peer.answer()).isEqualTo(RawPeer.Answer.OK);
            }
            Throwable failure = failureOf(served.window.notified());
            assertThat(failure).hasMessageContaining("the peer 'writer?FORGED LOG LINE'").hasMessageContaining("timed out??")
                    .hasMessageNotContaining("\n");
        }
    }

    @Test
    void aReportLongerThanItsBoundDropsTheConnectionAndLeavesTheWindowWaiting() throws Exception {
        try (ServedMemory served = new ServedMemory(ServedMemory.loopback(), "passive", TransferOp.READ, new byte[4096]);
             RawPeer peer = new RawPeer(served.port())) {
            peer.send(failReport("passive", served.credential, "reader", "x".repeat(60_000)));
            assertThat(peer.closedWithin(5_000)).isTrue();
            assertThat(served.window.notified()).isNotDone();
        }
    }

    @Test
    void aFanOutWindowWaitsForItsOtherReadersWhenOneReports() throws Exception {
        try (ServedMemory served = new ServedMemory(ServedMemory.loopback(), "passive", TransferOp.READ, new byte[4096])) {
            byte[] credential = ServedMemory.newCredential();
            PassiveWindow fanOut = served.agent.openWindow(TransferOp.READ,
                    List.of(new MemoryRegion(served.address, 4096, MemoryType.DRAM, 0)), credential, 2);
            try (RawPeer peer = new RawPeer(served.port())) {
                peer.send(failReport("passive", credential, "reader", "cancelled"));
                assertThat(peer.answer()).isEqualTo(RawPeer.Answer.OK);
            }
            assertThat(fanOut.notified()).isNotDone();
            fanOut.close();
        }
    }
}
