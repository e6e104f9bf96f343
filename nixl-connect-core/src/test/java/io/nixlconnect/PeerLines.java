package io.nixlconnect;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;

/**
 * A peer process driven line by line: commands go to its stdin, its stdout lines are queued for
 * {@link #next}. Used by the cross-process, two-host and Python interop tests.
 */
final class PeerLines implements AutoCloseable {

    private final Process process;
    private final PrintStream input;
    private final BlockingQueue<String> output = new LinkedBlockingQueue<>();
    private final String name;

    private PeerLines(Process process, String name) {
        this.process = process;
        this.name = name;
        this.input = new PrintStream(process.getOutputStream(), true, StandardCharsets.UTF_8);
        Thread reader = new Thread(() -> {
            try (BufferedReader in = new BufferedReader(new InputStreamReader(process.getInputStream(), StandardCharsets.UTF_8))) {
                String line;
                while ((line = in.readLine()) != null) {
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

    void send(String command) {
        input.println(command);
    }

    /** Sends {@code command} and returns the next line starting with {@code prefix}. */
    String sendAndNext(String command, String prefix) throws InterruptedException {
        send(command);
        return next(prefix);
    }

    /** The next line starting with {@code prefix} (earlier lines are skipped); fails after 60 s or on an ERROR line. */
    String next(String prefix) throws InterruptedException {
        while (true) {
            String line = output.poll(60, TimeUnit.SECONDS);
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
                assertThat(process.waitFor(30, TimeUnit.SECONDS)).as("%s ended after it was killed", name).isTrue();
            }
        }
    }
}
