package io.nixlconnect.transport.embedded;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

import io.nixlconnect.Connector;
import io.nixlconnect.ConnectorOptions;
import io.nixlconnect.Descriptor;
import io.nixlconnect.OperationStatus;
import io.nixlconnect.ReadOperation;
import io.nixlconnect.ReadableOperation;
import io.nixlconnect.TransferException;
import io.nixlconnect.WritableOperation;
import io.nixlconnect.WriteOperation;
import io.nixlconnect.internal.NativeMemory;
import io.nixlconnect.transport.MemoryRegion;
import io.nixlconnect.transport.MemoryType;
import io.nixlconnect.transport.TransferOp;
import io.nixlconnect.transport.TransferState;
import java.io.IOException;
import java.lang.ref.Reference;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.nio.ByteBuffer;
import java.nio.channels.ServerSocketChannel;
import java.nio.channels.SocketChannel;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.awaitility.core.ConditionTimeoutException;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * Large transfers striped over several connections ({@link StripedTransfer}): every byte lands where it belongs,
 * however the stripes cut the descriptors; one notification, only after every stripe; a stripe that fails fails the
 * transfer and nothing is notified; cancel stops every stripe; the passive side counts every stripe (a window closed
 * mid-read aborts them all, a stripe's reader lost fails the window); a peer that predates striped writes gets one
 * WRITE.
 */
@Timeout(value = 120, unit = TimeUnit.SECONDS)
class StripedTransferTest {

    private static final Duration WAIT = Duration.ofSeconds(30);
    private static final int SIZE = (int) StripedTransfer.MIN_BYTES;

    private static EmbeddedSettings tcp(int streams) {
        return EmbeddedSettings.defaults().withSameHostCopy(false).withTcpStreams(streams);
    }

    private static Connector connector(String name, EmbeddedSettings settings) {
        return new Connector(ConnectorOptions.builder().workerId(name).transports(settings).build());
    }

    @Test
    void stripedReadsAndWritesMoveEveryByteOfSeveralDescriptorsAndNotifyOnce() {
        // Odd sizes: the three stripes' boundaries fall inside descriptors, and a stripe spans several.
        int[] sizes = {20 << 20 | 7, 70 << 20 | 4093, 10 << 20 | 1};
        try (Connector producer = connector("producer", tcp(3)); Connector consumer = connector("consumer", tcp(3))) {
            Descriptor[] published = new Descriptor[sizes.length];
            Descriptor[] targets = new Descriptor[sizes.length];
            byte[][] contents = new byte[sizes.length][];
            for (int i = 0; i < sizes.length; i++) {
                contents[i] = EmbeddedCredentialTest.random(sizes[i]);
                published[i] = new Descriptor(contents[i]);
                targets[i] = Descriptor.allocate(sizes[i]);
            }
            ReadableOperation readable = producer.createReadable(published);
            ReadOperation read = consumer.beginRead(readable.metadata(), targets);
            read.waitForCompletion(WAIT);
            readable.waitForCompletion(WAIT);
            assertThat(read.attributes().streams()).isEqualTo(3);
            assertThat(read.attributes().backend()).isEqualTo("tcp");
            assertThat(read.transferPath()).isEqualTo(SameHostPeer.TCP);
            assertThat(readable.readsCompleted()).isEqualTo(1);
            for (int i = 0; i < sizes.length; i++) {
                assertThat(targets[i].toByteArray()).as("descriptor %d read", i).isEqualTo(contents[i]);
            }

            byte[][] written = new byte[sizes.length][];
            Descriptor[] sources = new Descriptor[sizes.length];
            for (int i = 0; i < sizes.length; i++) {
                written[i] = EmbeddedCredentialTest.random(sizes[i]);
                sources[i] = new Descriptor(written[i]);
            }
            WritableOperation writable = producer.createWritable(published);
            WriteOperation write = consumer.beginWrite(List.of(sources), writable.metadata());
            write.waitForCompletion(WAIT);
            writable.waitForCompletion(WAIT);
            assertThat(write.attributes().streams()).isEqualTo(3);
            for (int i = 0; i < sizes.length; i++) {
                assertThat(published[i].toByteArray()).as("descriptor %d written", i).isEqualTo(written[i]);
            }
            for (int i = 0; i < sizes.length; i++) {
                published[i].close();
                targets[i].close();
                sources[i].close();
            }
        }
    }

    @Test
    void smallTransfersOneStreamSettingAndAFullPoolTakeOneConnection() {
        byte[] content = EmbeddedCredentialTest.random(SIZE);
        try (Connector producer = connector("producer", tcp(2));
             Connector small = connector("small", tcp(2));
             Connector single = connector("single", tcp(1));
             Connector onePerPeer = connector("one-per-peer", tcp(4).withMaxConnectionsPerPeer(1));
             Descriptor source = new Descriptor(content); Descriptor target = Descriptor.allocate(SIZE);
             Descriptor smallSource = Descriptor.allocate(StripedTransfer.MIN_BYTES - 1);
             Descriptor smallTarget = Descriptor.allocate(StripedTransfer.MIN_BYTES - 1)) {
            ReadableOperation below = producer.createReadable(smallSource);
            ReadOperation smallRead = small.beginRead(below.metadata(), smallTarget);
            smallRead.waitForCompletion(WAIT);
            assertThat(smallRead.attributes().streams()).isEqualTo(1);
            for (Connector reader : List.of(single, onePerPeer)) {
                ReadableOperation readable = producer.createReadable(source);
                ReadOperation read = reader.beginRead(readable.metadata(), target);
                read.waitForCompletion(WAIT);
                readable.waitForCompletion(WAIT);
                assertThat(read.attributes().streams()).as(reader.name()).isEqualTo(1);
                assertThat(target.toByteArray()).isEqualTo(content);
            }
        }
    }

    @Test
    void tcpStreamsIsCheckedWithAClearError() {
        assertThat(EmbeddedSettings.defaults().tcpStreams()).isEqualTo(EmbeddedSettings.DEFAULT_TCP_STREAMS);
        assertThat(EmbeddedSettings.defaults().withTcpStreams(1).tcpStreams()).isEqualTo(1);
        assertThat(EmbeddedSettings.defaults().withTcpStreams(16).tcpStreams()).isEqualTo(16);
        assertThatThrownBy(() -> EmbeddedSettings.defaults().withTcpStreams(0))
                .isInstanceOf(IllegalArgumentException.class).hasMessageStartingWith("tcpStreams must be 1..16")
                .hasMessageEndingWith("was 0");
        assertThatThrownBy(() -> EmbeddedSettings.defaults().withTcpStreams(17))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("was 17");
        assertThat(EmbeddedSettings.defaults().withTcpStreams(3).toString()).contains("tcpStreams=3");
    }

    @Test
    void aStripeThatFailsMidwayErrorsTheTransferAndNothingIsNotified() throws Exception {
        try (FakePeer peer = new FakePeer(FakePeer.Mode.SECOND_CONNECTION_DIES_MIDWAY);
             ActiveSide active = new ActiveSide(TransferOp.READ, peer.port())) {
            EmbeddedTransfer transfer = active.submit();
            assertThatThrownBy(() -> transfer.completion().get(30, TimeUnit.SECONDS))
                    .isInstanceOf(ExecutionException.class).hasMessageContaining("stripe 2 of 2");
            assertThat(transfer.state()).isEqualTo(TransferState.ERROR);
            assertThat(peer.allConnectionsEnded()).as("the active side closed every stripe's connection").isTrue();
            assertThat(peer.connections.get()).isEqualTo(2);
            assertThat(peer.notifies.get()).isZero();
        }
    }

    @Test
    void cancelStopsEveryStripeAndNothingIsNotified() throws Exception {
        try (FakePeer peer = new FakePeer(FakePeer.Mode.STALL);
             ActiveSide active = new ActiveSide(TransferOp.READ, peer.port())) {
            EmbeddedTransfer transfer = active.submit();
            assertThat(peer.answered.await(30, TimeUnit.SECONDS)).as("both stripes under way").isTrue();
            transfer.cancel();
            assertThat(transfer.state()).isEqualTo(TransferState.CANCELLED);
            assertThat(transfer.completion()).failsWithin(WAIT); // completed just after cancel returns
            assertThat(peer.allConnectionsEnded()).as("cancel closed every stripe's connection").isTrue();
            assertThat(peer.notifies.get()).isZero();
        }
    }

    @Test
    void aPeerFromBeforeStripedWritesGetsOneWriteFromThenOn() throws Exception {
        try (FakePeer peer = new FakePeer(FakePeer.Mode.OLD_PEER);
             ActiveSide active = new ActiveSide(TransferOp.WRITE, peer.port())) {
            EmbeddedTransfer first = active.submit();
            first.completion().get(30, TimeUnit.SECONDS);
            assertThat(first.attributes().streams()).isEqualTo(1);
            EmbeddedTransfer second = active.submit();
            second.completion().get(30, TimeUnit.SECONDS);
            assertThat(peer.stripedWrites.get()).as("tried once, on a fresh connection").isEqualTo(1);
            assertThat(peer.writes.get()).isEqualTo(2);
            assertThat(peer.bytesWritten.get()).isEqualTo(2L * SIZE);
        }
    }

    @Test
    void theServerDeliversAStripedWritesNotificationOnlyWithItsNotify() throws Exception {
        byte[] original = new byte[SIZE];
        try (ServedMemory served = new ServedMemory(ServedMemory.loopback(), "passive", TransferOp.WRITE, original);
             RawPeer first = new RawPeer(served.port()); RawPeer second = new RawPeer(served.port())) {
            byte[] half = EmbeddedCredentialTest.random(SIZE / 2);
            for (RawPeer stripe : List.of(first, second)) {
                long address = served.address + (stripe == first ? 0 : SIZE / 2);
                stripe.send(RawPeer.request(Wire.WRITE_STRIPE, "passive", served.credential, address, SIZE / 2));
                assertThat(stripe.answer()).isEqualTo(RawPeer.Answer.OK);
                stripe.send(half);
                assertThat(stripe.answer()).as("the bytes are in").isEqualTo(RawPeer.Answer.OK);
                assertThat(served.window.notified()).as("no notification with a stripe").isNotDone();
            }
            first.send(RawPeer.request(Wire.NOTIFY, "passive", served.credential));
            assertThat(first.answer()).isEqualTo(RawPeer.Answer.OK);
            assertThat(served.window.notified()).succeedsWithin(WAIT);
            byte[] content = served.content();
            assertThat(java.util.Arrays.copyOfRange(content, 0, SIZE / 2)).isEqualTo(half);
            assertThat(java.util.Arrays.copyOfRange(content, SIZE / 2, SIZE)).isEqualTo(half);
        }
    }

    @Test
    void aWindowClosedDuringAStripedReadAbortsEveryStripe() throws Exception {
        int size = SIZE; // each stripe more than the sockets' buffers hold
        try (ServedMemory served = new ServedMemory(ServedMemory.loopback(), "passive", TransferOp.READ, new byte[size]);
             RawPeer first = new RawPeer(served.port()); RawPeer second = new RawPeer(served.port())) {
            for (RawPeer stripe : List.of(first, second)) {
                long address = served.address + (stripe == first ? 0 : size / 2);
                stripe.send(RawPeer.request(Wire.READ, "passive", served.credential, address, size / 2));
                assertThat(stripe.answer()).isEqualTo(RawPeer.Answer.OK);
                stripe.readBytes(1 << 16); // the server is now blocked sending the rest (the stripe reads no more)
            }
            long start = System.nanoTime();
            served.window.close();
            assertThat(Duration.ofNanos(System.nanoTime() - start)).as("close aborted both, not waited them out")
                    .isLessThan(Duration.ofSeconds(10));
            assertThat(closedWithin(first, 10_000)).isTrue();
            assertThat(closedWithin(second, 10_000)).isTrue();
            assertThat(served.window.notified()).isCompletedExceptionally();
        }
    }

    @Test
    void aFullServerDoesNotEvictAStripeThatFinishedItsPartWhileAnotherStillRuns() throws Exception {
        EmbeddedSettings full = ServedMemory.loopback().withServerConnectionLimits(2, 2);
        try (ServedMemory served = new ServedMemory(full, "passive", TransferOp.READ, new byte[SIZE]);
             RawPeer finished = new RawPeer(served.port()); RawPeer running = new RawPeer(served.port())) {
            finished.send(RawPeer.request(Wire.READ, "passive", served.credential, served.address, SIZE / 2));
            assertThat(finished.answer()).isEqualTo(RawPeer.Answer.OK);
            finished.readBytes(SIZE / 2); // its part is done: it waits for a request, the window not yet notified
            running.send(RawPeer.request(Wire.READ, "passive", served.credential, served.address + SIZE / 2, SIZE / 2));
            assertThat(running.answer()).isEqualTo(RawPeer.Answer.OK);
            running.readBytes(1 << 16); // the server is blocked sending the rest
            // the finished stripe's server thread is back waiting for a request
            await().atMost(WAIT).until(() -> served.transport.server().connectionsWaitingForRequest() == 1);
            try (RawPeer third = new RawPeer(served.port())) {
                assertThat(third.closedWithin(5_000)).as("refused: no connection may be evicted").isTrue();
            }
            assertThat(served.window.notified()).as("the finished stripe was not evicted").isNotDone();
            running.readBytes(SIZE / 2 - (1 << 16));
            finished.send(RawPeer.request(Wire.NOTIFY, "passive", served.credential));
            assertThat(finished.answer()).isEqualTo(RawPeer.Answer.OK);
            assertThat(served.window.notified()).succeedsWithin(WAIT);
        }
    }

    @Test
    void aStripesReaderLostMidReadEndsTheReadableErroredEvenIfTheOtherStripeFinished() throws Exception {
        try (Connector passive = connector("passive", tcp(2)); Descriptor source = Descriptor.allocate(SIZE)) {
            ReadableOperation readable = passive.createReadable(source);
            EmbeddedMetadata peer = EmbeddedMetadata.decode(readable.metadata().decodeNixlMetadata());
            byte[] credential = RawPeer.utf8(readable.metadata().notificationKey());
            long address = readable.metadata().descriptors().get(0).ptr();
            try (RawPeer finished = new RawPeer(peer.port()); RawPeer lost = new RawPeer(peer.port())) {
                finished.send(RawPeer.request(Wire.READ, peer.agent(), credential, address, SIZE / 2));
                assertThat(finished.answer()).isEqualTo(RawPeer.Answer.OK);
                finished.readBytes(SIZE / 2);
                lost.send(RawPeer.request(Wire.READ, peer.agent(), credential, address + SIZE / 2, SIZE / 2));
                assertThat(lost.answer()).isEqualTo(RawPeer.Answer.OK);
                lost.readBytes(1 << 20);
                lost.close();
                assertThatThrownBy(() -> readable.waitForCompletion(WAIT)).isInstanceOf(TransferException.class)
                        .hasMessageContaining("dropped before it notified");
                assertThat(readable.status()).isEqualTo(OperationStatus.ERRORED);
                assertThat(readable.readsCompleted()).isZero();
            }
        }
    }

    /** Whether the server closed the connection within the wait; reads what it had sent before in bulk. */
    private static boolean closedWithin(RawPeer peer, int waitMillis) throws IOException {
        peer.socket.setSoTimeout(waitMillis);
        byte[] sink = new byte[1 << 16];
        try {
            while (peer.socket.getInputStream().read(sink) >= 0) {
                // discard
            }
            return true;
        } catch (java.net.SocketTimeoutException e) {
            return false;
        } catch (java.net.SocketException e) {
            return true;
        }
    }

    /** An embedded transport striping over two streams, and a transfer of {@link #SIZE} bytes to a given port. */
    private static final class ActiveSide implements AutoCloseable {
        final EmbeddedTransport transport = EmbeddedTransport.open(tcp(2));
        final EmbeddedAgent agent = (EmbeddedAgent) transport.createAgent("active");
        final ByteBuffer buffer = ByteBuffer.allocateDirect(SIZE);
        final MemoryRegion local = new MemoryRegion(NativeMemory.addressOf(buffer), SIZE, MemoryType.DRAM, 0);
        final TransferOp op;
        final int port;

        ActiveSide(TransferOp op, int port) {
            this.op = op;
            this.port = port;
            agent.registerMemory(local);
        }

        EmbeddedTransfer submit() {
            EmbeddedTransfer transfer = new EmbeddedTransfer(agent, op, List.of(local),
                    LoadedPeer.of(new EmbeddedMetadata("fake", "127.0.0.1", port), new byte[0]),
                    List.of(new MemoryRegion(1L << 32, SIZE, MemoryType.DRAM, 0)), ServedMemory.newCredential(), false);
            transport.submit(transfer);
            return transfer;
        }

        @Override
        public void close() {
            transport.close();
            Reference.reachabilityFence(buffer);
        }
    }

    /** A peer speaking the wire by hand (no window behind it), to make stripes fail, stall, or meet an old peer. */
    private static final class FakePeer implements AutoCloseable {

        enum Mode {
            /** READs: the second connection sends half its stripe, then closes. */
            SECOND_CONNECTION_DIES_MIDWAY,
            /** READs: each connection answers OK, sends 64 KiB, then nothing until the client closes it. */
            STALL,
            /** WRITEs, as a peer from before WRITE_STRIPE: it drops the connection on one, serves WRITE. */
            OLD_PEER
        }

        final Mode mode;
        final ServerSocketChannel server;
        final Thread acceptor;
        final AtomicInteger connections = new AtomicInteger();
        final AtomicInteger open = new AtomicInteger();
        final AtomicInteger notifies = new AtomicInteger();
        final AtomicInteger stripedWrites = new AtomicInteger();
        final AtomicInteger writes = new AtomicInteger();
        final java.util.concurrent.atomic.AtomicLong bytesWritten = new java.util.concurrent.atomic.AtomicLong();
        final CountDownLatch answered = new CountDownLatch(2);

        FakePeer(Mode mode) throws IOException {
            this.mode = mode;
            server = ServerSocketChannel.open().bind(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0));
            acceptor = new Thread(this::accept, "fake-peer");
            acceptor.setDaemon(true);
            acceptor.start();
        }

        int port() {
            return server.socket().getLocalPort();
        }

        private void accept() {
            try {
                while (true) {
                    SocketChannel channel = server.accept();
                    int index = connections.incrementAndGet();
                    open.incrementAndGet();
                    Thread handler = new Thread(() -> serve(channel, index), "fake-peer-" + index);
                    handler.setDaemon(true);
                    handler.start();
                }
            } catch (IOException closed) {
                // the test is over
            }
        }

        private void serve(SocketChannel channel, int index) {
            try (Link link = Link.plain(channel)) {
                Wire.Head head = new Wire.Head();
                while (Wire.readHead(link, head)) {
                    long[] total = {0};
                    Wire.readRanges(link, head.count(), (address, length) -> {
                        total[0] += length;
                        return true;
                    });
                    switch (head.type()) {
                        case Wire.NOTIFY -> {
                            notifies.incrementAndGet();
                            Wire.writeOk(link);
                        }
                        case Wire.READ -> {
                            Wire.writeOk(link);
                            answered.countDown();
                            long sent = mode == Mode.STALL ? 1 << 16
                                    : mode == Mode.SECOND_CONNECTION_DIES_MIDWAY && index == 2 ? total[0] / 2 : total[0];
                            sendZeros(link, sent);
                            if (sent < total[0]) {
                                if (mode == Mode.STALL) {
                                    link.readFullyOrEof(ByteBuffer.allocate(1)); // until the client closes
                                }
                                return;
                            }
                        }
                        case Wire.WRITE_STRIPE -> {
                            stripedWrites.incrementAndGet();
                            return; // what a peer from before WRITE_STRIPE does: drop the connection, unanswered
                        }
                        case Wire.WRITE -> {
                            writes.incrementAndGet();
                            Wire.writeOk(link);
                            ByteBuffer sink = ByteBuffer.allocate(1 << 20);
                            for (long left = total[0]; left > 0; left -= sink.position()) {
                                sink.clear().limit((int) Math.min(sink.capacity(), left));
                                link.readFully(sink);
                            }
                            bytesWritten.addAndGet(total[0]);
                            Wire.writeOk(link); // "delivered"
                        }
                        default -> {
                            return;
                        }
                    }
                }
            } catch (IOException e) {
                // the client closed the connection
            } finally {
                open.decrementAndGet();
            }
        }

        private static void sendZeros(Link link, long length) throws IOException {
            ByteBuffer zeros = ByteBuffer.allocate(1 << 20);
            for (long left = length; left > 0; ) {
                zeros.clear().limit((int) Math.min(zeros.capacity(), left));
                left -= zeros.remaining();
                link.writeFully(zeros);
            }
        }

        /** Whether every connection accepted so far has ended (the client closed it) within 10 s. */
        boolean allConnectionsEnded() {
            try {
                await().atMost(Duration.ofSeconds(10)).pollInterval(Duration.ofMillis(10)).until(() -> open.get() == 0);
                return true;
            } catch (ConditionTimeoutException e) {
                return false;
            }
        }

        @Override
        public void close() throws IOException {
            server.close();
        }
    }
}
