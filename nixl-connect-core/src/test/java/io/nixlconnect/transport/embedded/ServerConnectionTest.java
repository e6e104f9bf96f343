package io.nixlconnect.transport.embedded;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.nixlconnect.transport.MemoryRegion;
import io.nixlconnect.transport.MemoryType;
import io.nixlconnect.transport.TransferOp;
import io.nixlconnect.transport.TransportException;
import java.io.IOException;
import java.net.InetAddress;
import java.nio.channels.SocketChannel;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutionException;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/** One server connection's clocks, eviction state and the windows it started on, without a peer. */
class ServerConnectionTest {

    private final EmbeddedTransport transport = EmbeddedTransport.open(EmbeddedSettings.defaults());
    private final EmbeddedAgent agent = (EmbeddedAgent) transport.createAgent("connection-test");
    private final Set<ServerConnection> open = ConcurrentHashMap.newKeySet();
    private final SocketChannel channel;
    private final ServerConnection connection;
    private long nextRegion = 0x10000;

    ServerConnectionTest() throws IOException {
        channel = SocketChannel.open();
        connection = new ServerConnection(channel, InetAddress.getLoopbackAddress(), EmbeddedSettings.defaults(), open);
        open.add(connection);
    }

    @AfterEach
    void close() throws IOException {
        channel.close();
        transport.close();
    }

    private EmbeddedWindow window(TransferOp access, String credential) {
        MemoryRegion region = new MemoryRegion(nextRegion, 4096, MemoryType.DRAM, 0);
        nextRegion += 0x10000;
        agent.registerMemory(region);
        return (EmbeddedWindow) agent.openWindow(access, List.of(region), credential.getBytes(StandardCharsets.US_ASCII));
    }

    private static void complete(EmbeddedWindow window) {
        assertThat(window.claim()).isTrue();
        window.deliver();
        assertThat(window.notified()).isDone();
    }

    @Test
    void aNewConnectionWaitsSinceItWasAcceptedAndCanBeEvicted() {
        assertThat(connection.waitingSince).isEqualTo(connection.acceptedAt);
        assertThat(connection.lastProgress()).isEqualTo(connection.acceptedAt); // no link yet: its waiting clock
        assertThat(connection.evict()).isTrue();
        assertThat(connection.evict()).isFalse();
        assertThat(connection.beginRequest()).isFalse(); // chosen for eviction: it serves nothing more
    }

    @Test
    void aConnectionInARequestIsBusyAndNotEvictedUntilItWaitsAgainWithAFreshClock() {
        assertThat(connection.beginRequest()).isTrue();
        assertThat(connection.waitingSince).isEqualTo(ServerConnection.BUSY);
        assertThat(connection.evict()).isFalse();
        long before = System.nanoTime();
        connection.awaitRequest();
        assertThat(connection.waitingSince).isNotEqualTo(ServerConnection.BUSY);
        assertThat(connection.waitingSince - before).isNotNegative();
        assertThat(connection.evict()).isTrue();
    }

    @Test
    void requestsThatNamedNoLiveWindowKeepTheAgeTheConnectionHad() {
        connection.awaitRequest(); // refused requests and IDENTIFYs begin no request
        connection.awaitRequest();
        assertThat(connection.waitingSince).isEqualTo(connection.acceptedAt);
    }

    @Test
    void aServedNotifyRestartsTheIdleClockOnlyWhileWaiting() {
        long before = System.nanoTime();
        connection.served();
        assertThat(connection.waitingSince - before).isNotNegative();

        assertThat(connection.beginRequest()).isTrue();
        connection.served();
        assertThat(connection.waitingSince).isEqualTo(ServerConnection.BUSY);
    }

    @Test
    void holdsAWindowItStartedOnUntilTheWindowIsNotified() {
        EmbeddedWindow window = window(TransferOp.READ, "0123456789abcdef0123456789abcdef");
        assertThat(connection.holdsOpenWindow()).isFalse();
        connection.started(window);
        assertThat(connection.holdsOpenWindow()).isTrue();
        complete(window); // notified on another connection, as a stripe's window is
        assertThat(connection.holdsOpenWindow()).isFalse();

        EmbeddedWindow next = window(TransferOp.WRITE, "fedcba9876543210fedcba9876543210");
        connection.started(next);
        assertThat(connection.unfinished).containsExactly(next); // the completed one is forgotten
        connection.notified(next);
        connection.notified(null);
        assertThat(connection.unfinished).isEmpty();
    }

    @Test
    void whenItFinishesItFailsTheWindowsItLeavesUnfinishedWithWhyItDropped() {
        EmbeddedWindow reading = window(TransferOp.READ, "0123456789abcdef0123456789abcdef");
        EmbeddedWindow done = window(TransferOp.WRITE, "fedcba9876543210fedcba9876543210");
        connection.started(reading);
        connection.started(done);
        complete(done);
        connection.dropReason = "java.io.IOException: reset for the test";

        connection.finished();

        assertThat(channel.isOpen()).isFalse();
        assertThat(open).isEmpty();
        assertThat(connection.unfinished).isEmpty();
        assertThat(connection.gone.getCount()).isZero();
        connection.awaitGone(0);
        assertThat(reading.notified()).isCompletedExceptionally();
        assertThatThrownBy(() -> reading.notified().get()).isInstanceOf(ExecutionException.class)
                .satisfies(e -> assertThat(e.getCause()).isInstanceOf(TransportException.class)
                        .hasMessageContaining("reading this operation's memory dropped before it notified")
                        .hasMessageContaining("reset for the test"));
        assertThat(done.notified()).isCompleted().isNotCompletedExceptionally();
    }
}
