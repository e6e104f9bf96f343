package io.nixlconnect;

import static org.assertj.core.api.Assertions.assertThat;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** Child JVMs that load JNA start without Java 24+'s restricted-method warning, and the flag is accepted on 17. */
class ChildJvmTest {

    private static final String WARNING = "restricted method";

    @TempDir
    Path dir;

    /** Loads JNA's native part (what every NIXL child does first), then exits. */
    public static void main(String[] args) {
        System.out.println("pointer size " + com.sun.jna.Native.POINTER_SIZE);
    }

    @Test
    void theNativeAccessFlagIsAcceptedByThisJvm() throws Exception {
        Run run = run(ChildJvm.command());
        assertThat(run.exitCode()).as(run.output()).isZero();
        assertThat(run.output()).contains("pointer size 8");
    }

    @Test
    void aChildLoadingJnaPrintsNoRestrictedMethodWarningOnJava24AndLater() throws Exception {
        assumeTrue(Runtime.version().feature() >= 24,
                "Java " + Runtime.version().feature() + " prints no restricted-method warning (Java 24+ does)");
        List<String> bare = new ArrayList<>(ChildJvm.command());
        bare.remove(ChildJvm.NATIVE_ACCESS);
        Run without = run(bare);
        assertThat(without.output()).as("the warning this test looks for, without the flag").contains(WARNING);

        Run with = run(ChildJvm.command());
        assertThat(with.exitCode()).as(with.output()).isZero();
        assertThat(with.output()).contains("pointer size 8").doesNotContain(WARNING);
    }

    private record Run(int exitCode, String output) {
    }

    private Run run(List<String> javaCommand) throws Exception {
        List<String> command = new ArrayList<>(javaCommand);
        command.addAll(List.of("-Xmx64m", "-cp", System.getProperty("java.class.path"), ChildJvmTest.class.getName()));
        Path output = Files.createTempFile(dir, "child", ".txt");
        Process child = new ProcessBuilder(command).redirectErrorStream(true).redirectOutput(output.toFile()).start();
        if (!child.waitFor(120, TimeUnit.SECONDS)) {
            child.destroyForcibly().waitFor();
            throw new AssertionError("the child JVM did not exit within 120 s: " + command);
        }
        return new Run(child.exitValue(), Files.readString(output, StandardCharsets.UTF_8));
    }
}
