package io.nixlconnect.transport.embedded;

import static org.assertj.core.api.Assertions.assertThat;

import com.sun.jna.Memory;
import com.sun.jna.Pointer;
import io.nixlconnect.internal.NativeMemory;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.nio.ByteBuffer;
import java.nio.channels.ServerSocketChannel;
import java.nio.channels.SocketChannel;
import java.util.Arrays;
import java.util.Random;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

/** A block list over the socket: gathering writes and scattering reads, not a system call per block. */
class WireBlockListTest {

    private static final int BLOCKS = 4096;
    private static final int BLOCK = 4096;

    @Test
    void aScatteredBlockListStreamsInGatheringWritesAndScatteringReads() throws Exception {
        long poolSize = 2L * BLOCKS * BLOCK;
        try (Memory source = new Memory(poolSize); Memory target = new Memory(poolSize);
             ServerSocketChannel server = ServerSocketChannel.open()) {
            byte[] data = new byte[(int) poolSize];
            new Random(17).nextBytes(data);
            source.write(0, data, 0, data.length);
            target.clear();
            long[] sent = new long[BLOCKS];
            long[] received = new long[BLOCKS];
            long[] lengths = new long[BLOCKS];
            for (int i = 0; i < BLOCKS; i++) {
                sent[i] = Pointer.nativeValue(source) + 2L * i * BLOCK;
                received[i] = Pointer.nativeValue(target) + 2L * (BLOCKS - 1 - i) * BLOCK;
                lengths[i] = BLOCK;
            }
            server.bind(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0));
            try (Link sender = Link.plain(SocketChannel.open(server.getLocalAddress()));
                 Link receiver = Link.plain(server.accept())) {
                CompletableFuture<Long> writes = CompletableFuture.supplyAsync(() -> {
                    try {
                        Wire.sendHostRanges(sender, sent, lengths, BLOCKS);
                        return sender.systemCalls();
                    } catch (java.io.IOException e) {
                        throw new java.io.UncheckedIOException(e);
                    }
                });
                Wire.receiveHostRanges(receiver, received, lengths, BLOCKS);
                // Blocking gathering writes send IOV_MAX blocks each; one per block would be 4,096.
                assertThat(writes.get(30, TimeUnit.SECONDS)).isLessThanOrEqualTo(BLOCKS / CrossMemoryAttach.IOV_MAX * 2);
                // A scattering read takes whatever has arrived, many blocks at a time.
                assertThat(receiver.systemCalls()).isLessThan(BLOCKS / 4);
            }
            byte[] copied = target.getByteArray(0, (int) poolSize);
            for (int i = 0; i < BLOCKS; i++) {
                int from = 2 * i * BLOCK;
                int to = 2 * (BLOCKS - 1 - i) * BLOCK;
                assertThat(Arrays.copyOfRange(copied, to, to + BLOCK)).as("block %d", i)
                        .isEqualTo(Arrays.copyOfRange(data, from, from + BLOCK));
                assertThat(Arrays.copyOfRange(copied, to + BLOCK, to + 2 * BLOCK)).as("gap after block %d", i)
                        .containsOnly(0);
            }
        }
    }

    /**
     * Views cover exactly the listed ranges, in order: neighbours share a view, ranges further apart than one view
     * can reach get their own, empty ones none, one longer than a view is split. No memory is touched, so the
     * addresses need not be mapped.
     */
    @Test
    void viewsCoverExactlyTheListedRangesInOrder() {
        long base = 0x7000_0000_0000L;
        long far = base + 3L * NativeMemory.MAX_VIEW;
        long[] addresses = {base + 8192, base, far, base + 4096, far + 100, base + 4096, far - NativeMemory.MAX_VIEW};
        long[] lengths = {4096, 4096, 50, 0, 10, 16, NativeMemory.MAX_VIEW + 7L};
        ByteBuffer[] views = Wire.hostViews(addresses, lengths, addresses.length, 1);
        assertThat(views[0]).isNull(); // the caller's leading slot
        long[][] expected = {
            {base + 8192, 4096}, {base, 4096}, {far, 50}, {far + 100, 10}, {base + 4096, 16},
            {far - NativeMemory.MAX_VIEW, NativeMemory.MAX_VIEW}, {far, 7}};
        assertThat(views).hasSize(1 + expected.length);
        for (int i = 0; i < expected.length; i++) {
            ByteBuffer view = views[i + 1];
            assertThat(NativeMemory.addressOf(view)).as("view %d address", i).isEqualTo(expected[i][0]);
            assertThat((long) view.remaining()).as("view %d length", i).isEqualTo(expected[i][1]);
        }
    }
}
