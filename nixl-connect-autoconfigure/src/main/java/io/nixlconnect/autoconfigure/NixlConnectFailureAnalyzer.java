package io.nixlconnect.autoconfigure;

import io.nixlconnect.BackendUnavailableException;
import io.nixlconnect.ConnectorOptions;
import io.nixlconnect.TransportFailureException;
import io.nixlconnect.cuda.CudaUnavailableException;
import io.nixlconnect.transport.TransportSettings;
import io.nixlconnect.transport.embedded.EmbeddedSettings;
import io.nixlconnect.transport.nixl.NixlSettings;
import java.util.Optional;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.springframework.boot.context.properties.bind.BindException;
import org.springframework.boot.context.properties.bind.DataObjectPropertyName;
import org.springframework.boot.context.properties.bind.validation.BindValidationException;
import org.springframework.boot.context.properties.bind.validation.ValidationErrors;
import org.springframework.boot.context.properties.source.ConfigurationProperty;
import org.springframework.boot.context.properties.source.ConfigurationPropertyName;
import org.springframework.boot.diagnostics.FailureAnalysis;
import org.springframework.boot.diagnostics.FailureAnalyzer;
import org.springframework.boot.origin.Origin;
import org.springframework.core.Ordered;
import org.springframework.validation.FieldError;
import org.springframework.validation.ObjectError;

/**
 * Turns nixl-connect start-up failures into a report that names the property at fault and how to fix it:
 * {@code backend: nixl} without a usable NIXL library, a required GPU that is missing, and an embedded transport
 * that cannot listen. Invalid {@code nixl.connect.*} values ({@link NixlConnectProperties#validate}) are reported
 * in Boot's own format, but each property named as users write it ({@code nixl.connect.operation-timeout}, where
 * Boot's validation report would print the Java field, {@code operationTimeout}) with its value as written
 * ({@code -5s}, not the bound {@code PT-5S}) and its origin. Runs before Boot's analyzers, which would only say
 * that a bean could not be created.
 */
public final class NixlConnectFailureAnalyzer implements FailureAnalyzer, Ordered {

    private static final Logger log = LoggerFactory.getLogger(NixlConnectFailureAnalyzer.class);
    private static final int SUMMARY_LENGTH = 300;
    private static final ConfigurationPropertyName PREFIX = ConfigurationPropertyName.of("nixl.connect");

    @Override
    public FailureAnalysis analyze(Throwable failure) {
        CudaUnavailableException noGpu = findCause(failure, CudaUnavailableException.class);
        if (noGpu != null) {
            return new FailureAnalysis("nixl.connect.cuda.required is true but no usable GPU was found: "
                    + noGpu.reason(),
                    "Run on a machine with an NVIDIA GPU and driver (libcuda.so.1), put JCuda (org.jcuda:jcuda and "
                            + "org.jcuda:jcuda-natives for your platform) on the classpath, check "
                            + "nixl.connect.cuda.device-id, or set nixl.connect.cuda.required=false to start without a GPU.",
                    noGpu);
        }
        BindValidationException invalid = findCause(failure, BindValidationException.class);
        if (invalid != null && isNixlConnect(invalid.getValidationErrors().getName())) {
            return invalidProperties(invalid, findCause(failure, BindException.class));
        }
        NixlConnectorStartupException startup = findCause(failure, NixlConnectorStartupException.class);
        if (startup != null) {
            return startupFailure(startup);
        }
        return null;
    }

    private static boolean isNixlConnect(ConfigurationPropertyName name) {
        return PREFIX.equals(name) || PREFIX.isAncestorOf(name);
    }

    /** Boot's validation report, with each property in the form users write it and its value as written. */
    private static FailureAnalysis invalidProperties(BindValidationException invalid, BindException binding) {
        ValidationErrors errors = invalid.getValidationErrors();
        Object target = binding != null ? binding.getTarget().getType() : NixlConnectProperties.class.getName();
        StringBuilder description = new StringBuilder("Binding to target " + target + " failed:\n");
        for (ObjectError error : errors.getAllErrors()) {
            if (error instanceof FieldError field) {
                ConfigurationPropertyName name = errors.getName().append(DataObjectPropertyName.toDashedForm(field.getField()));
                ConfigurationProperty written = errors.getBoundProperties().stream()
                        .filter(property -> property.getName().equals(name)).findFirst().orElse(null);
                Object value = written != null ? written.getValue() : field.getRejectedValue();
                Origin origin = written != null ? Origin.from(written) : Origin.from(field);
                description.append("\n    Property: ").append(name);
                description.append("\n    Value: \"").append(value).append('"');
                if (origin != null) {
                    description.append("\n    Origin: ").append(origin);
                }
            }
            description.append("\n    Reason: ").append(error.getDefaultMessage()).append('\n');
        }
        return new FailureAnalysis(description.toString(), "Update your application's configuration", invalid);
    }

    private static FailureAnalysis startupFailure(NixlConnectorStartupException e) {
        ConnectorOptions options = e.options();
        Throwable cause = e.getCause();
        Optional<NixlSettings> nixl = options.transport(NixlSettings.class);
        Optional<EmbeddedSettings> embedded = options.transport(EmbeddedSettings.class);
        if (nixl.isPresent() && embedded.isEmpty() && isNixlUnavailable(cause)) {
            NixlSettings settings = nixl.get();
            // The loader's own message can list dozens of search paths: DEBUG gets it whole, the report a summary.
            log.debug("NIXL could not be loaded", cause);
            return new FailureAnalysis(String.join("\n",
                    "nixl.connect.backend is 'nixl', but NIXL could not be loaded:",
                    "  " + summary(rootMessage(cause)),
                    "  nixl.connect.nixl.library-path: " + orNotSet(settings.libraryDir()),
                    "  nixl.connect.nixl.plugin-directory: " + orNotSet(settings.pluginDir()),
                    "  (every path searched: DEBUG log of " + NixlConnectFailureAnalyzer.class.getName() + ")"),
                    String.join("\n",
                            "Install NIXL (>= 1.1) if this host has none: 'pip install nixl-cu12' (or nixl-cu13, nixl) into",
                            "a site-packages that is searched ($VIRTUAL_ENV, ~/.local, /usr/local, /usr), or NVIDIA's",
                            "packages or a source build under /opt/nvidia/nvda_nixl (elsewhere: set NIXL_PREFIX); see",
                            "docs/nixl.md, \"Installing NIXL\". Installed somewhere else: set nixl.connect.nixl.library-path",
                            "to the directory of libnixl_capi.so and nixl.connect.nixl.plugin-directory to its plugins.",
                            "Or set nixl.connect.backend=auto to fall back to the embedded transport (embedded: never use NIXL)."),
                    e);
        }
        if (embedded.isPresent() && cause instanceof TransportFailureException) {
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

    private static String orNotSet(Object value) {
        return value == null ? "not set (searched the default locations)" : value.toString();
    }

    /** The innermost message: the loader's reason without the wrappers' advice. */
    private static String rootMessage(Throwable failure) {
        String message = String.valueOf(failure.getMessage());
        for (Throwable t = failure.getCause(); t != null && t != t.getCause(); t = t.getCause()) {
            if (t.getMessage() != null) {
                message = t.getMessage();
            }
        }
        return message;
    }

    /** One line of at most {@value #SUMMARY_LENGTH} characters, long bracketed path lists elided. */
    static String summary(String message) {
        String line = message.lines().findFirst().orElse("").replaceAll("[\\[(][^\\])\\[(]{60,}[\\])]", "[...]");
        return line.length() <= SUMMARY_LENGTH ? line : line.substring(0, SUMMARY_LENGTH - 3) + "...";
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
