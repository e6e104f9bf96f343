package io.nixlconnect.autoconfigure.observation;

import io.micrometer.core.instrument.MeterRegistry;
import io.nixlconnect.Connector;
import io.nixlconnect.autoconfigure.NixlConnectAutoConfiguration;
import java.util.Map;
import org.springframework.boot.autoconfigure.AutoConfiguration;
import org.springframework.boot.autoconfigure.condition.ConditionalOnBean;
import org.springframework.boot.autoconfigure.condition.ConditionalOnClass;
import org.springframework.boot.autoconfigure.condition.ConditionalOnMissingBean;
import org.springframework.context.annotation.Bean;

/**
 * The gauges and bytes counter ({@link NixlConnectMeterBinder}) of every {@link Connector} bean, tagged {@code name}
 * with its bean name as Boot tags DataSources, when a {@link MeterRegistry} exists. Timings come from the {@code nixl.transfer} observation ({@link NixlConnectObservationAutoConfiguration}).
 */
@AutoConfiguration(after = NixlConnectAutoConfiguration.class,
        afterName = {"org.springframework.boot.micrometer.metrics.autoconfigure.MetricsAutoConfiguration",
                "org.springframework.boot.micrometer.metrics.autoconfigure.CompositeMeterRegistryAutoConfiguration"})
@ConditionalOnClass({Connector.class, MeterRegistry.class})
@ConditionalOnBean({MeterRegistry.class, Connector.class})
public final class NixlConnectMetricsAutoConfiguration {

    @Bean
    @ConditionalOnMissingBean
    NixlConnectMeterBinder nixlConnectMeterBinder(Map<String, Connector> connectors) {
        return new NixlConnectMeterBinder(connectors);
    }
}
