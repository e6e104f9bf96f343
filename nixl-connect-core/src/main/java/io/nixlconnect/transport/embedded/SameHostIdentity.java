package io.nixlconnect.transport.embedded;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.UUID;

/**
 * Who a process says it is, for a peer deciding whether a same-host copy is worth asking for: its pid and the host's
 * boot id (an IDENTIFY answer). It proves nothing: anyone can answer an IDENTIFY with any pid. What a reader copies
 * from is decided by each grant's proof instead ({@link GrantProof}): the process at the granted pid must hold, in
 * its own memory, a proof bound to the window's credential, the reader's fresh challenge and the ranges.
 *
 * <p>The answer keeps the layout of the older probe (pid, boot id, then 24 bytes that carried a probe token's
 * address and value). They are sent as zeros: a reader from before grant proofs then finds no token and takes TCP,
 * and no process hands out a value a hostile peer could show in its name.
 */
record SameHostIdentity(long pid, UUID bootId) {

    static final int ENCODED_BYTES = 8 + 16 + 8 + 16;
    private static final int LEGACY_TOKEN_BYTES = 8 + 16;
    private static final Path BOOT_ID = Path.of("/proc/sys/kernel/random/boot_id");
    private static final Path YAMA_PTRACE_SCOPE = Path.of("/proc/sys/kernel/yama/ptrace_scope");
    private static final UUID NO_BOOT_ID = new UUID(0, 0);
    private static final SameHostIdentity SELF = new SameHostIdentity(ProcessHandle.current().pid(), readBootId());

    /** This process. */
    static SameHostIdentity self() {
        return SELF;
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
                .put(new byte[LEGACY_TOKEN_BYTES]);
    }

    static SameHostIdentity decode(ByteBuffer in) {
        long pid = in.getLong();
        UUID bootId = new UUID(in.getLong(), in.getLong());
        in.position(in.position() + LEGACY_TOKEN_BYTES); // an older peer's probe token: not trusted, not read
        return new SameHostIdentity(pid, bootId);
    }

    /**
     * Whether a same-host copy from a peer that says it is {@code peer} is worth asking for: this JVM can make one, and
     * the peer runs on this kernel with a plausible pid. Reads nothing of the peer: whether the pid is the peer, and
     * readable, is proven by the first grant's proof.
     *
     * @return null if it is; otherwise why not, for logs and health details
     */
    String probe(SameHostIdentity peer) {
        String unavailable = CrossMemoryAttach.unavailableReason();
        if (unavailable != null) {
            return unavailable;
        }
        if (!sameBoot(peer)) {
            return "peer runs on another host (boot id " + peer.bootId + ", here " + bootId + ")";
        }
        if (peer.pid <= 0 || peer.pid > Integer.MAX_VALUE) {
            return "peer sent an invalid pid " + peer.pid;
        }
        return null;
    }

    @Override
    public String toString() {
        return "SameHostIdentity[pid=" + pid + ", bootId=" + bootId + "]";
    }
}
