package io.nixlconnect.transport.embedded;

import io.nixlconnect.transport.MemoryType;
import io.nixlconnect.transport.TransferOp;
import java.io.Closeable;
import java.io.IOException;
import java.net.InetSocketAddress;
import java.net.StandardSocketOptions;
import java.nio.channels.ClosedChannelException;
import java.nio.channels.ServerSocketChannel;
import java.nio.channels.SocketChannel;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutorService;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/** Accepts peers and serves their requests, one thread per connection (peers cap their connections). */
final class EmbeddedServer {

    private static final Logger log = LoggerFactory.getLogger(EmbeddedServer.class);
    static final int MAX_CONNECTIONS = 1024;

    private final EmbeddedTransport transport;
    private final ServerSocketChannel server;
    private final ExecutorService handlers;
    private final Set<SocketChannel> connections = ConcurrentHashMap.newKeySet();
    private final Thread acceptor;
    private volatile boolean running = true;

    EmbeddedServer(EmbeddedTransport transport, String bindAddress, int port, ExecutorService handlers) throws IOException {
        this.transport = transport;
        this.handlers = handlers;
        this.server = ServerSocketChannel.open();
        try {
            server.setOption(StandardSocketOptions.SO_REUSEADDR, true);
            server.setOption(StandardSocketOptions.SO_RCVBUF, 4 << 20);
            server.bind(new InetSocketAddress(bindAddress, port), 256);
        } catch (IOException e) {
            server.close();
            throw e;
        }
        this.acceptor = new Thread(this::acceptLoop, "nixl-embedded-accept-" + localPort());
        acceptor.setDaemon(true);
        acceptor.start();
    }

    int localPort() {
        return server.socket().getLocalPort();
    }

    boolean isRunning() {
        return running && acceptor.isAlive();
    }

    private void acceptLoop() {
        while (running) {
            SocketChannel channel;
            try {
                channel = server.accept();
            } catch (ClosedChannelException e) {
                return;
            } catch (IOException e) {
                if (running) {
                    log.warn("Embedded transport: accept failed: {}", e.toString());
                }
                continue;
            }
            if (connections.size() >= MAX_CONNECTIONS) {
                log.warn("Embedded transport: refusing a connection, {} already open", connections.size());
                closeQuietly(channel);
                continue;
            }
            connections.add(channel);
            try {
                channel.setOption(StandardSocketOptions.TCP_NODELAY, true);
                channel.setOption(StandardSocketOptions.SO_SNDBUF, 4 << 20);
                handlers.execute(() -> serve(channel));
            } catch (IOException | RuntimeException e) {
                connections.remove(channel);
                closeQuietly(channel);
            }
        }
    }

    private void serve(SocketChannel channel) {
        // Windows this connection has started to read or write and not yet notified: if it drops, that peer is gone.
        Set<EmbeddedWindow> unfinished = new java.util.HashSet<>();
        String reason = "the peer closed the connection";
        try {
            Wire.Request request;
            while ((request = Wire.readRequest(channel)) != null) {
                handle(channel, request, unfinished);
            }
        } catch (IOException e) {
            reason = e.toString();
            log.debug("Embedded transport: connection dropped: {}", reason);
        } finally {
            connections.remove(channel);
            closeQuietly(channel);
            for (EmbeddedWindow window : unfinished) {
                window.peerLost("the connection of the peer that was " + (window.access() == TransferOp.READ
                        ? "reading" : "writing") + " this operation's memory dropped before it notified (" + reason + ")");
            }
        }
    }

    private void handle(SocketChannel channel, Wire.Request request, Set<EmbeddedWindow> unfinished) throws IOException {
        EmbeddedAgent agent = transport.agent(request.agent());
        if (agent == null) {
            Wire.writeError(channel, "no agent named '" + request.agent() + "' is served here (closed or never existed)");
            return;
        }
        switch (request.type()) {
            case Wire.NOTIFY -> unfinished.remove(
                    deliver(channel, agent, request.notification(), " (completed, closed or never created)"));
            // A READ's notification comes as its own NOTIFY, once the active side has the bytes.
            case Wire.READ -> moveRanges(channel, agent, request, TransferOp.READ, unfinished);
            case Wire.WRITE -> {
                // The data has landed: only now may the passive side learn of it.
                if (moveRanges(channel, agent, request, TransferOp.WRITE, unfinished)) {
                    unfinished.remove(deliver(channel, agent, request.notification(), ""));
                }
            }
            default -> throw new Wire.ProtocolException("unknown request type " + request.type());
        }
    }

    /**
     * Serves the request's ranges if every one lies inside a live window of the right kind: streams them
     * out (READ) or in (WRITE). Refuses the whole request, touching nothing, otherwise.
     *
     * @return whether the ranges were moved
     */
    private boolean moveRanges(SocketChannel channel, EmbeddedAgent agent, Wire.Request request, TransferOp access,
            Set<EmbeddedWindow> unfinished) throws IOException {
        List<EmbeddedWindow> windows = agent.enter(access, request.addresses(), request.lengths(), channel);
        if (windows == null) {
            Wire.writeError(channel, access + " refused: a requested range lies outside every live "
                    + (access == TransferOp.READ ? "ReadableOperation" : "WritableOperation"));
            return false;
        }
        unfinished.addAll(windows);
        try {
            Wire.writeOk(channel);
            for (int i = 0; i < request.addresses().length; i++) {
                long address = request.addresses()[i];
                long length = request.lengths()[i];
                MemoryType type = EmbeddedAgent.typeOf(windows, address, length);
                if (access == TransferOp.READ) {
                    Wire.sendMemory(channel, type, address, length, transport.staging());
                } else {
                    Wire.receiveMemory(channel, type, address, length, transport.staging());
                }
            }
            return true;
        } finally {
            EmbeddedAgent.exit(windows, channel);
        }
    }

    /**
     * Delivers a notification: claims the waiting window, answers OK, then completes the window — in that
     * order, so that a passive side which shuts down as soon as it completes cannot cut off the answer.
     *
     * @return the window the notification was for, or null
     */
    private static EmbeddedWindow deliver(SocketChannel channel, EmbeddedAgent agent, byte[] notification, String hint)
            throws IOException {
        if (notification.length == 0) {
            Wire.writeOk(channel);
            return null;
        }
        EmbeddedWindow window = agent.claim(notification);
        if (window == null) {
            Wire.writeError(channel, "no passive operation waits for notification '"
                    + new String(notification, StandardCharsets.UTF_8) + "'" + hint);
            return null;
        }
        try {
            Wire.writeOk(channel);
        } finally {
            window.deliver(); // the data has landed whether or not the answer reaches the peer
        }
        return window;
    }

    void close() {
        running = false;
        closeQuietly(server);
        for (SocketChannel channel : connections) {
            closeQuietly(channel);
        }
        try {
            acceptor.join(5000);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    private static void closeQuietly(Closeable closeable) {
        try {
            closeable.close();
        } catch (IOException ignored) {
            // closing is all we wanted
        }
    }
}
