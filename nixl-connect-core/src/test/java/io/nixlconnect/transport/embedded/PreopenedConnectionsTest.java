package io.nixlconnect.transport.embedded;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.nixlconnect.internal.NativeMemory;
import io.nixlconnect.transport.MemoryRegion;
import io.nixlconnect.transport.MemoryType;
import io.nixlconnect.transport.TransferHandle;
import io.nixlconnect.transport.TransferOp;
import io.nixlconnect.transport.TransferState;
import java.lang.ref.Reference;
import java.nio.ByteBuffer;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * A peer loaded for the first time gets a TCP connection started at once ({@link PreopenedConnections}), which its
 * first transfer takes instead of connecting itself; one never taken is closed after
 * {@link PreopenedConnections#MAX_AGE_NANOS} or with the transport, whichever comes first. And a server keeps a spare
 * handler thread, so that a new connection does not wait for a thread to start.
 */
@Timeout(value = 60, unit = TimeUnit.SECONDS)
class PreopenedConnectionsTest {

    private static final Duration WAIT = Duration.ofSeconds(10);

    @Test
    void aPeerIsConnectedToWhenLoadedAndItsFirstTransferTakesThatConnection() {
        byte[] content = EmbeddedCredentialTest.random(4096);
        try (ServedMemory served = new ServedMemory(ServedMemory.loopback(), "passive", TransferOp.READ, content);
             EmbeddedTransport transport = EmbeddedTransport.open(ServedMemory.loopback())) {
            EmbeddedAgent reader = (EmbeddedAgent) transport.createAgent("reader");
            ByteBuffer buffer = ByteBuffer.allocateDirect(4096);
            MemoryRegion local = new MemoryRegion(NativeMemory.addressOf(buffer), 4096, MemoryType.DRAM, 0);
            reader.registerMemory(local);

            reader.loadRemoteAgent(served.agent.localMetadata());
            assertThat(transport.preopenedCount()).isEqualTo(1);
            await().atMost(WAIT).until(() -> served.transport.server().connectionCount() == 1);

            TransferHandle read = reader.postTransfer(TransferOp.READ, List.of(local), "passive",
                    List.of(new MemoryRegion(served.address, 4096, MemoryType.DRAM, 0)), served.credential);
            assertThat(read.completion()).succeedsWithin(WAIT);
            assertThat(NativeMemory.copyOut(local.address(), 4096)).isEqualTo(content);
            assertThat(transport.preopenedCount()).isZero();
            // The transfer went over the connection opened at load: the server never saw a second one.
            assertThat(served.transport.server().connectionCount()).isEqualTo(1);
            Reference.reachabilityFence(buffer);
        }
    }

    @Test
    void aConnectionOpenedForAPeerNeverUsedClosesWithTheTransport() {
        PreopenedConnections.maxAgeNanos = TimeUnit.SECONDS.toNanos(60); // only closing the transport closes it
        try (ServedMemory served = new ServedMemory(ServedMemory.loopback(), "passive", TransferOp.READ, new byte[16])) {
            EmbeddedTransport transport = EmbeddedTransport.open(ServedMemory.loopback());
            try {
                transport.createAgent("reader").loadRemoteAgent(served.agent.localMetadata());
                await().atMost(WAIT).until(() -> served.transport.server().connectionCount() == 1);
            } finally {
                transport.close();
            }
            assertThat(transport.preopenedCount()).isZero();
            await().atMost(WAIT).until(() -> served.transport.server().connectionCount() == 0);
        } finally {
            PreopenedConnections.maxAgeNanos = PreopenedConnections.MAX_AGE_NANOS;
        }
    }

    @Test
    void aConnectionOpenedForAPeerNotUsedInTimeIsClosed() {
        try (ServedMemory served = new ServedMemory(ServedMemory.loopback(), "passive", TransferOp.READ, new byte[16]);
             EmbeddedTransport transport = EmbeddedTransport.open(ServedMemory.loopback())) {
            transport.createAgent("reader").loadRemoteAgent(served.agent.localMetadata());
            await().atMost(WAIT).until(() -> served.transport.server().connectionCount() == 1);
            // The server's idle timeout is 60 s: it is the loading side that lets go after MAX_AGE_NANOS.
            await().atMost(WAIT).until(() -> served.transport.server().connectionCount() == 0);
            assertThat(transport.preopenedCount()).isZero();
        }
    }

    /**
     * The peer's server closed the connection opened at load (its idle timeout here; eviction at its connection limit
     * likewise): the transfer sees it closed before sending anything and connects anew, as it would have without it;
     * the drop is not taken for an older peer that drops one-round-trip requests.
     */
    @Test
    void aConnectionThePeerClosedBeforeTheFirstTransferIsReplacedByAFreshOne() {
        byte[] content = EmbeddedCredentialTest.random(4096);
        EmbeddedSettings shortIdle = ServedMemory.loopback().withTimeouts(Duration.ofMillis(200), Duration.ofSeconds(5));
        PreopenedConnections.maxAgeNanos = TimeUnit.SECONDS.toNanos(60); // the loading side holds it past the drop
        try (ServedMemory served = new ServedMemory(shortIdle, "passive", TransferOp.READ, content);
             EmbeddedTransport transport = EmbeddedTransport.open(ServedMemory.loopback())) {
            EmbeddedAgent reader = (EmbeddedAgent) transport.createAgent("reader");
            ByteBuffer buffer = ByteBuffer.allocateDirect(4096);
            MemoryRegion local = new MemoryRegion(NativeMemory.addressOf(buffer), 4096, MemoryType.DRAM, 0);
            reader.registerMemory(local);
            reader.loadRemoteAgent(served.agent.localMetadata());
            await().atMost(WAIT).pollInterval(Duration.ofMillis(5))
                    .until(() -> served.transport.server().connectionCount() == 1);
            await().atMost(WAIT).until(() -> served.transport.server().connectionCount() == 0); // idle: closed
            assertThat(transport.preopenedCount()).isEqualTo(1); // still held, closed by the peer

            TransferHandle read = reader.postTransfer(TransferOp.READ, List.of(local), "passive",
                    List.of(new MemoryRegion(served.address, 4096, MemoryType.DRAM, 0)), served.credential);
            assertThat(read.completion()).succeedsWithin(WAIT);
            assertThat(read.state()).isEqualTo(TransferState.DONE);
            assertThat(NativeMemory.copyOut(local.address(), 4096)).isEqualTo(content);
            // Not taken for an older peer that drops one-round-trip requests: small transfers stay inline.
            assertThat(transport.peerPaths().values()).allSatisfy(path -> assertThat(path).doesNotContain("round trips"));
            assertThat(transport.preopenedCount()).isZero();
            Reference.reachabilityFence(buffer);
        } finally {
            PreopenedConnections.maxAgeNanos = PreopenedConnections.MAX_AGE_NANOS;
        }
    }

    @Test
    void noConnectionIsStartedToAnEndpointAlreadyTransferredToNorToAHostName() {
        try (ServedMemory served = new ServedMemory(ServedMemory.loopback(), "passive", TransferOp.READ, new byte[16]);
             EmbeddedTransport transport = EmbeddedTransport.open(ServedMemory.loopback())) {
            EmbeddedAgent reader = (EmbeddedAgent) transport.createAgent("reader");
            ByteBuffer buffer = ByteBuffer.allocateDirect(16);
            MemoryRegion local = new MemoryRegion(NativeMemory.addressOf(buffer), 16, MemoryType.DRAM, 0);
            reader.registerMemory(local);
            reader.loadRemoteAgent(served.agent.localMetadata());
            TransferHandle read = reader.postTransfer(TransferOp.READ, List.of(local), "passive",
                    List.of(new MemoryRegion(served.address, 16, MemoryType.DRAM, 0)), served.credential);
            assertThat(read.completion()).succeedsWithin(WAIT);

            // Another agent at the same endpoint: the endpoint's pool has its connection already.
            reader.loadRemoteAgent(new EmbeddedMetadata("other", "127.0.0.1", served.port()).encode());
            // A host name would need a lookup on the loading thread: left to the transfer.
            reader.loadRemoteAgent(new EmbeddedMetadata("named", "localhost", served.port()).encode());
            assertThat(transport.preopenedCount()).isZero();
            assertThat(served.transport.server().connectionCount()).isEqualTo(1);
            Reference.reachabilityFence(buffer);
        }
    }

    @Test
    void aServerKeepsASpareHandlerThreadForTheNextNewConnection() {
        try (ServedMemory served = new ServedMemory(ServedMemory.loopback(), "passive", TransferOp.READ, new byte[16]);
             EmbeddedTransport transport = EmbeddedTransport.open(ServedMemory.loopback())) {
            assertThat(served.transport.server().handlerThreads()).isEqualTo(1); // before any connection
            transport.createAgent("reader").loadRemoteAgent(served.agent.localMetadata());
            // One thread serves the connection (it waits for its first request), another waits for the next one.
            await().atMost(WAIT).until(() -> served.transport.server().connectionCount() == 1
                    && served.transport.server().handlerThreads() == 2);
        }
    }
}
