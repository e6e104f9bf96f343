package io.nixlconnect.dynamo.internal.discovery;

import io.nixlconnect.dynamo.DynamoInstance;
import io.nixlconnect.dynamo.DynamoProtocolException;
import io.nixlconnect.dynamo.DynamoRuntime;
import io.nixlconnect.dynamo.EndpointId;
import io.nixlconnect.dynamo.PayloadCodec;
import io.nixlconnect.dynamo.internal.codec.JsonValues;
import java.math.BigInteger;
import java.util.LinkedHashMap;
import java.util.Map;

/**
 * An endpoint instance's discovery record, as Dynamo 1.6 writes it under
 * {@code v1/instances/{ns}/{comp}/{ep}/{id:x}}:
 * {@code {"type":"Endpoint","component":…,"endpoint":…,"namespace":…,"instance_id":…,"transport":{"tcp":"host:port/subject"},
 * "device_type":"cpu","request_plane_codec":"msgpack"}}.
 */
public final class InstanceRecord {

    /** The prefix of every instance key. */
    public static final String PREFIX = "v1/instances/";
    /** Largest record read: Dynamo's are a few hundred bytes. */
    public static final int MAX_RECORD = 64 * 1024;

    private static final String VERSION = "Dynamo " + DynamoRuntime.SUPPORTED_VERSION;

    private InstanceRecord() {
    }

    /** The key of an instance: {@code v1/instances/{ns}/{comp}/{ep}/{id:x}}. */
    public static String key(EndpointId endpoint, long instanceId) {
        return endpointPrefix(endpoint) + Long.toHexString(instanceId);
    }

    /** The prefix of an endpoint's instance keys (with the trailing slash). */
    public static String endpointPrefix(EndpointId endpoint) {
        return PREFIX + endpoint.namespace() + "/" + endpoint.component() + "/" + endpoint.endpoint() + "/";
    }

    /** The routing path of an instance's requests: {@code {id:x}/{ns}/{comp}/{ep}}. */
    public static String subject(EndpointId endpoint, long instanceId) {
        return Long.toHexString(instanceId) + "/" + endpoint.namespace() + "/" + endpoint.component() + "/"
                + endpoint.endpoint();
    }

    public static byte[] write(DynamoInstance instance) {
        Map<String, Object> record = new LinkedHashMap<>();
        record.put("type", "Endpoint");
        record.put("component", instance.endpoint().component());
        record.put("endpoint", instance.endpoint().endpoint());
        record.put("namespace", instance.endpoint().namespace());
        long id = instance.instanceId();
        record.put("instance_id", id >= 0 ? (Object) id : new BigInteger(Long.toUnsignedString(id)));
        record.put("transport", Map.of("tcp", instance.host() + ":" + instance.port() + "/" + instance.subject()));
        if (instance.deviceType() != null) {
            record.put("device_type", instance.deviceType());
        }
        record.put("request_plane_codec", instance.codec().wireName());
        return JsonValues.write(record);
    }

    /**
     * Reads a record.
     *
     * @return the instance, or null when the record is not an endpoint's (another type of Dynamo record)
     * @throws DynamoProtocolException if it is garbage, too large, or names a transport not spoken here
     */
    public static DynamoInstance parse(byte[] bytes) {
        if (bytes.length > MAX_RECORD) {
            throw new DynamoProtocolException("discovery record of " + bytes.length + " bytes is larger than "
                    + MAX_RECORD);
        }
        Object document = JsonValues.parse(bytes, MAX_RECORD);
        if (!(document instanceof Map<?, ?> map)) {
            throw new DynamoProtocolException("discovery record is not a JSON object");
        }
        Object type = map.get("type");
        if (!"Endpoint".equals(type)) {
            throw new DynamoProtocolException("discovery record's type is " + type + ", not Endpoint (" + VERSION + ")");
        }
        EndpointId endpoint;
        try {
            endpoint = new EndpointId(text(map, "namespace"), text(map, "component"), text(map, "endpoint"));
        } catch (IllegalArgumentException e) {
            throw new DynamoProtocolException("discovery record names an invalid endpoint: " + e.getMessage());
        }
        Object idValue = map.get("instance_id");
        long instanceId;
        if (idValue instanceof Long id && id >= 0) {
            instanceId = id;
        } else if (idValue instanceof BigInteger big && big.signum() >= 0 && big.bitLength() <= 64) {
            instanceId = big.longValue();
        } else {
            throw new DynamoProtocolException("discovery record's instance_id is not an unsigned 64-bit integer");
        }
        Object transport = map.get("transport");
        if (!(transport instanceof Map<?, ?> transports)) {
            throw new DynamoProtocolException("discovery record has no transport object");
        }
        Object tcp = transports.get("tcp");
        if (!(tcp instanceof String address)) {
            throw new DynamoProtocolException("discovery record's transport " + transports.keySet()
                    + " is not spoken here: " + VERSION + " workers on the TCP request plane name \"tcp\" (NATS is not"
                    + " supported)");
        }
        int slash = address.indexOf('/');
        if (slash <= 0 || slash == address.length() - 1) {
            throw new DynamoProtocolException("discovery record's tcp transport \"" + address
                    + "\" is not host:port/path");
        }
        String hostPort = address.substring(0, slash);
        String subject = address.substring(slash + 1);
        int colon = hostPort.lastIndexOf(':');
        if (colon <= 0) {
            throw new DynamoProtocolException("discovery record's tcp address \"" + hostPort + "\" has no port");
        }
        String host = hostPort.substring(0, colon);
        if (host.startsWith("[") && host.endsWith("]")) {
            host = host.substring(1, host.length() - 1);
        }
        int port;
        try {
            port = Integer.parseInt(hostPort.substring(colon + 1));
        } catch (NumberFormatException e) {
            throw new DynamoProtocolException("discovery record's tcp address \"" + hostPort + "\" has no port number");
        }
        if (port < 1 || port > 65535) {
            throw new DynamoProtocolException("discovery record's tcp port " + port + " is out of range");
        }
        Object codecName = map.get("request_plane_codec");
        PayloadCodec codec;
        if (codecName == null) {
            codec = PayloadCodec.JSON;
        } else {
            try {
                codec = PayloadCodec.fromWireName(String.valueOf(codecName));
            } catch (IllegalArgumentException e) {
                throw new DynamoProtocolException("discovery record's request_plane_codec " + codecName
                        + " is not spoken here (" + VERSION + ": json or msgpack)");
            }
        }
        Object device = map.get("device_type");
        return new DynamoInstance(endpoint, instanceId, host, port, subject, codec,
                device instanceof String deviceText ? deviceText : null);
    }

    private static String text(Map<?, ?> map, String field) {
        Object value = map.get(field);
        if (!(value instanceof String text)) {
            throw new DynamoProtocolException("discovery record has no string " + field);
        }
        return text;
    }
}
