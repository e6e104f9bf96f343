package io.nixlconnect.dynamo;

import static org.assertj.core.api.Assertions.fail;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;

/**
 * A Python worker or client on the real Dynamo runtime ({@code interop/dynamo_worker.py},
 * {@code interop/dynamo_client.py}), judged by the key=value lines it prints (the upstream runtime can crash at exit
 * where rdma-core is installed, so exit codes say little). Ended by its own PID. Public, in this module's test jar, for
 * the sample app's Dynamo tests too.
 */
public final class PythonProcess implements AutoCloseable {

    private final String name;
    private final Process process;
    private final List<String> lines = new ArrayList<>();
    private final StringBuilder output = new StringBuilder();
    private int consumed;

    private PythonProcess(String name, Process process) {
        this.name = name;
        this.process = process;
        Thread reader = new Thread(this::read, "python-" + name);
        reader.setDaemon(true);
        reader.start();
    }

    /** What the Python side needs: the runtime's path and python, and NIXL's for nixl_connect reads. */
    public static Map<String, String> environment() {
        String runtime = RequiredEnvironment.require("DYNAMO_RUNTIME_PATH",
                "the Dynamo interop tests need the real ai-dynamo-runtime 1.6.1 (.ci/dynamo-setup.sh)");
        String nixl = System.getenv("NIXL_PYTHON_PATH");
        Map<String, String> env = new LinkedHashMap<>();
        env.put("PYTHONPATH", (nixl == null || nixl.isBlank() ? "" : nixl + java.io.File.pathSeparator) + runtime);
        env.put("CUDA_VISIBLE_DEVICES", "");
        env.put("DYN_LOG", "error");
        return env;
    }

    public static String python() {
        String python = System.getenv("DYNAMO_RUNTIME_PYTHON");
        return python == null || python.isBlank() ? "python3" : python;
    }

    public static Path script(String file) {
        for (Path dir = Path.of("").toAbsolutePath(); dir != null; dir = dir.getParent()) {
            Path candidate = dir.resolve("interop").resolve(file);
            if (Files.isRegularFile(candidate)) {
                return candidate;
            }
        }
        throw new IllegalStateException("interop/" + file + " not found above " + Path.of("").toAbsolutePath());
    }

    public static PythonProcess start(String name, String scriptFile, Map<String, String> extraEnv,
            List<String> args)
            throws IOException {
        List<String> command = new ArrayList<>();
        command.add(python());
        command.add("-u");
        command.add(script(scriptFile).toString());
        command.addAll(args);
        ProcessBuilder builder = new ProcessBuilder(command).redirectErrorStream(true);
        builder.environment().putAll(environment());
        builder.environment().putAll(extraEnv);
        return new PythonProcess(name, builder.start());
    }

    private void read() {
        try (BufferedReader reader = new BufferedReader(new InputStreamReader(process.getInputStream(),
                StandardCharsets.UTF_8))) {
            for (String line; (line = reader.readLine()) != null; ) {
                synchronized (this) {
                    output.append(line).append('\n');
                    if (!line.isEmpty() && Character.isUpperCase(line.charAt(0))) {
                        lines.add(line);
                    }
                    notifyAll();
                }
            }
        } catch (IOException e) {
            // the process ended
        }
        synchronized (this) {
            notifyAll();
        }
    }

    /** The next line (after those already taken) starting with {@code prefix}; fails after {@code timeout}. */
    public synchronized String await(String prefix, Duration timeout) {
        long deadline = System.nanoTime() + timeout.toNanos();
        while (true) {
            for (int i = consumed; i < lines.size(); i++) {
                if (lines.get(i).startsWith(prefix + " ") || lines.get(i).equals(prefix)) {
                    consumed = i + 1;
                    return lines.get(i);
                }
            }
            long left = deadline - System.nanoTime();
            if (left <= 0 || !process.isAlive() && !hasMore()) {
                fail(name + " printed no " + prefix + " line within " + timeout.toSeconds() + " s; it printed:\n"
                        + output);
            }
            try {
                wait(Math.max(1, Math.min(left / 1_000_000, 200)));
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                fail("interrupted");
            }
        }
    }

    private boolean hasMore() {
        try {
            return process.getInputStream().available() > 0;
        } catch (IOException e) {
            return false;
        }
    }

    /** Every line starting with {@code prefix} so far. */
    public synchronized List<String> all(String prefix) {
        List<String> matching = new ArrayList<>();
        for (String line : lines) {
            if (line.startsWith(prefix + " ")) {
                matching.add(line);
            }
        }
        return matching;
    }

    public synchronized String output() {
        return output.toString();
    }

    /** Waits for the process to end by itself (a client that made its calls). */
    public void awaitExit(Duration timeout) throws InterruptedException {
        if (!process.waitFor(timeout.toMillis(), TimeUnit.MILLISECONDS)) {
            fail(name + " did not end within " + timeout.toSeconds() + " s; it printed:\n" + output());
        }
    }

    public long pid() {
        return process.pid();
    }

    /** The process ends at once, as a SIGKILL ends it. */
    public void kill() {
        process.destroyForcibly();
    }

    /** SIGTERM: a worker leaves discovery and exits. */
    public void terminate() {
        process.destroy();
    }

    /** A {@code key=value} field of a line; {@code message} takes the rest of the line. */
    public static String field(String line, String key) {
        int at = line.indexOf(" " + key + "=");
        if (at < 0) {
            throw new AssertionError("no " + key + "= in: " + line);
        }
        int start = at + key.length() + 2;
        if (key.equals("message")) {
            return line.substring(start);
        }
        int end = line.indexOf(' ', start);
        return end < 0 ? line.substring(start) : line.substring(start, end);
    }

    @Override
    public void close() {
        if (process.isAlive()) {
            process.destroy();
            try {
                if (!process.waitFor(10, TimeUnit.SECONDS)) {
                    process.destroyForcibly();
                    process.waitFor(10, TimeUnit.SECONDS);
                }
            } catch (InterruptedException e) {
                process.destroyForcibly();
                Thread.currentThread().interrupt();
            }
        }
    }
}
