package io.nixlconnect.transport.embedded;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.nixlconnect.internal.NativeMemory;
import io.nixlconnect.transport.MemoryRegion;
import io.nixlconnect.transport.MemoryType;
import io.nixlconnect.transport.TransferOp;
import io.nixlconnect.transport.TransportException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.nio.ByteBuffer;
import java.nio.channels.ServerSocketChannel;
import java.nio.channels.SocketChannel;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * One transfer's exchanges from the client side, run on a connection opened here against a real server (or one that
 * drops every request), without the transfer's queue, worker or retry around them.
 */
@Timeout(value = 60, unit = TimeUnit.SECONDS)
class TransferExchangeTest {

    private static final Duration WAIT = Duration.ofSeconds(20);
    /** Above the inline limit and below the striping threshold: a two-round-trip request. */
    private static final int STREAMED = 128 * 1024;

    private final EmbeddedTransport client = EmbeddedTransport.open(ServedMemory.loopback());
    /** Same-host copy off: every READ here goes over the socket. */
    private final SameHostPeer tcpOnly = new SameHostPeer("off for this test");
    private final PeerPool pool = new PeerPool(4, Runnable::run, tcpOnly, new PeerCounters());
    private final ByteBuffer local = ByteBuffer.allocateDirect(STREAMED);

    @AfterEach
    void close() {
        client.close();
    }

    private TransferExchange exchange(TransferOp op, int port, byte[] credential, long remote, int length) {
        String host = InetAddress.getLoopbackAddress().getHostAddress();
        EmbeddedMetadata peer = new EmbeddedMetadata("victim", host, port);
        MemoryRegion localRegion = new MemoryRegion(NativeMemory.addressOf(local), length, MemoryType.DRAM, 0);
        return new TransferExchange(client, op, List.of(localRegion), LoadedPeer.of(peer, new byte[0]),
                List.of(new MemoryRegion(remote, length, MemoryType.DRAM, 0)), credential, () -> false);
    }

    private Link connect(TransferExchange exchange) throws Exception {
        return EmbeddedTransfer.connect(client, exchange.peer(), opened -> { });
    }

    @Test
    void aReadBringsThePeersBytesIntoLocalMemoryAndHasItNotifiedOverTcp() throws Exception {
        byte[] content = EmbeddedCredentialTest.random(STREAMED);
        try (ServedMemory served = new ServedMemory(ServedMemory.loopback(), "victim", TransferOp.READ, content)) {
            TransferExchange exchange = exchange(TransferOp.READ, served.port(), served.credential, served.address,
                    STREAMED);
            assertThat(exchange.totalBytes()).isEqualTo(STREAMED);
            assertThat(exchange.path()).isNull();
            Link link = connect(exchange);
            try {
                exchange.run(link, false, tcpOnly, pool);
            } finally {
                link.close();
            }
            assertThat(NativeMemory.copyOut(NativeMemory.addressOf(local), STREAMED)).isEqualTo(content);
            assertThat(exchange.path()).isEqualTo(SameHostPeer.TCP);
            assertThat(exchange.streams()).isEqualTo(1);
            assertThat(served.window.notified()).succeedsWithin(WAIT);
        }
    }

    @Test
    void aSmallWriteLandsInThePeersMemoryInOneRoundTrip() throws Exception {
        byte[] content = EmbeddedCredentialTest.random(1024);
        local.put(content).clear();
        try (ServedMemory served = new ServedMemory(ServedMemory.loopback(), "victim", TransferOp.WRITE,
                new byte[1024])) {
            TransferExchange exchange = exchange(TransferOp.WRITE, served.port(), served.credential, served.address,
                    1024);
            Link link = connect(exchange);
            try {
                exchange.run(link, false, tcpOnly, pool);
            } finally {
                link.close();
            }
            assertThat(served.window.notified()).succeedsWithin(WAIT); // delivered before the answer
            assertThat(served.content()).isEqualTo(content);
            assertThat(exchange.path()).isEqualTo(SameHostPeer.TCP);
        }
    }

    @Test
    void aRefusalIsTheTransportsExceptionNamingTheTransfer() throws Exception {
        try (ServedMemory served = new ServedMemory(ServedMemory.loopback(), "victim", TransferOp.READ,
                new byte[STREAMED])) {
            TransferExchange exchange = exchange(TransferOp.READ, served.port(), ServedMemory.newCredential(),
                    served.address, STREAMED);
            Link link = connect(exchange);
            try {
                assertThatThrownBy(() -> exchange.run(link, false, tcpOnly, pool))
                        .isInstanceOf(TransportException.class)
                        .hasMessageStartingWith(exchange.describe() + " refused by the peer: ")
                        .hasMessageContaining("no live ReadableOperation");
            } finally {
                link.close();
            }
            assertThat(exchange.describe()).isEqualTo("READ of 1 range(s) with agent 'victim' at "
                    + InetAddress.getLoopbackAddress().getHostAddress() + ":" + served.port());
        }
    }

    /** What an older nixl-connect does with a request kind it does not know: drops the connection unanswered. */
    @Test
    void aFreshConnectionDroppedOnAnInlineRequestMakesThePeerTakeTwoRoundTripsAndIsWorthARetry() throws Exception {
        try (ServerSocketChannel dropping = ServerSocketChannel.open()) {
            dropping.bind(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0));
            int port = ((InetSocketAddress) dropping.getLocalAddress()).getPort();
            Thread dropper = new Thread(() -> {
                try (SocketChannel accepted = dropping.accept()) {
                    accepted.read(ByteBuffer.allocate(Wire.HEAD)); // the request's first bytes, then gone
                } catch (java.io.IOException ignored) {
                    // the test sees the drop on the client side
                }
            });
            dropper.start();
            TransferExchange exchange = exchange(TransferOp.READ, port, ServedMemory.newCredential(), 0x10000, 64);
            assertThat(tcpOnly.takesInline()).isTrue();
            Link link = connect(exchange);
            try {
                assertThatThrownBy(() -> exchange.run(link, false, tcpOnly, pool))
                        .isInstanceOfSatisfying(EmbeddedTransfer.StaleConnectionException.class,
                                stale -> assertThat(stale.retryable).isTrue());
            } finally {
                link.close();
                dropper.join(WAIT.toMillis());
            }
            assertThat(tcpOnly.takesInline()).isFalse();
        }
    }

    @Test
    void aPooledConnectionThatFailsBeforeTheAnswerIsWorthARetryWithoutMarkingThePeer() throws Exception {
        try (ServedMemory served = new ServedMemory(ServedMemory.loopback(), "victim", TransferOp.READ,
                new byte[64])) {
            TransferExchange exchange = exchange(TransferOp.READ, served.port(), served.credential, served.address, 64);
            Link link = connect(exchange);
            link.close(); // as a pooled connection the peer had closed
            assertThatThrownBy(() -> exchange.run(link, true, tcpOnly, pool))
                    .isInstanceOfSatisfying(EmbeddedTransfer.StaleConnectionException.class,
                            stale -> assertThat(stale.retryable).isFalse());
            assertThat(tcpOnly.takesInline()).isTrue();
            assertThat(served.window.notified()).isNotDone();
        }
    }
}
