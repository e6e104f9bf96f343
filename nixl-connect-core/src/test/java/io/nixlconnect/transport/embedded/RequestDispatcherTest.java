package io.nixlconnect.transport.embedded;

import static org.assertj.core.api.Assertions.assertThat;

import io.nixlconnect.transport.TransferOp;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * What the server's dispatcher does with a connection's requests before any handler runs, seen on the wire: the
 * version and the range limit are checked on the head, an unknown kind drops the connection, and requests that leave
 * the connection in step are served one after another on it.
 */
@Timeout(value = 60, unit = TimeUnit.SECONDS)
class RequestDispatcherTest {

    @Test
    void aVersion1PeerIsToldToUpgrade() throws Exception {
        try (ServedMemory served = new ServedMemory(ServedMemory.loopback(), "victim", TransferOp.READ,
                EmbeddedCredentialTest.random(64));
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
    void aRequestOfMoreRangesThanTheSettingAllowsIsRefusedNamingIt() throws Exception {
        EmbeddedSettings settings = ServedMemory.loopback().withMaxRangesPerRequest(4);
        try (ServedMemory served = new ServedMemory(settings, "victim", TransferOp.READ, new byte[64])) {
            long a = served.address;
            for (byte[] key : List.of(served.credential, ServedMemory.newCredential())) {
                try (RawPeer peer = new RawPeer(served.port())) {
                    RawPeer.Answer answer = peer.send(RawPeer.request(Wire.READ, "victim", key, a, 8, a, 8, a, 8, a, 8,
                            a, 8)).answer();
                    assertThat(answer.kind()).isEqualTo("ERROR");
                    assertThat(answer.message()).contains("5 ranges").contains("maxRangesPerRequest");
                    assertThat(peer.closedWithin(5000)).isTrue();
                }
            }
            try (RawPeer peer = new RawPeer(served.port())) {
                assertThat(peer.send(RawPeer.request(Wire.READ, "victim", served.credential, a, 8, a, 8, a, 8, a, 8))
                        .answer()).isEqualTo(RawPeer.Answer.OK);
            }
        }
    }

    @Test
    void aRequestOfAnUnknownKindDropsTheConnectionUnanswered() throws Exception {
        try (ServedMemory served = new ServedMemory(ServedMemory.loopback(), "victim", TransferOp.READ, new byte[64]);
             RawPeer peer = new RawPeer(served.port())) {
            assertThat(peer.send(RawPeer.request((byte) 99, "victim", served.credential)).answer())
                    .isEqualTo(RawPeer.Answer.CLOSED);
        }
    }

    @Test
    void requestsThatLeaveTheConnectionInStepAreServedOneAfterAnotherOnIt() throws Exception {
        byte[] content = EmbeddedCredentialTest.random(64);
        try (ServedMemory served = new ServedMemory(ServedMemory.loopback(), "victim", TransferOp.READ, content);
             RawPeer peer = new RawPeer(served.port())) {
            // A notification nobody waits for is refused, and the connection stays in step.
            assertThat(peer.send(RawPeer.request(Wire.NOTIFY, "victim", ServedMemory.newCredential())).answer().kind())
                    .isEqualTo("ERROR");
            assertThat(peer.send(RawPeer.request(Wire.READ, "victim", served.credential, served.address, 64)).answer())
                    .isEqualTo(RawPeer.Answer.OK);
            assertThat(peer.readBytes(64)).isEqualTo(content);
            assertThat(peer.send(RawPeer.request(Wire.NOTIFY, "victim", served.credential)).answer())
                    .isEqualTo(RawPeer.Answer.OK);
            assertThat(served.window.notified()).succeedsWithin(java.time.Duration.ofSeconds(20));
        }
    }
}
