package io.nixlconnect;

import static org.assertj.core.api.Assertions.assertThat;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import io.nixlconnect.transport.nixl.NixlSettings;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * Issue 22 item 1: a NIXL process in a user's default environment (no {@code UCX_MODULES}, no
 * {@code UCX_NET_DEVICES}) moves data and exits 0, also on a host with rdma-core's user-space libraries; and with
 * UCX's fault handlers on ({@code UCX_HANDLE_ERRORS=bt}) the JVM still handles its own SIGSEGVs (implicit null
 * checks), which UCX's handler used to take and abort on.
 *
 * <p>There NIXL's pip wheel has two libnl copies in one process: its own bundled one and the host's, which UCX's
 * EFA module pulls in through the host's {@code libefa.so.1}. Before {@code NixlNativeLibrary} preloaded the host's
 * copies, every such JVM died at exit with SIGSEGV in {@code rtnl_tc_unregister} (exit 134, an hs_err log). The
 * host's libraries come from Debian's rdma-core packages unpacked by {@code .ci/nixl-setup.sh}
 * ({@code NIXL_TEST_HOST_RDMA_CORE}) and reach only the child JVM, through its {@code LD_LIBRARY_PATH}.
 */
@Tag(TestTags.CROSS_PROCESS)
@Timeout(value = 180, unit = TimeUnit.SECONDS)
class NixlHostRdmaCoreExitTest {

    private static final String LIBRARY_DIR = System.getenv("NIXL_LIBRARY_DIR");
    private static final String HOST_RDMA_CORE = System.getenv("NIXL_TEST_HOST_RDMA_CORE");
    private static final boolean CI = "true".equals(System.getenv("CI"));
    private static final int SIZE = 1 << 20;

    @ParameterizedTest(name = "host rdma-core libraries: {0}")
    @ValueSource(booleans = {false, true})
    void aNixlProcessInTheDefaultEnvironmentMovesDataAndExitsCleanly(boolean hostRdmaCore, @TempDir Path dir)
            throws Exception {
        assumeTrue(LIBRARY_DIR != null && !LIBRARY_DIR.isBlank(),
                "NIXL_LIBRARY_DIR is not set: run `eval \"$(.ci/nixl-setup.sh)\"` to test against a real NIXL");
        if (hostRdmaCore && !CI) {
            assumeTrue(HOST_RDMA_CORE != null && !HOST_RDMA_CORE.isBlank(),
                    "NIXL_TEST_HOST_RDMA_CORE is not set: .ci/nixl-setup.sh could not fetch rdma-core's libraries");
        }
        ProcessBuilder builder = new ProcessBuilder(ChildJvm.command("-Xmx256m",
                "-XX:ErrorFile=" + dir.resolve("hs_err_pid%p.log"), "-cp", System.getProperty("java.class.path"),
                NixlHostRdmaCoreExitTest.class.getName()))
                .directory(dir.toFile()).redirectErrorStream(true).redirectOutput(dir.resolve("output.txt").toFile());
        Map<String, String> environment = builder.environment();
        environment.remove("UCX_MODULES");
        environment.remove("UCX_NET_DEVICES");
        environment.remove("UCX_TLS");
        environment.remove("UCX_ERROR_SIGNALS");
        // UCX's fault handlers on, as UCX documents its default and as a user debugging UCX sets them: the child then
        // also shows that they do not take the JVM's own SIGSEGVs (see nullChecksInCompiledCode).
        environment.put("UCX_HANDLE_ERRORS", "bt");
        if (hostRdmaCore) {
            assertThat(HOST_RDMA_CORE).as("NIXL_TEST_HOST_RDMA_CORE (CI must test the host with rdma-core)").isNotBlank();
            String existing = environment.getOrDefault("LD_LIBRARY_PATH", "");
            environment.put("LD_LIBRARY_PATH", HOST_RDMA_CORE + (existing.isEmpty() ? "" : ":" + existing));
        }
        Process child = builder.start();
        boolean ended = child.waitFor(150, TimeUnit.SECONDS);
        if (!ended) {
            child.destroyForcibly().waitFor(30, TimeUnit.SECONDS);
        }
        String output = Files.readString(dir.resolve("output.txt"));
        List<Path> crashLogs;
        try (Stream<Path> files = Files.list(dir)) {
            crashLogs = files.filter(file -> file.getFileName().toString().startsWith("hs_err")).toList();
        }
        assertThat(ended).as("the child ended; its output:%n%s", output).isTrue();
        assertThat(output).as("the child's output").contains("MOVED " + SIZE);
        assertThat(output).as("the child's output").contains("NULL CHECKS HANDLED BY THE JVM");
        assertThat(crashLogs).as("crash logs; the child's output:%n%s", output).isEmpty();
        assertThat(child.exitValue()).as("exit status; the child's output:%n%s", output).isZero();
    }

    /** Two NIXL connectors in this JVM: one publishes {@link #SIZE} bytes, the other reads them; then a normal exit. */
    public static void main(String[] args) throws Exception {
        PrintStream out = new PrintStream(System.out, true, StandardCharsets.UTF_8);
        byte[] data = TestData.random(SIZE);
        try (Connector producer = connector("producer"); Connector consumer = connector("consumer");
             Descriptor source = new Descriptor(data); Descriptor target = Descriptor.allocate(SIZE);
             ReadableOperation readable = producer.createReadable(source)) {
            consumer.beginRead(readable.metadata(), target).waitForCompletion(Duration.ofSeconds(60));
            readable.waitForCompletion(Duration.ofSeconds(60));
            if (!Arrays.equals(target.toByteArray(), data)) {
                throw new AssertionError("the bytes read differ from the bytes published");
            }
            out.println("MOVED " + SIZE);
            // With UCX loaded, the JVM's own use of SIGSEGV: before NixlNativeLibrary left the fault signals to the JVM,
            // UCX's handler took the first one and aborted the process ("Caught signal 11", exit 134, no hs_err).
            if (nullChecksInCompiledCode() > 0) {
                out.println("NULL CHECKS HANDLED BY THE JVM");
            }
        }
    }

    private static final class Holder {
        int value = 1;
    }

    /**
     * Reads a field through an array whose last element is null, a few times over: compiled code (C1 or C2, once the
     * loop runs hot) checks for null by faulting (SIGSEGV) and the JVM turns the fault into a NullPointerException.
     */
    private static int nullChecksInCompiledCode() {
        Holder[] holders = new Holder[2_000_000];
        Arrays.fill(holders, new Holder());
        holders[holders.length - 1] = null;
        int thrown = 0;
        long sum = 0;
        for (int round = 0; round < 5; round++) {
            try {
                for (Holder holder : holders) {
                    sum += holder.value;
                }
            } catch (NullPointerException expected) {
                thrown++;
            }
        }
        return sum > 0 ? thrown : 0;
    }

    private static Connector connector(String role) {
        return new Connector(ConnectorOptions.builder().workerId(role + "-" + ProcessHandle.current().pid())
                .transports(NixlSettings.defaults().withLibraryDir(Path.of(LIBRARY_DIR)))
                .operationTimeout(Duration.ofSeconds(60)).build());
    }
}
