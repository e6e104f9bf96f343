package io.nixlconnect.autoconfigure.dynamo;

import io.nixlconnect.autoconfigure.NixlConnectAutoConfiguration;
import io.nixlconnect.dynamo.DynamoRuntime;
import org.springframework.beans.factory.ObjectProvider;
import org.springframework.boot.autoconfigure.AutoConfiguration;
import org.springframework.boot.autoconfigure.condition.ConditionalOnBooleanProperty;
import org.springframework.boot.autoconfigure.condition.ConditionalOnClass;
import org.springframework.boot.autoconfigure.condition.ConditionalOnMissingBean;
import org.springframework.boot.autoconfigure.condition.ConditionalOnSingleCandidate;
import org.springframework.boot.context.properties.EnableConfigurationProperties;
import org.springframework.context.annotation.Bean;
import org.springframework.core.env.Environment;

/**
 * A {@link DynamoRuntime} (this application as a member of a Dynamo deployment), serving the application's
 * {@link DynamoEndpointRegistration} beans (its health, meters and observations: {@link
 * NixlDynamoObservabilityAutoConfiguration}). On only with
 * {@code nixl.connect.dynamo.enabled=true}: a runtime reads and writes Dynamo's discovery, which an application
 * must ask for. Each bean gives way to one the application defines.
 */
@AutoConfiguration(after = NixlConnectAutoConfiguration.class)
@ConditionalOnClass(DynamoRuntime.class)
@ConditionalOnBooleanProperty("nixl.connect.dynamo.enabled")
@EnableConfigurationProperties(NixlDynamoProperties.class)
public final class NixlDynamoAutoConfiguration {

    /** Closed by its lifecycle (deregister, drain, close), or by the context ({@code close} is idempotent). */
    @Bean
    @ConditionalOnMissingBean
    DynamoRuntime dynamoRuntime(NixlDynamoProperties properties, Environment environment) {
        return DynamoRuntime.start(NixlDynamoSettings.settings(properties,
                NixlDynamoSettings.dynamoEnvironment(environment)));
    }

    @Bean
    @ConditionalOnMissingBean
    @ConditionalOnSingleCandidate(DynamoRuntime.class)
    DynamoRuntimeLifecycle dynamoRuntimeLifecycle(DynamoRuntime runtime,
            ObjectProvider<DynamoEndpointRegistration> registrations) {
        return new DynamoRuntimeLifecycle(runtime, registrations.orderedStream().toList());
    }
}
