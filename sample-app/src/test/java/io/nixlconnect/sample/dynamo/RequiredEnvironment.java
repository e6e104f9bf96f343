package io.nixlconnect.sample.dynamo;

import static org.junit.jupiter.api.Assertions.fail;

import org.junit.jupiter.api.Assumptions;

/**
 * Tests that need something .ci/ installs (the Dynamo runtime, NIXL, etcd) skip with the reason when it is missing on
 * a developer's machine, and fail under {@code CI=true}, where it must be there.
 */
final class RequiredEnvironment {

    private RequiredEnvironment() {
    }

    static String require(String variable, String what) {
        String value = System.getenv(variable);
        if (value == null || value.isBlank()) {
            String reason = variable + " is not set: " + what + " (scripts/test.sh sets it up through .ci/)";
            if ("true".equals(System.getenv("CI"))) {
                fail("CI=true but " + reason);
            }
            Assumptions.abort(reason);
        }
        return value;
    }
}
