package io.nixlconnect.autoconfigure;

import io.micrometer.observation.ObservationRegistry;
import io.nixlconnect.Connector;
import org.springframework.boot.autoconfigure.AutoConfiguration;
import org.springframework.boot.autoconfigure.condition.ConditionalOnBean;
import org.springframework.boot.autoconfigure.condition.ConditionalOnClass;
import org.springframework.boot.autoconfigure.condition.ConditionalOnMissingBean;
import org.springframework.context.annotation.Bean;

/** A {@code nixl.transfer} observation per operation, when an {@link ObservationRegistry} exists. */
@AutoConfiguration(after = NixlConnectAutoConfiguration.class,
        afterName = "org.springframework.boot.micrometer.observation.autoconfigure.ObservationAutoConfiguration")
@ConditionalOnClass({Connector.class, ObservationRegistry.class})
@ConditionalOnBean({Connector.class, ObservationRegistry.class})
public final class NixlConnectObservationAutoConfiguration {

    @Bean
    @ConditionalOnMissingBean
    NixlConnectObservations nixlConnectObservations(Connector connector, ObservationRegistry registry) {
        return new NixlConnectObservations(connector, registry);
    }
}
