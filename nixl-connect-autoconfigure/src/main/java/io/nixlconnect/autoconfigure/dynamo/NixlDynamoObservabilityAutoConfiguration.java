package io.nixlconnect.autoconfigure.dynamo;

import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.observation.ObservationRegistry;
import io.nixlconnect.dynamo.DynamoRuntime;
import org.springframework.beans.factory.ObjectProvider;
import org.springframework.boot.autoconfigure.AutoConfiguration;
import org.springframework.boot.autoconfigure.condition.ConditionalOnBean;
import org.springframework.boot.autoconfigure.condition.ConditionalOnClass;
import org.springframework.boot.autoconfigure.condition.ConditionalOnMissingBean;
import org.springframework.boot.autoconfigure.condition.ConditionalOnSingleCandidate;
import org.springframework.boot.health.autoconfigure.contributor.ConditionalOnEnabledHealthIndicator;
import org.springframework.boot.health.contributor.HealthContributor;
import org.springframework.boot.health.contributor.HealthIndicator;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;

/**
 * The {@link DynamoRuntime}'s health ({@code dynamo}, {@code management.health.dynamo.enabled}), meters
 * ({@link DynamoMeterBinder}) and observations ({@link DynamoObservations}), each when its Boot module is
 * present and there is one runtime. Apart from {@link NixlDynamoAutoConfiguration} so that it runs after the runtime's
 * bean and the meter and observation registries are defined.
 */
@AutoConfiguration(after = NixlDynamoAutoConfiguration.class, afterName = {
        "org.springframework.boot.micrometer.metrics.autoconfigure.MetricsAutoConfiguration",
        "org.springframework.boot.micrometer.metrics.autoconfigure.CompositeMeterRegistryAutoConfiguration",
        "org.springframework.boot.micrometer.observation.autoconfigure.ObservationAutoConfiguration"})
@ConditionalOnClass(DynamoRuntime.class)
public final class NixlDynamoObservabilityAutoConfiguration {

    @Configuration(proxyBeanMethods = false)
    @ConditionalOnClass({HealthIndicator.class, ConditionalOnEnabledHealthIndicator.class})
    @ConditionalOnEnabledHealthIndicator("dynamo")
    static class Health {

        /** Named so that the contributor is {@code dynamo}; gives way to the application's bean of either name. */
        @Bean
        @ConditionalOnSingleCandidate(DynamoRuntime.class)
        @ConditionalOnMissingBean(name = {"dynamoHealthIndicator", "dynamoHealthContributor"})
        HealthContributor dynamoHealthContributor(DynamoRuntime runtime,
                ObjectProvider<DynamoRuntimeLifecycle> lifecycle) {
            return new DynamoHealthIndicator(runtime, lifecycle.getIfUnique());
        }
    }

    @Configuration(proxyBeanMethods = false)
    @ConditionalOnClass(MeterRegistry.class)
    static class Metrics {

        @Bean
        @ConditionalOnBean(MeterRegistry.class)
        @ConditionalOnSingleCandidate(DynamoRuntime.class)
        @ConditionalOnMissingBean
        DynamoMeterBinder dynamoMeterBinder(DynamoRuntime runtime) {
            return new DynamoMeterBinder(runtime);
        }
    }

    @Configuration(proxyBeanMethods = false)
    @ConditionalOnClass(ObservationRegistry.class)
    static class Observations {

        @Bean
        @ConditionalOnBean(ObservationRegistry.class)
        @ConditionalOnSingleCandidate(DynamoRuntime.class)
        @ConditionalOnMissingBean
        DynamoObservations dynamoObservations(DynamoRuntime runtime, ObservationRegistry registry) {
            return new DynamoObservations(runtime, registry);
        }
    }
}
