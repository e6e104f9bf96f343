package io.nixlconnect.autoconfigure.dynamo;

import io.nixlconnect.dynamo.DynamoHandler;
import io.nixlconnect.dynamo.EndpointId;

/**
 * An endpoint to serve, declared as a bean: {@link DynamoRuntimeLifecycle} registers each one in Dynamo's discovery
 * once the application has started and deregisters it first on shutdown.
 *
 * <pre>{@code
 * @Bean
 * DynamoEndpointRegistration encoder(Connector connector) {
 *     return DynamoEndpointRegistration.of("demo.encoder.generate", (request, responder) -> { ... });
 * }
 * }</pre>
 *
 * @param endpoint the endpoint it serves
 * @param handler  what answers its requests
 */
public record DynamoEndpointRegistration(EndpointId endpoint, DynamoHandler handler) {

    public DynamoEndpointRegistration {
        if (endpoint == null || handler == null) {
            throw new IllegalArgumentException("endpoint and handler must not be null");
        }
    }

    /**
     * The handler serving {@code ns.comp.ep}.
     *
     * @throws IllegalArgumentException unless the path is three non-empty names separated by dots
     */
    public static DynamoEndpointRegistration of(String endpoint, DynamoHandler handler) {
        return new DynamoEndpointRegistration(EndpointId.parse(endpoint), handler);
    }
}
