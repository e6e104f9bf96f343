package io.nixlconnect.transport.nixl;

import io.nixlconnect.TestTags;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.RegisterExtension;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.HashSet;
import java.util.Set;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

/**
 * Issue 32: an agent pays UCX's first-connection cost as it starts ({@link UcxWarmUp}: a throwaway agent reads from it
 * once, then goes). The warm-up completes, and it leaves nothing behind: no peer, and, once the new agent has
 * progressed, no more sockets than an agent started without it.
 */
@Tag(TestTags.NIXL)
@Timeout(value = 120, unit = TimeUnit.SECONDS)
class UcxWarmUpTest {

    @RegisterExtension
    final NixlAgents agents = new NixlAgents(); // loads NIXL (or skips)

    @Test
    void theWarmUpCompletesAndLeavesNoPeerNorSocketBehind() throws Exception {
        Set<String> before = sockets();
        NixlAgentCore cold = new NixlAgentCore("cold-" + System.nanoTime(),
                NixlTestSupport.settings().withWarmUp(false), closing -> { });
        NixlAgentCore warm = null;
        try {
            assertThat(cold.details()).containsEntry("ucxWarmedUp", false);
            Set<String> coldSockets = new HashSet<>(sockets());
            coldSockets.removeAll(before);
            warm = new NixlAgentCore("warm-" + System.nanoTime(), NixlTestSupport.settings().withWarmUp(true),
                    closing -> { });
            assertThat(warm.details()).containsEntry("ucxWarmedUp", true).containsEntry("remoteAgents", 0);
            assertThat(warm.peerCounts().openConnections()).isZero();
            // The throwaway agent's sockets closed with it; the new agent's end of them closes as its loop progresses.
            // Sockets opened since the cold agent's (others' closing meanwhile do not count).
            await().atMost(Duration.ofSeconds(30)).untilAsserted(() -> {
                Set<String> warmSockets = new HashSet<>(sockets());
                warmSockets.removeAll(before);
                warmSockets.removeAll(coldSockets);
                assertThat(warmSockets).as("a warmed-up agent's sockets, against a cold one's %s", coldSockets)
                        .hasSameSizeAs(coldSockets);
            });
        } finally {
            cold.close();
            if (warm != null) {
                warm.close();
            }
        }
    }

    /** This process's open sockets, as {@code socket:[inode]}. */
    private static Set<String> sockets() throws IOException {
        Set<String> sockets = new HashSet<>();
        try (Stream<Path> fds = Files.list(Path.of("/proc/self/fd"))) {
            fds.forEach(fd -> {
                try {
                    String target = Files.readSymbolicLink(fd).toString();
                    if (target.startsWith("socket:")) {
                        sockets.add(target);
                    }
                } catch (IOException e) {
                    // closed while listed
                }
            });
        }
        return sockets;
    }
}
