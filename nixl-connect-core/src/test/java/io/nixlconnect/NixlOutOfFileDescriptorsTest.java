package io.nixlconnect;

import static org.assertj.core.api.Assertions.assertThat;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import io.nixlconnect.transport.nixl.NixlSettings;
import java.io.BufferedReader;
import java.io.FileInputStream;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.jar.JarEntry;
import java.util.jar.JarOutputStream;
import java.util.stream.Stream;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * Issue 32 item 3, across JVMs: a NIXL consumer whose file descriptors have run out. Before, loading a new peer failed
 * with ERROR_BACKEND and a hint at UCX_TLS and UCX_NET_DEVICES, and UCX printed its "socket create failed" lines to the
 * application's stdout. Now the error says that file descriptors ran out, how many are open against what limit; UCX's
 * messages go to its own log file; and once descriptors are free the same peer loads and the read succeeds.
 *
 * <p>The consumer is a child JVM under {@code ulimit -n} that takes every descriptor left (opening /dev/null until it
 * cannot) before it reads from a peer it has not loaded yet. Its classes come from one jar the test writes, so that
 * loading a class needs no new descriptor once the JVM runs.
 */
@Tag(TestTags.CROSS_PROCESS)
@Tag(TestTags.NIXL)
@Timeout(value = 300, unit = TimeUnit.SECONDS)
class NixlOutOfFileDescriptorsTest {

    private static final String LIBRARY_DIR = System.getenv("NIXL_LIBRARY_DIR");
    private static final int LIMIT = 512;

    @Test
    void aLoadWithoutFileDescriptorsSaysSoKeepsUcxOffStdoutAndTheNextLoadSucceeds(@TempDir Path dir) throws Exception {
        assumeTrue(LIBRARY_DIR != null && !LIBRARY_DIR.isBlank(),
                "NIXL_LIBRARY_DIR is not set: run `eval \"$(.ci/nixl-setup.sh)\"` to test against a real NIXL");
        String classPath = classPathWithClassesInOneJar(dir.resolve("classes.jar"));
        ProcessBuilder builder = new ProcessBuilder("bash", "-c", "ulimit -n " + LIMIT + " && exec \"$0\" \"$@\"",
                Path.of(System.getProperty("java.home"), "bin", "java").toString(), "-Xmx256m",
                "-XX:ErrorFile=/dev/null", "-cp", classPath, NixlOutOfFileDescriptorsTest.class.getName(), "consumer");
        builder.environment().put("UCX_TLS", "tcp,self");
        builder.environment().remove("UCX_LOG_FILE");
        Path ucxLog = null;
        try (PeerLines producers = PeerLines.startJvmOverUcxTcp(NixlFleetSocketsTest.class, "producers", "2", "1");
             PeerLines consumer = PeerLines.start(builder, "consumer")) {
            String warm = producers.next("META ").substring(5);
            String fresh = producers.next("META ").substring(5);
            consumer.next("READY");
            ucxLog = Path.of(NixlSettings.DEFAULT_UCX_LOG_FILE.replace("%p", Long.toString(consumer.process().pid())));

            assertThat(consumer.sendAndNext("read " + warm, "READ ")).isEqualTo("READ ok");
            assertThat(consumer.sendAndNext("hog", "HOGGED ")).startsWith("HOGGED ");
            String failed = consumer.sendAndNext("read " + fresh, "READ ");
            assertThat(failed).startsWith("READ failed")
                    .contains("UCX could not open a connection to the peer because the process ran out of file"
                            + " descriptors")
                    .contains("limit " + LIMIT + " (ulimit -n")
                    .contains("UCX's log: " + ucxLog)
                    .doesNotContain("UCX_TLS");
            assertThat(consumer.sendAndNext("release", "RELEASED")).isEqualTo("RELEASED");
            assertThat(consumer.sendAndNext("read " + fresh, "READ ")).as("once descriptors are free")
                    .isEqualTo("READ ok");
            consumer.send("exit");
            assertThat(consumer.process().waitFor(60, TimeUnit.SECONDS)).isTrue();

            // UCX's lines read "[host:pid:thread] file.c:line UCX  ERROR ..."
            assertThat(consumer.linesSoFar()).as("the consumer's stdout")
                    .noneMatch(line -> line.matches(".*\\bUCX\\s+(ERROR|WARN|DIAG|INFO|DEBUG)\\b.*"));
            assertThat(Files.readString(ucxLog)).as("UCX's log").contains("UCX  ERROR");
        } finally {
            if (ucxLog != null) {
                Files.deleteIfExists(ucxLog);
            }
        }
    }

    /** This test run's class path with its class folders replaced by one jar of their contents. */
    private static String classPathWithClassesInOneJar(Path jar) throws IOException {
        List<String> entries = new ArrayList<>();
        entries.add(jar.toString());
        try (JarOutputStream out = new JarOutputStream(Files.newOutputStream(jar))) {
            List<String> written = new ArrayList<>();
            for (String entry : System.getProperty("java.class.path").split(java.io.File.pathSeparator)) {
                Path path = Path.of(entry);
                if (!Files.isDirectory(path)) {
                    entries.add(entry);
                    continue;
                }
                try (Stream<Path> files = Files.walk(path)) {
                    for (Path file : (Iterable<Path>) files.filter(Files::isRegularFile)::iterator) {
                        String name = path.relativize(file).toString().replace(java.io.File.separatorChar, '/');
                        if (written.contains(name)) {
                            continue; // the first folder on the path wins, as for the class loader
                        }
                        written.add(name);
                        out.putNextEntry(new JarEntry(name));
                        Files.copy(file, out);
                        out.closeEntry();
                    }
                }
            }
        }
        return String.join(java.io.File.pathSeparator, entries);
    }

    /**
     * The consumer: {@code read JSON} reads the readable into a buffer it keeps ("READ ok" or "READ failed" and the
     * messages), {@code hog} opens /dev/null until no descriptor is left ("HOGGED n"), {@code release} closes them.
     */
    public static void main(String[] args) throws Exception {
        PrintStream out = new PrintStream(System.out, true, StandardCharsets.UTF_8);
        List<FileInputStream> hogged = new ArrayList<>();
        try (Connector connector = new Connector(ConnectorOptions.builder().workerId("fd-consumer")
                .transports(NixlSettings.defaults().withLibraryDir(Path.of(LIBRARY_DIR)))
                .operationTimeout(Duration.ofSeconds(60)).build());
             Descriptor target = Descriptor.allocate(4096);
             BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8))) {
            out.println("READY");
            String line;
            while ((line = in.readLine()) != null) {
                if (line.startsWith("read ")) {
                    try {
                        connector.read(RdmaMetadata.fromJson(line.substring(5)), target);
                        out.println("READ ok");
                    } catch (RuntimeException e) {
                        StringBuilder messages = new StringBuilder("READ failed");
                        for (Throwable cause = e; cause != null; cause = cause.getCause()) {
                            messages.append(" | ").append(String.valueOf(cause.getMessage()).replace('\n', ' '));
                        }
                        out.println(messages);
                    }
                } else if (line.equals("hog")) {
                    try {
                        while (true) {
                            hogged.add(new FileInputStream("/dev/null"));
                        }
                    } catch (IOException e) {
                        out.println("HOGGED " + hogged.size());
                    }
                } else if (line.equals("release")) {
                    for (FileInputStream stream : hogged) {
                        stream.close();
                    }
                    hogged.clear();
                    out.println("RELEASED");
                } else if (line.equals("exit")) {
                    return;
                }
            }
        }
    }
}
