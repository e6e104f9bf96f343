package io.nixlconnect.transport.embedded;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

import io.nixlconnect.transport.MemoryRegion;
import io.nixlconnect.transport.MemoryType;
import io.nixlconnect.transport.TransferOp;
import io.nixlconnect.transport.TransportException;
import java.nio.channels.SocketChannel;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/** Closing a window while a peer holds a direct-copy grant, or while a server thread streams from it. */
@Timeout(value = 60, unit = TimeUnit.SECONDS)
class EmbeddedWindowTest {

    private final EmbeddedTransport transport = EmbeddedTransport.open(EmbeddedSettings.defaults());
    private final EmbeddedAgent agent = (EmbeddedAgent) transport.createAgent("window-test");

    @AfterEach
    void close() {
        transport.close();
    }

    private EmbeddedWindow window() {
        MemoryRegion region = new MemoryRegion(0x10000, 4096, MemoryType.DRAM, 0);
        agent.registerMemory(region);
        return (EmbeddedWindow) agent.openWindow(TransferOp.READ, List.of(region), "0123456789abcdef0123456789abcdef".getBytes());
    }

    @Test
    void aSecondWindowWithTheSameCredentialIsRefusedWithoutNamingIt() {
        String credential = "0123456789abcdef0123456789abcdef";
        EmbeddedWindow first = window();
        MemoryRegion region = new MemoryRegion(0x20000, 4096, MemoryType.DRAM, 0);
        agent.registerMemory(region);
        assertThatThrownBy(() -> agent.openWindow(TransferOp.READ, List.of(region), credential.getBytes()))
                .isInstanceOf(TransportException.class).hasMessageContaining("already open")
                .hasMessageNotContaining(credential);
        assertThat(first.notification().toString()).doesNotContain(credential);
        first.close();
    }

    @Test
    void claimsStopAtTheNotificationsExpectedAndAReleasedClaimIsFreeAgain() {
        MemoryRegion region = new MemoryRegion(0x30000, 4096, MemoryType.DRAM, 0);
        agent.registerMemory(region);
        EmbeddedWindow window = (EmbeddedWindow) agent.openWindow(TransferOp.READ, List.of(region),
                "fedcba9876543210fedcba9876543210".getBytes(), 2);
        assertThat(window.claim()).isTrue();
        assertThat(window.claim()).isTrue();
        assertThat(window.claim()).as("both notifications are delivered or on their way").isFalse();
        window.release(); // an inline transfer failed before handing its bytes over
        assertThat(window.claim()).isTrue();
        window.deliver();
        assertThat(window.notificationsReceived()).isEqualTo(1);
        assertThat(window.notified()).isNotDone();
        window.deliver();
        assertThat(window.notificationsReceived()).isEqualTo(2);
        assertThat(window.notified()).isCompleted();
        assertThat(window.claim()).isFalse();
    }

    /**
     * A close revokes a grant: the peer is told on its connection and stops (it answers ABORTED), and the close
     * returns with the memory released. Before, the close waited up to 30 s for the report and then threw.
     */
    @Test
    void closeRevokesAGrantAndReturnsOnceThePeerStopped() throws Exception {
        EmbeddedWindow window = window();
        try (GrantedPair pair = new GrantedPair(window)) {
            CompletableFuture<Void> closing = CompletableFuture.runAsync(window::close);
            assertThat(pair.peerReadsRevocation()).isTrue();
            pair.peer.write(java.nio.ByteBuffer.wrap(new byte[] {Wire.COPY_ABORTED}));
            closing.get(10, TimeUnit.SECONDS);
            assertThat(window.releasedWithoutNotification()).isFalse();
            assertThat(window.enter(pair.link, true)).as("no new entry once closed").isFalse();
        }
        assertThat(window.notified()).isCompletedExceptionally();
    }

    /**
     * A granted peer that does not stop when told is cut off after {@link EmbeddedWindow#REVOKE_WAIT_NANOS}, the
     * close returns without an exception, and the memory is kept until the agent closes instead of released.
     */
    @Test
    void aGrantedPeerThatIgnoresTheRevocationIsCutOffAndTheMemoryKept() throws Exception {
        EmbeddedWindow window = window();
        try (GrantedPair pair = new GrantedPair(window)) {
            CompletableFuture<Void> closing = CompletableFuture.runAsync(window::close);
            assertThat(pair.peerReadsRevocation()).isTrue();
            closing.get(10, TimeUnit.SECONDS); // no answer: cut off after the revoke wait
            assertThat(pair.link.channel.isOpen()).isFalse();
            assertThat(window.releasedWithoutNotification()).isTrue();
            java.util.concurrent.atomic.AtomicBoolean freed = new java.util.concurrent.atomic.AtomicBoolean();
            window.keepUntilAgentCloses(() -> freed.set(true));
            assertThat(freed).as("kept while the agent lives").isFalse();
            agent.close();
            assertThat(freed).as("freed when the agent closes").isTrue();
        }
    }

    /** A granted link on loopback, its server thread (blocked reading the peer's report) simulated. */
    private static final class GrantedPair implements AutoCloseable {
        final java.nio.channels.ServerSocketChannel listener = java.nio.channels.ServerSocketChannel.open()
                .bind(new java.net.InetSocketAddress(java.net.InetAddress.getLoopbackAddress(), 0));
        final SocketChannel peer = SocketChannel.open(listener.getLocalAddress());
        final Link link = Link.plain(listener.accept());
        final Thread serverThread;

        GrantedPair(EmbeddedWindow window) throws java.io.IOException {
            assertThat(window.enter(link, true)).isTrue();
            assertThat(window.path()).isEqualTo(SameHostPeer.CROSS_MEMORY_ATTACH);
            serverThread = new Thread(() -> {
                try {
                    Wire.readCopyOutcome(link);
                } catch (java.io.IOException cutOff) {
                    // the close cut the connection
                } finally {
                    synchronized (link) {
                        window.exit(link, true);
                    }
                }
            });
            serverThread.start();
        }

        boolean peerReadsRevocation() throws java.io.IOException {
            java.nio.ByteBuffer answer = java.nio.ByteBuffer.allocate(3 + Wire.REVOKED_MESSAGE.length());
            peer.socket().setSoTimeout(10_000);
            java.io.DataInputStream in = new java.io.DataInputStream(peer.socket().getInputStream());
            in.readFully(answer.array());
            return answer.get(0) == Wire.ERROR && new String(answer.array(), 3, answer.capacity() - 3,
                    java.nio.charset.StandardCharsets.US_ASCII).equals(Wire.REVOKED_MESSAGE);
        }

        @Override
        public void close() throws Exception {
            serverThread.join(10_000);
            link.close();
            peer.close();
            listener.close();
        }
    }

    @Test
    void aClosedWindowTellsItsOneListenerAndItsFutureTheSameEnd() {
        EmbeddedWindow window = window();
        List<Throwable> told = new java.util.ArrayList<>();
        window.onNotified(told::add);
        assertThatThrownBy(() -> window.onNotified(ignored -> { })).as("one listener while it waits")
                .isInstanceOf(IllegalStateException.class);
        assertThat(told).isEmpty();
        window.close();
        assertThat(told).hasSize(1).first().isInstanceOf(TransportException.class);
        assertThatThrownBy(() -> window.notified().join()).hasCause(told.get(0));
        List<Throwable> late = new java.util.ArrayList<>();
        window.onNotified(late::add); // after the end: told at once
        assertThat(late).containsExactly(told.get(0));
    }

    @Test
    void closeAbortsAStreamingConnectionAndWaitsForItsThread() throws Exception {
        EmbeddedWindow window = window();
        try (SocketChannel channel = SocketChannel.open(); Link link = Link.plain(channel)) {
            assertThat(window.enter(link, false)).isTrue();
            assertThat(window.path()).isEqualTo(SameHostPeer.TCP);
            CompletableFuture<Void> closing = CompletableFuture.runAsync(window::close);
            await().atMost(Duration.ofSeconds(10)).until(() -> !channel.isOpen());
            assertThat(channel.isOpen()).as("close cuts the streaming thread's connection").isFalse();
            assertThat(closing).isNotDone();
            window.exit(link, false);
            closing.get(10, TimeUnit.SECONDS);
        }
    }

    @Test
    void closeAbortsEveryStreamingConnectionAndWaitsForTheLastThread() throws Exception {
        EmbeddedWindow window = window();
        try (SocketChannel first = SocketChannel.open(); Link firstLink = Link.plain(first);
             SocketChannel second = SocketChannel.open(); Link secondLink = Link.plain(second);
             SocketChannel third = SocketChannel.open(); Link thirdLink = Link.plain(third)) {
            assertThat(window.enter(firstLink, false)).isTrue();
            assertThat(window.enter(secondLink, false)).isTrue();
            window.exit(firstLink, false); // the first one left: the second one is still inside
            assertThat(window.enter(thirdLink, false)).isTrue();
            assertThat(window.enter(firstLink, false)).isTrue(); // and the first one came back
            window.exit(thirdLink, false);
            CompletableFuture<Void> closing = CompletableFuture.runAsync(window::close);
            await().atMost(Duration.ofSeconds(10)).until(() -> !first.isOpen() && !second.isOpen());
            assertThat(first.isOpen()).as("close cuts every streaming thread's connection").isFalse();
            assertThat(second.isOpen()).isFalse();
            assertThat(third.isOpen()).as("a link that left is not touched").isTrue();
            window.exit(secondLink, false);
            Thread.sleep(100);
            assertThat(closing).as("one thread is still inside").isNotDone();
            window.exit(firstLink, false);
            closing.get(10, TimeUnit.SECONDS);
        }
    }
}
