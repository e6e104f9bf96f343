package io.nixlconnect.autoconfigure;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.net.InetAddress;
import java.net.ServerSocket;
import org.junit.jupiter.api.Test;
import org.springframework.boot.autoconfigure.AutoConfigurations;
import org.springframework.boot.diagnostics.FailureAnalysis;
import org.springframework.boot.SpringApplication;
import org.springframework.boot.WebApplicationType;
import org.springframework.boot.autoconfigure.ImportAutoConfiguration;
import org.springframework.boot.test.system.CapturedOutput;
import org.springframework.boot.test.system.OutputCaptureExtension;
import org.springframework.context.annotation.Configuration;
import org.springframework.util.unit.DataSize;
import java.time.Duration;
import org.junit.jupiter.api.extension.ExtendWith;
import org.springframework.boot.test.context.runner.ApplicationContextRunner;

@ExtendWith(OutputCaptureExtension.class)
class NixlConnectFailureAnalysisTests {

    private final ApplicationContextRunner runner = new ApplicationContextRunner()
            .withConfiguration(AutoConfigurations.of(NixlConnectAutoConfiguration.class));

    @Test
    void invalidPortIsReportedWithItsFix() {
        runner.withPropertyValues("nixl.connect.embedded.port=70000").run(context -> {
            assertThat(context).hasFailed();
            FailureAnalysis analysis = analyze(context.getStartupFailure());
            assertThat(analysis.getDescription()).contains("nixl.connect.embedded.port = 70000: must be between 0 and 65535");
            assertThat(analysis.getAction()).contains("nixl.connect.embedded.port: Set 0 to pick a free port");
        });
    }

    @Test
    void backendKnobsAndTheBackendNameAreValidatedToo() {
        runner.withPropertyValues("nixl.connect.backend=rdma", "nixl.connect.embedded.max-connections-per-peer=0",
                "nixl.connect.nixl.progress-thread-delay=-1ms").run(context -> {
            assertThat(context).hasFailed();
            InvalidNixlConnectPropertiesException invalid = findCause(context.getStartupFailure(),
                    InvalidNixlConnectPropertiesException.class);
            assertThat(invalid.violations()).extracting(InvalidNixlConnectPropertiesException.Violation::property)
                    .containsExactly("nixl.connect.backend", "nixl.connect.embedded.max-connections-per-peer",
                            "nixl.connect.nixl.progress-thread-delay");
            assertThat(analyze(context.getStartupFailure()).getDescription())
                    .contains("nixl.connect.backend = rdma: must be one of [auto, nixl, embedded]");
        });
    }

    @Test
    void everyInvalidPropertyIsReportedAtOnce() {
        runner.withPropertyValues("nixl.connect.operation-timeout=0s", "nixl.connect.passive-timeout=-1s",
                "nixl.connect.limits.max-in-flight-operations=0", "nixl.connect.limits.max-metadata-size=128MB",
                "nixl.connect.embedded.bind-address= ", "nixl.connect.nixl.backends=",
                "nixl.connect.cuda.device-id=-1", "nixl.connect.shutdown.grace-period=-5s").run(context -> {
            assertThat(context).hasFailed();
            InvalidNixlConnectPropertiesException invalid = findCause(context.getStartupFailure(),
                    InvalidNixlConnectPropertiesException.class);
            assertThat(invalid.violations()).extracting(InvalidNixlConnectPropertiesException.Violation::property)
                    .containsExactly("nixl.connect.operation-timeout", "nixl.connect.passive-timeout",
                            "nixl.connect.embedded.bind-address", "nixl.connect.limits.max-in-flight-operations",
                            "nixl.connect.limits.max-metadata-size", "nixl.connect.nixl.backends",
                            "nixl.connect.cuda.device-id", "nixl.connect.shutdown.grace-period");
            assertThat(analyze(context.getStartupFailure()).getDescription())
                    .contains("nixl.connect.limits.max-metadata-size = 128MB: must be between 1KB and 64MB");
        });
    }

    @Test
    void nixlBackendRequestedButUnavailableIsExplained() {
        runner.withPropertyValues("nixl.connect.backend=nixl", "nixl.connect.nixl.library-path=/nowhere").run(context -> {
            assertThat(context).hasFailed();
            FailureAnalysis analysis = analyze(context.getStartupFailure());
            assertThat(analysis.getDescription())
                    .startsWith("The NIXL transport was requested (nixl.connect.backend=nixl) but is not available")
                    .contains("Library path: /nowhere");
            assertThat(analysis.getAction()).contains("nixl.connect.nixl.library-path")
                    .contains("nixl.connect.backend=auto");
        });
    }

    @Test
    void embeddedPortInUseIsExplained() throws Exception {
        try (ServerSocket taken = new ServerSocket(0, 1, InetAddress.getLoopbackAddress())) {
            runner.withPropertyValues("nixl.connect.backend=embedded", "nixl.connect.embedded.port=" + taken.getLocalPort())
                    .run(context -> {
                assertThat(context).hasFailed();
                FailureAnalysis analysis = analyze(context.getStartupFailure());
                assertThat(analysis.getDescription()).startsWith(
                        "The nixl-connect embedded transport could not start on 127.0.0.1:" + taken.getLocalPort());
                assertThat(analysis.getAction()).contains("nixl.connect.embedded.port=0");
            });
        }
    }

    @Test
    void otherFailuresAreLeftToOtherAnalyzers() {
        assertThat(new NixlConnectFailureAnalyzer().analyze(new IllegalStateException("NIXL unrelated"))).isNull();
    }

    @Test
    void springApplicationPrintsTheReport(CapturedOutput output) {
        SpringApplication application = new SpringApplication(NixlOnly.class);
        application.setWebApplicationType(WebApplicationType.NONE);
        assertThatThrownBy(() -> application.run("--nixl.connect.embedded.port=-1", "--spring.main.banner-mode=off"))
                .isInstanceOf(Exception.class);
        assertThat(output).contains("APPLICATION FAILED TO START")
                .contains("Invalid nixl-connect configuration:\n  - nixl.connect.embedded.port = -1: must be between 0 and 65535")
                .contains("nixl.connect.embedded.port: Set 0 to pick a free port");
    }

    @Test
    void formatsValuesAsPropertiesWriteThem() {
        assertThat(NixlConnectFailureAnalyzer.format(Duration.ofSeconds(-5))).isEqualTo("-5s");
        assertThat(NixlConnectFailureAnalyzer.format(Duration.ofMillis(1500))).isEqualTo("1500ms");
        assertThat(NixlConnectFailureAnalyzer.format(DataSize.ofMegabytes(128))).isEqualTo("128MB");
        assertThat(NixlConnectFailureAnalyzer.format(DataSize.ofBytes(512))).isEqualTo("512B");
        assertThat(NixlConnectFailureAnalyzer.format(null)).isEqualTo("null");
    }

    @Configuration(proxyBeanMethods = false)
    @ImportAutoConfiguration(NixlConnectAutoConfiguration.class)
    static class NixlOnly {
    }

    private static FailureAnalysis analyze(Throwable failure) {
        FailureAnalysis analysis = new NixlConnectFailureAnalyzer().analyze(failure);
        assertThat(analysis).as("analysis of %s", failure).isNotNull();
        return analysis;
    }

    private static <E extends Throwable> E findCause(Throwable failure, Class<E> type) {
        for (Throwable t = failure; t != null; t = t.getCause()) {
            if (type.isInstance(t)) {
                return type.cast(t);
            }
        }
        throw new AssertionError("No " + type.getSimpleName() + " in " + failure);
    }
}
