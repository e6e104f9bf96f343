package io.nixlconnect.transport.embedded;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.catchThrowableOfType;

import io.nixlconnect.Connector;
import io.nixlconnect.ConnectorOptions;
import io.nixlconnect.Descriptor;
import io.nixlconnect.OperationKind;
import io.nixlconnect.RdmaMetadata;
import io.nixlconnect.ReadableOperation;
import io.nixlconnect.TransferException;
import io.nixlconnect.TransferTimeoutException;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * What a caller of the blocking {@code Connector.read} gets when its producer dies mid-read (a proxy between the two
 * cuts every connection once part of the bytes have passed, as a SIGKILL of the producer would): the library's own
 * exception, with no {@code IOException} in its cause chain and none of the phrases web frameworks take for their
 * own client having gone away (the I/O exception is kept as a suppressed one), thrown in the caller's thread.
 */
@Timeout(value = 60, unit = TimeUnit.SECONDS)
class PeerFailureSurfacingTest {

    private static final int SIZE = 32 << 20;
    /** Bytes each connection carries from the producer before the proxy cuts it. */
    private static final int CUT_AFTER = 256 << 10;

    private Connector producer;
    private Connector consumer;
    private CuttingProxy proxy;

    @BeforeEach
    void start() throws IOException {
        producer = new Connector(ConnectorOptions.builder().workerId("producer")
                .transports(EmbeddedSettings.defaults().withSameHostCopy(false)).build());
        consumer = new Connector(ConnectorOptions.builder().workerId("consumer")
                .transports(EmbeddedSettings.defaults().withSameHostCopy(false)).build());
        proxy = new CuttingProxy(EmbeddedMetadata.decode(producerAgentMetadata()).port());
    }

    @AfterEach
    void stop() throws IOException {
        proxy.close();
        consumer.close();
        producer.close();
    }

    private byte[] producerAgentMetadata() {
        try (Descriptor probe = Descriptor.allocate(1); ReadableOperation readable = producer.createReadable(probe)) {
            return readable.metadata().decodeNixlMetadata();
        }
    }

    @Test
    void aProducerDyingMidReadIsTheLibrarysFailureNotAnIoExceptionThatLooksLikeAClientDisconnect() {
        try (Descriptor source = Descriptor.allocate(SIZE); Descriptor target = Descriptor.allocate(SIZE);
                ReadableOperation readable = producer.createReadable(source)) {
            TransferException failure = catchThrowableOfType(TransferException.class,
                    () -> consumer.read(throughProxy(readable.metadata()), target));

            List<Throwable> chain = new ArrayList<>();
            for (Throwable t = failure; t != null; t = t.getCause()) {
                chain.add(t);
            }
            assertThat(chain).noneMatch(t -> t instanceof IOException);
            String rootMessage = chain.get(chain.size() - 1).getMessage().toLowerCase(Locale.ROOT);
            assertThat(rootMessage).doesNotContain("broken pipe").doesNotContain("connection reset by peer");
            // Nothing is lost: the I/O failure is still there, to be printed with the stack trace.
            assertThat(chain).flatMap(t -> List.of(t.getSuppressed())).anyMatch(t -> t instanceof IOException);
            assertThat(failure).hasMessageContaining("failed");
        }
    }

    @Test
    void theBlockingReadThrowsInTheCallersThreadWithTheTransportThreadsExceptionAsItsCause() {
        try (Descriptor source = Descriptor.allocate(SIZE); Descriptor target = Descriptor.allocate(SIZE);
                ReadableOperation readable = producer.createReadable(source)) {
            TransferException failure = catchThrowableOfType(TransferException.class,
                    () -> consumer.read(throughProxy(readable.metadata()), target));

            assertThat(failure.getStackTrace()).anyMatch(frame -> frame.getMethodName()
                    .equals("theBlockingReadThrowsInTheCallersThreadWithTheTransportThreadsExceptionAsItsCause"));
            assertThat(failure.getCause()).isInstanceOf(TransferException.class)
                    .hasMessage(failure.getMessage());
            assertThat(((TransferException) failure.getCause()).status()).isEqualTo(failure.status());
        }
    }

    @Test
    void anOperationTimeoutIsRethrownAsATimeoutToo() throws IOException {
        try (ServerSocket silent = new ServerSocket(0, 50, InetAddress.getLoopbackAddress());
                Connector impatient = new Connector(ConnectorOptions.builder().workerId("impatient")
                        .transports(EmbeddedSettings.defaults().withSameHostCopy(false))
                        .operationTimeout(Duration.ofMillis(300)).build());
                Descriptor source = Descriptor.allocate(SIZE); Descriptor target = Descriptor.allocate(SIZE);
                ReadableOperation readable = producer.createReadable(source)) {
            TransferTimeoutException timeout = catchThrowableOfType(TransferTimeoutException.class,
                    () -> impatient.read(redirected(readable.metadata(), silent.getLocalPort()), target));

            assertThat(timeout.getStackTrace()).anyMatch(frame -> frame.getMethodName()
                    .equals("anOperationTimeoutIsRethrownAsATimeoutToo"));
            assertThat(timeout.getCause()).isInstanceOf(TransferTimeoutException.class).hasMessage(timeout.getMessage());
        }
    }

    private RdmaMetadata throughProxy(RdmaMetadata metadata) {
        return redirected(metadata, proxy.port());
    }

    /** The same metadata, its agent's port replaced. */
    private static RdmaMetadata redirected(RdmaMetadata metadata, int port) {
        EmbeddedMetadata agent = EmbeddedMetadata.decode(metadata.decodeNixlMetadata());
        byte[] proxied = new EmbeddedMetadata(agent.agent(), agent.host(), port).encode();
        return RdmaMetadata.of(metadata.descriptors(), proxied, metadata.notificationKey(), OperationKind.READ);
    }

    /** A loopback TCP proxy that forwards both ways and closes each connection once the server has sent {@link #CUT_AFTER} bytes. */
    private static final class CuttingProxy implements AutoCloseable {

        private final ServerSocket listener;
        private final int target;
        private final List<Socket> sockets = new ArrayList<>();

        CuttingProxy(int target) throws IOException {
            this.target = target;
            listener = new ServerSocket(0, 50, InetAddress.getLoopbackAddress());
            Thread acceptor = new Thread(this::accept, "cutting-proxy");
            acceptor.setDaemon(true);
            acceptor.start();
        }

        int port() {
            return listener.getLocalPort();
        }

        private void accept() {
            try {
                while (true) {
                    Socket client = listener.accept();
                    Socket server = new Socket(InetAddress.getLoopbackAddress(), target);
                    synchronized (sockets) {
                        sockets.add(client);
                        sockets.add(server);
                    }
                    pump(client, server, Long.MAX_VALUE);
                    pump(server, client, CUT_AFTER);
                }
            } catch (IOException closed) {
                // the test is over
            }
        }

        private static void pump(Socket from, Socket to, long limit) {
            Thread pump = new Thread(() -> {
                byte[] buffer = new byte[16 << 10];
                long passed = 0;
                try (InputStream in = from.getInputStream(); OutputStream out = to.getOutputStream()) {
                    int n;
                    while (passed < limit && (n = in.read(buffer, 0, (int) Math.min(buffer.length, limit - passed))) > 0) {
                        out.write(buffer, 0, n);
                        passed += n;
                    }
                } catch (IOException ignored) {
                    // the other direction closed it
                } finally {
                    closeQuietly(from);
                    closeQuietly(to);
                }
            }, "cutting-proxy-pump");
            pump.setDaemon(true);
            pump.start();
        }

        private static void closeQuietly(Socket socket) {
            try {
                socket.close();
            } catch (IOException ignored) {
                // already closed
            }
        }

        @Override
        public void close() throws IOException {
            listener.close();
            synchronized (sockets) {
                sockets.forEach(CuttingProxy::closeQuietly);
            }
        }
    }
}
