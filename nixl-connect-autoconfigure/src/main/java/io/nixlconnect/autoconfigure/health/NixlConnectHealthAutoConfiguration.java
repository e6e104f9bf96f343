package io.nixlconnect.autoconfigure.health;

import io.nixlconnect.Connector;
import io.nixlconnect.autoconfigure.NixlConnectAutoConfiguration;
import java.util.Map;
import org.springframework.boot.autoconfigure.AutoConfiguration;
import org.springframework.boot.autoconfigure.condition.ConditionalOnBean;
import org.springframework.boot.autoconfigure.condition.ConditionalOnClass;
import org.springframework.boot.autoconfigure.condition.ConditionalOnMissingBean;
import org.springframework.boot.health.autoconfigure.contributor.ConditionalOnEnabledHealthIndicator;
import org.springframework.boot.health.contributor.CompositeHealthContributor;
import org.springframework.boot.health.contributor.HealthContributor;
import org.springframework.boot.health.contributor.HealthIndicator;
import org.springframework.context.annotation.Bean;

/**
 * The {@code nixl} health contributor, when Boot's health module is present ({@code management.health.nixl.enabled}):
 * the connector's {@link NixlConnectHealthIndicator}, or, with several {@link Connector} beans, one per connector
 * under {@code nixl}, named by bean name ({@code nixl/prefill}, {@code nixl/decode}), as Boot does for DataSources.
 */
@AutoConfiguration(after = NixlConnectAutoConfiguration.class)
@ConditionalOnClass({Connector.class, HealthIndicator.class, ConditionalOnEnabledHealthIndicator.class})
@ConditionalOnBean(Connector.class)
@ConditionalOnEnabledHealthIndicator("nixl")
public final class NixlConnectHealthAutoConfiguration {

    /** Named so that the contributor is {@code nixl}; gives way to the application's bean of either name. */
    @Bean
    @ConditionalOnMissingBean(name = {"nixlHealthIndicator", "nixlHealthContributor"})
    HealthContributor nixlHealthContributor(Map<String, Connector> connectors) {
        if (connectors.size() == 1) {
            return new NixlConnectHealthIndicator(connectors.values().iterator().next());
        }
        return CompositeHealthContributor.fromMap(connectors, NixlConnectHealthIndicator::new);
    }
}
