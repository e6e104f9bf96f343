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
    void theProbeAcceptsThisHostAndRefusesAnotherHostAndAnInvalidPid() {
        SameHostIdentity self = SameHostIdentity.self();
        assertThat(self.pid()).isEqualTo(PID);
        assertThat(self.probe(self)).isNull();
        assertThat(self.probe(new SameHostIdentity(self.pid(), new java.util.UUID(1, 2)))).contains("another host");
        assertThat(self.probe(new SameHostIdentity(-5, self.bootId()))).contains("invalid pid");
    }

    /**
     * A grant's proof holds only read from the process that wrote it, for the credential, challenge, pid and ranges it
     * was made for: any other of these and the reader does not copy.
     */
    @Test
    void aGrantProofHoldsOnlyForItsProcessCredentialChallengeAndRanges() {
        byte[] credential = ServedMemory.newCredential();
        byte[] challenge = GrantProof.challenge();
        long[] addresses = {4096, 1 << 20};
        long[] lengths = {100, 200};
        try (GrantProof.Published proof = new GrantProof.Published(GrantProof.compute(credential, challenge, PID,
                addresses, lengths, 2))) {
            assertThat(GrantProof.verify(PID, proof.address(), credential, challenge, addresses, lengths)).isNull();
            assertThat(GrantProof.verify(PID, proof.address(), ServedMemory.newCredential(), challenge, addresses,
                    lengths)).contains("does not hold");
            assertThat(GrantProof.verify(PID, proof.address(), credential, GrantProof.challenge(), addresses, lengths))
                    .contains("does not hold");
            assertThat(GrantProof.verify(PID, proof.address(), credential, challenge, addresses, new long[] {100, 201}))
                    .contains("does not hold");
            assertThat(GrantProof.verify(PID, proof.address(), credential, challenge, new long[] {4096},
                    new long[] {100})).contains("does not hold");
            long parent = ProcessHandle.current().parent().map(ProcessHandle::pid).orElse(1L);
            assertThat(GrantProof.verify(parent, proof.address(), credential, challenge, addresses, lengths)).isNotNull();
            assertThat(GrantProof.verify(PID, 8, credential, challenge, addresses, lengths)).contains("EFAULT");
            assertThat(GrantProof.verify(-1, proof.address(), credential, challenge, addresses, lengths))
                    .contains("invalid pid");
        }
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
