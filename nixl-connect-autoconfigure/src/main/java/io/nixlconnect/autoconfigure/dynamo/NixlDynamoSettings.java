package io.nixlconnect.autoconfigure.dynamo;

import io.nixlconnect.dynamo.DynamoSettings;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.springframework.core.env.Environment;

/**
 * Maps {@code nixl.connect.dynamo.*} onto {@link DynamoSettings}, in one place: the Dynamo environment first, as
 * {@link DynamoSettings#fromEnvironment(Map)} reads it for a Python worker, then each property that is set.
 */
public final class NixlDynamoSettings {

    /**
     * The variables {@link DynamoSettings#fromEnvironment(Map)} reads, looked up in Spring's {@link Environment} (so
     * the OS environment, and any property source that sets one of these names). {@code NixlDynamoPropertiesTests}
     * checks this list against what the module reads.
     */
    public static final List<String> VARIABLES = List.of("DYN_DISCOVERY_BACKEND", "TMPDIR", "DYN_FILE_KV",
            "ETCD_ENDPOINTS", "ETCD_LEASE_TTL", "ETCD_AUTH_USERNAME", "ETCD_AUTH_CLIENT_CERT", "DYN_TCP_RPC_HOST",
            "DYN_TCP_RPC_PORT", "DYN_TCP_RESPONSE_STREAM_HOST", "DYN_TCP_RESPONSE_STREAM_PORT",
            "DYN_REQUEST_PLANE_CODEC", "DYN_TCP_MAX_MESSAGE_SIZE", "DYN_TCP_HOST_IDLE_TTL_SECS", "DYN_REQUEST_PLANE",
            "DYN_RESPONSE_PLANE");

    private NixlDynamoSettings() {
    }

    /** The Dynamo variables Spring's environment holds. */
    public static Map<String, String> dynamoEnvironment(Environment environment) {
        Map<String, String> variables = new LinkedHashMap<>();
        for (String name : VARIABLES) {
            String value = environment.getProperty(name);
            if (value != null) {
                variables.put(name, value);
            }
        }
        return variables;
    }

    /**
     * The settings: {@code dynamoEnvironment} read as a Python worker reads it, overridden by each property set.
     *
     * @throws IllegalArgumentException naming the variable or the setting whose value is refused
     */
    public static DynamoSettings settings(NixlDynamoProperties properties, Map<String, String> dynamoEnvironment) {
        DynamoSettings.Builder builder = DynamoSettings.fromEnvironment(dynamoEnvironment).toBuilder();
        if (properties.getDiscoveryBackend() != null) {
            builder.discoveryBackend(properties.getDiscoveryBackend());
        }
        if (properties.getFileKvDirectory() != null) {
            builder.fileKvDirectory(properties.getFileKvDirectory());
        }
        if (properties.getEtcdEndpoints() != null) {
            builder.etcdEndpoints(properties.getEtcdEndpoints());
        }
        if (properties.getEtcdLeaseTtl() != null) {
            builder.etcdLeaseTtl(properties.getEtcdLeaseTtl());
        }
        if (properties.getRpcHost() != null) {
            builder.rpcHost(properties.getRpcHost());
            // The response stream's host follows the RPC host unless it is set itself, as with the variables.
            if (properties.getResponseStreamHost() == null
                    && blank(dynamoEnvironment.get("DYN_TCP_RESPONSE_STREAM_HOST"))) {
                builder.responseStreamHost(properties.getRpcHost());
            }
        }
        if (properties.getRpcPort() != null) {
            builder.rpcPort(properties.getRpcPort());
        }
        if (properties.getResponseStreamHost() != null) {
            builder.responseStreamHost(properties.getResponseStreamHost());
        }
        if (properties.getResponseStreamPort() != null) {
            builder.responseStreamPort(properties.getResponseStreamPort());
        }
        if (properties.getServedCodec() != null) {
            builder.servedCodec(properties.getServedCodec());
        }
        if (properties.getMaxMessageSize() != null) {
            long bytes = properties.getMaxMessageSize().toBytes();
            if (bytes > Integer.MAX_VALUE) {
                throw new IllegalArgumentException("maxMessageSize must be at most " + Integer.MAX_VALUE
                        + " bytes, was " + bytes);
            }
            builder.maxMessageSize((int) bytes);
        }
        if (properties.getRequestConnectionIdleTimeout() != null) {
            builder.requestConnectionIdleTimeout(properties.getRequestConnectionIdleTimeout());
        }
        return builder.fileKvTtl(properties.getFileKvTtl())
                .etcdRequestTimeout(properties.getEtcdRequestTimeout())
                .connectTimeout(properties.getConnectTimeout())
                .ackTimeout(properties.getAckTimeout())
                .callHomeTimeout(properties.getCallHomeTimeout())
                .streamIdleTimeout(properties.getStreamIdleTimeout())
                .frameReadTimeout(properties.getFrameReadTimeout())
                .maxConcurrentRequests(properties.getMaxConcurrentRequests())
                .maxServerConnections(properties.getMaxServerConnections())
                .shutdownGrace(properties.getShutdownGrace())
                .serverConnectionIdleTimeout(properties.getServerConnectionIdleTimeout())
                .build();
    }

    private static boolean blank(String value) {
        return value == null || value.isBlank();
    }
}
