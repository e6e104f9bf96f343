package io.nixlconnect.autoconfigure;

import io.micrometer.core.instrument.MeterRegistry;
import io.nixlconnect.Connector;
import org.springframework.boot.autoconfigure.AutoConfiguration;
import org.springframework.boot.autoconfigure.condition.ConditionalOnBean;
import org.springframework.boot.autoconfigure.condition.ConditionalOnClass;
import org.springframework.boot.autoconfigure.condition.ConditionalOnMissingBean;
import org.springframework.context.annotation.Bean;

/**
 * Micrometer meters for the connector, when a {@link MeterRegistry} exists. Percentiles and histograms of
 * {@code nixl.operation.duration} come from Boot's {@code management.metrics.distribution.*} properties.
 */
@AutoConfiguration(after = NixlConnectAutoConfiguration.class,
        afterName = {"org.springframework.boot.micrometer.metrics.autoconfigure.MetricsAutoConfiguration",
                "org.springframework.boot.micrometer.metrics.autoconfigure.CompositeMeterRegistryAutoConfiguration"})
@ConditionalOnClass({Connector.class, MeterRegistry.class})
@ConditionalOnBean({Connector.class, MeterRegistry.class})
public final class NixlConnectMetricsAutoConfiguration {

    @Bean
    @ConditionalOnMissingBean
    NixlConnectMetrics nixlConnectMetrics(Connector connector, MeterRegistry registry) {
        return new NixlConnectMetrics(connector, registry);
    }
}
