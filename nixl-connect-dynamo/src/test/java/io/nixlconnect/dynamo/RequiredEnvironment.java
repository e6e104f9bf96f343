package io.nixlconnect.dynamo;

import static org.junit.jupiter.api.Assertions.fail;

import org.junit.jupiter.api.Assumptions;

/**
 * Tests that need something .ci/ installs (etcd, the Dynamo wheel, NIXL) skip with the reason when it is missing on a
 * developer's machine, and fail under {@code CI=true}, where it must be there. Public, in this module's test jar, for
 * the sample app's Dynamo tests too.
 */
public final class RequiredEnvironment {

    private RequiredEnvironment() {
    }

    public static String require(String variable, String what) {
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
