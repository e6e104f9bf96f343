package io.nixlconnect.transport.nixl;

import io.nixlconnect.ChildJvm;
import io.nixlconnect.TestTags;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.RegisterExtension;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * Issue 32: an agent pays UCX's first-connection cost as it starts ({@link UcxWarmUp}: a throwaway agent reads from it
 * once, then goes). The warm-up completes, and it leaves nothing behind: no peer, and, once the new agent has
 * progressed, no more sockets than an agent started without it.
 *
 * <p>Sockets are counted for the whole process, so the check runs in a JVM of its own ({@link #main}): in the test
 * JVM, agents of earlier tests that still connect or close count too (CI, loaded, once counted 6 against 4).
 */
@Tag(TestTags.NIXL)
@Timeout(value = 180, unit = TimeUnit.SECONDS)
class UcxWarmUpTest {

    @RegisterExtension
    final NixlAgents agents = new NixlAgents(); // loads NIXL (or skips)

    @Test
    void theWarmUpCompletesAndLeavesNoPeerNorSocketBehind() throws Exception {
        Path log = Files.createTempFile("ucx-warm-up", ".log");
        Process child = new ProcessBuilder(ChildJvm.command("-Xmx256m", "-cp", System.getProperty("java.class.path"),
                UcxWarmUpTest.class.getName())).redirectErrorStream(true).redirectOutput(log.toFile()).start();
        boolean ended = child.waitFor(150, TimeUnit.SECONDS);
        if (!ended) {
            child.destroyForcibly().waitFor(30, TimeUnit.SECONDS);
        }
        String output = Files.readString(log, StandardCharsets.UTF_8);
        Files.deleteIfExists(log);
        assertThat(ended).as("the check's JVM ended: %s", output).isTrue();
        assertThat(output).as("the check's output").contains("WARM-UP OK");
        assertThat(child.exitValue()).as("the check's exit status; its output: %s", output).isZero();
    }

    /** The check, alone in its JVM: prints {@code WARM-UP OK ...} and exits 0, or says what differed and exits 1. */
    public static void main(String[] args) throws Exception {
        NixlTransport transport = NixlTransport.open(NixlTestSupport.settings()); // loads NIXL
        Set<String> before = sockets();
        NixlAgentCore cold = new NixlAgentCore("cold-" + System.nanoTime(),
                NixlTestSupport.settings().withWarmUp(false), closing -> { });
        NixlAgentCore warm = null;
        int status = 1;
        try {
            check(Boolean.FALSE.equals(cold.details().get("ucxWarmedUp")), "the cold agent did not warm up");
            // An agent connects to itself (NIXL loads its own metadata), and its end of that connection is accepted as
            // its loop progresses: counted before then, that end showed up among the warm agent's (CI, loaded).
            Set<String> coldSockets = connectionsPaired(before);
            warm = new NixlAgentCore("warm-" + System.nanoTime(), NixlTestSupport.settings().withWarmUp(true),
                    closing -> { });
            check(Boolean.TRUE.equals(warm.details().get("ucxWarmedUp")), "the warm agent warmed up");
            check(Integer.valueOf(0).equals(warm.details().get("remoteAgents")), "no peer left loaded");
            check(warm.peerCounts().openConnections() == 0, "no connection left open");
            // The throwaway agent's sockets closed with it; the new agent's end of them closes as UCX progresses.
            // Sockets opened since the cold agent's (others' closing meanwhile do not count).
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
            Set<String> warmSockets;
            do {
                warmSockets = new HashSet<>(sockets());
                warmSockets.removeAll(before);
                warmSockets.removeAll(coldSockets);
                if (warmSockets.size() == coldSockets.size()) {
                    break;
                }
                Thread.sleep(50);
            } while (System.nanoTime() < deadline);
            check(warmSockets.size() == coldSockets.size(), "a warmed-up agent's sockets " + described(warmSockets)
                    + " against a cold one's " + described(coldSockets));
            System.out.println("WARM-UP OK sockets: cold " + coldSockets.size() + ", warm " + warmSockets.size());
            status = 0;
        } catch (IllegalStateException e) {
            System.out.println("WARM-UP FAILED: " + e.getMessage());
        } finally {
            cold.close();
            if (warm != null) {
                warm.close();
            }
            transport.close();
        }
        System.exit(status);
    }

    private static void check(boolean condition, String what) {
        if (!condition) {
            throw new IllegalStateException(what);
        }
    }

    /**
     * The sockets opened since {@code before}, once every established TCP connection among them has both of its ends
     * in this process (or after 60 s).
     */
    private static Set<String> connectionsPaired(Set<String> before) throws Exception {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
        while (true) {
            Set<String> opened = new HashSet<>(sockets());
            opened.removeAll(before);
            Map<String, TcpSocket> tcp = tcpSockets();
            Set<TcpSocket> established = new HashSet<>();
            for (String socket : opened) {
                TcpSocket entry = tcp.get(socket);
                if (entry != null && entry.established()) {
                    established.add(entry);
                }
            }
            boolean paired = established.stream().allMatch(end -> established.contains(end.otherEnd()));
            if (paired || System.nanoTime() - deadline > 0) {
                return opened;
            }
            Thread.sleep(50);
        }
    }

    /** One line of /proc/self/net/tcp{,6}: state and addresses as the kernel writes them (hex). */
    private record TcpSocket(String state, String local, String remote) {

        boolean established() {
            return "01".equals(state);
        }

        TcpSocket otherEnd() {
            return new TcpSocket(state, remote, local);
        }

        @Override
        public String toString() {
            return "state " + state + " " + local + "->" + remote;
        }
    }

    /** This process's TCP sockets, by {@code socket:[inode]}. */
    private static Map<String, TcpSocket> tcpSockets() throws IOException {
        Map<String, TcpSocket> tcp = new HashMap<>();
        for (String table : List.of("/proc/self/net/tcp", "/proc/self/net/tcp6")) {
            Path path = Path.of(table);
            if (!Files.isReadable(path)) {
                continue;
            }
            List<String> lines = Files.readAllLines(path);
            for (String line : lines.subList(1, lines.size())) {
                String[] fields = line.trim().split("\\s+");
                if (fields.length > 9) {
                    tcp.put("socket:[" + fields[9] + "]", new TcpSocket(fields[3], fields[1], fields[2]));
                }
            }
        }
        return tcp;
    }

    /** Each socket with its TCP state and addresses where /proc/self/net knows it, so a failure says what stayed open. */
    private static List<String> described(Set<String> sockets) throws IOException {
        Map<String, TcpSocket> tcp = tcpSockets();
        List<String> described = new ArrayList<>();
        for (String socket : sockets) {
            TcpSocket entry = tcp.get(socket);
            described.add(socket + " " + (entry == null ? "(not TCP)" : entry));
        }
        return described;
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
