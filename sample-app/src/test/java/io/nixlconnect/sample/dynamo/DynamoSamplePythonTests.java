package io.nixlconnect.sample.dynamo;

import static org.assertj.core.api.Assertions.assertThat;

import io.nixlconnect.dynamo.ClosedAfterEach;
import io.nixlconnect.dynamo.EtcdServer;
import io.nixlconnect.dynamo.PythonProcess;
import io.nixlconnect.dynamo.RequiredEnvironment;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;
import org.springframework.boot.test.system.CapturedOutput;
import org.springframework.boot.test.system.OutputCaptureExtension;

/**
 * The sample's Dynamo modes against the real {@code ai-dynamo-runtime} 1.6.1 on the NIXL backend, with file and etcd
 * discovery: {@code --sample.dynamo.call} reads the tensors of {@code interop/dynamo_worker.py --mode encode} (shaped
 * like Dynamo's TRT-LLM encode worker), and {@code interop/dynamo_client.py --read} reads those of
 * {@code --sample.dynamo.serve}, the hashes printed on both sides matching. Skipped with the reason without the
 * runtime, NIXL or etcd (.ci/ sets them up); an error under CI=true. The Python side is judged by what it printed
 * (the upstream runtime can crash at exit where rdma-core is installed).
 */
@Tag("python-interop")
@ExtendWith(OutputCaptureExtension.class)
@Timeout(value = 300, unit = TimeUnit.SECONDS)
class DynamoSamplePythonTests {

    private static final Duration START = Duration.ofSeconds(120);
    private static final int BYTES = 1 << 20;

    @TempDir
    Path dir;

    @RegisterExtension
    final ClosedAfterEach closed = new ClosedAfterEach();
    private final List<String> pythonDiscovery = new ArrayList<>();
    private final List<String> javaEnvironment = new ArrayList<>();

    /** Both sides in one Dynamo deployment: the Python options and the Java side's DYN_* variables. */
    private void discovery(String backend) throws Exception {
        RequiredEnvironment.require("NIXL_LIBRARY_DIR", "the Java side reads and serves through NIXL (.ci/nixl-setup.sh)");
        RequiredEnvironment.require("NIXL_PYTHON_PATH", "Python's nixl_connect needs NIXL's Python package (.ci/nixl-setup.sh)");
        javaEnvironment.addAll(List.of("--DYN_DISCOVERY_BACKEND=" + backend, "--DYN_TCP_RPC_HOST=127.0.0.1",
                "--nixl.connect.backend=nixl", "--sample.dynamo.timeout=120s"));
        if (backend.equals("file")) {
            Path kv = dir.resolve("kv");
            pythonDiscovery.addAll(List.of("--discovery", "file", "--file-kv", kv.toString()));
            javaEnvironment.add("--DYN_FILE_KV=" + kv);
        } else {
            EtcdServer etcd = closed.later(new EtcdServer(dir.resolve("etcd")));
            pythonDiscovery.addAll(List.of("--discovery", "etcd", "--etcd-endpoints", etcd.endpoint.toString()));
            javaEnvironment.add("--ETCD_ENDPOINTS=" + etcd.endpoint);
        }
    }

    private PythonProcess python(String name, String script, String... args) throws Exception {
        List<String> all = new ArrayList<>(List.of(args));
        all.addAll(pythonDiscovery);
        all.addAll(List.of("--host", "127.0.0.1"));
        return closed.later(PythonProcess.start(name, script, Map.of(), all));
    }

    @ParameterizedTest(name = "{0} discovery")
    @ValueSource(strings = {"file", "etcd"})
    void theSampleCallReadsAPythonEncodeWorkersTensors(String backend, CapturedOutput output) throws Exception {
        discovery(backend);
        PythonProcess worker = python("encode worker", "dynamo_worker.py", "--endpoint", "sample.pyencoder.generate",
                "--mode", "encode", "--bytes", String.valueOf(BYTES), "--requests", "2");
        String ready = worker.await("READY", START);

        int exit = SampleRuns.run(SampleRuns.args(javaEnvironment, "--sample.dynamo.call=sample.pyencoder.generate",
                "--sample.dynamo.requests=2"));

        String out = output.getOut();
        assertThat(exit).as(out + worker.output()).isZero();
        assertThat(out.lines()).contains("result: OK");
        List<String> served = List.of(PythonProcess.field(worker.await("SERVED", START), "sha256"),
                PythonProcess.field(worker.await("SERVED", START), "sha256"));
        assertThat(SampleRuns.all(SampleRuns.READ, out, 4)).containsExactlyElementsOf(served);
        assertThat(SampleRuns.all(SampleRuns.READ, out, 1)).containsOnly(String.valueOf(BYTES));
        assertThat(SampleRuns.all(SampleRuns.READ, out, 2)).containsOnly("sample.pyencoder.generate");
        assertThat(SampleRuns.all(SampleRuns.READ, out, 3)).containsOnly(PythonProcess.field(ready, "instance"));
        worker.await("DONE", START);
    }

    @ParameterizedTest(name = "{0} discovery")
    @ValueSource(strings = {"file", "etcd"})
    void aPythonClientReadsTheSampleWorkersTensors(String backend, CapturedOutput output) throws Exception {
        discovery(backend);
        CompletableFuture<Integer> serve = CompletableFuture.supplyAsync(() -> SampleRuns.run(SampleRuns.args(
                javaEnvironment, "--sample.dynamo.serve=sample.javaencoder.generate", "--sample.dynamo.bytes=" + BYTES,
                "--sample.dynamo.requests=2")));
        PythonProcess client = python("client", "dynamo_client.py", "--endpoint", "sample.javaencoder.generate",
                "--requests", "2", "--read", "--wait-timeout", "120", "--timeout", "120");

        String summary = client.await("SUMMARY", START);
        assertThat(PythonProcess.field(summary, "ok")).as(client.output()).isEqualTo("2");
        assertThat(serve.get(120, TimeUnit.SECONDS)).as(output.getOut()).isZero();
        List<String> read = client.all("READ").stream().map(line -> PythonProcess.field(line, "sha256")).toList();
        assertThat(client.all("READ")).allSatisfy(line -> assertThat(PythonProcess.field(line, "bytes"))
                .isEqualTo(String.valueOf(BYTES)));
        assertThat(SampleRuns.all(SampleRuns.SERVED, output.getOut(), 2)).hasSize(2).containsExactlyInAnyOrderElementsOf(read);
        assertThat(output.getOut().lines()).contains("result: OK");
    }
}
