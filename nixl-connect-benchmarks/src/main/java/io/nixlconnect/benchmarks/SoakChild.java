package io.nixlconnect.benchmarks;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.PrintStream;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.function.Consumer;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;

/** A process of the soak (a JVM of {@link NixlSoak} in a role, or the Python consumer), driven line by line. */
final class SoakChild {

    /** Where child JVMs write their crash logs: a crash is a file here. */
    static final Path CRASH_DIR = crashDir();

    final Process process;
    private final PrintStream input;
    private final BlockingQueue<String> lines = new LinkedBlockingQueue<>();
    /** Lines answered out of order (by a request's id) go to their handler instead of {@link #lines}. */
    private final Map<String, Consumer<String>> routes = new ConcurrentHashMap<>();

    private SoakChild(Process process) {
        this.process = process;
        this.input = new PrintStream(process.getOutputStream(), true, StandardCharsets.UTF_8);
        Thread reader = new Thread(() -> {
            try (BufferedReader in = new BufferedReader(new InputStreamReader(process.getInputStream(),
                    StandardCharsets.UTF_8))) {
                String line;
                while ((line = in.readLine()) != null) {
                    Consumer<String> handler = routes.get(line.substring(0, line.indexOf(' ') + 1));
                    if (handler != null) {
                        handler.accept(line);
                    } else {
                        lines.add(line);
                    }
                }
            } catch (IOException ignored) {
                // gone
            }
        }, "soak-child-" + process.pid());
        reader.setDaemon(true);
        reader.start();
    }

    /** A JVM running {@link NixlSoak} in {@code role} ("producer" or "reader"). */
    static SoakChild java(String role) throws IOException {
        // The producer's heap fixed, as the coordinator's (benchmarks/run-soak.sh), but not touched at start: its RSS
        // is reported, not judged, and touching 512 MiB slows every restart on a loaded machine.
        return java(NixlSoak.class, role.equals("producer") ? List.of("-Xms512m", "-Xmx512m") : List.of("-Xmx512m"),
                role);
    }

    /**
     * A JVM running {@code main} with {@code arguments}: this JVM's class path and NIXL library, crash logs into
     * {@link #CRASH_DIR}, and {@code options} (heap size, system properties).
     */
    static SoakChild java(Class<?> main, List<String> options, String... arguments) throws IOException {
        List<String> all = new ArrayList<>(List.of("--enable-native-access=ALL-UNNAMED",
                "-XX:ErrorFile=" + CRASH_DIR.resolve("hs_err_pid%p.log"), "-Dsoak.crashDir=" + CRASH_DIR,
                "-Dnixl.library.path=" + System.getProperty("nixl.library.path", System.getenv("NIXL_LIBRARY_DIR"))));
        all.addAll(options);
        return start(new ProcessBuilder(ChildJvms.command(main, all, arguments)));
    }

    /**
     * {@code interop/dynamo_soak_consumer.py} (system property {@code soak.pythonScript}) on the real
     * dynamo.nixl_connect: NIXL_PYTHON_PATH and DYNAMO_PYTHON_PATH (.ci/nixl-setup.sh, .ci/dynamo-setup.sh).
     */
    static SoakChild python(String... arguments) throws IOException {
        List<String> command = new ArrayList<>(List.of(System.getenv().getOrDefault("NIXL_PYTHON", "python3"), "-u",
                System.getProperty("soak.pythonScript", "interop/dynamo_soak_consumer.py")));
        command.addAll(List.of(arguments));
        ProcessBuilder builder = new ProcessBuilder(command);
        builder.environment().put("PYTHONPATH", required("NIXL_PYTHON_PATH") + java.io.File.pathSeparator
                + required("DYNAMO_PYTHON_PATH"));
        return start(builder);
    }

    /**
     * Stdout is the protocol. UCX logs to stdout unless told otherwise, and a message written between the chunks of a
     * long line (the JVM writes 8 KiB at a time) cut a metadata line in two: UCX's log goes to stderr unless the user
     * chose where.
     */
    private static SoakChild start(ProcessBuilder builder) throws IOException {
        builder.environment().putIfAbsent("UCX_LOG_FILE", "stderr");
        return new SoakChild(builder.redirectError(ProcessBuilder.Redirect.INHERIT).start());
    }

    private static String required(String variable) {
        String value = System.getenv(variable);
        if (value == null || value.isBlank()) {
            throw new IllegalStateException(variable + " is not set: the Python pass needs .ci/nixl-setup.sh and"
                    + " .ci/dynamo-setup.sh (benchmarks/run-soak.sh runs them)");
        }
        return value;
    }

    /**
     * From now on, lines whose first word is {@code word} go to {@code handler} (on the child's reader thread) rather
     * than to {@link #next}: answers to requests in flight side by side, matched by the id they carry.
     */
    void route(String word, Consumer<String> handler) {
        routes.put(word + " ", handler);
    }

    void send(String command) {
        input.println(command);
    }

    String next(String prefix) throws InterruptedException {
        String line = nextOrGone(prefix);
        if (line == null) {
            // A child that died unbidden crashed: its exit status says how (134: SIGABRT, e.g. a UCX assertion).
            throw new IllegalStateException("child " + process.pid() + " gave no '" + prefix + "' line ("
                    + (process.isAlive() ? "alive" : "CRASHED: exited with " + process.exitValue()) + ")");
        }
        return line;
    }

    /**
     * How long a live child may say nothing before it is taken for hung. Generous: it detects hangs, not slowness, and a
     * JVM that starts NIXL on a machine at load 50 (CI beside other work) took over 60 s to say READY.
     */
    static final long SILENCE_LIMIT_SECONDS = 300;

    /** The next line starting with {@code prefix}; null if the child died or said nothing for {@link #SILENCE_LIMIT_SECONDS}. */
    String nextOrGone(String prefix) throws InterruptedException {
        while (true) {
            String line = lines.poll(process.isAlive() ? SILENCE_LIMIT_SECONDS : 1, TimeUnit.SECONDS);
            if (line == null) {
                return null;
            }
            if (line.startsWith(prefix)) {
                return line;
            }
            System.err.println("child " + process.pid() + " said: " + line); // not the protocol: e.g. a UCX message
        }
    }

    /** The words of the child's answer to "stats" (its first word "STATS"). */
    String[] stats() throws InterruptedException {
        send("stats");
        return next("STATS ").split(" ");
    }

    long rssKiB() throws IOException {
        return NixlSoak.rssKiB(Path.of("/proc", Long.toString(process.pid()), "status"));
    }

    void signal(String signal) throws Exception {
        new ProcessBuilder("kill", "-" + signal, Long.toString(process.pid())).inheritIO().start().waitFor();
    }

    void kill() throws InterruptedException {
        process.destroyForcibly().waitFor(30, TimeUnit.SECONDS);
        input.close(); // the pipe to it: the soak counts its own file descriptors
    }

    /** Asks it to exit; null if it did with 0, else what happened (not exiting within 30 s, another exit code). */
    String stop() throws InterruptedException {
        send("exit");
        if (!process.waitFor(30, TimeUnit.SECONDS)) {
            kill();
            return "did not exit within 30 s";
        }
        input.close();
        return process.exitValue() == 0 ? null : "exited with " + process.exitValue();
    }

    private static Path crashDir() {
        try {
            String given = System.getProperty("soak.crashDir"); // children write into their coordinator's
            return given != null ? Path.of(given) : Files.createTempDirectory("nixl-soak-");
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    static long crashLogs() throws IOException {
        try (var files = Files.list(CRASH_DIR)) {
            return files.filter(file -> file.getFileName().toString().startsWith("hs_err")).count();
        }
    }
}
