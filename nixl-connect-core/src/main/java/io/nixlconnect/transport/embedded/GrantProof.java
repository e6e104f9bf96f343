package io.nixlconnect.transport.embedded;

import com.sun.jna.Memory;
import com.sun.jna.Pointer;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.security.GeneralSecurityException;
import java.security.MessageDigest;
import java.security.SecureRandom;
import javax.crypto.Mac;
import javax.crypto.spec.SecretKeySpec;

/**
 * What makes a same-host copy grant name the process that owns the window, not whichever pid the answering peer
 * chose. The reader's {@code READ_GRANT} carries a fresh random challenge; the owner computes
 * HMAC-SHA256(credential, label, challenge, its pid, every granted range) over the window's credential and the ranges
 * it checked, writes it into its own memory, and answers with its pid and that address. The reader reads the proof
 * from that pid by cross-memory attach and compares it with its own computation before it copies a byte.
 *
 * <p>Only a process that holds a live window opened with the credential, covering exactly these ranges, and that saw
 * this challenge on this connection, has such bytes in its memory: a peer that names a third process's pid (it can
 * learn any pid, and the kernel may let the reader read that process) cannot make the third process hold them. A relay
 * that forwards the reader's grant to a real owner whose credential it holds gets the reader copying only ranges that
 * owner granted for that credential — ones the relay could read itself. The reader computes its value only after the
 * read, so the bytes it compares against exist in no process while it reads.
 */
final class GrantProof {

    static final int CHALLENGE_BYTES = 32;
    static final int BYTES = 32;
    private static final byte[] LABEL = "nixl-connect same-host grant v1".getBytes(StandardCharsets.US_ASCII);
    private static final SecureRandom RANDOM = new SecureRandom();
    /** Where a reader's thread reads proofs into, reused. */
    private static final ThreadLocal<Memory> LANDING = ThreadLocal.withInitial(() -> new Memory(BYTES));
    /** One MAC per thread: looking the algorithm up costs more than the MAC of a few ranges. */
    private static final ThreadLocal<Mac> MACS = ThreadLocal.withInitial(() -> {
        try {
            return Mac.getInstance("HmacSHA256");
        } catch (GeneralSecurityException e) {
            throw new IllegalStateException("HmacSHA256 is unavailable in this JVM", e);
        }
    });

    private GrantProof() {
    }

    static byte[] challenge() {
        byte[] challenge = new byte[CHALLENGE_BYTES];
        RANDOM.nextBytes(challenge);
        return challenge;
    }

    /** The proof of a grant of {@code count} ranges by process {@code pid}, for {@code credential} and {@code challenge}. */
    static byte[] compute(byte[] credential, byte[] challenge, long pid, long[] addresses, long[] lengths, int count) {
        try {
            Mac mac = MACS.get();
            mac.init(new SecretKeySpec(credential, "HmacSHA256"));
            mac.update(LABEL);
            mac.update(challenge);
            ByteBuffer numbers = ByteBuffer.allocate(16 * Math.min(count + 1, 256));
            numbers.putLong(pid).putLong(count);
            for (int i = 0; i < count; i++) {
                if (!numbers.hasRemaining()) {
                    mac.update(numbers.flip());
                    numbers.clear();
                }
                numbers.putLong(addresses[i]).putLong(lengths[i]);
            }
            mac.update(numbers.flip());
            return mac.doFinal();
        } catch (GeneralSecurityException e) {
            throw new IllegalStateException("HmacSHA256 is unavailable in this JVM", e);
        }
    }

    /** The owner's proof in this process's native memory, for as long as its grant lasts. */
    static final class Published implements AutoCloseable {
        private final Memory memory = new Memory(BYTES);

        Published(byte[] proof) {
            memory.write(0, proof, 0, BYTES);
        }

        long address() {
            return Pointer.nativeValue(memory);
        }

        /** Wiped before it is freed: a late reader finds nothing of it. */
        @Override
        public void close() {
            memory.clear();
            memory.close();
        }
    }

    /**
     * Reads the proof at {@code proofAddress} in process {@code pid} and checks it.
     *
     * @return null when the process at {@code pid} proved the grant; otherwise why not
     */
    static String verify(long pid, long proofAddress, byte[] credential, byte[] challenge, long[] addresses,
            long[] lengths) {
        if (pid <= 0 || pid > Integer.MAX_VALUE) {
            return "the peer granted a copy from an invalid pid " + pid;
        }
        byte[] found;
        Memory landing = LANDING.get();
        try {
            landing.clear();
            CrossMemoryAttach.read((int) pid, Pointer.nativeValue(landing), proofAddress, BYTES, () -> false);
            found = landing.getByteArray(0, BYTES);
        } catch (IOException e) {
            return "the grant's proof could not be read from pid " + pid + ": " + e.getMessage();
        }
        if (!MessageDigest.isEqual(found, compute(credential, challenge, pid, addresses, lengths, addresses.length))) {
            return "pid " + pid + " does not hold the grant's proof: the peer is not the process that owns the window";
        }
        return null;
    }
}
