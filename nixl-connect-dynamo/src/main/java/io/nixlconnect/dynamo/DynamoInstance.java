package io.nixlconnect.dynamo;

import org.jspecify.annotations.Nullable;

/**
 * One instance serving an endpoint, as its discovery record describes it.
 *
 * @param endpoint   the endpoint it serves
 * @param instanceId its id: a 64-bit unsigned number (an etcd lease id, or a random one with file discovery), shown
 *                   in hex by {@link #instanceIdHex()}
 * @param host       the host its TCP request plane listens on
 * @param port       that port
 * @param subject    the routing path its requests carry ({@code {id:x}/{ns}/{comp}/{ep}})
 * @param codec      the payload codec it asks for ({@code request_plane_codec}; JSON when its record names none)
 * @param deviceType the device it reports ({@code device_type}), or null
 */
public record DynamoInstance(EndpointId endpoint, long instanceId, String host, int port, String subject,
        PayloadCodec codec, @Nullable String deviceType) {

    public DynamoInstance {
        if (endpoint == null || host == null || subject == null || codec == null) {
            throw new IllegalArgumentException("endpoint, host, subject and codec must not be null");
        }
        if (port < 1 || port > 65535) {
            throw new IllegalArgumentException("port must be 1..65535, was " + port);
        }
    }

    /** The instance id in lowercase hex, as Dynamo writes it in keys and paths. */
    public String instanceIdHex() {
        return Long.toHexString(instanceId);
    }

    /** The instance id as the unsigned decimal Dynamo's records and Python's {@code instance_ids()} show. */
    public String instanceIdDecimal() {
        return Long.toUnsignedString(instanceId);
    }
}
