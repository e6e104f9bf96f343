package io.nixlconnect.transport.embedded;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import com.sun.jna.Memory;
import com.sun.jna.Pointer;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.util.Random;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/** Cross-memory attach and the probe, against this very process (the kernel allows a process to read itself). */
class CrossMemoryAttachTest {

    private static final int PID = (int) ProcessHandle.current().pid();

    @BeforeEach
    void linuxOnly() {
        assumeTrue(CrossMemoryAttach.unavailableReason() == null, CrossMemoryAttach::unavailableReason);
    }

    @Test
    void readCopiesByteExactAcrossChunks() throws IOException {
        long size = CrossMemoryAttach.CHUNK + 4099; // two system calls, the second a partial chunk
        try (Memory source = new Memory(size); Memory target = new Memory(size)) {
            byte[] data = new byte[(int) size];
            new Random(7).nextBytes(data);
            source.write(0, data, 0, data.length);
            target.clear();
            CrossMemoryAttach.read(PID, Pointer.nativeValue(target), Pointer.nativeValue(source), size, () -> false);
            assertThat(target.getByteBuffer(0, size)).isEqualTo(ByteBuffer.wrap(data));
        }
    }

    @Test
    void anUnmappedRemoteAddressIsEfaultNotACrash() {
        try (Memory target = new Memory(4096)) {
            assertThatThrownBy(() -> CrossMemoryAttach.read(PID, Pointer.nativeValue(target), 8, 4096, () -> false))
                    .isInstanceOfSatisfying(CrossMemoryAttach.CopyException.class,
                            e -> assertThat(e.errno()).isEqualTo(CrossMemoryAttach.EFAULT))
                    .hasMessageContaining("EFAULT");
        }
    }

    @Test
    void aProcessThatDoesNotExistIsEsrch() {
        try (Memory target = new Memory(16)) {
            assertThatThrownBy(() -> CrossMemoryAttach.read(Integer.MAX_VALUE, Pointer.nativeValue(target),
                    Pointer.nativeValue(target), 16, () -> false))
                    .isInstanceOf(CrossMemoryAttach.CopyException.class).hasMessageContaining("ESRCH");
        }
    }

    @Test
    void aStoppedCopyEndsBeforeItsNextChunk() {
        try (Memory source = new Memory(16); Memory target = new Memory(16)) {
            assertThatThrownBy(() -> CrossMemoryAttach.read(PID, Pointer.nativeValue(target), Pointer.nativeValue(source),
                    16, () -> true)).isNotInstanceOf(CrossMemoryAttach.CopyException.class).hasMessage("cancelled");
        }
    }

    @Test
    void theProbeReadsThisProcessToken() {
        SameHostIdentity self = SameHostIdentity.self();
        assertThat(self.pid()).isEqualTo(PID);
        assertThat(self.probe(self)).isNull();
    }

    @Test
    void theProbeRefusesAWrongTokenAnotherHostAndAnInvalidPid() {
        SameHostIdentity self = SameHostIdentity.self();
        byte[] otherToken = self.token().clone();
        otherToken[0] ^= 1;
        // Same pid, other token: our pid seen from another pid namespace.
        assertThat(self.probe(new SameHostIdentity(self.pid(), self.bootId(), self.tokenAddress(), otherToken)))
                .contains("another pid namespace");
        // Another process whose pid and token address do not hold the token: not the peer process.
        long parent = ProcessHandle.current().parent().map(ProcessHandle::pid).orElse(1L);
        assertThat(self.probe(new SameHostIdentity(parent, self.bootId(), self.tokenAddress(), otherToken)))
                .isNotNull();
        assertThat(self.probe(new SameHostIdentity(self.pid(), new java.util.UUID(1, 2), self.tokenAddress(), self.token())))
                .contains("another host");
        assertThat(self.probe(new SameHostIdentity(-5, self.bootId(), self.tokenAddress(), self.token())))
                .contains("invalid pid");
    }

    @Test
    void anIdentityCrossesTheWireUnchanged() {
        SameHostIdentity self = SameHostIdentity.self();
        ByteBuffer buffer = ByteBuffer.allocate(SameHostIdentity.ENCODED_BYTES);
        self.encode(buffer);
        assertThat(buffer.hasRemaining()).isFalse();
        assertThat(SameHostIdentity.decode(buffer.flip())).isEqualTo(self);
    }
}
