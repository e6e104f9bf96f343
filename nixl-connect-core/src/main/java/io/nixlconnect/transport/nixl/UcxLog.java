package io.nixlconnect.transport.nixl;

import java.io.IOException;
import java.nio.file.DirectoryStream;
import java.nio.file.Files;
import java.nio.file.Path;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Where UCX writes its own messages. UCX prints them to the process's stdout unless {@code UCX_LOG_FILE} names a file
 * (a NIXL consumer out of file descriptors printed 551 "socket create failed" lines there within a second, in the
 * middle of the application's own output). Before UCX starts, this sets {@code UCX_LOG_FILE} to
 * {@link NixlSettings#ucxLogFile} with a size bound ({@code UCX_LOG_FILE_SIZE}, {@code UCX_LOG_FILE_ROTATE}); UCX reads
 * them once, when it starts. Variables already in the environment win; an empty setting leaves UCX's default.
 */
final class UcxLog {

    private static final Logger log = LoggerFactory.getLogger(UcxLog.class);
    /** Largest UCX log file before UCX rotates it, once: at most twice this on disk per process. */
    static final String MAX_FILE_SIZE = "16m";

    private static volatile String where = "stdout (UCX's default)";

    private UcxLog() {
    }

    /** Routes UCX's messages to {@code file} unless the environment already says where; call before UCX loads. */
    static synchronized void route(String file) {
        String fromEnvironment = System.getenv("UCX_LOG_FILE");
        if (fromEnvironment != null && !fromEnvironment.isEmpty()) {
            where = substitute(fromEnvironment) + " (UCX_LOG_FILE)";
            return;
        }
        if (file == null || file.isEmpty()) {
            return;
        }
        NixlNativeLibrary.LibC.INSTANCE.setenv("UCX_LOG_FILE", file, 0);
        NixlNativeLibrary.LibC.INSTANCE.setenv("UCX_LOG_FILE_SIZE", MAX_FILE_SIZE, 0);
        NixlNativeLibrary.LibC.INSTANCE.setenv("UCX_LOG_FILE_ROTATE", "1", 0);
        where = substitute(file);
        Path path = Path.of(where);
        if (path.isAbsolute()) { // not UCX's "stdout" or "stderr"
            deleteAtExitIfEmpty(path);
            deleteLeftByEndedProcesses(file);
        }
        log.info("UCX writes its messages to {} (nixl.connect.nixl.ucx-log-file; UCX_LOG_FILE in the environment wins)",
                where);
    }

    /** UCX creates its log file when it starts, whether or not it writes to it: an empty one is not left behind. */
    private static void deleteAtExitIfEmpty(Path file) {
        Runtime.getRuntime().addShutdownHook(new Thread(() -> {
            try {
                if (Files.size(file) == 0) {
                    Files.delete(file);
                }
            } catch (IOException | RuntimeException e) {
                // not there, or not ours to delete
            }
        }, "nixl-ucx-log-cleanup"));
    }

    /**
     * Empty logs of processes that ended without running their shutdown hooks (killed): for a file name with one
     * {@code %p}, the files of that name for any process id no longer alive, when empty.
     */
    static void deleteLeftByEndedProcesses(String file) {
        Path pattern = Path.of(file.replace("%h", "*"));
        String name = pattern.getFileName().toString();
        int at = name.indexOf("%p");
        if (at < 0 || name.indexOf("%p", at + 1) >= 0 || pattern.getParent() == null
                || pattern.getParent().toString().contains("%")) {
            return;
        }
        String prefix = name.substring(0, at);
        String suffix = name.substring(at + 2);
        try (DirectoryStream<Path> logs = Files.newDirectoryStream(pattern.getParent(),
                prefix.replace("*", "") + "*" + suffix)) {
            for (Path log : logs) {
                String candidate = log.getFileName().toString();
                if (!candidate.startsWith(prefix) || !candidate.endsWith(suffix)
                        || candidate.length() <= prefix.length() + suffix.length()) {
                    continue;
                }
                String pid = candidate.substring(prefix.length(), candidate.length() - suffix.length());
                if (pid.chars().allMatch(Character::isDigit) && pid.length() < 12
                        && ProcessHandle.of(Long.parseLong(pid)).isEmpty() && Files.size(log) == 0) {
                    Files.deleteIfExists(log);
                }
            }
        } catch (IOException | RuntimeException e) {
            // best effort: a folder that cannot be listed keeps its files
        }
    }

    /** Where UCX's messages go, for error messages that send the reader there. */
    static String where() {
        return where;
    }

    /** UCX's own substitutions in the file name: %p the process id, %h the host name. */
    static String substitute(String file) {
        String host;
        try {
            host = java.net.InetAddress.getLocalHost().getHostName();
        } catch (java.io.IOException | RuntimeException e) {
            host = "%h";
        }
        return file.replace("%p", Long.toString(ProcessHandle.current().pid())).replace("%h", host);
    }
}
