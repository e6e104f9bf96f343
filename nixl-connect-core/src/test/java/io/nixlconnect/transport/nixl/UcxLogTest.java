package io.nixlconnect.transport.nixl;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Files;
import java.nio.file.Path;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * UCX's log file ({@link UcxLog}): UCX creates it when it starts, written to or not. A process killed before its
 * shutdown hook left an empty one behind per process (47 in /tmp after one full test run); the next process to route
 * UCX's log removes the empty ones of processes no longer alive, and keeps every other.
 */
class UcxLogTest {

    /** Above Linux's largest process id (pid_max is at most 2^22): no such process. */
    private static final long ENDED = (1L << 22) + 17;

    @Test
    void emptyLogsOfEndedProcessesAreRemovedAndEveryOtherKept(@TempDir Path dir) throws Exception {
        Path endedEmpty = Files.createFile(dir.resolve("nixl-connect-ucx-" + ENDED + ".log"));
        Path endedWritten = Files.writeString(dir.resolve("nixl-connect-ucx-" + (ENDED + 1) + ".log"), "UCX  ERROR x");
        Path aliveEmpty = Files.createFile(dir.resolve("nixl-connect-ucx-" + ProcessHandle.current().pid() + ".log"));
        Path other = Files.createFile(dir.resolve("nixl-connect-ucx-notapid.log"));

        UcxLog.deleteLeftByEndedProcesses(dir.resolve("nixl-connect-ucx-%p.log").toString());

        assertThat(endedEmpty).doesNotExist();
        assertThat(endedWritten).exists();
        assertThat(aliveEmpty).exists();
        assertThat(other).exists();
    }

    @Test
    void ucxSubstitutionsAreAppliedForTheMessages() {
        assertThat(UcxLog.substitute("/tmp/ucx-%p.log"))
                .isEqualTo("/tmp/ucx-" + ProcessHandle.current().pid() + ".log");
    }
}
