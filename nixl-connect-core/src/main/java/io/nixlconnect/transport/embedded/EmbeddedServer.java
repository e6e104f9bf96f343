package io.nixlconnect.transport.embedded;

import io.nixlconnect.transport.TransferOp;
import java.io.IOException;
import java.net.InetSocketAddress;
import java.net.StandardSocketOptions;
import java.nio.channels.ClosedChannelException;
import java.nio.channels.ServerSocketChannel;
import java.nio.channels.SocketChannel;
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
        try {
            Wire.Request request;
            while ((request = Wire.readRequest(channel)) != null) {
                handle(channel, request);
            }
        } catch (IOException e) {
            log.debug("Embedded transport: connection dropped: {}", e.toString());
        } finally {
            connections.remove(channel);
            closeQuietly(channel);
        }
    }

    private void handle(SocketChannel channel, Wire.Request request) throws IOException {
        EmbeddedAgent agent = transport.agent(request.agent());
        if (agent == null) {
            Wire.writeError(channel, "no agent named '" + request.agent() + "' is served here (closed or never existed)");
            return;
        }
        switch (request.type()) {
            case Wire.NOTIFY -> {
                if (agent.deliver(request.notification())) {
                    Wire.writeOk(channel);
                } else {
                    Wire.writeError(channel, "no passive operation waits for notification '"
                            + new String(request.notification(), java.nio.charset.StandardCharsets.UTF_8)
                            + "' (completed, closed or never created)");
                }
            }
            case Wire.READ -> {
                List<EmbeddedWindow> windows = agent.enter(TransferOp.READ, request.addresses(), request.lengths(), channel);
                if (windows == null) {
                    Wire.writeError(channel, "READ refused: a requested range lies outside every live ReadableOperation");
                    return;
                }
                try {
                    Wire.writeOk(channel);
                    for (int i = 0; i < request.addresses().length; i++) {
                        long address = request.addresses()[i];
                        long length = request.lengths()[i];
                        Wire.sendMemory(channel, EmbeddedAgent.typeOf(windows, address, length), address, length,
                                transport.staging());
                    }
                } finally {
                    EmbeddedAgent.exit(windows, channel);
                }
            }
            case Wire.WRITE -> {
                List<EmbeddedWindow> windows = agent.enter(TransferOp.WRITE, request.addresses(), request.lengths(), channel);
                if (windows == null) {
                    Wire.writeError(channel, "WRITE refused: a requested range lies outside every live WritableOperation");
                    return;
                }
                try {
                    Wire.writeOk(channel);
                    for (int i = 0; i < request.addresses().length; i++) {
                        long address = request.addresses()[i];
                        long length = request.lengths()[i];
                        Wire.receiveMemory(channel, EmbeddedAgent.typeOf(windows, address, length), address, length,
                                transport.staging());
                    }
                } finally {
                    EmbeddedAgent.exit(windows, channel);
                }
                // The data has landed: only now may the passive side learn of it.
                if (request.notification().length == 0 || agent.deliver(request.notification())) {
                    Wire.writeOk(channel);
                } else {
                    Wire.writeError(channel, "no passive operation waits for notification '"
                            + new String(request.notification(), java.nio.charset.StandardCharsets.UTF_8) + "'");
                }
            }
            default -> throw new Wire.ProtocolException("unknown request type " + request.type());
        }
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

    private static void closeQuietly(java.io.Closeable closeable) {
        try {
            closeable.close();
        } catch (IOException ignored) {
            // closing is all we wanted
        }
    }
}
