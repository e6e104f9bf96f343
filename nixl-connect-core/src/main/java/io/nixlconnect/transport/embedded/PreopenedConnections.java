package io.nixlconnect.transport.embedded;

import java.io.IOException;
import java.net.InetSocketAddress;
import java.net.StandardSocketOptions;
import java.nio.channels.SocketChannel;
import java.util.HashMap;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.regex.Pattern;

/**
 * TCP connections to new peer endpoints started when a peer is loaded, for the first transfer to that endpoint to
 * finish and take instead of connecting itself. Loading a peer and posting its first transfer follow each other in
 * {@code beginRead}; started at load, the connection's handshake and the peer's accepting it (and starting a thread
 * to serve it) overlap with the rest of the caller's work instead of adding to the transfer's.
 *
 * <p>Only the TCP connect is started, without blocking: no DNS lookup (peers whose host is not an IP address are left
 * to the transfer), no TLS or shared-secret handshake (the transfer runs them on the connection). At most one per
 * endpoint, only for an endpoint that has no connection pool yet (never transferred to), and at most {@link #MAX}
 * at once. One not taken within {@link #MAX_AGE_NANOS} is closed (the peer's server would also close it after its
 * idle timeout), and all are closed with the transport. The transfer that takes one checks that the peer has not
 * closed it meanwhile, and connects anew if it has.
 */
final class PreopenedConnections {

    static final long MAX_AGE_NANOS = TimeUnit.SECONDS.toNanos(1);
    /** {@link #MAX_AGE_NANOS}, unless a test lengthens it. */
    static volatile long maxAgeNanos = MAX_AGE_NANOS;
    static final int MAX = 64;
    private static final Pattern IPV4 = Pattern.compile("\\d{1,3}(\\.\\d{1,3}){3}");

    private final Map<String, SocketChannel> started = new HashMap<>(); // guarded by this
    private boolean closed; // guarded by this

    /**
     * Starts connecting to {@code peer} unless a connection to it is started already, too many are, or its host is
     * a name (a lookup could block the caller). Never throws: a connection that cannot be started is left to the
     * transfer, which reports why.
     */
    void start(LoadedPeer peer) {
        EmbeddedMetadata metadata = peer.metadata();
        if (!isAddressLiteral(metadata.host())) {
            return;
        }
        synchronized (this) {
            if (closed || started.size() >= MAX || started.containsKey(peer.endpoint())) {
                return;
            }
        }
        SocketChannel channel = null;
        try {
            channel = SocketChannel.open();
            channel.configureBlocking(false);
            EmbeddedTransfer.configure(channel);
            channel.connect(new InetSocketAddress(metadata.host(), metadata.port()));
        } catch (IOException | RuntimeException e) {
            closeQuietly(channel);
            return; // refused at once, or no socket: the transfer connects itself and says why it cannot
        }
        synchronized (this) {
            if (closed || started.size() >= MAX || started.putIfAbsent(peer.endpoint(), channel) != null) {
                closeQuietly(channel);
                return;
            }
        }
        SocketChannel mine = channel;
        CompletableFuture.delayedExecutor(maxAgeNanos, TimeUnit.NANOSECONDS).execute(() -> expire(peer.endpoint(), mine));
    }

    /** The connection started to {@code endpoint}, in blocking mode, its connect perhaps not finished; null if none. */
    SocketChannel take(String endpoint) {
        SocketChannel channel;
        synchronized (this) {
            if (started.isEmpty()) {
                return null;
            }
            channel = started.remove(endpoint);
        }
        if (channel == null) {
            return null;
        }
        try {
            channel.configureBlocking(true);
            return channel;
        } catch (IOException | RuntimeException e) {
            closeQuietly(channel);
            return null;
        }
    }

    /** Connections started and not taken yet (for tests and health details). */
    synchronized int count() {
        return started.size();
    }

    private void expire(String endpoint, SocketChannel channel) {
        synchronized (this) {
            if (!started.remove(endpoint, channel)) {
                return; // taken, or closed with the transport
            }
        }
        closeQuietly(channel);
    }

    /** Closes every connection not taken; none is started afterwards. */
    void close() {
        Map<String, SocketChannel> left;
        synchronized (this) {
            closed = true;
            left = new HashMap<>(started);
            started.clear();
        }
        left.values().forEach(PreopenedConnections::closeQuietly);
    }

    /** An IPv4 or IPv6 address literal: connecting to it needs no name lookup. */
    static boolean isAddressLiteral(String host) {
        return IPV4.matcher(host).matches() || host.indexOf(':') >= 0;
    }

    private static void closeQuietly(SocketChannel channel) {
        if (channel != null) {
            try {
                channel.close();
            } catch (IOException e) {
                // nothing to do: the socket is gone either way
            }
        }
    }
}
