package io.nixlconnect.transport.nixl;

import java.io.IOException;
import java.nio.file.DirectoryStream;
import java.nio.file.Files;
import java.nio.file.Path;

/**
 * Whether this process has run out of file descriptors, to name it when NIXL fails for that reason: UCX could not
 * open a socket ({@code EMFILE}), and NIXL only says {@code ERROR_BACKEND}. Counts {@code /proc/self/fd} and asks
 * {@code getrlimit}; needs no descriptor for the limit, and an opening of the count that itself fails for want of a
 * descriptor says all are taken.
 */
final class FileDescriptors {

    private static final Path OPEN = Path.of("/proc/self/fd");
    private static final int RLIMIT_NOFILE = 7; // Linux

    private FileDescriptors() {
    }

    /** What was counted: descriptors open ({@code -1}: all, the count itself could not open one) and the limit. */
    record Usage(long open, long limit) {

        /** Whether (nearly) every descriptor is taken: within 1% of the limit, at least 4. */
        boolean exhausted() {
            return limit > 0 && (open < 0 || open >= limit - Math.max(4, limit / 100));
        }

        String describe() {
            return (open < 0 ? "all" : open + " of") + " this process's limit of " + limit
                    + " file descriptors are open (ulimit -n)";
        }
    }

    /** Counts now; null where the count or the limit cannot be read (not Linux). */
    static Usage usage() {
        long limit = softLimit();
        if (limit <= 0) {
            return null;
        }
        long open = 0;
        try (DirectoryStream<Path> fds = Files.newDirectoryStream(OPEN)) {
            for (Path ignored : fds) {
                open++;
            }
        } catch (IOException e) {
            if (!String.valueOf(e.getMessage()).contains("Too many open files")) {
                return null;
            }
            open = -1;
        }
        return new Usage(open, limit);
    }

    /** The description of an exhaustion that may have failed a native call; null when descriptors are left. */
    static String exhaustion() {
        Usage usage = usage();
        return usage != null && usage.exhausted() ? usage.describe() : null;
    }

    private static long softLimit() {
        try {
            long[] limits = new long[2]; // struct rlimit { rlim_t cur, max; }
            return NixlNativeLibrary.LibC.INSTANCE.getrlimit(RLIMIT_NOFILE, limits) == 0 ? limits[0] : -1;
        } catch (RuntimeException | LinkageError e) {
            return -1;
        }
    }
}
