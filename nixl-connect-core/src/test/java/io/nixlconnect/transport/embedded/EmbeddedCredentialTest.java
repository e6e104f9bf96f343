package io.nixlconnect.transport.embedded;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.nixlconnect.Connector;
import io.nixlconnect.ConnectorOptions;
import io.nixlconnect.Descriptor;
import io.nixlconnect.OperationKind;
import io.nixlconnect.OperationStatus;
import io.nixlconnect.RdmaMetadata;
import io.nixlconnect.ReadOperation;
import io.nixlconnect.ReadableOperation;
import io.nixlconnect.TransferException;
import io.nixlconnect.WritableOperation;
import io.nixlconnect.WriteOperation;
import io.nixlconnect.transport.MemoryRegion;
import io.nixlconnect.transport.MemoryType;
import io.nixlconnect.transport.TransferOp;
import io.nixlconnect.transport.TransportException;
import java.time.Duration;
import java.util.HashSet;
import java.util.List;
import java.util.Random;
import java.util.Set;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * Each published window has its own credential (the notification key, 128 random bits): a peer that knows the
 * agent and the addresses but not the key reads nothing, writes nothing, and cannot even tell live addresses
 * from dead ones.
 */
@Timeout(value = 60, unit = TimeUnit.SECONDS)
class EmbeddedCredentialTest {

    private static final Duration WAIT = Duration.ofSeconds(20);

    private Connector producer;
    private Connector consumer;

    @BeforeEach
    void start() {
        producer = new Connector(ConnectorOptions.builder().transports(EmbeddedSettings.defaults()).workerId("producer").build());
        consumer = new Connector(ConnectorOptions.builder().transports(EmbeddedSettings.defaults()).workerId("consumer").build());
    }

    @AfterEach
    void stop() {
        consumer.close();
        producer.close();
    }

    private static RdmaMetadata withKey(RdmaMetadata genuine, String key) {
        return new RdmaMetadata(genuine.descriptors(), genuine.nixlMetadata(), key, genuine.operationKind());
    }

    private static String otherKey() {
        return new String(ServedMemory.newCredential());
    }

    @Test
    void aReadWithoutTheWindowsKeyGetsNoByte() {
        byte[] secret = random(4096);
        try (Descriptor published = new Descriptor(secret); Descriptor target = Descriptor.allocate(4096)) {
            ReadableOperation readable = producer.createReadable(published);
            ReadOperation read = consumer.beginRead(withKey(readable.metadata(), otherKey()), target);
            assertThatThrownBy(() -> read.waitForCompletion(WAIT)).isInstanceOf(TransferException.class)
                    .hasMessageContaining("refused");
            assertThat(target.toByteArray()).isEqualTo(new byte[4096]);
            assertThat(readable.status()).isEqualTo(OperationStatus.INITIALIZED);
            // The genuine key still works: the refusal did not disturb the window.
            try (Descriptor genuineTarget = Descriptor.allocate(4096)) {
                consumer.beginRead(readable.metadata(), genuineTarget).waitForCompletion(WAIT);
                assertThat(genuineTarget.toByteArray()).isEqualTo(secret);
            }
            readable.waitForCompletion(WAIT);
        }
    }

    @Test
    void aWriteWithoutTheWindowsKeyChangesNoByte() {
        byte[] original = random(4096);
        try (Descriptor target = new Descriptor(original); Descriptor source = new Descriptor(random(4096))) {
            WritableOperation writable = producer.createWritable(target);
            WriteOperation write = consumer.beginWrite(source, withKey(writable.metadata(), otherKey()));
            assertThatThrownBy(() -> write.waitForCompletion(WAIT)).isInstanceOf(TransferException.class)
                    .hasMessageContaining("refused");
            assertThat(target.toByteArray()).isEqualTo(original);
            assertThat(writable.status()).isEqualTo(OperationStatus.INITIALIZED);
            writable.close();
        }
    }

    @Test
    void oneWindowsKeyDoesNotOpenAnotherWindow() {
        byte[] mine = random(256);
        byte[] theirs = random(256);
        try (Descriptor own = new Descriptor(mine); Descriptor other = new Descriptor(theirs);
             Descriptor target = Descriptor.allocate(256)) {
            ReadableOperation granted = producer.createReadable(own);
            ReadableOperation someoneElses = producer.createReadable(other);
            RdmaMetadata forged = new RdmaMetadata(someoneElses.metadata().descriptors(), granted.metadata().nixlMetadata(),
                    granted.metadata().notificationKey(), OperationKind.READ);
            ReadOperation read = consumer.beginRead(forged, target);
            assertThatThrownBy(() -> read.waitForCompletion(WAIT)).isInstanceOf(TransferException.class);
            assertThat(target.toByteArray()).isEqualTo(new byte[256]);
            assertThat(someoneElses.status()).isEqualTo(OperationStatus.INITIALIZED);
            granted.close();
            someoneElses.close();
        }
    }

    @Test
    void notificationKeysCarry128RandomBits() {
        Set<String> keys = new HashSet<>();
        try (Descriptor buffer = Descriptor.allocate(16)) {
            for (int i = 0; i < 64; i++) {
                try (ReadableOperation readable = producer.createReadable(buffer)) {
                    String key = readable.notificationKey();
                    assertThat(key).matches("[0-9a-f]{32}");
                    keys.add(key);
                }
            }
        }
        assertThat(keys).hasSize(64);
    }

    @Test
    void probesGetTheSameAnswerWhetherOrNotAnAddressIsLive() throws Exception {
        try (ServedMemory served = new ServedMemory(ServedMemory.loopback(), "victim", TransferOp.READ, random(65536))) {
            long live = served.address + 1024;
            long dead = served.address + (1L << 40);
            byte[] wrong = ServedMemory.newCredential();
            List<byte[]> probes = List.of(
                    RawPeer.request(Wire.READ, "victim", wrong, live, 0),
                    RawPeer.request(Wire.READ, "victim", wrong, dead, 0),
                    RawPeer.request(Wire.READ, "victim", wrong, live, 16),
                    RawPeer.request(Wire.READ, "nobody", wrong, live, 0),
                    RawPeer.request(Wire.WRITE, "victim", served.credential, live, 0),
                    RawPeer.request(Wire.READ, "victim", served.credential, dead, 0),
                    // The same-host copy's grant pins and exposes memory like a READ: same credential, same ranges.
                    RawPeer.request(Wire.READ_GRANT, "victim", wrong, live, 16),
                    RawPeer.request(Wire.READ_GRANT, "victim", served.credential, dead, 16),
                    RawPeer.request(Wire.READ_GRANT_UNBOUND, "victim", wrong, live, 16),
                    // One-round-trip requests are judged exactly as a READ or WRITE; a WRITE_INLINE's bytes follow.
                    RawPeer.request(Wire.READ_INLINE, "victim", wrong, live, 16),
                    RawPeer.request(Wire.READ_INLINE, "victim", served.credential, dead, 16),
                    RawPeer.request(Wire.READ_INLINE, "victim", served.credential, live, 16, dead, 0),
                    RawPeer.request(Wire.READ_INLINE, "nobody", served.credential, live, 16),
                    concat(RawPeer.request(Wire.WRITE_INLINE, "victim", served.credential, live, 16), new byte[16]),
                    concat(RawPeer.request(Wire.WRITE_INLINE, "victim", wrong, live, 16), new byte[16]));
            Set<String> answers = new HashSet<>();
            for (byte[] probe : probes) {
                try (RawPeer peer = new RawPeer(served.port())) {
                    RawPeer.Answer answer = peer.send(probe).answer();
                    assertThat(answer.kind()).isEqualTo("ERROR");
                    answers.add(answer.message().replace("WRITE", "READ").replace("Writable", "Readable"));
                }
            }
            assertThat(answers).hasSize(1);
            // A refused inline request leaves the connection in step, whatever the reason: the next request is read.
            for (byte[] probe : probes.subList(9, probes.size())) {
                try (RawPeer peer = new RawPeer(served.port())) {
                    assertThat(peer.send(probe).answer().kind()).isEqualTo("ERROR");
                    assertThat(peer.send(RawPeer.request(Wire.NOTIFY, "victim", wrong)).answer().kind()).isEqualTo("ERROR");
                }
            }
            assertThat(served.window.notified()).isNotDone();
            // The holder of the key is served, zero-length ranges included.
            try (RawPeer peer = new RawPeer(served.port())) {
                assertThat(peer.send(RawPeer.request(Wire.READ, "victim", served.credential, live, 0, live, 8)).answer())
                        .isEqualTo(RawPeer.Answer.OK);
                assertThat(peer.readBytes(8)).isEqualTo(java.util.Arrays.copyOfRange(served.content(), 1024, 1032));
            }
        }
    }

    /**
     * A malformed range (negative length) is refused exactly as a wrong key is, for every request kind that takes
     * ranges: same answer, and the connection then closed or kept alike. Before, a live key's READ with length -1
     * was dropped without a word while a wrong key got the ERROR text: the difference told a live credential.
     */
    @Test
    void aNegativeLengthIsRefusedAlikeWhateverTheKey() throws Exception {
        try (ServedMemory served = new ServedMemory(ServedMemory.loopback(), "victim", TransferOp.READ, random(4096))) {
            byte[] wrong = ServedMemory.newCredential();
            for (byte type : new byte[] {Wire.READ, Wire.READ_GRANT, Wire.READ_GRANT_UNBOUND, Wire.READ_INLINE,
                Wire.WRITE_INLINE}) {
                List<String> outcomes = new java.util.ArrayList<>();
                for (byte[] key : List.of(served.credential, wrong)) {
                    try (RawPeer peer = new RawPeer(served.port())) {
                        RawPeer.Answer answer = peer.send(RawPeer.request(type, "victim", key, served.address, -1))
                                .answer();
                        boolean closed = peer.closedWithin(300);
                        outcomes.add(answer.kind() + " " + answer.message().replace("WRITE", "READ")
                                .replace("Writable", "Readable") + " closed=" + closed);
                    }
                }
                assertThat(outcomes.get(0)).as("request type %d", type).startsWith("ERROR").isEqualTo(outcomes.get(1));
            }
            assertThat(served.window.notified()).isNotDone();
        }
    }

    @Test
    void aRefusedInlineWriteHasItsBytesReadAndDroppedNeverWritten() throws Exception {
        byte[] original = random(4096);
        try (ServedMemory served = new ServedMemory(ServedMemory.loopback(), "victim", TransferOp.WRITE, original);
             RawPeer peer = new RawPeer(served.port())) {
            byte[] forged = random(4096);
            // A wrong key, and the right key for a range past the window: the bytes come with each request.
            assertThat(peer.send(concat(RawPeer.request(Wire.WRITE_INLINE, "victim", ServedMemory.newCredential(),
                    served.address, 4096), forged)).answer().kind()).isEqualTo("ERROR");
            assertThat(peer.send(concat(RawPeer.request(Wire.WRITE_INLINE, "victim", served.credential,
                    served.address + 2048, 4096), forged)).answer().kind()).isEqualTo("ERROR");
            assertThat(served.content()).isEqualTo(original);
            assertThat(served.window.notified()).isNotDone();
            // The connection is still in step: the genuine write that follows lands and completes the window.
            byte[] genuine = random(4096);
            assertThat(peer.send(concat(RawPeer.request(Wire.WRITE_INLINE, "victim", served.credential, served.address,
                    4096), genuine)).answer()).isEqualTo(RawPeer.Answer.OK);
            assertThat(served.content()).isEqualTo(genuine);
            assertThat(served.window.notified()).succeedsWithin(WAIT); // delivered right after the answer
        }
    }

    @Test
    void anInlineRequestOfMoreThanTheLimitIsDroppedAndMovesNothing() throws Exception {
        int size = Wire.INLINE_MAX_BYTES + 1;
        byte[] original = random(size);
        try (ServedMemory served = new ServedMemory(ServedMemory.loopback(), "victim", TransferOp.WRITE, original);
             RawPeer peer = new RawPeer(served.port())) {
            peer.send(concat(RawPeer.request(Wire.WRITE_INLINE, "victim", served.credential, served.address, size),
                    random(size)));
            assertThat(peer.closedWithin(5000)).isTrue();
            assertThat(served.content()).isEqualTo(original);
            assertThat(served.window.notified()).isNotDone();
        }
    }

    static byte[] concat(byte[] a, byte[] b) {
        byte[] joined = java.util.Arrays.copyOf(a, a.length + b.length);
        System.arraycopy(b, 0, joined, a.length, b.length);
        return joined;
    }

    /**
     * The server reads every request of a connection into the same buffers (agent name, credential, ranges): each
     * request must still be judged by its own name and credential, whatever came before on the connection.
     */
    @Test
    void eachRequestOnOneConnectionIsJudgedByItsOwnAgentAndCredential() throws Exception {
        byte[] first = random(64);
        byte[] second = random(64);
        try (ServedMemory served = new ServedMemory(ServedMemory.loopback(), "victim", TransferOp.READ, first)) {
            EmbeddedAgent other = (EmbeddedAgent) served.transport.createAgent("another-agent-with-a-longer-name");
            java.nio.ByteBuffer otherBuffer = java.nio.ByteBuffer.allocateDirect(64).put(second).flip();
            long otherAddress = io.nixlconnect.internal.NativeMemory.addressOf(otherBuffer);
            MemoryRegion otherRegion = new MemoryRegion(otherAddress, 64, MemoryType.DRAM, 0);
            other.registerMemory(otherRegion);
            byte[] longerCredential = RawPeer.utf8(new String(ServedMemory.newCredential()) + "-longer");
            var otherWindow = other.openWindow(TransferOp.READ, List.of(otherRegion), longerCredential);
            byte[] sameLengthWrong = longerCredential.clone();
            sameLengthWrong[0] ^= 1;
            try (RawPeer peer = new RawPeer(served.port())) {
                assertThat(peer.send(RawPeer.request(Wire.READ, "victim", served.credential, served.address, 64)).answer())
                        .isEqualTo(RawPeer.Answer.OK);
                assertThat(peer.readBytes(64)).isEqualTo(first);
                // Another agent and a longer credential on the same connection: that window, not the first one.
                assertThat(peer.send(RawPeer.request(Wire.READ, "another-agent-with-a-longer-name", longerCredential,
                        otherAddress, 64)).answer()).isEqualTo(RawPeer.Answer.OK);
                assertThat(peer.readBytes(64)).isEqualTo(second);
                // A wrong credential as long as the last one, then the first credential: neither reaches that window.
                assertThat(peer.send(RawPeer.request(Wire.NOTIFY, "another-agent-with-a-longer-name", sameLengthWrong))
                        .answer().kind()).isEqualTo("ERROR");
                assertThat(peer.send(RawPeer.request(Wire.NOTIFY, "another-agent-with-a-longer-name", served.credential))
                        .answer().kind()).isEqualTo("ERROR");
                assertThat(otherWindow.notified()).isNotDone();
                // Back to the shorter credential, then the right one: each notifies its own window only.
                assertThat(peer.send(RawPeer.request(Wire.NOTIFY, "victim", served.credential)).answer())
                        .isEqualTo(RawPeer.Answer.OK);
                assertThat(served.window.notified()).succeedsWithin(WAIT); // completed just after the answer
                assertThat(otherWindow.notified()).isNotDone();
                assertThat(peer.send(RawPeer.request(Wire.NOTIFY, "another-agent-with-a-longer-name", longerCredential))
                        .answer()).isEqualTo(RawPeer.Answer.OK);
                assertThat(otherWindow.notified()).succeedsWithin(WAIT);
                // A shorter credential that is a prefix of a longer one used before reaches nothing.
                assertThat(peer.send(RawPeer.request(Wire.READ, "victim", java.util.Arrays.copyOf(longerCredential,
                        served.credential.length), served.address, 64)).answer().kind()).isEqualTo("ERROR");
            } finally {
                otherWindow.close();
                java.lang.ref.Reference.reachabilityFence(otherBuffer);
            }
        }
    }

    @Test
    void aVersion1PeerIsToldToUpgrade() throws Exception {
        try (ServedMemory served = new ServedMemory(ServedMemory.loopback(), "victim", TransferOp.READ, random(64));
             RawPeer peer = new RawPeer(served.port())) {
            // Version 1: magic, type, agent name, range count, ranges, notification; no credential.
            byte[] v1 = java.nio.ByteBuffer.allocate(4 + 1 + 2 + 6 + 4 + 16 + 4).putInt(Wire.MAGIC_V1).put(Wire.READ)
                    .putShort((short) 6).put(RawPeer.utf8("victim")).putInt(1).putLong(served.address).putLong(64)
                    .putInt(0).array();
            RawPeer.Answer answer = peer.send(v1).answer();
            assertThat(answer.kind()).isEqualTo("ERROR");
            assertThat(answer.message()).contains("version 2").contains("upgrade");
            assertThat(peer.closedWithin(5000)).isTrue();
        }
    }

    @Test
    void aWindowNeedsACredentialOfAtLeast128Bits() {
        try (EmbeddedTransport transport = EmbeddedTransport.open(ServedMemory.loopback())) {
            EmbeddedAgent agent = (EmbeddedAgent) transport.createAgent("a");
            java.nio.ByteBuffer buffer = java.nio.ByteBuffer.allocateDirect(64);
            MemoryRegion region = new MemoryRegion(io.nixlconnect.internal.NativeMemory.addressOf(buffer), 64,
                    MemoryType.DRAM, 0);
            agent.registerMemory(region);
            assertThatThrownBy(() -> agent.openWindow(TransferOp.READ, List.of(region), RawPeer.utf8("short-key")))
                    .isInstanceOf(TransportException.class).hasMessageContaining("credential");
        }
    }

    static byte[] random(int size) {
        byte[] bytes = new byte[size];
        new Random().nextBytes(bytes);
        return bytes;
    }
}
