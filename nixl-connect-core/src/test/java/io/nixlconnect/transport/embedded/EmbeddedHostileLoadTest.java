package io.nixlconnect.transport.embedded;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.nixlconnect.Connector;
import io.nixlconnect.ConnectorOptions;
import io.nixlconnect.Descriptor;
import io.nixlconnect.ReadableOperation;
import io.nixlconnect.internal.NativeMemory;
import io.nixlconnect.transport.MemoryRegion;
import io.nixlconnect.transport.MemoryRegistration;
import io.nixlconnect.transport.MemoryType;
import io.nixlconnect.transport.TransferHandle;
import io.nixlconnect.transport.TransferOp;
import io.nixlconnect.transport.TransportAgent;
import java.io.IOException;
import java.lang.ref.Reference;
import java.nio.ByteBuffer;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.awaitility.core.ConditionTimeoutException;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * The server under hostile load on loopback: headers announcing huge counts, idle and trickling (slowloris)
 * connections, floods from one address. It checks before it allocates, closes what stalls, holds its limits,
 * and a peer that sends real requests always gets through.
 */
@Timeout(value = 120, unit = TimeUnit.SECONDS)
class EmbeddedHostileLoadTest {

    @Test
    void aHeaderAnnouncingAMillionRangesIsRefusedBeforeAnyRangeIsRead() throws Exception {
        try (ServedMemory served = new ServedMemory(ServedMemory.loopback(), "victim", TransferOp.READ, new byte[4096])) {
            List<RawPeer> attackers = new ArrayList<>();
            try {
                for (int i = 0; i < 100; i++) {
                    RawPeer attacker = new RawPeer(served.port());
                    attackers.add(attacker);
                    byte[] credential = ServedMemory.newCredential();
                    attacker.send(RawPeer.head(Wire.READ, 6, credential.length, Wire.MAX_RANGES));
                    attacker.send(RawPeer.utf8("victim")).send(credential);
                }
                for (RawPeer attacker : attackers) {
                    // Answered at once, without the 16 MiB of ranges ever being sent, then dropped.
                    assertThat(attacker.answer(5000).kind()).isEqualTo("ERROR");
                    assertThat(attacker.closedWithin(5000)).isTrue();
                }
            } finally {
                for (RawPeer attacker : attackers) {
                    attacker.close();
                }
            }
        }
    }

    @Test
    void countsBeyondTheLimitsAreRefusedFromTheHeadAlone() throws Exception {
        try (ServedMemory served = new ServedMemory(ServedMemory.loopback(), "victim", TransferOp.READ, new byte[64])) {
            for (byte[] head : List.of(RawPeer.head(Wire.READ, 6, 32, Wire.MAX_RANGES + 1),
                    RawPeer.head(Wire.READ, 6, 32, -1), RawPeer.head(Wire.READ, 6, Wire.MAX_CREDENTIAL + 1, 1),
                    RawPeer.head(Wire.READ, Wire.MAX_AGENT_NAME + 1, 32, 1), RawPeer.head(Wire.NOTIFY, 6, 32, 5),
                    // Inline requests have every range read, so their count is bounded much lower.
                    RawPeer.head(Wire.READ_INLINE, 6, 32, Wire.INLINE_MAX_RANGES + 1),
                    RawPeer.head(Wire.WRITE_INLINE, 6, 32, Wire.INLINE_MAX_RANGES + 1))) {
                try (RawPeer attacker = new RawPeer(served.port())) {
                    assertThat(attacker.send(head).closedWithin(5000)).isTrue();
                }
            }
        }
    }

    @Test
    void aKeyHolderSendingRangesSlowlyIsClosedAtTheReadTimeout() throws Exception {
        EmbeddedSettings settings = ServedMemory.loopback().withTimeouts(Duration.ofSeconds(30), Duration.ofMillis(300));
        try (ServedMemory served = new ServedMemory(settings, "victim", TransferOp.READ, new byte[64])) {
            try (RawPeer stalled = new RawPeer(served.port())) {
                stalled.send(RawPeer.head(Wire.READ, 6, served.credential.length, 2)).send(RawPeer.utf8("victim"))
                        .send(served.credential);
                assertThat(stalled.closedWithin(5000)).isTrue();
            }
            // The window is intact and served afterwards.
            try (RawPeer peer = new RawPeer(served.port())) {
                assertThat(peer.send(RawPeer.request(Wire.READ, "victim", served.credential, served.address, 64)).answer())
                        .isEqualTo(RawPeer.Answer.OK);
            }
        }
    }

    @Test
    void idleAndTricklingConnectionsAreClosedAtTheIdleTimeout() throws Exception {
        EmbeddedSettings settings = ServedMemory.loopback().withTimeouts(Duration.ofMillis(300), Duration.ofSeconds(30));
        try (ServedMemory served = new ServedMemory(settings, "victim", TransferOp.READ, new byte[64]);
             RawPeer idle = new RawPeer(served.port()); RawPeer trickling = new RawPeer(served.port())) {
            long start = System.nanoTime();
            boolean trickleClosed = false;
            byte[] head = RawPeer.head(Wire.READ, 6, 32, 1);
            for (int i = 0; i < head.length && !trickleClosed; i++) {
                try {
                    trickling.send(new byte[] {head[i]});
                } catch (IOException e) {
                    trickleClosed = true;
                }
                trickleClosed |= trickling.closedWithin(100);
            }
            assertThat(trickleClosed || trickling.closedWithin(5000)).isTrue();
            assertThat(idle.closedWithin(5000)).isTrue();
            assertThat(Duration.ofNanos(System.nanoTime() - start)).isLessThan(Duration.ofSeconds(10));
            // The socket closes first; the serving thread then lets go of the connection.
            waitUntil(() -> served.transport.server().connectionCount() == 0);
            assertThat(served.transport.server().connectionCount()).isZero();
        }
    }

    @Test
    void connectorOptionsReachTheServer() throws Exception {
        try (Connector connector = new Connector(ConnectorOptions.builder().transports(EmbeddedSettings.defaults()
                .withTimeouts(Duration.ofMillis(300), EmbeddedSettings.DEFAULT_READ_TIMEOUT)
                .withServerConnectionLimits(8, 2)).build());
             Descriptor buffer = Descriptor.allocate(16); ReadableOperation readable = connector.createReadable(buffer)) {
            int port = EmbeddedMetadata.decode(readable.metadata().decodeNixlMetadata()).port();
            try (RawPeer first = new RawPeer(port); RawPeer second = new RawPeer(port); RawPeer third = new RawPeer(port)) {
                // Two per address: the third evicts the first; the idle timeout then closes the rest.
                assertThat(first.closedWithin(5000)).isTrue();
                assertThat(second.closedWithin(5000)).isTrue();
                assertThat(third.closedWithin(5000)).isTrue();
            }
        }
    }

    @Test
    void idleAndSlowlorisConnectionsCannotLockOutAPeer() throws Exception {
        // Small limits so the test stays small; the defaults (1024 / 256) behave the same at scale.
        int maxConnections = 48;
        int perAddress = 32;
        EmbeddedSettings settings = ServedMemory.loopback().withServerConnectionLimits(maxConnections, perAddress);
        byte[] content = EmbeddedCredentialTest.random(1 << 16);
        try (ServedMemory served = new ServedMemory(settings, "victim", TransferOp.READ, content)) {
            List<RawPeer> attackers = new ArrayList<>();
            try {
                for (int i = 0; i < 3 * maxConnections; i++) {
                    RawPeer attacker = new RawPeer(served.port());
                    attackers.add(attacker);
                    if (i % 4 == 0) {
                        attacker.send(new byte[] {0x4E, 0x58, 0x43}); // slowloris: 3 bytes of a head, then nothing
                    }
                }
                waitUntil(() -> served.transport.server().connectionCount() <= perAddress);
                assertThat(served.transport.server().connectionCount()).isLessThanOrEqualTo(perAddress);
                assertThat(served.transport.server().handlerThreads()).isLessThanOrEqualTo(maxConnections + 16);
                try (EmbeddedTransport client = EmbeddedTransport.open(ServedMemory.loopback())) {
                    for (int i = 0; i < 10; i++) {
                        // A fresh window each round: a READ's notification closes the one before.
                        byte[] credential = ServedMemory.newCredential();
                        var window = served.agent.openWindow(TransferOp.READ, List.of(new MemoryRegion(served.address,
                                content.length, MemoryType.DRAM, 0)), credential);
                        assertThat(read(client, served, credential, content.length)).isEqualTo(content);
                        window.notified().get(10, TimeUnit.SECONDS);
                        // Keep the attack going between rounds.
                        for (int j = 0; j < 8; j++) {
                            attackers.add(new RawPeer(served.port()));
                        }
                    }
                }
            } finally {
                for (RawPeer attacker : attackers) {
                    attacker.close();
                }
            }
        }
    }

    /** One READ through a real client transport, with its own agent and memory. */
    static byte[] read(EmbeddedTransport client, ServedMemory served, byte[] credential, int length) throws Exception {
        ByteBuffer target = ByteBuffer.allocateDirect(length);
        MemoryRegion local = new MemoryRegion(NativeMemory.addressOf(target), length, MemoryType.DRAM, 0);
        try (TransportAgent agent = client.createAgent("reader-" + System.nanoTime());
             MemoryRegistration registration = agent.registerMemory(local)) {
            String peer = agent.loadRemoteAgent(served.agent.localMetadata());
            TransferHandle handle = agent.postTransfer(TransferOp.READ, List.of(local), peer,
                    List.of(new MemoryRegion(served.address, length, MemoryType.DRAM, 0)), credential);
            handle.completion().get(20, TimeUnit.SECONDS);
            return NativeMemory.copyOut(local.address(), length);
        } finally {
            Reference.reachabilityFence(target); // its native memory must outlive the transfer
        }
    }

    /** Waits up to 10 s; the caller's assertion afterwards says what did not happen. */
    private static void waitUntil(java.util.function.BooleanSupplier condition) {
        try {
            await().atMost(Duration.ofSeconds(10)).until(condition::getAsBoolean);
        } catch (ConditionTimeoutException e) {
            // the assertion that follows fails with its own message
        }
    }
}
