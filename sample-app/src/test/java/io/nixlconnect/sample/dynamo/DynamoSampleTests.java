package io.nixlconnect.sample.dynamo;

import static org.assertj.core.api.Assertions.assertThat;

import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.api.io.TempDir;
import org.springframework.boot.test.system.CapturedOutput;
import org.springframework.boot.test.system.OutputCaptureExtension;

/**
 * The sample's Dynamo modes against each other: {@code --sample.dynamo.serve} answers {@code --sample.dynamo.call},
 * found through file discovery in a temporary directory (the {@code DYN_*} variables given on the command line, where
 * Spring's environment reads them as it reads the OS environment), on the default backend (NIXL where it loads).
 */
@ExtendWith(OutputCaptureExtension.class)
@Timeout(value = 180, unit = TimeUnit.SECONDS)
class DynamoSampleTests {

    @TempDir
    Path kv;

    private List<String> environment() {
        return List.of("--DYN_DISCOVERY_BACKEND=file", "--DYN_FILE_KV=" + kv, "--DYN_TCP_RPC_HOST=127.0.0.1",
                "--sample.dynamo.timeout=60s");
    }

    @Test
    void javaServeAnswersJavaCallAndBothExitZero(CapturedOutput output) throws Exception {
        CompletableFuture<Integer> serve = CompletableFuture.supplyAsync(() -> SampleRuns.run(SampleRuns.args(
                environment(), "--sample.dynamo.serve=demo.sample.encode", "--sample.dynamo.bytes=1048576",
                "--sample.dynamo.requests=3")));
        int call = SampleRuns.run(SampleRuns.args(environment(), "--sample.dynamo.call=demo.sample.encode",
                "--sample.dynamo.requests=3"));

        assertThat(call).as(output.getOut()).isZero();
        assertThat(serve.get(120, TimeUnit.SECONDS)).as(output.getOut()).isZero();
        String out = output.getOut();
        assertThat(SampleRuns.all(SampleRuns.READ, out, 1)).containsExactly("1048576", "1048576", "1048576");
        assertThat(SampleRuns.all(SampleRuns.READ, out, 2)).containsOnly("demo.sample.encode");
        assertThat(SampleRuns.all(SampleRuns.READ, out, 3)).hasSize(3).containsOnly(
                SampleRuns.all(SampleRuns.READ, out, 3).get(0));
        List<String> read = SampleRuns.all(SampleRuns.READ, out, 4);
        List<String> served = SampleRuns.all(SampleRuns.SERVED, out, 2);
        assertThat(read).hasSize(3).doesNotHaveDuplicates(); // a fresh tensor each time
        assertThat(served).containsExactlyInAnyOrderElementsOf(read);
        assertThat(SampleRuns.all(SampleRuns.SERVED, out, 1)).containsOnly("1048576");
        assertThat(out.lines().filter(line -> line.equals("result: OK"))).hasSize(2);
        assertThat(SampleRuns.discoveryRecords(kv)).as("deregistered on exit").isEmpty();
    }

    @Test
    void aCallWithNoInstanceFailsWithTheReasonAndExitsNonZero(CapturedOutput output) {
        int call = SampleRuns.run(SampleRuns.args(List.of("--DYN_DISCOVERY_BACKEND=file", "--DYN_FILE_KV=" + kv,
                "--DYN_TCP_RPC_HOST=127.0.0.1", "--sample.dynamo.timeout=1s", "--sample.dynamo.call=demo.nobody.here")));
        assertThat(call).isEqualTo(1);
        assertThat(output.getOut()).containsPattern("(?m)^result: FAILED: DynamoInstanceUnavailableException: .*"
                + "demo\\.nobody\\.here");
        assertThat(output.getOut()).doesNotContain("dynamo: read");
    }

    @Test
    void aReplyThatIsNotAnEncodeReplyFailsNamingWhatIsMissing(CapturedOutput output) {
        // A Dynamo worker of another kind: an echo endpoint served by a plain runtime.
        try (var runtime = io.nixlconnect.dynamo.DynamoRuntime.start(io.nixlconnect.dynamo.DynamoSettings.builder()
                .discoveryBackend(io.nixlconnect.dynamo.DiscoveryBackend.FILE).fileKvDirectory(kv).rpcHost("127.0.0.1")
                .responseStreamHost("127.0.0.1").build())) {
            runtime.serve("demo.sample.echo", io.nixlconnect.dynamo.DynamoHandler.unary(request -> request));
            int call = SampleRuns.run(SampleRuns.args(environment(), "--sample.dynamo.call=demo.sample.echo"));
            assertThat(call).isEqualTo(1);
        }
        assertThat(output.getOut()).containsPattern("(?m)^result: FAILED: DynamoProtocolException: .*"
                + "nixl_readable_metadata");
    }
}
