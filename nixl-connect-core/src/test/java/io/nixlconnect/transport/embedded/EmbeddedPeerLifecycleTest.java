package io.nixlconnect.transport.embedded;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.nixlconnect.internal.NativeMemory;
import io.nixlconnect.transport.MemoryRegion;
import io.nixlconnect.transport.MemoryType;
import io.nixlconnect.transport.PassiveWindow;
import io.nixlconnect.transport.PeerCounts;
import io.nixlconnect.transport.TransferOp;
import io.nixlconnect.transport.TransferState;
import io.nixlconnect.transport.TransportException;
import java.lang.ref.Reference;
import java.nio.ByteBuffer;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.Executor;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import javax.net.ssl.SSLContext;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * What a peer leaves behind on this side when it leaves, idles or is dropped from the cache: nothing. A pooled
 * connection whose peer closed its end is closed within a check of the idle connections and its pool forgotten; one
 * idle past the limit is closed (and its peer's server sees it go); loaded peers stay within the bound, the least
 * recently used dropped first; a transfer whose worker thread cannot start ends naming what ran out, and frees its
 * place in the pool.
 */
@Timeout(value = 60, unit = TimeUnit.SECONDS)
class EmbeddedPeerLifecycleTest {

    private static final Duration LONG = Duration.ofHours(1);
    private static final Duration WAIT = Duration.ofSeconds(20);

    @TempDir
    Path directory;

    @Test
    void aPooledConnectionWhosePeerClosedItsEndIsClosedAtTheNextCheckAndItsPoolForgotten() throws Exception {
        try (EmbeddedTransport reader = EmbeddedTransport.open(EmbeddedSettings.defaults().withPeerLifecycle(LONG, 512))) {
            ServedMemory served = new ServedMemory(ServedMemory.loopback(), "leaving", TransferOp.READ, new byte[4096]);
            EmbeddedHostileLoadTest.read(reader, served, served.credential, 4096);
            await().atMost(WAIT).until(() -> reader.idleConnections() == 1);
            assertThat(reader.peerCounts().openConnections()).isEqualTo(1);
            assertThat(reader.pooledPeers()).isEqualTo(1);

            served.close(); // the peer leaves: its server closes its end of the pooled connection

            await().atMost(WAIT).until(() -> reader.peerCounts().openConnections() == 0);
            assertThat(reader.peerCounts()).isEqualTo(new PeerCounts(0, 0, 0, 1, 0));
            assertThat(reader.pooledPeers()).as("the departed peer's pool is forgotten").isZero();
        }
    }

    @Test
    void aLiveIdleConnectionIsKeptAndReusedUntilTheIdleLimitThenClosedAndThePeerSeesItGo() throws Exception {
        checkIdleLifecycle(ServedMemory.loopback(), ServedMemory.loopback());
    }

    @Test
    void overTlsTooTheCheckOfALiveIdleConnectionLeavesItUsable() throws Exception {
        Path aliceKeys = TestTls.keyStore(directory, "alice");
        Path bobKeys = TestTls.keyStore(directory, "bob");
        SSLContext alice = TestTls.context(aliceKeys, aliceKeys, bobKeys);
        SSLContext bob = TestTls.context(bobKeys, aliceKeys, bobKeys);
        checkIdleLifecycle(ServedMemory.loopback().withSslContext(alice), ServedMemory.loopback().withSslContext(bob));
    }

    private static void checkIdleLifecycle(EmbeddedSettings producer, EmbeddedSettings consumer) throws Exception {
        Duration idle = Duration.ofMinutes(10);
        long idleNanos = idle.toNanos();
        byte[] content = EmbeddedCredentialTest.random(4096);
        try (ServedMemory served = new ServedMemory(producer, "idling", TransferOp.READ, content);
             EmbeddedTransport reader = EmbeddedTransport.open(consumer.withPeerLifecycle(idle, 512))) {
            assertThat(EmbeddedHostileLoadTest.read(reader, served, served.credential, 4096)).isEqualTo(content);
            // A transfer ends before its worker gives its connection back to the pool: wait for that.
            await().atMost(WAIT).until(() -> reader.idleConnections() == 1);
            for (int i = 0; i < 3; i++) { // checked while the peer is alive and within the limit: kept
                reader.checkPeers(System.nanoTime(), idleNanos);
            }
            assertThat(reader.peerCounts()).isEqualTo(new PeerCounts(1, 0, 0, 0, 0));

            // Still usable after the checks: the next READ reuses it (the server has held one connection throughout).
            byte[] credential = ServedMemory.newCredential();
            MemoryRegion region = new MemoryRegion(served.address, 4096, MemoryType.DRAM, 0);
            PassiveWindow window = served.agent.openWindow(TransferOp.READ, List.of(region), credential);
            assertThat(EmbeddedHostileLoadTest.read(reader, served, credential, 4096)).isEqualTo(content);
            assertThat(window.notified()).succeedsWithin(WAIT);
            await().atMost(WAIT).until(() -> reader.idleConnections() == 1);
            assertThat(reader.peerCounts().reconnected()).as("not found stale").isZero();
            assertThat(served.transport.server().connectionCount()).isEqualTo(1);

            reader.checkPeers(System.nanoTime() + idleNanos + 1, idleNanos); // past the limit
            assertThat(reader.peerCounts()).isEqualTo(new PeerCounts(0, 0, 0, 0, 1));
            assertThat(reader.pooledPeers()).isZero();
            // The producer's server reads the connection and sees its end at once: closed, counted as departed.
            await().atMost(WAIT).until(() -> served.transport.server().connectionCount() == 0);
            assertThat(served.transport.peerCounts()).isEqualTo(new PeerCounts(0, 0, 0, 1, 0));
        }
    }

    @Test
    void theBackgroundCheckClosesAConnectionIdlePastTheLimit() throws Exception {
        try (ServedMemory served = new ServedMemory(ServedMemory.loopback(), "idling", TransferOp.READ, new byte[64]);
             EmbeddedTransport reader = EmbeddedTransport.open(
                     EmbeddedSettings.defaults().withPeerLifecycle(Duration.ofMillis(100), 512))) {
            EmbeddedHostileLoadTest.read(reader, served, served.credential, 64);
            await().atMost(WAIT).until(() -> reader.peerCounts().openConnections() == 0);
            assertThat(reader.peerCounts().idleClosed()).isEqualTo(1);
            assertThat(reader.pooledPeers()).isZero();
        }
    }

    @Test
    void loadedPeersStayWithinTheBoundTheLeastRecentlyUsedDroppedFirst() {
        try (EmbeddedTransport transport = EmbeddedTransport.open(EmbeddedSettings.defaults().withPeerLifecycle(LONG, 4))) {
            EmbeddedAgent agent = (EmbeddedAgent) transport.createAgent("reader");
            for (int i = 0; i < 4; i++) {
                agent.loadRemoteAgent(new EmbeddedMetadata("peer-" + i, "127.0.0.1", 1000 + i).encode());
            }
            agent.loadRemoteAgent(new EmbeddedMetadata("peer-0", "127.0.0.1", 1000).encode()); // used again
            for (int i = 4; i < 10; i++) {
                agent.loadRemoteAgent(new EmbeddedMetadata("peer-" + i, "127.0.0.1", 1000 + i).encode());
                assertThat(agent.remoteAgentCount()).isLessThanOrEqualTo(4);
            }
            assertThat(agent.remoteAgentCount()).isEqualTo(4);
            assertThat(transport.peerCounts().evicted()).isEqualTo(6);
            assertThat(agent.holdsPeerAt("127.0.0.1:1000")).as("used more recently than peer-1..3").isFalse();
            assertThat(agent.holdsPeerAt("127.0.0.1:1009")).isTrue();
            // A dropped peer's operation names the bound it fell out of.
            ByteBuffer buffer = ByteBuffer.allocateDirect(16);
            MemoryRegion local = new MemoryRegion(NativeMemory.addressOf(buffer), 16, MemoryType.DRAM, 0);
            agent.registerMemory(local);
            org.assertj.core.api.Assertions.assertThatThrownBy(() -> agent.postTransfer(TransferOp.READ, List.of(local),
                    "peer-1", List.of(new MemoryRegion(4096, 16, MemoryType.DRAM, 0)), ServedMemory.newCredential()))
                    .isInstanceOf(TransportException.class).hasMessageContaining("maxCachedPeers")
                    .hasMessageContaining("nixl.connect.embedded.max-cached-peers");
            Reference.reachabilityFence(buffer);
        }
    }

    @Test
    void aTransferWhoseWorkerThreadCannotStartEndsNamingItAndFreesItsPlace() throws Exception {
        byte[] content = EmbeddedCredentialTest.random(4096);
        try (ServedMemory served = new ServedMemory(ServedMemory.loopback(), "passive", TransferOp.READ, content);
             EmbeddedTransport reader = EmbeddedTransport.open(ServedMemory.loopback())) {
            EmbeddedAgent agent = (EmbeddedAgent) reader.createAgent("active");
            ByteBuffer target = ByteBuffer.allocateDirect(4096);
            MemoryRegion local = new MemoryRegion(NativeMemory.addressOf(target), 4096, MemoryType.DRAM, 0);
            agent.registerMemory(local);
            // The JVM's words when the OS refuses a thread; the first two thread starts fail so, then threads are free.
            AtomicInteger refusals = new AtomicInteger(2);
            List<Runnable> started = new ArrayList<>();
            Executor threads = task -> {
                if (refusals.getAndDecrement() > 0) {
                    throw new OutOfMemoryError("unable to create native thread: possibly out of memory or process/"
                            + "resource limits reached");
                }
                started.add(task);
            };
            PeerPool pool = new PeerPool(1, threads, new SameHostPeer("off in this test"), new PeerCounters());

            EmbeddedTransfer refused = transfer(agent, served, local, served.credential);
            assertThat(pool.submit(refused)).isTrue();
            assertThat(refused.state()).isEqualTo(TransferState.ERROR);
            assertThat(refused.completion()).failsWithin(WAIT).withThrowableThat()
                    .withMessageContaining("could not start a thread").withMessageContaining("threads live");
            assertThat(pool.openCount()).as("its place is free again").isZero();

            refused = transfer(agent, served, local, served.credential);
            pool.submit(refused);
            assertThat(refused.state()).isEqualTo(TransferState.ERROR);
            assertThat(pool.openCount()).isZero();

            EmbeddedTransfer later = transfer(agent, served, local, served.credential); // threads are free again
            pool.submit(later);
            assertThat(started).hasSize(1);
            started.get(0).run();
            assertThat(later.completion()).succeedsWithin(WAIT);
            assertThat(NativeMemory.copyOut(local.address(), 4096)).isEqualTo(content);
            pool.close();
            Reference.reachabilityFence(target);
        }
    }

    private static EmbeddedTransfer transfer(EmbeddedAgent agent, ServedMemory served, MemoryRegion local,
            byte[] credential) {
        return new EmbeddedTransfer(agent, TransferOp.READ, List.of(local),
                LoadedPeer.of(new EmbeddedMetadata("passive", "127.0.0.1", served.port()), new byte[0]),
                List.of(new MemoryRegion(served.address, 4096, MemoryType.DRAM, 0)), credential, false);
    }
}
