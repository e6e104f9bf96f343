package io.nixlconnect.transport.embedded;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.nixlconnect.internal.NativeMemory;
import io.nixlconnect.transport.MemoryRegion;
import io.nixlconnect.transport.MemoryType;
import io.nixlconnect.transport.TransferHandle;
import io.nixlconnect.transport.TransferOp;
import io.nixlconnect.transport.TransferState;
import io.nixlconnect.transport.TransportException;
import java.lang.ref.Reference;
import java.nio.ByteBuffer;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * Loading a peer again with the bytes it was loaded from last is a lookup: it must still be the peer those exact
 * bytes describe, whatever was loaded in between and whatever the caller did to its array afterwards.
 */
@Timeout(value = 60, unit = TimeUnit.SECONDS)
class EmbeddedPeerLoadingTest {

    private static final byte[] NOTIFICATION = RawPeer.utf8("0123456789abcdef0123456789abcdef");

    @Test
    void aPeerLoadedAgainIsTheOneItsBytesDescribe() {
        try (EmbeddedTransport transport = EmbeddedTransport.open(ServedMemory.loopback())) {
            EmbeddedAgent agent = (EmbeddedAgent) transport.createAgent("reader");
            ByteBuffer buffer = ByteBuffer.allocateDirect(16);
            MemoryRegion local = new MemoryRegion(NativeMemory.addressOf(buffer), 16, MemoryType.DRAM, 0);
            agent.registerMemory(local);
            byte[] first = new EmbeddedMetadata("peer", "127.0.0.1", 1).encode();
            byte[] second = new EmbeddedMetadata("peer", "127.0.0.1", 2).encode();

            assertThat(agent.loadRemoteAgent(first)).isEqualTo("peer");
            assertThat(agent.loadRemoteAgent(second)).isEqualTo("peer"); // the peer moved: replaced
            assertThat(agent.loadRemoteAgent(first)).isEqualTo("peer"); // and back
            assertThat(post(agent, local).attributes().peer()).isEqualTo("127.0.0.1:1");

            byte[] reused = new EmbeddedMetadata("peer", "127.0.0.1", 3).encode();
            agent.loadRemoteAgent(reused);
            byte[] moved = new EmbeddedMetadata("peer", "127.0.0.1", 4).encode();
            System.arraycopy(moved, 0, reused, 0, reused.length); // the caller refills its array: a new peer
            agent.loadRemoteAgent(reused);
            assertThat(post(agent, local).attributes().peer()).isEqualTo("127.0.0.1:4");
            Reference.reachabilityFence(buffer);
        }
    }

    @Test
    void aTransferTellsItsOneListenerAndItsFutureTheSameEnd() throws Exception {
        try (EmbeddedTransport transport = EmbeddedTransport.open(ServedMemory.loopback())) {
            EmbeddedAgent agent = (EmbeddedAgent) transport.createAgent("reader");
            ByteBuffer buffer = ByteBuffer.allocateDirect(16);
            MemoryRegion local = new MemoryRegion(NativeMemory.addressOf(buffer), 16, MemoryType.DRAM, 0);
            agent.registerMemory(local);
            agent.loadRemoteAgent(new EmbeddedMetadata("peer", "127.0.0.1", 1).encode());

            // Listener first, future asked for after the end.
            TransferHandle first = agent.postTransfer(TransferOp.READ, List.of(local), "peer",
                    List.of(new MemoryRegion(4096, 16, MemoryType.DRAM, 0)), NOTIFICATION);
            CompletableFuture<Throwable> told = new CompletableFuture<>();
            first.onEnd(told::complete);
            Throwable failure = told.get(30, TimeUnit.SECONDS);
            assertThat(failure).isInstanceOf(TransportException.class); // nothing listens on port 1
            assertThat(first.state()).isEqualTo(TransferState.ERROR);
            assertThatThrownBy(() -> first.completion().join()).hasCause(failure);
            List<Throwable> again = new java.util.ArrayList<>();
            first.onEnd(again::add); // after the end: told at once, with the same failure
            assertThat(again).containsExactly(failure);

            // Future first, listener registered once the future has completed: told too (by the ending thread, which
            // completes the future first, or at once).
            TransferHandle second = agent.postTransfer(TransferOp.READ, List.of(local), "peer",
                    List.of(new MemoryRegion(4096, 16, MemoryType.DRAM, 0)), NOTIFICATION);
            Throwable secondFailure = second.completion().handle((ignored, error) -> error).join();
            CompletableFuture<Throwable> late = new CompletableFuture<>();
            second.onEnd(late::complete);
            assertThat(late.get(30, TimeUnit.SECONDS)).isSameAs(secondFailure).isInstanceOf(TransportException.class);
            assertThat(agent.details()).containsEntry("transfersInFlight", 0);
            Reference.reachabilityFence(buffer);
        }
    }

    /** Posts a READ to "peer" and waits for it to end (nothing listens on those ports: it fails to connect). */
    /** Posts a READ from the peer loaded as "peer" and waits for its end (nothing listens there: it fails). */
    private static TransferHandle post(EmbeddedAgent agent, MemoryRegion local) {
        TransferHandle handle = agent.postTransfer(TransferOp.READ, List.of(local), "peer",
                List.of(new MemoryRegion(4096, 16, MemoryType.DRAM, 0)), NOTIFICATION);
        handle.completion().handle((ignored, error) -> null).join();
        return handle;
    }
}
