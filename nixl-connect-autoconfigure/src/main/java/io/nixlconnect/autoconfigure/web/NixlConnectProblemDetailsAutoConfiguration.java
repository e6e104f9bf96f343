package io.nixlconnect.autoconfigure.web;

import io.nixlconnect.Connector;
import io.nixlconnect.autoconfigure.NixlConnectAutoConfiguration;
import org.springframework.boot.autoconfigure.AutoConfiguration;
import org.springframework.boot.autoconfigure.condition.ConditionalOnBooleanProperty;
import org.springframework.boot.autoconfigure.condition.ConditionalOnClass;
import org.springframework.boot.autoconfigure.condition.ConditionalOnMissingBean;
import org.springframework.boot.autoconfigure.condition.ConditionalOnWebApplication;
import org.springframework.context.annotation.Bean;
import org.springframework.http.ProblemDetail;
import org.springframework.web.bind.annotation.ExceptionHandler;

/**
 * {@link NixlConnectExceptionHandler} in a servlet or reactive web application. Off with
 * {@code nixl.connect.problem-details.enabled=false} (or {@code nixl.connect.enabled=false}); an application bean of
 * the same type replaces it.
 */
@AutoConfiguration(after = NixlConnectAutoConfiguration.class)
@ConditionalOnClass({Connector.class, ProblemDetail.class, ExceptionHandler.class})
@ConditionalOnWebApplication
@ConditionalOnBooleanProperty(name = "nixl.connect.enabled", matchIfMissing = true)
@ConditionalOnBooleanProperty(name = "nixl.connect.problem-details.enabled", matchIfMissing = true)
public final class NixlConnectProblemDetailsAutoConfiguration {

    @Bean
    @ConditionalOnMissingBean
    NixlConnectExceptionHandler nixlConnectExceptionHandler() {
        return new NixlConnectExceptionHandler();
    }
}
