package io.nixlconnect;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import java.util.jar.JarEntry;
import java.util.jar.JarOutputStream;
import java.util.stream.Stream;

/**
 * A peer process driven line by line: commands go to its stdin, its stdout lines are queued for
 * {@link #next}. Used by the cross-process, two-host and Python interop tests.
 */
final class PeerLines implements AutoCloseable {

    private final Process process;
    private final PrintStream input;
    private final BlockingQueue<String> output = new LinkedBlockingQueue<>();
    private final List<String> seen = java.util.Collections.synchronizedList(new ArrayList<>());
    private final String name;

    private PeerLines(Process process, String name) {
        this.process = process;
        this.name = name;
        this.input = new PrintStream(process.getOutputStream(), true, StandardCharsets.UTF_8);
        Thread reader = new Thread(() -> {
            try (BufferedReader in = new BufferedReader(new InputStreamReader(process.getInputStream(), StandardCharsets.UTF_8))) {
                String line;
                while ((line = in.readLine()) != null) {
                    seen.add(line);
                    output.add(line);
                }
            } catch (IOException ignored) {
                // the peer went away
            }
        }, name + "-stdout");
        reader.setDaemon(true);
        reader.start();
    }

    /** Starts the process (its stderr goes to ours). */
    static PeerLines start(ProcessBuilder builder, String name) throws IOException {
        return new PeerLines(builder.redirectError(ProcessBuilder.Redirect.INHERIT).start(), name);
    }

    /**
     * Starts {@code main(role)} in a child JVM on this test's class path, with UCX over TCP ({@code UCX_TLS=tcp,self}):
     * the two-JVM tests of memory safety, whose crash must fail the test rather than kill the test JVM.
     */
    static PeerLines startJvmOverUcxTcp(Class<?> main, String role, String... args) throws IOException {
        List<String> command = ChildJvm.command("-Xmx256m", "-XX:ErrorFile=/dev/null", "-cp",
                System.getProperty("java.class.path"), main.getName(), role);
        command.addAll(List.of(args));
        ProcessBuilder builder = new ProcessBuilder(command);
        builder.environment().put("UCX_TLS", "tcp,self");
        return start(builder, role);
    }

    /**
     * Starts {@code main} in a child JVM on this test's class path whose process may open at most {@code maxFiles}
     * file descriptors ({@code ulimit -n} in the shell that execs it): the tests of running out of them.
     */
    static PeerLines startJvmWithFileLimit(int maxFiles, Class<?> main, String name, String... jvmOptions)
            throws IOException {
        List<String> command = new ArrayList<>(List.of("sh", "-c", "ulimit -n " + maxFiles + " && exec \"$0\" \"$@\""));
        command.addAll(ChildJvm.command("-Xmx256m"));
        command.addAll(List.of(jvmOptions));
        command.addAll(List.of("-cp", jarredClassPath(), main.getName()));
        return start(new ProcessBuilder(command), name);
    }

    private static String jarredClassPath;

    /**
     * This test's class path with each folder (the module's classes and test classes) packed into a jar, as an
     * application is deployed: a JVM keeps each jar open, so it still loads classes when out of file descriptors,
     * where a class in a folder needs a descriptor of its own to be read.
     */
    private static synchronized String jarredClassPath() throws IOException {
        if (jarredClassPath == null) {
            Path jars = Files.createTempDirectory("peer-class-path");
            List<String> entries = new ArrayList<>();
            int n = 0;
            for (String entry : System.getProperty("java.class.path").split(java.io.File.pathSeparator)) {
                Path path = Path.of(entry);
                if (!Files.isDirectory(path)) {
                    entries.add(entry);
                    continue;
                }
                Path jar = jars.resolve("folder-" + n++ + ".jar");
                try (JarOutputStream out = new JarOutputStream(Files.newOutputStream(jar));
                     Stream<Path> files = Files.walk(path)) {
                    for (Path file : (Iterable<Path>) files.filter(Files::isRegularFile)::iterator) {
                        out.putNextEntry(new JarEntry(path.relativize(file).toString().replace('\\', '/')));
                        Files.copy(file, out);
                        out.closeEntry();
                    }
                }
                jar.toFile().deleteOnExit();
                entries.add(jar.toString());
            }
            jars.toFile().deleteOnExit();
            jarredClassPath = String.join(java.io.File.pathSeparator, entries);
        }
        return jarredClassPath;
    }

    /** The lines the peer printed that no {@link #next} took yet, taken now. */
    List<String> takeLines() {
        List<String> lines = new ArrayList<>();
        output.drainTo(lines);
        return lines;
    }

    void send(String command) {
        input.println(command);
    }

    /** Sends {@code command} and returns the next line starting with {@code prefix}. */
    String sendAndNext(String command, String prefix) throws InterruptedException {
        send(command);
        return next(prefix);
    }

    /**
     * The next line starting with {@code prefix} (earlier lines are skipped); fails on an ERROR line, or after 300 s
     * with no line at all: a hung peer, not a slow one (a NIXL peer JVM starting its agents with UCX's warm-up took
     * over 60 s to say READY at load 50 with busy loops beside CI).
     */
    String next(String prefix) throws InterruptedException {
        while (true) {
            String line = output.poll(300, TimeUnit.SECONDS);
            assertThat(line).as("a '%s' line from %s", prefix, name).isNotNull();
            assertThat(line).as("%s reported an error", name).doesNotStartWith("ERROR");
            if (line.startsWith(prefix)) {
                return line;
            }
        }
    }

    /** The next line starting with {@code prefix} or {@code ERROR} (earlier lines are skipped); fails after 60 s. */
    String nextOrError(String prefix) throws InterruptedException {
        while (true) {
            String line = output.poll(60, TimeUnit.SECONDS);
            assertThat(line).as("a '%s' or ERROR line from %s", prefix, name).isNotNull();
            if (line.startsWith(prefix) || line.startsWith("ERROR")) {
                return line;
            }
        }
    }

    /** Every line the peer has printed so far, in order (those {@link #next} skipped too). */
    List<String> linesSoFar() {
        synchronized (seen) {
            return List.copyOf(seen);
        }
    }

    Process process() {
        return process;
    }

    /**
     * Asks the peer to exit, and kills it if it has not within 10 s; returns once it is gone, so that a peer
     * started next (on the same port, say) never overlaps it: an old peer still serving its pooled connections
     * after its agents closed would refuse every request, exactly as the new one refuses a wrong credential.
     */
    @Override
    public void close() throws InterruptedException {
        if (process.isAlive()) {
            send("exit");
            if (!process.waitFor(10, TimeUnit.SECONDS)) {
                process.destroyForcibly();
                // A killed process ends once the kernel has taken its memory back; on a loaded machine that, and the
                // JVM's reaper noticing, took longer than 30 s once (a module reader, Java 25 pass, load 30).
                assertThat(process.waitFor(180, TimeUnit.SECONDS))
                        .as("%s ended after it was killed (its state: %s)", name, processState()).isTrue();
            }
        }
    }

    private String processState() {
        try {
            return Files.readAllLines(Path.of("/proc", Long.toString(process.pid()),
                    "status")).stream().filter(line -> line.startsWith("State:")).findFirst().orElse("unknown");
        } catch (IOException e) {
            return "gone (" + e.getMessage() + ")";
        }
    }
}
