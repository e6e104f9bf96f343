package io.nixlconnect.transport.nixl;

import com.sun.jna.Memory;
import com.sun.jna.Pointer;
import io.nixlconnect.TestTags;
import io.nixlconnect.transport.MemoryRegion;
import io.nixlconnect.transport.MemoryRegistration;
import io.nixlconnect.transport.MemoryType;
import io.nixlconnect.transport.TransferOp;
import io.nixlconnect.transport.TransferState;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.RegisterExtension;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * Issue 32: NIXL operations side by side. One peer's load is held open inside the agent (its native call waits on a
 * latch, then reaches NIXL): the other peers still load and are read from, and a second load of the held peer's
 * metadata waits for the first and makes no native call of its own. Before, {@code NixlPeers.load} was synchronized
 * agent-wide and held that monitor across the native call, so every other operation waited for the held load.
 */
@Tag(TestTags.NIXL)
@Timeout(value = 120, unit = TimeUnit.SECONDS)
class NixlPeersSideBySideTest {

    private static final int SIZE = 4096;
    private static final int OTHER_PEERS = 4;

    @RegisterExtension
    final NixlAgents agents = new NixlAgents();
    private final List<AutoCloseable> cleanup = new ArrayList<>();
    private HeldLoad calls;

    /** NIXL's own calls, except that loads of {@code held}'s metadata wait for {@link #release} first. */
    static final class HeldLoad implements NixlPeers.NativePeerCalls {
        final String held;
        final CountDownLatch entered = new CountDownLatch(1);
        final CountDownLatch release = new CountDownLatch(1);
        final AtomicInteger heldLoads = new AtomicInteger();

        HeldLoad(String held) {
            this.held = held;
        }

        @Override
        public int load(long agent, byte[] metadata, long[] remoteName) {
            if (NixlMetadataFormat.validate(metadata).agent().equals(held)) {
                heldLoads.incrementAndGet();
                entered.countDown();
                try {
                    release.await();
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                }
            }
            return NixlPeers.NIXL.load(agent, metadata, remoteName);
        }

        @Override
        public int invalidate(long agent, String remote) {
            return NixlPeers.NIXL.invalidate(agent, remote);
        }
    }

    @AfterEach
    void releaseAll() throws Exception {
        if (calls != null) {
            calls.release.countDown(); // a failed test must not leave a load holding the agent's read lock
        }
        for (AutoCloseable closeable : cleanup) {
            closeable.close();
        }
    }

    private Memory buffer(int seed) {
        Memory memory = new Memory(SIZE);
        for (int i = 0; i < SIZE; i++) {
            memory.setByte(i, (byte) (i * 31 + seed));
        }
        return memory;
    }

    private static MemoryRegion region(Memory memory) {
        return new MemoryRegion(Pointer.nativeValue(memory), memory.size(), MemoryType.DRAM, 0);
    }

    private void register(NixlAgentCore agent, Memory memory) {
        MemoryRegistration registration = agent.register(region(memory));
        cleanup.add(0, registration);
    }

    @Test
    void aSlowLoadOfOnePeerHoldsUpNeitherTheOtherPeersLoadsNorTheirReads() throws Exception {
        NixlAgentCore consumer = agents.open("consumer");
        NixlAgentCore slow = agents.open("slow");
        Memory slowMemory = buffer(0);
        register(slow, slowMemory);
        List<NixlAgentCore> others = new ArrayList<>();
        List<Memory> othersMemory = new ArrayList<>();
        List<Memory> targets = new ArrayList<>();
        for (int i = 0; i < OTHER_PEERS; i++) {
            NixlAgentCore other = agents.open("other");
            Memory memory = buffer(i + 1);
            register(other, memory);
            others.add(other);
            othersMemory.add(memory);
            Memory target = new Memory(SIZE);
            target.clear();
            register(consumer, target);
            targets.add(target);
        }
        calls = new HeldLoad(slow.name());
        NixlPeers peers = new NixlPeers(consumer, calls, NixlSettings.DEFAULT_MAX_LOADED_PEERS, NixlSettings.DEFAULT_PEER_IDLE_LIMIT);
        ProgressLoop unstarted = new ProgressLoop("unstarted", consumer, false);
        TransfersInFlight inFlight = new TransfersInFlight(consumer, unstarted);
        PeerLoader loader = new PeerLoader(consumer, peers, inFlight);
        TransferPoster poster = new TransferPoster(consumer, peers, inFlight, unstarted);
        byte[] slowMetadata = slow.localMetadata();

        ExecutorService threads = Executors.newFixedThreadPool(2);
        try {
            Future<String> first = threads.submit(() -> loader.load(slowMetadata));
            assertThat(calls.entered.await(30, TimeUnit.SECONDS)).as("the held load reached the native call").isTrue();
            Future<String> second = threads.submit(() -> loader.load(slowMetadata));

            CompletableFuture<Void> otherReads = CompletableFuture.runAsync(() -> {
                for (int i = 0; i < OTHER_PEERS; i++) {
                    String name = loader.load(others.get(i).localMetadata());
                    NixlTransfer read = (NixlTransfer) poster.post(TransferOp.READ, List.of(region(targets.get(i))),
                            name, List.of(region(othersMemory.get(i))), null, true);
                    inFlight.pollOnWaitingThread(read);
                    assertThat(read.state()).isEqualTo(TransferState.DONE);
                }
            });
            otherReads.get(60, TimeUnit.SECONDS); // before: blocked behind the held load until the test timed out
            for (int i = 0; i < OTHER_PEERS; i++) {
                assertThat(bytes(targets.get(i))).as("read from peer %d", i).isEqualTo(bytes(othersMemory.get(i)));
            }
            assertThat(first).as("the held load").isNotDone();
            assertThat(second).as("the second load of the held peer waits for the first").isNotDone();

            calls.release.countDown();
            assertThat(first.get(30, TimeUnit.SECONDS)).isEqualTo(slow.name());
            assertThat(second.get(30, TimeUnit.SECONDS)).isEqualTo(slow.name());
            assertThat(calls.heldLoads).as("native loads of the held peer's metadata").hasValue(1);
            assertThat(peers.loadedCount()).isEqualTo(OTHER_PEERS + 1);
        } finally {
            calls.release.countDown();
            threads.shutdownNow();
        }
    }

    private static byte[] bytes(Memory memory) {
        return memory.getByteArray(0, (int) memory.size());
    }

    @Test
    void theSameMetadataLoadedFromManyThreadsAtOnceIsLoadedOnce() throws Exception {
        NixlAgentCore consumer = agents.open("consumer");
        NixlAgentCore producer = agents.open("producer");
        calls = new HeldLoad(producer.name());
        NixlPeers peers = new NixlPeers(consumer, calls, NixlSettings.DEFAULT_MAX_LOADED_PEERS, NixlSettings.DEFAULT_PEER_IDLE_LIMIT);
        PeerLoader loader = new PeerLoader(consumer, peers,
                new TransfersInFlight(consumer, new ProgressLoop("unstarted", consumer, false)));
        byte[] metadata = producer.localMetadata();
        ExecutorService threads = Executors.newFixedThreadPool(8);
        try {
            List<Future<String>> loads = new ArrayList<>();
            for (int i = 0; i < 8; i++) {
                loads.add(threads.submit(() -> loader.load(metadata)));
            }
            assertThat(calls.entered.await(30, TimeUnit.SECONDS)).isTrue();
            calls.release.countDown();
            for (Future<String> load : loads) {
                assertThat(load.get(30, TimeUnit.SECONDS)).isEqualTo(producer.name());
            }
            assertThat(calls.heldLoads).hasValue(1);
            assertThat(peers.loadedCount()).isEqualTo(1);
        } finally {
            threads.shutdownNow();
        }
    }
}
