package io.nixlconnect.autoconfigure;

import io.nixlconnect.Connector;
import org.springframework.beans.factory.ObjectProvider;
import org.springframework.boot.autoconfigure.AutoConfiguration;
import org.springframework.boot.autoconfigure.condition.ConditionalOnBooleanProperty;
import org.springframework.boot.autoconfigure.condition.ConditionalOnClass;
import org.springframework.boot.autoconfigure.condition.ConditionalOnMissingBean;
import org.springframework.boot.autoconfigure.condition.ConditionalOnSingleCandidate;
import org.springframework.boot.context.properties.EnableConfigurationProperties;
import org.springframework.boot.ssl.SslBundles;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.ImportRuntimeHints;
import org.springframework.core.env.Environment;

/**
 * The nixl-connect {@link Connector}, its lifecycle and the {@link NixlTransfers} service. Off with
 * {@code nixl.connect.enabled=false}; each bean gives way to one the application defines.
 */
@AutoConfiguration
@ConditionalOnClass(Connector.class)
@ConditionalOnBooleanProperty(name = "nixl.connect.enabled", matchIfMissing = true)
@EnableConfigurationProperties(NixlConnectProperties.class)
@ImportRuntimeHints(NixlConnectRuntimeHints.class)
public final class NixlConnectAutoConfiguration {

    /** Closed by the context ({@code close} is inferred); {@link NixlConnectorLifecycle} drains it first. */
    @Bean
    @ConditionalOnMissingBean
    Connector nixlConnector(NixlConnectProperties properties, Environment environment,
            ObjectProvider<SslBundles> sslBundles, ObjectProvider<ConnectorOptionsCustomizer> customizers) {
        return NixlConnectorFactory.create(properties, environment.getProperty("spring.application.name"),
                sslBundles.getIfAvailable(), customizers.orderedStream().toList());
    }

    // The beans below need exactly one Connector: with two user-defined ones, they back off instead of failing.
    @Bean
    @ConditionalOnMissingBean
    @ConditionalOnSingleCandidate(Connector.class)
    NixlConnectorLifecycle nixlConnectorLifecycle(Connector connector, NixlConnectProperties properties) {
        return new NixlConnectorLifecycle(connector, properties.getShutdown().getGracePeriod());
    }

    @Bean
    @ConditionalOnMissingBean
    @ConditionalOnSingleCandidate(Connector.class)
    NixlTransfers nixlTransfers(Connector connector) {
        // The connector's own timeout, so a user-defined Connector bean is honoured too.
        return new NixlTransfers(connector, connector.options().operationTimeout());
    }
}
