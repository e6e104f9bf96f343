package io.nixlconnect.sample;

import java.util.LinkedHashMap;
import java.util.Map;
import org.springframework.boot.context.event.ApplicationEnvironmentPreparedEvent;
import org.springframework.context.ApplicationListener;
import org.springframework.core.Ordered;
import org.springframework.core.env.ConfigurableEnvironment;
import org.springframework.core.env.MapPropertySource;
import org.springframework.core.env.StandardEnvironment;

/**
 * {@code sample.dynamo.call} or {@code sample.dynamo.serve} makes the sample a member of a Dynamo deployment: role
 * {@code dynamo} (no HTTP demo), no web server, {@code nixl.connect.dynamo.enabled=true}, and backend {@code auto}
 * (NIXL where it loads, which Python peers need). These sit below the command line, system properties and the OS
 * environment and above application.yml, so any of them can still be set explicitly.
 *
 * <p>A listener {@link SampleApplication#application()} adds (after Boot has read application.yml, before it binds
 * {@code spring.main.*}), not an {@code EnvironmentPostProcessor} in {@code META-INF/spring.factories}: Boot's
 * repackaging leaves an application's own {@code META-INF} outside the executable jar's class path.
 */
public class DynamoMode implements ApplicationListener<ApplicationEnvironmentPreparedEvent>, Ordered {

    static final String SOURCE = "sampleDynamoMode";

    @Override
    public int getOrder() {
        return Ordered.LOWEST_PRECEDENCE; // after the config data (application.yml) is in the environment
    }

    @Override
    public void onApplicationEvent(ApplicationEnvironmentPreparedEvent event) {
        ConfigurableEnvironment environment = event.getEnvironment();
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
