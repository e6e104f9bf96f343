package io.nixlconnect.sample.dynamo;

import static org.assertj.core.api.Assertions.fail;

import java.io.BufferedReader;
import java.io.File;
import java.io.IOException;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;

/**
 * {@code interop/dynamo_worker.py} or {@code interop/dynamo_client.py} on the real Dynamo runtime, judged by the
 * key=value lines it prints (the upstream runtime can crash at exit where rdma-core is installed, so exit codes say
 * little). Ended by its own PID.
 */
final class PythonProcess implements AutoCloseable {

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

    static PythonProcess start(String name, String scriptFile, List<String> args) throws IOException {
        String runtime = RequiredEnvironment.require("DYNAMO_RUNTIME_PATH",
                "the sample's Dynamo interop tests need the real ai-dynamo-runtime 1.6.1 (.ci/dynamo-setup.sh)");
        String nixl = RequiredEnvironment.require("NIXL_PYTHON_PATH",
                "Python's nixl_connect needs NIXL's Python package (.ci/nixl-setup.sh)");
        String python = System.getenv("DYNAMO_RUNTIME_PYTHON");
        List<String> command = new ArrayList<>();
        command.add(python == null || python.isBlank() ? "python3" : python);
        command.add("-u");
        command.add(script(scriptFile).toString());
        command.addAll(args);
        ProcessBuilder builder = new ProcessBuilder(command).redirectErrorStream(true);
        builder.environment().put("PYTHONPATH", nixl + File.pathSeparator + runtime);
        builder.environment().put("CUDA_VISIBLE_DEVICES", "");
        builder.environment().put("DYN_LOG", "error");
        return new PythonProcess(name, builder.start());
    }

    static Path script(String file) {
        for (Path dir = Path.of("").toAbsolutePath(); dir != null; dir = dir.getParent()) {
            Path candidate = dir.resolve("interop").resolve(file);
            if (Files.isRegularFile(candidate)) {
                return candidate;
            }
        }
        throw new IllegalStateException("interop/" + file + " not found above " + Path.of("").toAbsolutePath());
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
    synchronized String await(String prefix, Duration timeout) throws InterruptedException {
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
            wait(Math.max(1, Math.min(left / 1_000_000, 200)));
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
    synchronized List<String> all(String prefix) {
        return lines.stream().filter(line -> line.startsWith(prefix + " ")).toList();
    }

    synchronized String output() {
        return output.toString();
    }

    /** A {@code key=value} field of a line. */
    static String field(String line, String key) {
        int at = line.indexOf(" " + key + "=");
        if (at < 0) {
            throw new AssertionError("no " + key + "= in: " + line);
        }
        int start = at + key.length() + 2;
        int end = line.indexOf(' ', start);
        return end < 0 ? line.substring(start) : line.substring(start, end);
    }

    @Override
    public void close() throws InterruptedException {
        if (process.isAlive()) {
            process.destroy();
            if (!process.waitFor(10, TimeUnit.SECONDS)) {
                process.destroyForcibly();
                process.waitFor(10, TimeUnit.SECONDS);
            }
        }
    }
}
