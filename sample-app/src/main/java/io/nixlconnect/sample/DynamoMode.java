package io.nixlconnect.sample;

import java.util.LinkedHashMap;
import java.util.Map;
import org.springframework.boot.EnvironmentPostProcessor;
import org.springframework.boot.SpringApplication;
import org.springframework.core.env.ConfigurableEnvironment;
import org.springframework.core.env.MapPropertySource;
import org.springframework.core.env.StandardEnvironment;

/**
 * {@code sample.dynamo.call} or {@code sample.dynamo.serve} makes the sample a member of a Dynamo deployment: role
 * {@code dynamo} (no HTTP demo), no web server, {@code nixl.connect.dynamo.enabled=true}, and backend {@code auto}
 * (NIXL where it loads, which Python peers need). These sit below the command line, system properties and the OS
 * environment and above application.yml, so any of them can still be set explicitly.
 */
public class DynamoMode implements EnvironmentPostProcessor {

    static final String SOURCE = "sampleDynamoMode";

    @Override
    public void postProcessEnvironment(ConfigurableEnvironment environment, SpringApplication application) {
        if (!isDynamo(environment)) {
            return;
        }
        Map<String, Object> defaults = new LinkedHashMap<>();
        defaults.put("sample.role", "dynamo");
        defaults.put("spring.main.web-application-type", "none");
        defaults.put("nixl.connect.dynamo.enabled", "true");
        defaults.put("nixl.connect.backend", "auto");
        MapPropertySource source = new MapPropertySource(SOURCE, defaults);
        if (environment.getPropertySources().contains(StandardEnvironment.SYSTEM_ENVIRONMENT_PROPERTY_SOURCE_NAME)) {
            environment.getPropertySources().addAfter(StandardEnvironment.SYSTEM_ENVIRONMENT_PROPERTY_SOURCE_NAME, source);
        } else {
            environment.getPropertySources().addLast(source);
        }
    }

    static boolean isDynamo(org.springframework.core.env.Environment environment) {
        return hasText(environment.getProperty("sample.dynamo.call"))
                || hasText(environment.getProperty("sample.dynamo.serve"));
    }

    private static boolean hasText(String value) {
        return value != null && !value.isBlank();
    }
}
