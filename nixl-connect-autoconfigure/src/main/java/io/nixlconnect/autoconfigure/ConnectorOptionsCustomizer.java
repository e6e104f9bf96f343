package io.nixlconnect.autoconfigure;

import io.nixlconnect.ConnectorOptions;

/**
 * Changes the auto-configured connector's options after they were built from {@code nixl.connect.*}, without
 * replacing the {@code Connector} bean. Every bean of this type is applied, in {@code @Order} /
 * {@link org.springframework.core.Ordered} order; the builder's own checks still apply to what it sets.
 */
@FunctionalInterface
public interface ConnectorOptionsCustomizer {

    void customize(ConnectorOptions.Builder options);
}
