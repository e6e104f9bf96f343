package io.nixlconnect.internal;

import java.io.FileInputStream;
import java.io.IOException;
import java.io.InputStream;
import java.lang.management.ManagementFactory;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Locale;

/**
 * Names a resource the process ran out of, for errors and logs: file descriptors ({@code EMFILE}, "Too many open
 * files") and native threads ("unable to create native thread"). Without this, the failure shows up as whatever the
 * failing call was about (a peer unreachable, a transfer failed) and points elsewhere.
 *
 * <p>Counting open descriptors needs one (listing {@code /proc/self/fd}), which a process out of them does not have:
 * one is kept open here from the first use, and given up for the count when nothing else is left.
 */
public final class RunOutResources {

    private static final String EMFILE = "too many open files";
    private static final String NATIVE_THREAD = "unable to create native thread";
    /** Held so that the descriptors can still be counted when none is left; released and taken back around a count. */
    private static InputStream reserve = openReserve();

    private RunOutResources() {
    }

    private static boolean prepared;

    /**
     * Holds the reserve descriptor and loads what describing a shortage takes (the JDK's management library, which
     * loads lazily and cannot load once descriptors are out): call where a transport starts, while resources are
     * available.
     */
    public static void prepare() {
        synchronized (RunOutResources.class) {
            if (reserve == null) {
                reserve = openReserve();
            }
            if (!prepared) {
                prepared = true;
                fileDescriptors();
                threads();
            }
        }
    }

    /** Whether {@code failure} or one of its causes is the process running out of file descriptors. */
    public static boolean isOutOfFileDescriptors(Throwable failure) {
        for (Throwable t = failure; t != null; t = t.getCause() == t ? null : t.getCause()) {
            String message = t.getMessage();
            if (message != null && message.toLowerCase(Locale.ROOT).contains(EMFILE)) {
                return true;
            }
        }
        return false;
    }

    /** Whether {@code failure} or one of its causes is a thread that could not be started. */
    public static boolean isOutOfThreads(Throwable failure) {
        for (Throwable t = failure; t != null; t = t.getCause() == t ? null : t.getCause()) {
            if (t instanceof OutOfMemoryError && t.getMessage() != null
                    && t.getMessage().toLowerCase(Locale.ROOT).contains(NATIVE_THREAD)) {
                return true;
            }
        }
        return false;
    }

    /**
     * What ran out, for a failure where {@link #isOutOfFileDescriptors} or {@link #isOutOfThreads}; null for any other
     * failure. For example "the process ran out of file descriptors (Too many open files): 1024 open, limit 1024
     * (ulimit -n, LimitNOFILE)".
     */
    public static String describe(Throwable failure) {
        if (isOutOfFileDescriptors(failure)) {
            return fileDescriptors();
        }
        if (isOutOfThreads(failure)) {
            return threads();
        }
        return null;
    }

    /** The file descriptors this process has open and may have. */
    public static String fileDescriptors() {
        long open = openFileDescriptors();
        long limit = fileDescriptorLimit();
        return "the process ran out of file descriptors (Too many open files): " + (open < 0 ? "unknown" : open)
                + " open, limit " + (limit < 0 ? "unknown" : limit) + " (ulimit -n, systemd LimitNOFILE, the container's"
                + " nofile limit); it works again once descriptors are free: close idle connections or files, or raise"
                + " the limit";
    }

    /** The threads this JVM runs and may start, for a thread that could not be started. */
    public static String threads() {
        int live;
        try {
            live = ManagementFactory.getThreadMXBean().getThreadCount();
        } catch (LinkageError | RuntimeException e) {
            live = Thread.activeCount(); // this thread's group: better than nothing
        }
        String limit = limitLine("Max processes");
        String pids = cgroupPidsLimit();
        return "the process could not start a thread (unable to create native thread): " + live
                + " threads live in this JVM, per-user process limit " + (limit == null ? "unknown" : limit)
                + " (ulimit -u)" + (pids == null ? "" : ", cgroup pids.max " + pids)
                + ", or out of memory for thread stacks; it works again once threads or memory are free";
    }

    /** Descriptors open now: the JDK's count, or the entries of /proc/self/fd; -1 when neither can be had. */
    public static long openFileDescriptors() {
        long count = countOpen();
        if (count >= 0) {
            return count;
        }
        synchronized (RunOutResources.class) { // none left to count with: give up the reserve for the count
            if (reserve != null) {
                closeQuietly(reserve);
                reserve = null;
                count = countOpen();
                reserve = openReserve();
                return count < 0 ? -1 : count + 1; // the reserve was open too
            }
        }
        return -1;
    }

    /** The soft limit on open descriptors (RLIMIT_NOFILE), -1 when unknown. */
    public static long fileDescriptorLimit() {
        try {
            if (ManagementFactory.getOperatingSystemMXBean() instanceof com.sun.management.UnixOperatingSystemMXBean unix) {
                return unix.getMaxFileDescriptorCount();
            }
        } catch (LinkageError | InternalError | RuntimeException e) {
            return -1; // the management library could not load (out of descriptors before prepare())
        }
        return -1;
    }

    private static long countOpen() {
        try {
            if (ManagementFactory.getOperatingSystemMXBean() instanceof com.sun.management.UnixOperatingSystemMXBean unix) {
                long count = unix.getOpenFileDescriptorCount();
                if (count >= 0) {
                    return count;
                }
            }
        } catch (LinkageError | InternalError | RuntimeException e) {
            return -1; // the JDK could not open /proc/self/fd (or load its library): neither can we
        }
        try (var entries = Files.list(Path.of("/proc/self/fd"))) {
            return entries.count() - 1; // the listing's own descriptor
        } catch (IOException | RuntimeException e) {
            return -1;
        }
    }

    /** The soft value of a /proc/self/limits line, such as "Max processes"; null when unreadable. */
    private static String limitLine(String name) {
        try {
            for (String line : Files.readAllLines(Path.of("/proc/self/limits"), StandardCharsets.US_ASCII)) {
                if (line.startsWith(name)) {
                    String[] words = line.substring(name.length()).trim().split("\\s+");
                    return words.length > 0 ? words[0] : null;
                }
            }
        } catch (IOException | RuntimeException e) {
            return null;
        }
        return null;
    }

    private static String cgroupPidsLimit() {
        try {
            String max = Files.readString(Path.of("/sys/fs/cgroup/pids.max"), StandardCharsets.US_ASCII).trim();
            return max.equals("max") ? null : max;
        } catch (IOException | RuntimeException e) {
            return null;
        }
    }

    private static InputStream openReserve() {
        try {
            return new FileInputStream("/dev/null");
        } catch (IOException | RuntimeException e) {
            return null; // another OS, or already out of descriptors
        }
    }

    private static void closeQuietly(InputStream stream) {
        try {
            stream.close();
        } catch (IOException ignored) {
            // released is all we wanted
        }
    }
}
