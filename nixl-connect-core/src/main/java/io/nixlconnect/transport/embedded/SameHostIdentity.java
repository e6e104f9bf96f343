package io.nixlconnect.transport.embedded;

import com.sun.jna.Memory;
import com.sun.jna.Pointer;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.SecureRandom;
import java.util.Arrays;
import java.util.UUID;

/**
 * Who this process is, for peers deciding whether they can copy from its memory directly: its pid, the
 * host's boot id, and a probe token — 16 random bytes at a fixed native address that a peer reads with
 * cross-memory attach and compares with the copy it got over the socket. Reading the right token proves
 * that the pid names this very process in the peer's pid namespace and that the kernel lets the peer read
 * it, which no check of user ids, capabilities, Yama or containers could prove as surely.
 *
 * <p>One per JVM; the token's 16 bytes are never freed, so a late probe can never read freed memory.
 */
record SameHostIdentity(long pid, UUID bootId, long tokenAddress, byte[] token) {

    static final int ENCODED_BYTES = 8 + 16 + 8 + 16;
    private static final Path BOOT_ID = Path.of("/proc/sys/kernel/random/boot_id");
    private static final Path YAMA_PTRACE_SCOPE = Path.of("/proc/sys/kernel/yama/ptrace_scope");
    private static final UUID NO_BOOT_ID = new UUID(0, 0);
    /** The token's memory, reachable for the JVM's life (assigned by {@link #create()}, before SELF). */
    private static Memory tokenMemory;
    private static final SameHostIdentity SELF = create();

    SameHostIdentity {
        if (token.length != 16) {
            throw new IllegalArgumentException("probe token must be 16 bytes");
        }
    }

    /** This process. */
    static SameHostIdentity self() {
        return SELF;
    }

    private static SameHostIdentity create() {
        byte[] token = new byte[16];
        new SecureRandom().nextBytes(token);
        Memory memory = new Memory(16);
        memory.write(0, token, 0, 16);
        tokenMemory = memory;
        return new SameHostIdentity(ProcessHandle.current().pid(), readBootId(), Pointer.nativeValue(memory), token);
    }

    private static UUID readBootId() {
        try {
            return UUID.fromString(Files.readString(BOOT_ID).trim());
        } catch (IOException | RuntimeException e) {
            return NO_BOOT_ID; // not Linux, or /proc hidden: never equal to a peer's real boot id
        }
    }

    /** Whether a peer with this identity runs on the same kernel as {@code other} (both boot ids known). */
    boolean sameBoot(SameHostIdentity other) {
        return !bootId.equals(NO_BOOT_ID) && bootId.equals(other.bootId);
    }

    /** The value of {@code kernel.yama.ptrace_scope}, or null without Yama. */
    static String yamaPtraceScope() {
        try {
            return Files.readString(YAMA_PTRACE_SCOPE).trim();
        } catch (IOException | RuntimeException e) {
            return null;
        }
    }

    void encode(ByteBuffer out) {
        out.putLong(pid).putLong(bootId.getMostSignificantBits()).putLong(bootId.getLeastSignificantBits())
                .putLong(tokenAddress).put(token);
    }

    static SameHostIdentity decode(ByteBuffer in) {
        long pid = in.getLong();
        UUID bootId = new UUID(in.getLong(), in.getLong());
        long tokenAddress = in.getLong();
        byte[] token = new byte[16];
        in.get(token);
        return new SameHostIdentity(pid, bootId, tokenAddress, token);
    }

    /**
     * Proves that this process can read {@code peer}'s memory by cross-memory attach: reads its token and
     * compares.
     *
     * @return null if it can; otherwise why not, for logs and health details
     */
    String probe(SameHostIdentity peer) {
        String unavailable = CrossMemoryAttach.unavailableReason();
        if (unavailable != null) {
            return unavailable;
        }
        if (!sameBoot(peer)) {
            return "peer runs on another host (boot id " + peer.bootId + ", here " + bootId + ")";
        }
        if (peer.pid <= 0 || peer.pid > Integer.MAX_VALUE || peer.tokenAddress == 0) {
            return "peer sent an invalid pid " + peer.pid + " or probe address";
        }
        if (peer.pid == pid && !Arrays.equals(peer.token, token)) {
            return "peer pid " + peer.pid + " is this process's pid in another pid namespace (containers)";
        }
        try (Memory landing = new Memory(16)) {
            landing.clear();
            CrossMemoryAttach.read((int) peer.pid, Pointer.nativeValue(landing), peer.tokenAddress, 16, () -> false);
            if (!Arrays.equals(landing.getByteArray(0, 16), peer.token)) {
                return "pid " + peer.pid + " here is not the peer process (another pid namespace: containers?)";
            }
            return null;
        } catch (IOException e) {
            return "probe of pid " + peer.pid + " failed: " + e.getMessage();
        }
    }

    @Override
    public boolean equals(Object other) {
        return other instanceof SameHostIdentity that && pid == that.pid && bootId.equals(that.bootId)
                && tokenAddress == that.tokenAddress && Arrays.equals(token, that.token);
    }

    @Override
    public int hashCode() {
        return Long.hashCode(pid) * 31 + Arrays.hashCode(token);
    }

    @Override
    public String toString() {
        return "SameHostIdentity[pid=" + pid + ", bootId=" + bootId + "]";
    }
}
