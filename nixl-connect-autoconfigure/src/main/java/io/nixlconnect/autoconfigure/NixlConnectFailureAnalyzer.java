package io.nixlconnect.autoconfigure;

import io.nixlconnect.BackendUnavailableException;
import io.nixlconnect.ConnectorOptions;
import io.nixlconnect.cuda.CudaUnavailableException;
import io.nixlconnect.transport.TransportException;
import io.nixlconnect.transport.TransportSettings;
import io.nixlconnect.transport.embedded.EmbeddedSettings;
import io.nixlconnect.transport.nixl.NixlSettings;
import java.util.Optional;
import java.time.Duration;
import java.util.stream.Collectors;
import org.springframework.boot.diagnostics.FailureAnalysis;
import org.springframework.boot.diagnostics.FailureAnalyzer;
import org.springframework.core.Ordered;
import org.springframework.util.unit.DataSize;

/**
 * Turns nixl-connect start-up failures into a report that names the property at fault and how to fix it:
 * invalid {@code nixl.connect.*} values, {@code backend: nixl} without a usable NIXL library, and an
 * embedded transport that cannot listen. Runs before Boot's generic analyzers, which would only say that a
 * bean could not be created.
 */
public final class NixlConnectFailureAnalyzer implements FailureAnalyzer, Ordered {

    @Override
    public FailureAnalysis analyze(Throwable failure) {
        InvalidNixlConnectPropertiesException invalid = findCause(failure, InvalidNixlConnectPropertiesException.class);
        if (invalid != null) {
            return invalidProperties(invalid);
        }
        CudaUnavailableException noGpu = findCause(failure, CudaUnavailableException.class);
        if (noGpu != null) {
            return new FailureAnalysis("nixl.connect.cuda.required is true but no usable GPU was found: "
                    + noGpu.reason(),
                    "Run on a machine with an NVIDIA GPU and driver (libcuda.so.1), put JCuda (org.jcuda:jcuda and "
                            + "org.jcuda:jcuda-natives for your platform) on the classpath, check "
                            + "nixl.connect.cuda.device-id, or set nixl.connect.cuda.required=false to start without a GPU.",
                    noGpu);
        }
        NixlConnectorStartupException startup = findCause(failure, NixlConnectorStartupException.class);
        if (startup != null) {
            return startupFailure(startup);
        }
        return null;
    }

    private static FailureAnalysis invalidProperties(InvalidNixlConnectPropertiesException e) {
        String description = e.violations().stream()
                .map(v -> "  - " + v.property() + " = " + format(v.value()) + ": " + v.problem())
                .collect(Collectors.joining("\n", "Invalid nixl-connect configuration:\n", ""));
        String action = e.violations().stream()
                .map(v -> "  - " + v.property() + ": " + v.fix())
                .collect(Collectors.joining("\n", "Correct the application's configuration:\n", ""));
        return new FailureAnalysis(description, action, e);
    }

    private static FailureAnalysis startupFailure(NixlConnectorStartupException e) {
        ConnectorOptions options = e.options();
        Throwable cause = e.getCause();
        Optional<NixlSettings> nixl = options.transport(NixlSettings.class);
        Optional<EmbeddedSettings> embedded = options.transport(EmbeddedSettings.class);
        if (nixl.isPresent() && embedded.isEmpty() && isNixlUnavailable(cause)) {
            NixlSettings settings = nixl.get();
            return new FailureAnalysis("The NIXL transport was requested (nixl.connect.backend=nixl) but is not available: "
                    + cause.getMessage() + "\nLibrary path: " + orDefault(settings.libraryDir())
                    + ", plugin directory: " + orDefault(settings.pluginDir())
                    + ", backend plugins: " + settings.backends(),
                    "Install NIXL (libnixl_capi.so and its plugins) and point nixl.connect.nixl.library-path and "
                            + "nixl.connect.nixl.plugin-directory at it, or set nixl.connect.backend=auto to fall back to "
                            + "the embedded transport when NIXL is missing (or embedded to never use NIXL).",
                    e);
        }
        if (embedded.isPresent() && cause instanceof TransportException) {
            return new FailureAnalysis("The nixl-connect embedded transport could not start on "
                    + embedded.get().bindAddress() + ":" + embedded.get().port() + ": " + cause.getMessage(),
                    "Set nixl.connect.embedded.port=0 to pick a free port, choose a port no other process uses, "
                            + "or set nixl.connect.embedded.bind-address to an address of this host.",
                    e);
        }
        return new FailureAnalysis("The nixl-connect connector could not start (transports "
                + options.transports().stream().map(TransportSettings::name).toList() + "): " + cause,
                "Check the nixl.connect.* settings and the cause above.", e);
    }

    /**
     * Whether a connector construction failure means "NIXL is not available": the core's
     * {@link BackendUnavailableException}, or a {@link LinkageError} from a native library that is present but broken.
     */
    static boolean isNixlUnavailable(Throwable cause) {
        return cause instanceof BackendUnavailableException || cause instanceof LinkageError;
    }

    /** Durations and sizes the way they are written in application properties ({@code 30s}, {@code 16MB}). */
    static String format(Object value) {
        if (value instanceof Duration duration) {
            return duration.toMillis() % 1000 == 0 ? duration.toSeconds() + "s" : duration.toMillis() + "ms";
        }
        if (value instanceof DataSize size) {
            long bytes = size.toBytes();
            if (bytes != 0 && bytes % DataSize.ofMegabytes(1).toBytes() == 0) {
                return size.toMegabytes() + "MB";
            }
            return bytes != 0 && bytes % 1024 == 0 ? size.toKilobytes() + "KB" : bytes + "B";
        }
        return String.valueOf(value);
    }

    private static String orDefault(Object value) {
        return value == null ? "(default)" : value.toString();
    }

    private static <E extends Throwable> E findCause(Throwable failure, Class<E> type) {
        for (Throwable t = failure; t != null; t = t.getCause()) {
            if (type.isInstance(t)) {
                return type.cast(t);
            }
            if (t.getCause() == t) {
                break;
            }
        }
        return null;
    }

    /** Ahead of Boot's generic bean-creation analyzers, which would hide the nixl-connect cause. */
    @Override
    public int getOrder() {
        return Ordered.HIGHEST_PRECEDENCE;
    }
}
