package io.nixlconnect.autoconfigure.health;

import io.nixlconnect.Connector;
import io.nixlconnect.autoconfigure.NixlConnectAutoConfiguration;
import org.springframework.boot.autoconfigure.AutoConfiguration;
import org.springframework.boot.autoconfigure.condition.ConditionalOnSingleCandidate;
import org.springframework.boot.autoconfigure.condition.ConditionalOnClass;
import org.springframework.boot.autoconfigure.condition.ConditionalOnMissingBean;
import org.springframework.boot.health.autoconfigure.contributor.ConditionalOnEnabledHealthIndicator;
import org.springframework.boot.health.contributor.HealthIndicator;
import org.springframework.context.annotation.Bean;

/** The {@code nixl} health indicator, when Boot's health module is present ({@code management.health.nixl.enabled}). */
@AutoConfiguration(after = NixlConnectAutoConfiguration.class)
@ConditionalOnClass({Connector.class, HealthIndicator.class, ConditionalOnEnabledHealthIndicator.class})
@ConditionalOnSingleCandidate(Connector.class)
@ConditionalOnEnabledHealthIndicator("nixl")
public final class NixlConnectHealthAutoConfiguration {

    /** Named so that the contributor is {@code nixl}. */
    @Bean
    @ConditionalOnMissingBean(name = "nixlHealthIndicator")
    NixlConnectHealthIndicator nixlHealthIndicator(Connector connector) {
        return new NixlConnectHealthIndicator(connector);
    }
}
