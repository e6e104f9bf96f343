package io.nixlconnect.autoconfigure.dynamo;

import io.nixlconnect.dynamo.DiscoveryBackend;
import io.nixlconnect.dynamo.DynamoSettings;
import io.nixlconnect.dynamo.PayloadCodec;
import java.net.URI;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import org.springframework.boot.context.properties.ConfigurationProperties;
import org.springframework.util.unit.DataSize;
import org.springframework.validation.Errors;
import org.springframework.validation.Validator;

/**
 * Settings of the auto-configured {@code DynamoRuntime}, bound from {@code nixl.connect.dynamo.*}: each property is
 * the {@link DynamoSettings} component of the same name. Those a Dynamo variable covers ({@code DYN_*},
 * {@code ETCD_*}) are unset by default, and then take the variable's value as a Python worker reads it, or Dynamo's
 * default without one; the others default to {@link DynamoSettings}' own constants. {@link NixlDynamoSettings} maps
 * them, in one place. Validated as bound: a value {@link DynamoSettings} refuses stops start-up naming it.
 */
@ConfigurationProperties("nixl.connect.dynamo")
public class NixlDynamoProperties implements Validator {

    /**
     * Whether to auto-configure a DynamoRuntime (discovery, calling and serving Dynamo endpoints) with its
     * integrations. Off unless asked for: it reads and writes Dynamo's discovery.
     */
    private boolean enabled;

    /** Where instances are registered and found: 'file' or 'etcd'. Unset: DYN_DISCOVERY_BACKEND, else etcd. */
    private DiscoveryBackend discoveryBackend;

    /** The file backend's shared directory. Unset: DYN_FILE_KV, else $TMPDIR/dynamo_store_kv. */
    private Path fileKvDirectory;

    /** How long a file-backend record lives untouched; the owner touches it every third of that. At least 1s. */
    private Duration fileKvTtl = Duration.ofSeconds(DynamoSettings.DEFAULT_FILE_KV_TTL_SECONDS);

    /** etcd's client URLs (http:// or https://), the first that answers is used. Unset: ETCD_ENDPOINTS, else http://localhost:2379. */
    private List<URI> etcdEndpoints;

    /** The lease that keeps this runtime's etcd records alive. Unset: ETCD_LEASE_TTL (seconds), else 30s. At least 2s. */
    private Duration etcdLeaseTtl;

    /** The most one etcd request may take. */
    private Duration etcdRequestTimeout = DynamoSettings.DEFAULT_ETCD_REQUEST_TIMEOUT;

    /**
     * Address the request-plane server binds and advertises. Unset: DYN_TCP_RPC_HOST, else this host's first
     * non-loopback IPv4 address (loopback without one).
     */
    private String rpcHost;

    /** Port of the request-plane server. Unset: DYN_TCP_RPC_PORT, else 0 (a free port). */
    private Integer rpcPort;

    /**
     * Address callers listen on for workers calling home. Unset: DYN_TCP_RESPONSE_STREAM_HOST, else as rpc-host.
     */
    private String responseStreamHost;

    /** Port callers listen on for workers calling home. Unset: DYN_TCP_RESPONSE_STREAM_PORT, else 0 (a free port). */
    private Integer responseStreamPort;

    /** Payload codec served endpoints ask callers for: 'msgpack' or 'json'. Unset: DYN_REQUEST_PLANE_CODEC, else msgpack. */
    private PayloadCodec servedCodec;

    /** Largest frame read or written; a larger one is refused before any of it is allocated. Unset: DYN_TCP_MAX_MESSAGE_SIZE, else 32MB. */
    private DataSize maxMessageSize;

    /** The most opening a connection to a worker, or a worker's call home, may take. */
    private Duration connectTimeout = DynamoSettings.DEFAULT_CONNECT_TIMEOUT;

    /** The most a worker may take to acknowledge (or refuse) a request. */
    private Duration ackTimeout = DynamoSettings.DEFAULT_ACK_TIMEOUT;

    /** The most a worker may take, after acknowledging, to call home with the response stream (Dynamo's 10s). */
    private Duration callHomeTimeout = Duration.ofSeconds(DynamoSettings.DEFAULT_CALL_HOME_TIMEOUT_SECONDS);

    /** The most a caller waits for a stream's next frame. */
    private Duration streamIdleTimeout = DynamoSettings.DEFAULT_STREAM_IDLE_TIMEOUT;

    /** The most one frame may take to arrive once begun; slow or truncated frames end their connection then. */
    private Duration frameReadTimeout = DynamoSettings.DEFAULT_FRAME_READ_TIMEOUT;

    /** Requests served at once, all endpoints together; one more is refused with "Server overloaded". At least 1. */
    private int maxConcurrentRequests = DynamoSettings.DEFAULT_MAX_CONCURRENT_REQUESTS;

    /** Request-plane connections the server holds at once; more are closed on arrival. At least 1. */
    private int maxServerConnections = DynamoSettings.DEFAULT_MAX_SERVER_CONNECTIONS;

    /** On shutdown, after deregistering: how long requests in flight get to finish before their streams are closed. */
    private Duration shutdownGrace = DynamoSettings.DEFAULT_SHUTDOWN_GRACE;

    /**
     * How long a caller keeps a request-plane connection to a worker that carries no request; then it is closed.
     * Unset: DYN_TCP_HOST_IDLE_TTL_SECS (seconds), else 300s (Dynamo's).
     */
    private Duration requestConnectionIdleTimeout;

    /**
     * How long the request-plane server keeps an accepted connection that brings no request; then it is closed.
     * Keep it longer than callers keep theirs (Dynamo's: up to 1.5 x 300s).
     */
    private Duration serverConnectionIdleTimeout = Duration.ofSeconds(
            DynamoSettings.DEFAULT_SERVER_CONNECTION_IDLE_TIMEOUT_SECONDS);

    @Override
    public boolean supports(Class<?> type) {
        return NixlDynamoProperties.class.isAssignableFrom(type);
    }

    /** The rules are {@link DynamoSettings}' own: the properties over Dynamo's defaults, without the environment. */
    @Override
    public void validate(Object target, Errors errors) {
        try {
            NixlDynamoSettings.settings((NixlDynamoProperties) target, Map.of());
        } catch (IllegalArgumentException e) {
            errors.reject("nixl.connect.dynamo.invalid", "nixl.connect.dynamo: " + e.getMessage());
        }
    }

    public boolean isEnabled() {
        return enabled;
    }

    public void setEnabled(boolean enabled) {
        this.enabled = enabled;
    }

    public DiscoveryBackend getDiscoveryBackend() {
        return discoveryBackend;
    }

    public void setDiscoveryBackend(DiscoveryBackend discoveryBackend) {
        this.discoveryBackend = discoveryBackend;
    }

    public Path getFileKvDirectory() {
        return fileKvDirectory;
    }

    public void setFileKvDirectory(Path fileKvDirectory) {
        this.fileKvDirectory = fileKvDirectory;
    }

    public Duration getFileKvTtl() {
        return fileKvTtl;
    }

    public void setFileKvTtl(Duration fileKvTtl) {
        this.fileKvTtl = fileKvTtl;
    }

    public List<URI> getEtcdEndpoints() {
        return etcdEndpoints;
    }

    public void setEtcdEndpoints(List<URI> etcdEndpoints) {
        this.etcdEndpoints = etcdEndpoints;
    }

    public Duration getEtcdLeaseTtl() {
        return etcdLeaseTtl;
    }

    public void setEtcdLeaseTtl(Duration etcdLeaseTtl) {
        this.etcdLeaseTtl = etcdLeaseTtl;
    }

    public Duration getEtcdRequestTimeout() {
        return etcdRequestTimeout;
    }

    public void setEtcdRequestTimeout(Duration etcdRequestTimeout) {
        this.etcdRequestTimeout = etcdRequestTimeout;
    }

    public String getRpcHost() {
        return rpcHost;
    }

    public void setRpcHost(String rpcHost) {
        this.rpcHost = rpcHost;
    }

    public Integer getRpcPort() {
        return rpcPort;
    }

    public void setRpcPort(Integer rpcPort) {
        this.rpcPort = rpcPort;
    }

    public String getResponseStreamHost() {
        return responseStreamHost;
    }

    public void setResponseStreamHost(String responseStreamHost) {
        this.responseStreamHost = responseStreamHost;
    }

    public Integer getResponseStreamPort() {
        return responseStreamPort;
    }

    public void setResponseStreamPort(Integer responseStreamPort) {
        this.responseStreamPort = responseStreamPort;
    }

    public PayloadCodec getServedCodec() {
        return servedCodec;
    }

    public void setServedCodec(PayloadCodec servedCodec) {
        this.servedCodec = servedCodec;
    }

    public DataSize getMaxMessageSize() {
        return maxMessageSize;
    }

    public void setMaxMessageSize(DataSize maxMessageSize) {
        this.maxMessageSize = maxMessageSize;
    }

    public Duration getConnectTimeout() {
        return connectTimeout;
    }

    public void setConnectTimeout(Duration connectTimeout) {
        this.connectTimeout = connectTimeout;
    }

    public Duration getAckTimeout() {
        return ackTimeout;
    }

    public void setAckTimeout(Duration ackTimeout) {
        this.ackTimeout = ackTimeout;
    }

    public Duration getCallHomeTimeout() {
        return callHomeTimeout;
    }

    public void setCallHomeTimeout(Duration callHomeTimeout) {
        this.callHomeTimeout = callHomeTimeout;
    }

    public Duration getStreamIdleTimeout() {
        return streamIdleTimeout;
    }

    public void setStreamIdleTimeout(Duration streamIdleTimeout) {
        this.streamIdleTimeout = streamIdleTimeout;
    }

    public Duration getFrameReadTimeout() {
        return frameReadTimeout;
    }

    public void setFrameReadTimeout(Duration frameReadTimeout) {
        this.frameReadTimeout = frameReadTimeout;
    }

    public int getMaxConcurrentRequests() {
        return maxConcurrentRequests;
    }

    public void setMaxConcurrentRequests(int maxConcurrentRequests) {
        this.maxConcurrentRequests = maxConcurrentRequests;
    }

    public int getMaxServerConnections() {
        return maxServerConnections;
    }

    public void setMaxServerConnections(int maxServerConnections) {
        this.maxServerConnections = maxServerConnections;
    }

    public Duration getShutdownGrace() {
        return shutdownGrace;
    }

    public void setShutdownGrace(Duration shutdownGrace) {
        this.shutdownGrace = shutdownGrace;
    }

    public Duration getRequestConnectionIdleTimeout() {
        return requestConnectionIdleTimeout;
    }

    public void setRequestConnectionIdleTimeout(Duration requestConnectionIdleTimeout) {
        this.requestConnectionIdleTimeout = requestConnectionIdleTimeout;
    }

    public Duration getServerConnectionIdleTimeout() {
        return serverConnectionIdleTimeout;
    }

    public void setServerConnectionIdleTimeout(Duration serverConnectionIdleTimeout) {
        this.serverConnectionIdleTimeout = serverConnectionIdleTimeout;
    }
}
