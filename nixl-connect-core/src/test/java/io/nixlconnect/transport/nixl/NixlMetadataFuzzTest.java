package io.nixlconnect.transport.nixl;

import static org.assertj.core.api.Assertions.assertThat;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import io.nixlconnect.ChildJvm;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * Issue 12 item 2: thousands of mutations of a real NIXL agent metadata blob, each either refused in
 * Java or handed to the real NIXL, in a child JVM so that a crash fails this test instead of killing
 * the test run. Two campaigns: {@code fuzz} edits anything (framing, lengths, counts, values, bytes);
 * {@code opaque} edits only the UCX worker address and remote keys, each mutation under a new agent name so
 * that UCX creates an endpoint and unpacks the keys every time (before {@link UcxPackedFormats}, every such
 * campaign crashed within its first 55 mutations), and reads 64 bytes through each peer it loaded. Bounded
 * by {@code -Dnixl.fuzz.mutations} (default 20,000, opaque 10,000) and {@code -Dnixl.fuzz.seconds} (default
 * 90) each; {@code -Dnixl.fuzz.seed} repeats a campaign.
 * docs/nixl.md has the longer local run.
 */
@Tag("fuzz")
@Timeout(value = 300, unit = TimeUnit.SECONDS)
class NixlMetadataFuzzTest {

    @ParameterizedTest
    @ValueSource(strings = {"fuzz", "opaque"})
    void mutatedAgentMetadataNeverCrashesTheLoadingProcess(String campaign, @TempDir Path dir) throws Exception {
        String library = System.getenv("NIXL_LIBRARY_DIR");
        assumeTrue(library != null && !library.isBlank(),
                "NIXL_LIBRARY_DIR is not set: run `eval \"$(.ci/nixl-setup.sh)\"` to fuzz against a real NIXL");
        // The opaque campaign also reads through every peer it loads: half the count keeps CI near 30 s for it.
        int mutations = Integer.getInteger("nixl.fuzz.mutations", campaign.equals("opaque") ? 10_000 : 20_000);
        int seconds = Integer.getInteger("nixl.fuzz.seconds", 90);
        long seed = Long.getLong("nixl.fuzz.seed", System.currentTimeMillis());
        Path stdout = dir.resolve("fuzz.out");
        Path stderr = dir.resolve("fuzz.err");
        Process child = new ProcessBuilder(ChildJvm.command("-Xmx256m", "-XX:ErrorFile=" + dir.resolve("hs_err_%p.log"),
                "-cp", System.getProperty("java.class.path"), NixlMetadataFuzz.class.getName(), campaign,
                Long.toString(seed), Integer.toString(mutations), Integer.toString(seconds)))
                .redirectOutput(stdout.toFile()).redirectError(stderr.toFile()).start();
        boolean exited = child.waitFor(seconds + 120L, TimeUnit.SECONDS);
        if (!exited) {
            child.destroyForcibly().waitFor();
        }
        List<String> lines = Files.readAllLines(stdout, StandardCharsets.ISO_8859_1); // UCX may log a mutated peer name
        String last = lines.isEmpty() ? "(none)" : lines.get(lines.size() - 1);
        String errors = tail(stderr, 30);
        assertThat(exited).as("fuzz child finished (seed %d, last line %s)", seed, last).isTrue();
        assertThat(child.exitValue()).as("fuzz child exit status; seed %d, last line %s (the mutation that crashed"
                + " NIXL: rerun with -Dnixl.fuzz.seed=%d); stderr:%n%s", seed, last, seed, errors).isZero();
        assertThat(last).startsWith("SUMMARY ");
        String[] summary = last.split(" ");
        int total = Integer.parseInt(summary[1]);
        String transfers = lines.stream().filter(line -> line.startsWith("TRANSFERS ")).findFirst().orElse("");
        System.out.printf("NIXL metadata %s campaign, seed %d: %s mutations, %s refused in Java, %s refused by NIXL,"
                + " %s loaded, 0 crashes %s%n", campaign, seed, summary[1], summary[2], summary[3], summary[4], transfers);
        assertThat(total).as("mutations tried").isGreaterThanOrEqualTo(Math.min(mutations, 1000));
        assertThat(Integer.parseInt(summary[2])).as("refused in Java").isPositive();
    }

    private static String tail(Path file, int count) throws Exception {
        List<String> lines = Files.readAllLines(file, StandardCharsets.ISO_8859_1);
        return String.join("\n", lines.subList(Math.max(0, lines.size() - count), lines.size()));
    }
}
