package io.nixlconnect.transport.embedded;

import com.sun.jna.LastErrorException;
import com.sun.jna.Native;
import com.sun.jna.NativeLibrary;
import com.sun.jna.Platform;
import io.nixlconnect.internal.NativeMemory;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
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

    /**
     * Most iovecs the kernel takes per side and call ({@code UIO_MAXIOV}, what {@code sysconf(_SC_IOV_MAX)} says on
     * Linux): more fail with EINVAL.
     */
    static final int IOV_MAX = 1024;

    /**
     * Per thread, room for one call's iovecs: {@link #IOV_MAX} local ones, then as many remote ones (16 bytes each,
     * {@code struct iovec}), filled through a native-order view so that a block list costs no JNA call per block.
     */
    private static final ThreadLocal<IovecBuffer> IOVECS = ThreadLocal.withInitial(IovecBuffer::new);

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
        read(pid, new long[] {localAddress}, new long[] {remoteAddress}, new long[] {length}, stop);
    }

    /** Copies {@code length} bytes from {@code localAddress} here to {@code remoteAddress} in process {@code pid}. */
    static void write(int pid, long localAddress, long remoteAddress, long length, BooleanSupplier stop)
            throws IOException {
        copy(true, pid, new long[] {localAddress}, new long[] {remoteAddress}, new long[] {length}, stop);
    }

    /**
     * Copies a list of ranges: {@code lengths[i]} bytes from {@code remoteAddresses[i]} in process {@code pid} to
     * {@code localAddresses[i]} here, with as few system calls as the kernel allows: each takes up to
     * {@link #IOV_MAX} local and as many remote iovecs and up to {@link #CHUNK} bytes (so that {@code stop}, checked
     * before each, stops a cancelled copy soon). Ranges adjacent on one side are one iovec on that side, whatever
     * the other side does: the kernel moves one stream of bytes from the remote iovecs to the local ones.
     *
     * @return the system calls made (for tests: one per {@link #IOV_MAX} discontiguous ranges or {@link #CHUNK})
     * @throws CopyException if the kernel refuses or copies nothing (the message names the errno)
     */
    static int read(int pid, long[] localAddresses, long[] remoteAddresses, long[] lengths, BooleanSupplier stop)
            throws IOException {
        return copy(false, pid, localAddresses, remoteAddresses, lengths, stop);
    }

    private static int copy(boolean write, int pid, long[] localAddresses, long[] remoteAddresses, long[] lengths,
            BooleanSupplier stop) throws IOException {
        if (UNAVAILABLE != null) {
            throw new CopyException(UNAVAILABLE, 0);
        }
        Segments local = Segments.merge(localAddresses, lengths);
        Segments remote = Segments.merge(remoteAddresses, lengths);
        IovecBuffer iovecs = IOVECS.get();
        int calls = 0;
        long left = local.total;
        while (left > 0) {
            if (stop.getAsBoolean()) {
                throw new IOException("cancelled");
            }
            // One call moves what both sides' first IOV_MAX iovecs hold, at most CHUNK.
            long batch = Math.min(CHUNK, Math.min(local.reach(IOV_MAX), remote.reach(IOV_MAX)));
            int localCount = local.fill(iovecs.buffer, 0, batch);
            int remoteCount = remote.fill(iovecs.buffer, IOV_MAX * 16, batch);
            long moved;
            try {
                moved = write
                        ? process_vm_writev(pid, iovecs.address, localCount, iovecs.address + IOV_MAX * 16L, remoteCount, 0)
                        : process_vm_readv(pid, iovecs.address, localCount, iovecs.address + IOV_MAX * 16L, remoteCount, 0);
            } catch (LastErrorException e) {
                throw new CopyException((write ? "process_vm_writev" : "process_vm_readv") + " to pid " + pid + " failed: "
                        + describe(e.getErrorCode()), e.getErrorCode());
            }
            calls++;
            if (moved <= 0 || moved > batch) {
                throw new CopyException((write ? "process_vm_writev" : "process_vm_readv") + " to pid " + pid
                        + " moved " + (moved <= 0 ? "no" : "more than the requested") + " bytes", 0);
            }
            // A partial copy (the kernel stopped at an unmapped page or a signal) continues where it ended.
            local.advance(moved);
            remote.advance(moved);
            left -= moved;
        }
        return calls;
    }

    /**
     * One side's ranges with adjacent ones merged, and a cursor (segment and offset in it) at the first byte not yet
     * copied.
     */
    private static final class Segments {
        private final long[] addresses;
        private final long[] lengths;
        private final int count;
        private final long total;
        private int segment;
        private long offset;

        private Segments(long[] addresses, long[] lengths, int count, long total) {
            this.addresses = addresses;
            this.lengths = lengths;
            this.count = count;
            this.total = total;
        }

        /** Zero-length ranges are dropped; a range starting where the previous one ended extends it. */
        static Segments merge(long[] addresses, long[] lengths) {
            long[] mergedAddresses = new long[lengths.length];
            long[] mergedLengths = new long[lengths.length];
            int n = 0;
            long total = 0;
            for (int i = 0; i < lengths.length; i++) {
                long length = lengths[i];
                if (length < 0) {
                    throw new IllegalArgumentException("negative length " + length);
                }
                if (length == 0) {
                    continue;
                }
                total += length;
                if (n > 0 && mergedAddresses[n - 1] + mergedLengths[n - 1] == addresses[i]) {
                    mergedLengths[n - 1] += length;
                } else {
                    mergedAddresses[n] = addresses[i];
                    mergedLengths[n] = length;
                    n++;
                }
            }
            return new Segments(mergedAddresses, mergedLengths, n, total);
        }

        /** Bytes the next {@code iovecs} iovecs cover from the cursor. */
        long reach(int iovecs) {
            long bytes = 0;
            for (int i = segment, end = Math.min(count, segment + iovecs); i < end; i++) {
                bytes += lengths[i] - (i == segment ? offset : 0);
            }
            return bytes;
        }

        /** Writes iovecs for the next {@code bytes} from the cursor at {@code at}; returns how many. */
        int fill(ByteBuffer buffer, int at, long bytes) {
            int n = 0;
            long left = bytes;
            for (int i = segment; left > 0; i++, n++) {
                long skip = i == segment ? offset : 0;
                long take = Math.min(lengths[i] - skip, left);
                buffer.putLong(at + 16 * n, addresses[i] + skip);
                buffer.putLong(at + 16 * n + 8, take);
                left -= take;
            }
            return n;
        }

        void advance(long bytes) {
            long left = bytes;
            while (left > 0) {
                long rest = lengths[segment] - offset;
                if (left < rest) {
                    offset += left;
                    return;
                }
                left -= rest;
                segment++;
                offset = 0;
            }
        }
    }

    /** A thread's iovec arrays: a native-order direct buffer and its address. */
    private static final class IovecBuffer {
        final ByteBuffer buffer = ByteBuffer.allocateDirect(2 * IOV_MAX * 16).order(ByteOrder.nativeOrder());
        final long address = NativeMemory.addressOf(buffer);
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
