package io.nixlconnect.autoconfigure.observation;

import io.micrometer.core.instrument.MeterRegistry;
import io.nixlconnect.Connector;
import io.nixlconnect.autoconfigure.NixlConnectAutoConfiguration;
import org.springframework.boot.autoconfigure.AutoConfiguration;
import org.springframework.boot.autoconfigure.condition.ConditionalOnBean;
import org.springframework.boot.autoconfigure.condition.ConditionalOnClass;
import org.springframework.boot.autoconfigure.condition.ConditionalOnMissingBean;
import org.springframework.boot.autoconfigure.condition.ConditionalOnSingleCandidate;
import org.springframework.context.annotation.Bean;

/**
 * The connector's gauges and bytes counter ({@link NixlConnectMeterBinder}), when a {@link MeterRegistry}
 * exists. Timings come from the {@code nixl.transfer} observation ({@link NixlConnectObservationAutoConfiguration}).
 */
@AutoConfiguration(after = NixlConnectAutoConfiguration.class,
        afterName = {"org.springframework.boot.micrometer.metrics.autoconfigure.MetricsAutoConfiguration",
                "org.springframework.boot.micrometer.metrics.autoconfigure.CompositeMeterRegistryAutoConfiguration"})
@ConditionalOnClass({Connector.class, MeterRegistry.class})
@ConditionalOnBean(MeterRegistry.class)
@ConditionalOnSingleCandidate(Connector.class)
public final class NixlConnectMetricsAutoConfiguration {

    @Bean
    @ConditionalOnMissingBean
    NixlConnectMeterBinder nixlConnectMeterBinder(Connector connector) {
        return new NixlConnectMeterBinder(connector);
    }
}
