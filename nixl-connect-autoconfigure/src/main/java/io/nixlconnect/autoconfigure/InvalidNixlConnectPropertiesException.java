package io.nixlconnect.autoconfigure;

import java.util.List;
import java.util.stream.Collectors;

/**
 * One or more {@code nixl.connect.*} properties hold values the connector cannot work with. Reported at
 * start-up by {@link NixlConnectFailureAnalyzer}, one line per property with how to fix it.
 */
public class InvalidNixlConnectPropertiesException extends IllegalStateException {

    private static final long serialVersionUID = 1L;

    private final transient List<Violation> violations;

    public InvalidNixlConnectPropertiesException(List<Violation> violations) {
        super("Invalid nixl-connect configuration: " + violations.stream()
                .map(Violation::summary).collect(Collectors.joining("; ")));
        this.violations = List.copyOf(violations);
    }

    public List<Violation> violations() {
        return violations;
    }

    /**
     * A property that breaks a rule.
     *
     * @param property its full name, such as {@code nixl.connect.embedded.port}
     * @param value    the value bound (may be null)
     * @param problem  the rule it breaks
     * @param fix      what to set instead
     */
    public record Violation(String property, Object value, String problem, String fix) {

        String summary() {
            return property + "=" + NixlConnectFailureAnalyzer.format(value) + " " + problem;
        }
    }
}
