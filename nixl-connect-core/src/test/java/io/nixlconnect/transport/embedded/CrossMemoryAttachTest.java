package io.nixlconnect.transport.embedded;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import com.sun.jna.Memory;
import com.sun.jna.Pointer;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.util.Arrays;
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

    /**
     * 4,096 blocks of 4 KiB, every other block of a pool, copied to every other block of another pool in another
     * order: IOV_MAX blocks a system call, byte-exact, and the blocks between untouched.
     */
    @Test
    void aScatteredBlockListTakesOneSystemCallPerIovMaxBlocks() throws IOException {
        int blocks = 4 * CrossMemoryAttach.IOV_MAX;
        int blockSize = 4096;
        long poolSize = 2L * blocks * blockSize;
        try (Memory source = new Memory(poolSize); Memory target = new Memory(poolSize)) {
            byte[] data = new byte[(int) poolSize];
            new Random(11).nextBytes(data);
            source.write(0, data, 0, data.length);
            target.clear();
            long[] remote = new long[blocks];
            long[] local = new long[blocks];
            long[] lengths = new long[blocks];
            for (int i = 0; i < blocks; i++) {
                remote[i] = Pointer.nativeValue(source) + 2L * i * blockSize;
                local[i] = Pointer.nativeValue(target) + 2L * (blocks - 1 - i) * blockSize; // reversed
                lengths[i] = blockSize;
            }
            assertThat(CrossMemoryAttach.read(PID, local, remote, lengths, () -> false)).isEqualTo(4);
            byte[] copied = target.getByteArray(0, (int) poolSize);
            for (int i = 0; i < blocks; i++) {
                int from = 2 * i * blockSize;
                int to = 2 * (blocks - 1 - i) * blockSize;
                assertThat(Arrays.copyOfRange(copied, to, to + blockSize))
                        .as("block %d", i).isEqualTo(Arrays.copyOfRange(data, from, from + blockSize));
                assertThat(Arrays.copyOfRange(copied, to + blockSize, to + 2 * blockSize))
                        .as("gap after block %d", i).containsOnly(0);
            }
        }
    }

    /** Blocks adjacent on a side are one iovec there: contiguous on both sides is one call, on one side still four. */
    @Test
    void adjacentBlocksMergeIntoOneIovecOnTheirSide() throws IOException {
        int blocks = 4 * CrossMemoryAttach.IOV_MAX;
        int blockSize = 512;
        try (Memory source = new Memory(2L * blocks * blockSize); Memory target = new Memory(2L * blocks * blockSize)) {
            byte[] data = new byte[(int) source.size()];
            new Random(13).nextBytes(data);
            source.write(0, data, 0, data.length);
            long[] contiguousRemote = new long[blocks];
            long[] contiguousLocal = new long[blocks];
            long[] scatteredRemote = new long[blocks];
            long[] lengths = new long[blocks];
            for (int i = 0; i < blocks; i++) {
                contiguousRemote[i] = Pointer.nativeValue(source) + (long) i * blockSize;
                contiguousLocal[i] = Pointer.nativeValue(target) + (long) i * blockSize;
                scatteredRemote[i] = Pointer.nativeValue(source) + 2L * i * blockSize;
                lengths[i] = blockSize;
            }
            target.clear();
            assertThat(CrossMemoryAttach.read(PID, contiguousLocal, contiguousRemote, lengths, () -> false)).isEqualTo(1);
            assertThat(target.getByteArray(0, blocks * blockSize)).isEqualTo(Arrays.copyOf(data, blocks * blockSize));

            target.clear();
            assertThat(CrossMemoryAttach.read(PID, contiguousLocal, scatteredRemote, lengths, () -> false)).isEqualTo(4);
            byte[] copied = target.getByteArray(0, blocks * blockSize);
            for (int i = 0; i < blocks; i++) {
                assertThat(Arrays.copyOfRange(copied, i * blockSize, (i + 1) * blockSize)).as("block %d", i)
                        .isEqualTo(Arrays.copyOfRange(data, 2 * i * blockSize, (2 * i + 1) * blockSize));
            }
        }
    }

    /** Zero-length blocks take no iovec, and a list of them alone no call. */
    @Test
    void zeroLengthBlocksAreSkipped() throws IOException {
        try (Memory source = new Memory(64); Memory target = new Memory(64)) {
            source.setLong(0, 0x0102030405060708L);
            target.clear();
            long s = Pointer.nativeValue(source);
            long t = Pointer.nativeValue(target);
            assertThat(CrossMemoryAttach.read(PID, new long[] {t, t + 32, t + 8}, new long[] {8, s, s + 16},
                    new long[] {0, 8, 0}, () -> false)).isEqualTo(1);
            assertThat(target.getLong(32)).isEqualTo(0x0102030405060708L);
            assertThat(CrossMemoryAttach.read(PID, new long[] {t}, new long[] {s}, new long[] {0}, () -> false))
                    .isZero();
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
