package io.nixlconnect.transport.embedded;

import com.sun.jna.LastErrorException;
import com.sun.jna.Memory;
import com.sun.jna.Native;
import com.sun.jna.NativeLibrary;
import com.sun.jna.Platform;
import java.io.IOException;
import java.util.function.BooleanSupplier;

/**
 * Linux cross-memory attach: {@code process_vm_readv} / {@code process_vm_writev} copy between this
 * process's memory and another process's in one pass, with no socket in between. The kernel allows it
 * where it would allow {@code ptrace} attach (same user, or {@code CAP_SYS_PTRACE}, and Yama permitting).
 *
 * <p>Only this class calls the two functions; callers validate every address first (the local side is
 * registered memory, the remote side a range of the metadata the reader was handed, granted by the process that
 * proved it owns the window: {@link GrantProof}).
 */
final class CrossMemoryAttach {

    /** Bytes per system call: a cancelled copy stops within one chunk. */
    static final long CHUNK = 64L << 20;

    private static final int EPERM = 1;
    private static final int ESRCH = 3;
    static final int EFAULT = 14;
    private static final int ENOSYS = 38;

    private static final String UNAVAILABLE = bind();

    /** One iovec pair per thread (two {@code struct iovec}: local at 0, remote at 16), reused. */
    private static final ThreadLocal<Memory> IOVECS = ThreadLocal.withInitial(() -> new Memory(32));

    private CrossMemoryAttach() {
    }

    private static String bind() {
        if (!Platform.isLinux()) {
            return "cross-memory attach is Linux only (this is " + System.getProperty("os.name") + ")";
        }
        if (!Platform.is64Bit()) {
            return "cross-memory attach is used on 64-bit JVMs only";
        }
        try {
            Native.register(CrossMemoryAttach.class, NativeLibrary.getInstance(Platform.C_LIBRARY_NAME));
            return null;
        } catch (UnsatisfiedLinkError | RuntimeException e) {
            return "process_vm_readv/process_vm_writev not found in the C library: " + e.getMessage();
        }
    }

    private static native long process_vm_readv(int pid, long localIov, long localCount, long remoteIov,
            long remoteCount, long flags) throws LastErrorException;

    private static native long process_vm_writev(int pid, long localIov, long localCount, long remoteIov,
            long remoteCount, long flags) throws LastErrorException;

    /** Why cross-memory attach cannot be used in this JVM at all; null when it can. */
    static String unavailableReason() {
        return UNAVAILABLE;
    }

    /**
     * Copies {@code length} bytes from {@code remoteAddress} in process {@code pid} to {@code localAddress}
     * here, in chunks of {@link #CHUNK}, checking {@code stop} before each.
     *
     * @throws CopyException if the kernel refuses or copies nothing (the message names the errno)
     */
    static void read(int pid, long localAddress, long remoteAddress, long length, BooleanSupplier stop)
            throws IOException {
        copy(false, pid, localAddress, remoteAddress, length, stop);
    }

    /** Copies {@code length} bytes from {@code localAddress} here to {@code remoteAddress} in process {@code pid}. */
    static void write(int pid, long localAddress, long remoteAddress, long length, BooleanSupplier stop)
            throws IOException {
        copy(true, pid, localAddress, remoteAddress, length, stop);
    }

    private static void copy(boolean write, int pid, long localAddress, long remoteAddress, long length,
            BooleanSupplier stop) throws IOException {
        if (UNAVAILABLE != null) {
            throw new CopyException(UNAVAILABLE, 0);
        }
        Memory iovecs = IOVECS.get();
        long iov = com.sun.jna.Pointer.nativeValue(iovecs);
        long done = 0;
        while (done < length) {
            if (stop.getAsBoolean()) {
                throw new IOException("cancelled");
            }
            long chunk = Math.min(CHUNK, length - done);
            iovecs.setLong(0, localAddress + done);
            iovecs.setLong(8, chunk);
            iovecs.setLong(16, remoteAddress + done);
            iovecs.setLong(24, chunk);
            long moved;
            try {
                moved = write ? process_vm_writev(pid, iov, 1, iov + 16, 1, 0)
                        : process_vm_readv(pid, iov, 1, iov + 16, 1, 0);
            } catch (LastErrorException e) {
                throw new CopyException((write ? "process_vm_writev" : "process_vm_readv") + " to pid " + pid + " failed: "
                        + describe(e.getErrorCode()), e.getErrorCode());
            }
            if (moved <= 0) {
                throw new CopyException((write ? "process_vm_writev" : "process_vm_readv") + " to pid " + pid
                        + " moved no bytes", 0);
            }
            done += moved; // a partial copy (a page boundary the kernel stopped at) continues where it ended
        }
    }

    private static String describe(int errno) {
        return switch (errno) {
            case EPERM -> "EPERM (not permitted: another user, no CAP_SYS_PTRACE, or Yama ptrace_scope forbids it"
                    + yamaHint() + ")";
            case ESRCH -> "ESRCH (no such process in this pid namespace)";
            case EFAULT -> "EFAULT (an address is not mapped)";
            case ENOSYS -> "ENOSYS (the kernel or a seccomp filter does not allow the call)";
            default -> "errno " + errno;
        };
    }

    private static String yamaHint() {
        String scope = SameHostIdentity.yamaPtraceScope();
        return scope == null ? "" : "; kernel.yama.ptrace_scope is " + scope;
    }

    /** The kernel refused a copy; {@link #errno()} says why (0 when not from the kernel). */
    static final class CopyException extends IOException {
        private static final long serialVersionUID = 1L;
        private final int errno;

        CopyException(String message, int errno) {
            super(message);
            this.errno = errno;
        }

        int errno() {
            return errno;
        }
    }
}
