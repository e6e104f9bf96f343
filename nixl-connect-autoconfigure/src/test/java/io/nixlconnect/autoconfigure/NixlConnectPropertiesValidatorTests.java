package io.nixlconnect.autoconfigure;

import static org.assertj.core.api.Assertions.assertThat;

import io.nixlconnect.ConnectorOptions;
import io.nixlconnect.transport.embedded.EmbeddedSettings;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.springframework.util.unit.DataSize;
import org.springframework.validation.BeanPropertyBindingResult;
import org.springframework.validation.Errors;
import org.springframework.validation.FieldError;

/**
 * The rules of {@link NixlConnectPropertiesValidator} at their bounds, one group at a time, without a Spring context
 * ({@link NixlConnectFailureAnalysisTests} checks that Boot applies them while binding and reports them).
 */
class NixlConnectPropertiesValidatorTests {

    private final NixlConnectPropertiesValidator validator = new NixlConnectPropertiesValidator();

    @Test
    void supportsEachGroupThatHasRulesAndThePropertiesDelegateToIt() {
        assertThat(List.of(NixlConnectProperties.class, NixlConnectProperties.Embedded.class,
                NixlConnectProperties.Limits.class, NixlConnectProperties.Nixl.class, NixlConnectProperties.Cuda.class,
                NixlConnectProperties.Shutdown.class)).allSatisfy(type -> assertThat(validator.supports(type)).isTrue());
        assertThat(validator.supports(NixlConnectProperties.ProblemDetails.class)).isFalse();
        assertThat(validator.supports(NixlConnectProperties.Embedded.Ssl.class)).isFalse();
        assertThat(validator.supports(Object.class)).isFalse();

        // the properties object is the validator Boot finds (a self-validating target) and hands the work here
        NixlConnectProperties properties = new NixlConnectProperties();
        properties.getEmbedded().setPort(-1);
        Errors errors = new BeanPropertyBindingResult(properties.getEmbedded(), "nixl.connect.embedded");
        assertThat(properties.supports(NixlConnectProperties.Embedded.class)).isTrue();
        properties.validate(properties.getEmbedded(), errors);
        assertThat(fields(errors)).containsExactly("port");
    }

    @Test
    void theDefaultsAreValid() {
        NixlConnectProperties properties = new NixlConnectProperties();
        for (Object group : List.of(properties, properties.getEmbedded(), properties.getLimits(), properties.getNixl(),
                properties.getCuda(), properties.getShutdown())) {
            Errors errors = validate(group);
            assertThat(errors.getAllErrors()).as(group.getClass().getSimpleName()).isEmpty();
        }
    }

    @Test
    void workerIdBackendAndTimeouts() {
        NixlConnectProperties properties = new NixlConnectProperties();
        properties.setWorkerId("w".repeat(NixlConnectProperties.MAX_WORKER_ID_LENGTH));
        properties.setBackend(" NIXL "); // bound case-insensitively, as an enum would be
        assertThat(validate(properties).getAllErrors()).isEmpty();

        properties.setWorkerId("w".repeat(NixlConnectProperties.MAX_WORKER_ID_LENGTH + 1));
        properties.setBackend("rdma");
        properties.setOperationTimeout(null);
        properties.setPassiveTimeout(Duration.ZERO);
        Errors errors = validate(properties);
        assertThat(codes(errors)).containsExactly("workerId:tooLong", "backend:unknown", "operationTimeout:notPositive",
                "passiveTimeout:notPositive");
        assertThat(message(errors, "workerId")).isEqualTo("must be at most 1000 characters");

        properties.setWorkerId("\t");
        assertThat(codes(validate(properties))).contains("workerId:blank");
    }

    @Test
    void embeddedPortsStreamsAndRangesAtTheirBounds() {
        NixlConnectProperties.Embedded embedded = new NixlConnectProperties.Embedded();
        embedded.setPort(65535);
        embedded.setTcpStreams(EmbeddedSettings.MAX_TCP_STREAMS);
        embedded.setMaxRangesPerRequest(EmbeddedSettings.MAX_RANGES_PER_REQUEST);
        embedded.setMaxConnectionsPerPeer(1);
        assertThat(validate(embedded).getAllErrors()).isEmpty();
        embedded.setPort(0);
        embedded.setTcpStreams(1);
        embedded.setMaxRangesPerRequest(1);
        assertThat(validate(embedded).getAllErrors()).isEmpty();

        embedded.setPort(65536);
        embedded.setTcpStreams(EmbeddedSettings.MAX_TCP_STREAMS + 1);
        embedded.setMaxRangesPerRequest(EmbeddedSettings.MAX_RANGES_PER_REQUEST + 1);
        embedded.setMaxConnectionsPerPeer(0);
        embedded.setBindAddress("");
        embedded.setIdleTimeout(Duration.ofSeconds(-1));
        embedded.setReadTimeout(null);
        embedded.setPeerIdleTimeout(Duration.ZERO);
        embedded.setMaxCachedPeers(0);
        assertThat(codes(validate(embedded))).containsExactly("bindAddress:blank", "port:outOfRange",
                "maxConnectionsPerPeer:notPositive", "tcpStreams:outOfRange", "idleTimeout:notPositive",
                "readTimeout:notPositive", "maxRangesPerRequest:outOfRange", "peerIdleTimeout:notPositive",
                "maxCachedPeers:notPositive");
        embedded.setPort(-1);
        assertThat(codes(validate(embedded))).contains("port:outOfRange");
        assertThat(message(validate(embedded), "readTimeout")).isEqualTo(
                "must be positive, such as " + EmbeddedSettings.DEFAULT_READ_TIMEOUT.toSeconds() + "s (the default)");
    }

    @Test
    void connectionsPerAddressAreBoundedByMaxConnectionsWhichIsCheckedFirst() {
        NixlConnectProperties.Embedded embedded = new NixlConnectProperties.Embedded();
        embedded.setMaxConnections(8);
        embedded.setMaxConnectionsPerAddress(8);
        assertThat(validate(embedded).getAllErrors()).isEmpty();

        embedded.setMaxConnectionsPerAddress(9);
        Errors errors = validate(embedded);
        assertThat(codes(errors)).containsExactly("maxConnectionsPerAddress:outOfRange");
        assertThat(message(errors, "maxConnectionsPerAddress")).startsWith("must be between 1 and max-connections (8)");
        embedded.setMaxConnectionsPerAddress(0);
        assertThat(codes(validate(embedded))).containsExactly("maxConnectionsPerAddress:outOfRange");

        // with max-connections itself wrong, the bound it sets means nothing: one error, about max-connections
        embedded.setMaxConnections(0);
        assertThat(codes(validate(embedded))).containsExactly("maxConnections:notPositive");
    }

    @Test
    void aShortSharedSecretIsCountedInUtf8BytesAndNeverShown() {
        NixlConnectProperties.Embedded embedded = new NixlConnectProperties.Embedded();
        embedded.setSharedSecret(" ");
        assertThat(validate(embedded).getAllErrors()).as("blank: no authentication").isEmpty();
        // 8 characters of 2 bytes each: long enough
        embedded.setSharedSecret("é".repeat(EmbeddedSettings.MIN_SHARED_SECRET_LENGTH / 2));
        assertThat(validate(embedded).getAllErrors()).isEmpty();

        String secret = "x".repeat(EmbeddedSettings.MIN_SHARED_SECRET_LENGTH - 1);
        embedded.setSharedSecret(secret);
        Errors errors = validate(embedded);
        assertThat(errors.getFieldErrors()).as("a field error would print the rejected value").isEmpty();
        assertThat(errors.getGlobalErrors()).singleElement().satisfies(error -> {
            assertThat(error.getCode()).isEqualTo("sharedSecretTooShort");
            assertThat(error.getDefaultMessage()).startsWith("nixl.connect.embedded.shared-secret must be at least "
                    + EmbeddedSettings.MIN_SHARED_SECRET_LENGTH + " bytes (value not shown)").doesNotContain(secret);
            assertThat(error.getArguments()).isNull();
        });
    }

    @Test
    void limitsAtTheirBounds() {
        NixlConnectProperties.Limits limits = new NixlConnectProperties.Limits();
        limits.setMaxMetadataSize(DataSize.ofKilobytes(1));
        limits.setMaxDescriptors(ConnectorOptions.MAX_DESCRIPTORS_LIMIT);
        limits.setMaxInFlightOperations(1);
        assertThat(validate(limits).getAllErrors()).isEmpty();
        limits.setMaxMetadataSize(DataSize.ofMegabytes(64));
        assertThat(validate(limits).getAllErrors()).isEmpty();

        limits.setMaxMetadataSize(DataSize.ofBytes(DataSize.ofMegabytes(64).toBytes() + 1));
        limits.setMaxDescriptors(ConnectorOptions.MAX_DESCRIPTORS_LIMIT + 1);
        limits.setMaxInFlightOperations(0);
        assertThat(codes(validate(limits))).containsExactly("maxInFlightOperations:notPositive",
                "maxMetadataSize:outOfRange", "maxDescriptors:outOfRange");
        limits.setMaxMetadataSize(DataSize.ofBytes(1023));
        limits.setMaxDescriptors(0);
        assertThat(codes(validate(limits))).contains("maxMetadataSize:outOfRange", "maxDescriptors:outOfRange");
        limits.setMaxMetadataSize(null);
        assertThat(codes(validate(limits))).contains("maxMetadataSize:outOfRange");
    }

    @Test
    void nixlBackendsParametersAndProgressThread() {
        NixlConnectProperties.Nixl nixl = new NixlConnectProperties.Nixl();
        nixl.setBackends(List.of("UCX", "GDS"));
        nixl.setBackendParameters(Map.of("num_threads", "4"));
        nixl.setProgressThreadDelay(Duration.ZERO); // spins a core, but is valid
        assertThat(validate(nixl).getAllErrors()).isEmpty();

        nixl.setBackends(new ArrayList<>(List.of("UCX", " ")));
        nixl.setBackendParameters(Map.of("num_threads", "4\0"));
        nixl.setProgressThreadDelay(Duration.ofNanos(-1));
        assertThat(codes(validate(nixl))).containsExactly("backends:empty", "backendParameters:invalid",
                "progressThreadDelay:negative");
        nixl.setBackends(List.of());
        nixl.setBackendParameters(Map.of("", "4"));
        assertThat(codes(validate(nixl))).contains("backends:empty", "backendParameters:invalid");
        nixl.setMaxLoadedPeers(0);
        nixl.setPeerIdleLimit(Duration.ofSeconds(-1));
        assertThat(codes(validate(nixl))).contains("maxLoadedPeers:tooSmall", "peerIdleLimit:negative");
        nixl.setPeerIdleLimit(null);
        assertThat(codes(validate(nixl))).contains("peerIdleLimit:negative");
        nixl.setMaxLoadedPeers(1);
        nixl.setPeerIdleLimit(Duration.ZERO); // never unloads an idle peer
        nixl.setBackends(null);
        nixl.setBackendParameters(null); // none given: nothing to check
        nixl.setProgressThreadDelay(null); // blanked: refused (progress-thread=false is how to turn the thread off)
        assertThat(codes(validate(nixl))).containsExactly("backends:empty", "progressThreadDelay:negative");
        nixl.setProgressThreadDelay(Duration.ofMillis(10));
        nixl.setProgressThread(true); // refused: with NIXL's thread on, closing under transfers corrupted UCX's memory
        assertThat(codes(validate(nixl))).containsExactly("backends:empty", "progressThread:unsupported");
        nixl.setProgressThread(false);
        assertThat(codes(validate(nixl))).containsExactly("backends:empty");
    }

    @Test
    void cudaDeviceAndShutdownGrace() {
        NixlConnectProperties.Cuda cuda = new NixlConnectProperties.Cuda();
        cuda.setDeviceId(-1);
        assertThat(codes(validate(cuda))).containsExactly("deviceId:negative");

        NixlConnectProperties.Shutdown shutdown = new NixlConnectProperties.Shutdown();
        shutdown.setGracePeriod(Duration.ZERO); // cancel at once
        assertThat(validate(shutdown).getAllErrors()).isEmpty();
        shutdown.setGracePeriod(null);
        assertThat(codes(validate(shutdown))).containsExactly("gracePeriod:negative");
    }

    private Errors validate(Object target) {
        Errors errors = new BeanPropertyBindingResult(target, "nixl.connect");
        validator.validate(target, errors);
        return errors;
    }

    private static List<String> fields(Errors errors) {
        return errors.getFieldErrors().stream().map(FieldError::getField).toList();
    }

    /** "field:code" for each field error, in the order the rules ran. */
    private static List<String> codes(Errors errors) {
        return errors.getFieldErrors().stream().map(error -> error.getField() + ":" + error.getCode()).toList();
    }

    private static String message(Errors errors, String field) {
        FieldError error = errors.getFieldError(field);
        assertThat(error).as(field).isNotNull();
        return error.getDefaultMessage();
    }
}
