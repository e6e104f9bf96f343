package io.nixlconnect.dynamo;

import java.net.Inet4Address;
import java.net.InetAddress;
import java.net.NetworkInterface;
import java.net.SocketException;
import java.net.URI;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.Enumeration;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Objects;

/**
 * Settings of a {@link DynamoRuntime}; every default is defined here, once. {@link #defaults()} are Dynamo's own
 * defaults; {@link #fromEnvironment()} reads the {@code DYN_*} and {@code ETCD_*} variables a Python worker reads (the
 * table in docs/dynamo.md), so a Java service started beside Python workers finds what they find. Change what differs
 * with {@link #toBuilder()}.
 *
 * @param discoveryBackend      where instances are registered and found ({@code DYN_DISCOVERY_BACKEND}; default etcd)
 * @param fileKvDirectory       the file backend's directory ({@code DYN_FILE_KV}; default {@code $TMPDIR/dynamo_store_kv})
 * @param fileKvTtl             how long a file-backend record lives untouched before it counts as gone (and any
 *                              process may delete it); the owner touches it every third of that, at least every
 *                              second. Dynamo's is {@value #DEFAULT_FILE_KV_TTL_SECONDS} s
 * @param etcdEndpoints         etcd's client URLs ({@code ETCD_ENDPOINTS}, comma-separated; default
 *                              {@code http://localhost:2379}); the first that answers is used
 * @param etcdLeaseTtl          the lease that keeps this runtime's records ({@code ETCD_LEASE_TTL}, seconds; default
 *                              {@value #DEFAULT_ETCD_LEASE_TTL_SECONDS}): they vanish that long after this process
 *                              stops keeping it alive
 * @param etcdRequestTimeout    the most one etcd request may take
 * @param rpcHost               the address this runtime's request-plane server binds and advertises
 *                              ({@code DYN_TCP_RPC_HOST}; default this host's first non-loopback IPv4 address, or
 *                              loopback when it has none)
 * @param rpcPort               its port ({@code DYN_TCP_RPC_PORT}; 0, the default: any free port)
 * @param responseStreamHost    the address this runtime's callers listen on for workers calling home
 *                              ({@code DYN_TCP_RESPONSE_STREAM_HOST}; default as {@code rpcHost})
 * @param responseStreamPort    its port ({@code DYN_TCP_RESPONSE_STREAM_PORT}; 0: any free port)
 * @param servedCodec           the payload codec this runtime's endpoints ask callers for ({@code request_plane_codec};
 *                              {@code DYN_REQUEST_PLANE_CODEC}; default msgpack, as Dynamo 1.6's workers). Requests
 *                              in either codec are served, each answered in its own
 * @param maxMessageSize        the largest frame read or written, in bytes ({@code DYN_TCP_MAX_MESSAGE_SIZE}; default
 *                              {@value #DEFAULT_MAX_MESSAGE_SIZE}, Dynamo's): a larger one is refused before any of it is
 *                              allocated
 * @param connectTimeout        the most opening a connection to a worker, or a worker's call home, may take
 * @param ackTimeout            the most a worker may take to acknowledge (or refuse) a request
 * @param callHomeTimeout       the most a worker may take, after acknowledging, to open the response stream and send
 *                              its prologue (Dynamo waits {@value #DEFAULT_CALL_HOME_TIMEOUT_SECONDS} s)
 * @param streamIdleTimeout     the most a caller waits for a stream's next frame
 * @param frameReadTimeout      the most one frame may take to arrive once its first byte has (slow or truncated
 *                              frames end their connection then, whoever sent them)
 * @param maxConcurrentRequests requests this runtime's endpoints handle at once, all endpoints together; one more is
 *                              refused with Dynamo's {@code "Server overloaded: worker at capacity"}
 * @param maxServerConnections  request-plane connections the server holds at once; more are closed on arrival
 * @param shutdownGrace         how long closing waits for requests in flight to finish, after deregistering and
 *                              before closing their streams
 * @param requestConnectionIdleTimeout how long a caller keeps a request-plane connection to a worker that carries
 *                              no request; then it is closed, and the next call opens a new one
 *                              ({@code DYN_TCP_HOST_IDLE_TTL_SECS}, seconds; default
 *                              {@value #DEFAULT_REQUEST_CONNECTION_IDLE_TIMEOUT_SECONDS}, Dynamo's idle host TTL)
 * @param serverConnectionIdleTimeout how long the request-plane server keeps an accepted connection that brings no
 *                              request frame; then it is closed (Dynamo's own worker never closes one; this bounds
 *                              what a caller that vanished without closing holds). Default
 *                              {@value #DEFAULT_SERVER_CONNECTION_IDLE_TIMEOUT_SECONDS} s: longer than any Dynamo
 *                              1.6 caller keeps an idle connection (its idle host TTL, swept every half TTL), so a
 *                              worker never closes one such a caller is about to reuse
 */
public record DynamoSettings(DiscoveryBackend discoveryBackend, Path fileKvDirectory, Duration fileKvTtl,
        List<URI> etcdEndpoints, Duration etcdLeaseTtl, Duration etcdRequestTimeout, String rpcHost, int rpcPort,
        String responseStreamHost, int responseStreamPort, PayloadCodec servedCodec, int maxMessageSize,
        Duration connectTimeout, Duration ackTimeout, Duration callHomeTimeout, Duration streamIdleTimeout,
        Duration frameReadTimeout, int maxConcurrentRequests, int maxServerConnections, Duration shutdownGrace,
        Duration requestConnectionIdleTimeout, Duration serverConnectionIdleTimeout) {

    /** Dynamo's default discovery backend. */
    public static final DiscoveryBackend DEFAULT_DISCOVERY_BACKEND = DiscoveryBackend.ETCD;
    /** Default {@link #fileKvTtl}, in seconds (Dynamo's). */
    public static final int DEFAULT_FILE_KV_TTL_SECONDS = 10;
    /** Default {@link #etcdEndpoints}. */
    public static final String DEFAULT_ETCD_ENDPOINT = "http://localhost:2379";
    /** Default {@link #etcdLeaseTtl}, in seconds (Dynamo's). */
    public static final int DEFAULT_ETCD_LEASE_TTL_SECONDS = 30;
    /** Default {@link #etcdRequestTimeout}. */
    public static final Duration DEFAULT_ETCD_REQUEST_TIMEOUT = Duration.ofSeconds(5);
    /** Default {@link #maxMessageSize}: 32 MiB, Dynamo's. */
    public static final int DEFAULT_MAX_MESSAGE_SIZE = 32 * 1024 * 1024;
    /** Smallest {@link #maxMessageSize} accepted: room for a request's control header. */
    public static final int MIN_MAX_MESSAGE_SIZE = 4096;
    /** Default {@link #connectTimeout}. */
    public static final Duration DEFAULT_CONNECT_TIMEOUT = Duration.ofSeconds(5);
    /** Default {@link #ackTimeout}. */
    public static final Duration DEFAULT_ACK_TIMEOUT = Duration.ofSeconds(10);
    /** Default {@link #callHomeTimeout}, in seconds (Dynamo's). */
    public static final int DEFAULT_CALL_HOME_TIMEOUT_SECONDS = 10;
    /** Default {@link #streamIdleTimeout}. */
    public static final Duration DEFAULT_STREAM_IDLE_TIMEOUT = Duration.ofMinutes(5);
    /** Default {@link #frameReadTimeout}. */
    public static final Duration DEFAULT_FRAME_READ_TIMEOUT = Duration.ofSeconds(30);
    /** Default {@link #maxConcurrentRequests}. */
    public static final int DEFAULT_MAX_CONCURRENT_REQUESTS = 256;
    /** Default {@link #maxServerConnections}. */
    public static final int DEFAULT_MAX_SERVER_CONNECTIONS = 1024;
    /** Default {@link #shutdownGrace}. */
    public static final Duration DEFAULT_SHUTDOWN_GRACE = Duration.ofSeconds(10);
    /** Default {@link #requestConnectionIdleTimeout}, in seconds (Dynamo 1.6's {@code DYN_TCP_HOST_IDLE_TTL_SECS}). */
    public static final int DEFAULT_REQUEST_CONNECTION_IDLE_TIMEOUT_SECONDS = 300;
    /** Default {@link #serverConnectionIdleTimeout}, in seconds: twice the callers' default. */
    public static final int DEFAULT_SERVER_CONNECTION_IDLE_TIMEOUT_SECONDS = 600;

    public DynamoSettings {
        Objects.requireNonNull(discoveryBackend, "discoveryBackend");
        Objects.requireNonNull(fileKvDirectory, "fileKvDirectory");
        requirePositive(fileKvTtl, "fileKvTtl");
        if (fileKvTtl.compareTo(Duration.ofSeconds(1)) < 0) {
            throw new IllegalArgumentException("fileKvTtl must be at least 1 s (it is touched every third of it, at"
                    + " least every second), was " + fileKvTtl);
        }
        if (etcdEndpoints == null || etcdEndpoints.isEmpty()) {
            throw new IllegalArgumentException("etcdEndpoints must name at least one URL");
        }
        for (URI uri : etcdEndpoints) {
            if (uri == null || uri.getScheme() == null || uri.getHost() == null
                    || !(uri.getScheme().equals("http") || uri.getScheme().equals("https"))) {
                throw new IllegalArgumentException("etcd endpoints must be http:// or https:// URLs with a host, was "
                        + uri);
            }
        }
        etcdEndpoints = List.copyOf(etcdEndpoints);
        requirePositive(etcdLeaseTtl, "etcdLeaseTtl");
        if (etcdLeaseTtl.toSeconds() < 2) {
            throw new IllegalArgumentException("etcdLeaseTtl must be at least 2 s, was " + etcdLeaseTtl);
        }
        requirePositive(etcdRequestTimeout, "etcdRequestTimeout");
        requireHost(rpcHost, "rpcHost");
        requirePort(rpcPort, "rpcPort");
        requireHost(responseStreamHost, "responseStreamHost");
        requirePort(responseStreamPort, "responseStreamPort");
        Objects.requireNonNull(servedCodec, "servedCodec");
        if (maxMessageSize < MIN_MAX_MESSAGE_SIZE) {
            throw new IllegalArgumentException("maxMessageSize must be at least " + MIN_MAX_MESSAGE_SIZE + " bytes, was "
                    + maxMessageSize);
        }
        requirePositive(connectTimeout, "connectTimeout");
        requirePositive(ackTimeout, "ackTimeout");
        requirePositive(callHomeTimeout, "callHomeTimeout");
        requirePositive(streamIdleTimeout, "streamIdleTimeout");
        requirePositive(frameReadTimeout, "frameReadTimeout");
        if (maxConcurrentRequests < 1) {
            throw new IllegalArgumentException("maxConcurrentRequests must be >= 1, was " + maxConcurrentRequests);
        }
        if (maxServerConnections < 1) {
            throw new IllegalArgumentException("maxServerConnections must be >= 1, was " + maxServerConnections);
        }
        if (shutdownGrace == null || shutdownGrace.isNegative()) {
            throw new IllegalArgumentException("shutdownGrace must be zero or positive, was " + shutdownGrace);
        }
        requirePositive(requestConnectionIdleTimeout, "requestConnectionIdleTimeout");
        requirePositive(serverConnectionIdleTimeout, "serverConnectionIdleTimeout");
    }

    private static void requirePositive(Duration duration, String name) {
        if (duration == null || duration.isNegative() || duration.isZero()) {
            throw new IllegalArgumentException(name + " must be positive, was " + duration);
        }
    }

    private static void requireHost(String host, String name) {
        if (host == null || host.isBlank()) {
            throw new IllegalArgumentException(name + " must not be blank");
        }
    }

    private static void requirePort(int port, String name) {
        if (port < 0 || port > 65535) {
            throw new IllegalArgumentException(name + " must be 0..65535, was " + port);
        }
    }

    /** Dynamo's defaults, with no environment read: etcd on localhost, this host's address, any free ports. */
    public static DynamoSettings defaults() {
        return fromEnvironment(Map.of());
    }

    /** {@link #defaults()} overridden by this process's {@code DYN_*} and {@code ETCD_*} environment variables. */
    public static DynamoSettings fromEnvironment() {
        return fromEnvironment(System.getenv());
    }

    /**
     * {@link #defaults()} overridden by the {@code DYN_*} and {@code ETCD_*} variables in {@code environment}, read as
     * a Python worker reads them.
     *
     * @throws IllegalArgumentException naming the variable whose value cannot be read, or that asks for something not
     *                                  supported (a NATS request plane, a QUIC response plane, Kubernetes discovery,
     *                                  etcd authentication)
     */
    public static DynamoSettings fromEnvironment(Map<String, String> environment) {
        Builder builder = new Builder();
        String backend = value(environment, "DYN_DISCOVERY_BACKEND");
        if (backend != null) {
            builder.discoveryBackend(variable("DYN_DISCOVERY_BACKEND", backend, DiscoveryBackend::fromName));
        }
        String tmp = value(environment, "TMPDIR");
        builder.fileKvDirectory(Path.of(tmp != null ? tmp : "/tmp", "dynamo_store_kv"));
        String fileKv = value(environment, "DYN_FILE_KV");
        if (fileKv != null) {
            builder.fileKvDirectory(Path.of(fileKv));
        }
        String endpoints = value(environment, "ETCD_ENDPOINTS");
        if (endpoints != null) {
            builder.etcdEndpoints(variable("ETCD_ENDPOINTS", endpoints, DynamoSettings::parseEndpoints));
        }
        String leaseTtl = value(environment, "ETCD_LEASE_TTL");
        if (leaseTtl != null) {
            builder.etcdLeaseTtl(Duration.ofSeconds(variable("ETCD_LEASE_TTL", leaseTtl, Long::parseLong)));
        }
        if (value(environment, "ETCD_AUTH_USERNAME") != null || value(environment, "ETCD_AUTH_CLIENT_CERT") != null) {
            throw new IllegalArgumentException("ETCD_AUTH_USERNAME / ETCD_AUTH_CLIENT_CERT: etcd authentication is not"
                    + " supported by nixl-connect-dynamo yet (docs/dynamo.md)");
        }
        String rpcHost = value(environment, "DYN_TCP_RPC_HOST");
        String host = rpcHost != null ? rpcHost : defaultHost();
        builder.rpcHost(host);
        String rpcPort = value(environment, "DYN_TCP_RPC_PORT");
        if (rpcPort != null) {
            builder.rpcPort(variable("DYN_TCP_RPC_PORT", rpcPort, Integer::parseInt));
        }
        String streamHost = value(environment, "DYN_TCP_RESPONSE_STREAM_HOST");
        builder.responseStreamHost(streamHost != null ? streamHost : host);
        String streamPort = value(environment, "DYN_TCP_RESPONSE_STREAM_PORT");
        if (streamPort != null) {
            builder.responseStreamPort(variable("DYN_TCP_RESPONSE_STREAM_PORT", streamPort, Integer::parseInt));
        }
        String codec = value(environment, "DYN_REQUEST_PLANE_CODEC");
        if (codec != null) {
            builder.servedCodec(variable("DYN_REQUEST_PLANE_CODEC", codec, PayloadCodec::fromWireName));
        }
        String maxMessage = value(environment, "DYN_TCP_MAX_MESSAGE_SIZE");
        if (maxMessage != null) {
            builder.maxMessageSize(variable("DYN_TCP_MAX_MESSAGE_SIZE", maxMessage, Integer::parseInt));
        }
        String hostIdleTtl = value(environment, "DYN_TCP_HOST_IDLE_TTL_SECS");
        if (hostIdleTtl != null) {
            builder.requestConnectionIdleTimeout(Duration.ofSeconds(variable("DYN_TCP_HOST_IDLE_TTL_SECS", hostIdleTtl,
                    DynamoSettings::positiveSeconds)));
        }
        String requestPlane = value(environment, "DYN_REQUEST_PLANE");
        if (requestPlane != null && !requestPlane.trim().equalsIgnoreCase("tcp")) {
            throw new IllegalArgumentException("DYN_REQUEST_PLANE=" + requestPlane + " is not supported by"
                    + " nixl-connect-dynamo (Dynamo " + DynamoRuntime.SUPPORTED_VERSION + "): only tcp, Dynamo 1.6's"
                    + " default (docs/dynamo.md)");
        }
        String responsePlane = value(environment, "DYN_RESPONSE_PLANE");
        if (responsePlane != null && !responsePlane.trim().equalsIgnoreCase("tcp")) {
            throw new IllegalArgumentException("DYN_RESPONSE_PLANE=" + responsePlane + " is not supported by"
                    + " nixl-connect-dynamo (Dynamo " + DynamoRuntime.SUPPORTED_VERSION + "): only tcp, Dynamo 1.6's"
                    + " default (docs/dynamo.md)");
        }
        return builder.build();
    }

    private static String value(Map<String, String> environment, String name) {
        String value = environment.get(name);
        return value == null || value.isBlank() ? null : value.trim();
    }

    private interface Parser<T> {
        T parse(String text);
    }

    private static <T> T variable(String name, String value, Parser<T> parser) {
        try {
            return parser.parse(value);
        } catch (RuntimeException e) {
            throw new IllegalArgumentException(name + "=" + value + ": " + e.getMessage(), e);
        }
    }

    private static long positiveSeconds(String text) {
        long seconds = Long.parseLong(text);
        if (seconds < 1) {
            throw new IllegalArgumentException("must be at least 1 second");
        }
        return seconds;
    }

    private static List<URI> parseEndpoints(String text) {
        List<URI> uris = new ArrayList<>();
        for (String part : text.split(",")) {
            String trimmed = part.trim();
            if (!trimmed.isEmpty()) {
                uris.add(URI.create(trimmed.contains("://") ? trimmed : "http://" + trimmed));
            }
        }
        return uris;
    }

    /** This host's first non-loopback IPv4 address (Dynamo advertises a routable one), or loopback without one. */
    static String defaultHost() {
        try {
            Enumeration<NetworkInterface> interfaces = NetworkInterface.getNetworkInterfaces();
            List<NetworkInterface> sorted = interfaces == null ? List.of() : Collections.list(interfaces);
            for (NetworkInterface network : sorted) {
                if (!network.isUp() || network.isLoopback()) {
                    continue;
                }
                for (InetAddress address : Collections.list(network.getInetAddresses())) {
                    if (address instanceof Inet4Address && !address.isLoopbackAddress() && !address.isLinkLocalAddress()) {
                        return address.getHostAddress();
                    }
                }
            }
        } catch (SocketException e) {
            // fall through to loopback, as Dynamo does when it finds no routable address
        }
        return "127.0.0.1";
    }

    /** A builder starting from these settings. */
    public Builder toBuilder() {
        return new Builder(this);
    }

    /** A builder starting from {@link #defaults()}. */
    public static Builder builder() {
        return defaults().toBuilder();
    }

    @Override
    public String toString() {
        return "DynamoSettings[discovery=" + discoveryBackend.wireName() + (discoveryBackend == DiscoveryBackend.FILE
                ? " " + fileKvDirectory : " " + etcdEndpoints) + ", rpc=" + rpcHost + ":" + rpcPort + ", responseStream="
                + responseStreamHost + ":" + responseStreamPort + ", servedCodec=" + servedCodec.wireName().toLowerCase(Locale.ROOT)
                + ", maxMessageSize=" + maxMessageSize + ", maxConcurrentRequests=" + maxConcurrentRequests + "]";
    }

    /** Builds {@link DynamoSettings}; each setter names the record component it sets. */
    public static final class Builder {
        private DiscoveryBackend discoveryBackend = DEFAULT_DISCOVERY_BACKEND;
        private Path fileKvDirectory = Path.of("/tmp", "dynamo_store_kv");
        private Duration fileKvTtl = Duration.ofSeconds(DEFAULT_FILE_KV_TTL_SECONDS);
        private List<URI> etcdEndpoints = List.of(URI.create(DEFAULT_ETCD_ENDPOINT));
        private Duration etcdLeaseTtl = Duration.ofSeconds(DEFAULT_ETCD_LEASE_TTL_SECONDS);
        private Duration etcdRequestTimeout = DEFAULT_ETCD_REQUEST_TIMEOUT;
        private String rpcHost = "127.0.0.1";
        private int rpcPort;
        private String responseStreamHost = "127.0.0.1";
        private int responseStreamPort;
        private PayloadCodec servedCodec = PayloadCodec.MSGPACK;
        private int maxMessageSize = DEFAULT_MAX_MESSAGE_SIZE;
        private Duration connectTimeout = DEFAULT_CONNECT_TIMEOUT;
        private Duration ackTimeout = DEFAULT_ACK_TIMEOUT;
        private Duration callHomeTimeout = Duration.ofSeconds(DEFAULT_CALL_HOME_TIMEOUT_SECONDS);
        private Duration streamIdleTimeout = DEFAULT_STREAM_IDLE_TIMEOUT;
        private Duration frameReadTimeout = DEFAULT_FRAME_READ_TIMEOUT;
        private int maxConcurrentRequests = DEFAULT_MAX_CONCURRENT_REQUESTS;
        private int maxServerConnections = DEFAULT_MAX_SERVER_CONNECTIONS;
        private Duration shutdownGrace = DEFAULT_SHUTDOWN_GRACE;
        private Duration requestConnectionIdleTimeout = Duration.ofSeconds(DEFAULT_REQUEST_CONNECTION_IDLE_TIMEOUT_SECONDS);
        private Duration serverConnectionIdleTimeout = Duration.ofSeconds(DEFAULT_SERVER_CONNECTION_IDLE_TIMEOUT_SECONDS);

        private Builder() {
        }

        private Builder(DynamoSettings s) {
            discoveryBackend = s.discoveryBackend;
            fileKvDirectory = s.fileKvDirectory;
            fileKvTtl = s.fileKvTtl;
            etcdEndpoints = s.etcdEndpoints;
            etcdLeaseTtl = s.etcdLeaseTtl;
            etcdRequestTimeout = s.etcdRequestTimeout;
            rpcHost = s.rpcHost;
            rpcPort = s.rpcPort;
            responseStreamHost = s.responseStreamHost;
            responseStreamPort = s.responseStreamPort;
            servedCodec = s.servedCodec;
            maxMessageSize = s.maxMessageSize;
            connectTimeout = s.connectTimeout;
            ackTimeout = s.ackTimeout;
            callHomeTimeout = s.callHomeTimeout;
            streamIdleTimeout = s.streamIdleTimeout;
            frameReadTimeout = s.frameReadTimeout;
            maxConcurrentRequests = s.maxConcurrentRequests;
            maxServerConnections = s.maxServerConnections;
            shutdownGrace = s.shutdownGrace;
            requestConnectionIdleTimeout = s.requestConnectionIdleTimeout;
            serverConnectionIdleTimeout = s.serverConnectionIdleTimeout;
        }

        public Builder discoveryBackend(DiscoveryBackend value) {
            discoveryBackend = value;
            return this;
        }

        public Builder fileKvDirectory(Path value) {
            fileKvDirectory = value;
            return this;
        }

        public Builder fileKvTtl(Duration value) {
            fileKvTtl = value;
            return this;
        }

        public Builder etcdEndpoints(List<URI> value) {
            etcdEndpoints = value;
            return this;
        }

        public Builder etcdLeaseTtl(Duration value) {
            etcdLeaseTtl = value;
            return this;
        }

        public Builder etcdRequestTimeout(Duration value) {
            etcdRequestTimeout = value;
            return this;
        }

        public Builder rpcHost(String value) {
            rpcHost = value;
            return this;
        }

        public Builder rpcPort(int value) {
            rpcPort = value;
            return this;
        }

        public Builder responseStreamHost(String value) {
            responseStreamHost = value;
            return this;
        }

        public Builder responseStreamPort(int value) {
            responseStreamPort = value;
            return this;
        }

        public Builder servedCodec(PayloadCodec value) {
            servedCodec = value;
            return this;
        }

        public Builder maxMessageSize(int value) {
            maxMessageSize = value;
            return this;
        }

        public Builder connectTimeout(Duration value) {
            connectTimeout = value;
            return this;
        }

        public Builder ackTimeout(Duration value) {
            ackTimeout = value;
            return this;
        }

        public Builder callHomeTimeout(Duration value) {
            callHomeTimeout = value;
            return this;
        }

        public Builder streamIdleTimeout(Duration value) {
            streamIdleTimeout = value;
            return this;
        }

        public Builder frameReadTimeout(Duration value) {
            frameReadTimeout = value;
            return this;
        }

        public Builder maxConcurrentRequests(int value) {
            maxConcurrentRequests = value;
            return this;
        }

        public Builder maxServerConnections(int value) {
            maxServerConnections = value;
            return this;
        }

        public Builder shutdownGrace(Duration value) {
            shutdownGrace = value;
            return this;
        }

        public Builder requestConnectionIdleTimeout(Duration value) {
            requestConnectionIdleTimeout = value;
            return this;
        }

        public Builder serverConnectionIdleTimeout(Duration value) {
            serverConnectionIdleTimeout = value;
            return this;
        }

        /** @throws IllegalArgumentException naming a setting out of range */
        public DynamoSettings build() {
            return new DynamoSettings(discoveryBackend, fileKvDirectory, fileKvTtl, etcdEndpoints, etcdLeaseTtl,
                    etcdRequestTimeout, rpcHost, rpcPort, responseStreamHost, responseStreamPort, servedCodec,
                    maxMessageSize, connectTimeout, ackTimeout, callHomeTimeout, streamIdleTimeout, frameReadTimeout,
                    maxConcurrentRequests, maxServerConnections, shutdownGrace, requestConnectionIdleTimeout,
                    serverConnectionIdleTimeout);
        }
    }
}
