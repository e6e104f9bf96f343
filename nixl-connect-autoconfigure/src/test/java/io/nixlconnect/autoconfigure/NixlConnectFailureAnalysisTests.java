package io.nixlconnect.autoconfigure;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.nixlconnect.transport.embedded.EmbeddedSettings;
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
import org.springframework.boot.context.properties.bind.validation.BindValidationException;
import org.springframework.validation.FieldError;
import org.junit.jupiter.api.extension.ExtendWith;
import org.springframework.boot.test.context.runner.ApplicationContextRunner;

@ExtendWith(OutputCaptureExtension.class)
class NixlConnectFailureAnalysisTests {

    private final ApplicationContextRunner runner = new ApplicationContextRunner()
            .withConfiguration(AutoConfigurations.of(NixlConnectAutoConfiguration.class));

    @Test
    void invalidValuesFailBindingThroughBootsValidation() {
        runner.withPropertyValues("nixl.connect.embedded.port=70000").run(context -> {
            assertThat(context).hasFailed();
            BindValidationException invalid = findCause(context.getStartupFailure(), BindValidationException.class);
            assertThat(invalid.getValidationErrors().getAllErrors()).singleElement()
                    .satisfies(error -> assertThat(property(error)).isEqualTo("nixl.connect.embedded.port"))
                    .satisfies(error -> assertThat(error.getDefaultMessage()).isEqualTo(
                            "must be between 0 and 65535; 0 picks a free port (the default)"));
        });
    }

    @Test
    void backendKnobsAndTheBackendNameAreValidatedToo() {
        assertThat(rejected("nixl.connect.backend=rdma")).containsExactly(
                "nixl.connect.backend: must be one of [auto, nixl, embedded]: auto (NIXL when it loads, else embedded; "
                        + "the default), nixl or embedded");
        assertThat(rejected("nixl.connect.embedded.max-connections-per-peer=0")).singleElement().asString()
                .startsWith("nixl.connect.embedded.maxConnectionsPerPeer: must be at least 1");
        assertThat(rejected("nixl.connect.embedded.tcp-streams=0")).containsExactly(
                "nixl.connect.embedded.tcpStreams: must be between 1 and 16 (connections one large transfer is striped "
                        + "over; 1: one connection), such as " + EmbeddedSettings.DEFAULT_TCP_STREAMS + " (the default)");
        assertThat(rejected("nixl.connect.embedded.tcp-streams=17")).singleElement().asString()
                .startsWith("nixl.connect.embedded.tcpStreams: must be between 1 and 16");
        assertThat(rejected("nixl.connect.embedded.max-ranges-per-request=0")).containsExactly(
                "nixl.connect.embedded.maxRangesPerRequest: must be between 1 and 1048576 (the default)");
        assertThat(rejected("nixl.connect.nixl.progress-thread=true")).singleElement().asString()
                .startsWith("nixl.connect.nixl.progressThread: NIXL's own progress thread is not supported");
        assertThat(rejected("nixl.connect.nixl.progress-thread-delay=-1ms")).singleElement().asString()
                .startsWith("nixl.connect.nixl.progressThreadDelay: must be zero or positive, such as 10ms (the default); "
                        + "to turn NIXL's own progress thread off set nixl.connect.nixl.progress-thread=false");
    }

    /** The properties (as Boot's report names them) and reasons a start-up with these values is refused for. */
    private java.util.List<String> rejected(String... properties) {
        java.util.List<String> errors = new java.util.ArrayList<>();
        runner.withPropertyValues(properties).run(context -> {
            assertThat(context).hasFailed();
            BindValidationException invalid = findCause(context.getStartupFailure(), BindValidationException.class);
            invalid.getValidationErrors().getAllErrors()
                    .forEach(error -> errors.add(property(error) + ": " + error.getDefaultMessage()));
        });
        return errors;
    }

    @Test
    void everyInvalidPropertyOfAGroupIsReportedAtOnce() {
        runner.withPropertyValues("nixl.connect.operation-timeout=0s", "nixl.connect.passive-timeout=-1s",
                "nixl.connect.worker-id= ").run(context -> {
            assertThat(context).hasFailed();
            BindValidationException invalid = findCause(context.getStartupFailure(), BindValidationException.class);
            assertThat(invalid.getValidationErrors().getAllErrors()).extracting(NixlConnectFailureAnalysisTests::property)
                    .containsExactly("nixl.connect.workerId", "nixl.connect.operationTimeout", "nixl.connect.passiveTimeout");
        });
    }

    @Test
    void everyNestedGroupIsValidated() {
        String[][] cases = {
                {"nixl.connect.embedded.bind-address= ", "nixl.connect.embedded.bindAddress"},
                {"nixl.connect.limits.max-in-flight-operations=0", "nixl.connect.limits.maxInFlightOperations"},
                {"nixl.connect.limits.max-metadata-size=128MB", "nixl.connect.limits.maxMetadataSize"},
                {"nixl.connect.nixl.backends=", "nixl.connect.nixl.backends"},
                {"nixl.connect.cuda.device-id=-1", "nixl.connect.cuda.deviceId"},
                {"nixl.connect.shutdown.grace-period=-5s", "nixl.connect.shutdown.gracePeriod"}};
        for (String[] invalidCase : cases) {
            runner.withPropertyValues(invalidCase[0]).run(context -> {
                assertThat(context).as(invalidCase[0]).hasFailed();
                BindValidationException invalid = findCause(context.getStartupFailure(), BindValidationException.class);
                assertThat(invalid.getValidationErrors().getAllErrors()).as(invalidCase[0])
                        .extracting(NixlConnectFailureAnalysisTests::property).containsExactly(invalidCase[1]);
            });
        }
    }

    @Test
    void aBadValueInApplicationYmlIsReportedWithItsOrigin(CapturedOutput output) {
        failToStart("classpath:invalid-config/nixl-invalid.yml");
        assertThat(output).contains("APPLICATION FAILED TO START")
                .contains("Property: nixl.connect.embedded.port")
                .contains("Value: \"70000\"")
                .contains("Origin: class path resource [invalid-config/nixl-invalid.yml] - 5:13")
                .contains("Reason: must be between 0 and 65535; 0 picks a free port (the default)");
    }

    @Test
    void aPropertyIsReportedAsWrittenWithItsValueAsWritten(CapturedOutput output) {
        failToStart("classpath:invalid-config/nixl-negative-timeout.yml");
        assertThat(output).contains("APPLICATION FAILED TO START")
                .contains("Property: nixl.connect.operation-timeout")
                .contains("Value: \"-5s\"")
                .contains("Origin: class path resource [invalid-config/nixl-negative-timeout.yml] - 3:24")
                .contains("Reason: must be positive, such as 30s (the default)")
                .doesNotContain("operationTimeout").doesNotContain("PT-5S");
    }

    @Test
    void nestedPropertiesAreReportedAsWrittenToo() {
        runner.withPropertyValues("nixl.connect.embedded.max-connections-per-peer=0",
                "nixl.connect.embedded.idle-timeout=-1m").run(context -> {
            assertThat(context).hasFailed();
            String description = analyze(context.getStartupFailure()).getDescription();
            assertThat(description).startsWith("Binding to target " + NixlConnectProperties.class.getName() + " failed:")
                    .contains("Property: nixl.connect.embedded.max-connections-per-peer\n    Value: \"0\"")
                    .contains("Property: nixl.connect.embedded.idle-timeout\n    Value: \"-1m\"")
                    .contains("Reason: must be at least 1")
                    .doesNotContain("maxConnectionsPerPeer").doesNotContain("idleTimeout");
        });
    }

    @Test
    void aBlankWorkerIdReadsClearly(CapturedOutput output) {
        failToStart("classpath:invalid-config/nixl-blank-worker-id.yml");
        assertThat(output).contains("Property: nixl.connect.worker-id")
                .contains("Value: \" \"")
                .contains("Origin: class path resource [invalid-config/nixl-blank-worker-id.yml] - 3:16")
                .contains("Reason: must not be blank; remove it to get '<spring.application.name>-<unique suffix>'");
    }

    private static void failToStart(String configLocation) {
        SpringApplication application = new SpringApplication(NixlOnly.class);
        application.setWebApplicationType(WebApplicationType.NONE);
        assertThatThrownBy(() -> application.run("--spring.config.location=" + configLocation,
                "--spring.main.banner-mode=off")).isInstanceOf(Exception.class);
    }

    @Test
    void nixlBackendRequestedButUnavailableIsExplained() {
        runner.withPropertyValues("nixl.connect.backend=nixl", "nixl.connect.nixl.library-path=/nowhere").run(context -> {
            assertThat(context).hasFailed();
            FailureAnalysis analysis = analyze(context.getStartupFailure());
            assertThat(analysis.getDescription())
                    .startsWith("nixl.connect.backend is 'nixl', but NIXL could not be loaded:")
                    .contains("nixl.connect.nixl.library-path: /nowhere")
                    .contains("nixl.connect.nixl.plugin-directory: not set");
            assertThat(analysis.getDescription().lines()).hasSizeLessThanOrEqualTo(5)
                    .allSatisfy(line -> assertThat(line).hasSizeLessThanOrEqualTo(320));
            assertThat(analysis.getAction()).contains("nixl.connect.nixl.library-path")
                    .contains("nixl.connect.backend=auto")
                    // how to install it, for a host that has none
                    .contains("Install NIXL (>= 1.1)").contains("pip install nixl-cu12")
                    .contains("/opt/nvidia/nvda_nixl").contains("NIXL_PREFIX").contains("docs/nixl.md");
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
    void longLoaderMessagesAreSummarised() {
        String jna = "Unable to load library 'nixl_capi': Native library (linux-x86-64/libnixl_capi.so) not found in "
                + "resource path ([file:/a/very/long/path/one.jar, file:/a/very/long/path/two.jar, file:/three.jar])"
                + "\nsecond line";
        assertThat(NixlConnectFailureAnalyzer.summary(jna)).isEqualTo(
                "Unable to load library 'nixl_capi': Native library (linux-x86-64/libnixl_capi.so) not found in "
                        + "resource path ([...])");
        assertThat(NixlConnectFailureAnalyzer.summary("x".repeat(1000))).hasSize(300).endsWith("...");
    }

    @Configuration(proxyBeanMethods = false)
    @ImportAutoConfiguration(NixlConnectAutoConfiguration.class)
    static class NixlOnly {
    }

    /** The property an error is about, as Boot's report names it. */
    private static String property(org.springframework.validation.ObjectError error) {
        return error.getObjectName() + "." + ((FieldError) error).getField();
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
