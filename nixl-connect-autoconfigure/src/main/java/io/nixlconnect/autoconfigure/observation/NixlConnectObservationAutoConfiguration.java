package io.nixlconnect.autoconfigure.observation;

import io.micrometer.observation.ObservationRegistry;
import io.nixlconnect.Connector;
import io.nixlconnect.autoconfigure.NixlConnectAutoConfiguration;
import java.util.Map;
import org.springframework.beans.factory.ObjectProvider;
import org.springframework.boot.autoconfigure.AutoConfiguration;
import org.springframework.boot.autoconfigure.condition.ConditionalOnBean;
import org.springframework.boot.autoconfigure.condition.ConditionalOnClass;
import org.springframework.boot.autoconfigure.condition.ConditionalOnMissingBean;
import org.springframework.context.annotation.Bean;

/**
 * A {@code nixl.transfer} observation per operation of every {@link Connector} bean, tagged {@code name} with its
 * bean name, when an {@link ObservationRegistry} exists; a {@link NixlTransferObservationConvention} bean replaces
 * the default names and tags.
 */
@AutoConfiguration(after = NixlConnectAutoConfiguration.class,
        afterName = "org.springframework.boot.micrometer.observation.autoconfigure.ObservationAutoConfiguration")
@ConditionalOnClass({Connector.class, ObservationRegistry.class})
@ConditionalOnBean({ObservationRegistry.class, Connector.class})
public final class NixlConnectObservationAutoConfiguration {

    @Bean
    @ConditionalOnMissingBean
    NixlTransferObservations nixlTransferObservations(Map<String, Connector> connectors, ObservationRegistry registry,
            ObjectProvider<NixlTransferObservationConvention> convention) {
        return new NixlTransferObservations(connectors, registry, convention.getIfUnique());
    }
}
