package io.nixlconnect.dynamo;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.nixlconnect.dynamo.internal.wire.ControlMessages;
import io.nixlconnect.dynamo.internal.wire.FrameInput;
import io.nixlconnect.dynamo.internal.wire.RequestFrame;
import io.nixlconnect.dynamo.internal.wire.TwoPart;
import java.io.DataInputStream;
import java.io.IOException;
import java.io.InputStream;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.net.SocketTimeoutException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * A Java worker facing callers that misbehave on its request plane: each bad frame is refused with a reason or ends
 * its own connection, counted, within the configured time, and never allocates past the limit; the worker goes on
 * serving well-behaved callers.
 */
class HostileCallerTest {

    private static final int LIMIT = 64 * 1024;

    @TempDir
    Path kv;

    private DynamoRuntime worker;
    private DynamoRuntime caller;
    private DynamoClient client;
    private DynamoInstance instance;
    private final AtomicReference<Throwable> handlerFailure = new AtomicReference<>();
    private final AtomicInteger handled = new AtomicInteger();

    @BeforeEach
    void start() {
        worker = DynamoRuntime.start(TestRuntimes.file(kv).maxMessageSize(LIMIT).maxConcurrentRequests(1)
                .frameReadTimeout(Duration.ofSeconds(2)).connectTimeout(Duration.ofSeconds(2)).build());
        worker.serve("demo.worker.generate", (request, responder) -> {
            handled.incrementAndGet();
            try {
                if (request.payload() instanceof Map<?, ?> map && map.containsKey("flood")) {
                    String chunk = "x".repeat(16 * 1024);
                    while (true) {
                        responder.send(chunk);
                    }
                }
                responder.send(request.payload());
            } catch (RuntimeException e) {
                handlerFailure.set(e);
                throw e;
            }
        });
        caller = TestRuntimes.fileRuntime(kv);
        client = caller.client("demo.worker.generate");
        instance = client.waitForInstances(Duration.ofSeconds(10)).get(0);
    }

    @AfterEach
    void stop() {
        caller.close();
        worker.close();
    }

    /**
     * The worker still answers. It has room for one request: wait until what came before has given its slot back (a
     * caller can read a stream's end before the handler's thread is done with it), as it must, then call.
     */
    private void stillServes() {
        org.awaitility.Awaitility.await().atMost(Duration.ofSeconds(30))
                .until(() -> worker.counters().requestsInFlight() == 0);
        try (ResponseStream stream = client.call(Map.of("ok", true))) {
            assertThat(stream.readAll()).extracting(DynamoResponse::data).containsExactly(Map.of("ok", true));
        }
    }

    private Socket connect() throws IOException {
        Socket socket = new Socket(instance.host(), instance.port());
        socket.setSoTimeout(10_000);
        return socket;
    }

    private static String readAck(Socket socket) throws IOException {
        DataInputStream in = new DataInputStream(socket.getInputStream());
        int length = in.readInt();
        byte[] text = new byte[length];
        in.readFully(text);
        return new String(text, StandardCharsets.UTF_8);
    }

    private static boolean closedByPeer(Socket socket) throws IOException {
        try {
            return socket.getInputStream().read() < 0;
        } catch (SocketTimeoutException e) {
            return false;
        } catch (IOException e) {
            return true; // reset
        }
    }

    private byte[] request(byte[] header, byte[] body) {
        Map<String, String> headers = new LinkedHashMap<>();
        headers.put("request-id", "r");
        headers.put("x-endpoint-path", instance.subject());
        return RequestFrame.encode(instance.subject(), headers, new TwoPart(header, body).encode());
    }

    private byte[] header(String codec, int callHomePort) {
        return ControlMessages.requestHeader("req-1", PayloadCodec.fromWireName(codec), "127.0.0.1:" + callHomePort,
                "subject-1");
    }

    @Test
    void aFrameLargerThanTheLimitIsRefusedUnreadAndEndsItsConnection() throws IOException {
        try (Socket socket = connect()) {
            byte[] path = instance.subject().getBytes(StandardCharsets.UTF_8);
            java.io.ByteArrayOutputStream frame = new java.io.ByteArrayOutputStream();
            frame.write(path.length >> 8);
            frame.write(path.length);
            frame.writeBytes(path);
            frame.writeBytes(new byte[] {0, 2, '{', '}', (byte) 0xff, (byte) 0xff, (byte) 0xff, (byte) 0xff});
            socket.getOutputStream().write(frame.toByteArray());
            assertThat(readAck(socket)).startsWith("Read error: message too large: ").endsWith("(max: " + LIMIT + " bytes)");
            assertThat(closedByPeer(socket)).isTrue();
        }
        assertThat(worker.counters().oversizedFrames()).isEqualTo(1);
        stillServes();
    }

    @Test
    void truncatedAndStalledFramesEndTheirConnectionsAndAreCounted() throws IOException {
        byte[] frame = request(header("json", 1), "{}".getBytes(StandardCharsets.UTF_8));
        try (Socket socket = connect()) {
            socket.getOutputStream().write(frame, 0, frame.length / 2);
            socket.shutdownOutput();
            assertThat(closedByPeer(socket)).isTrue();
        }
        try (Socket socket = connect()) {
            socket.getOutputStream().write(frame, 0, 7);
            long started = System.nanoTime();
            assertThat(closedByPeer(socket)).as("a stalled frame is dropped after frameReadTimeout").isTrue();
            assertThat(Duration.ofNanos(System.nanoTime() - started)).isLessThan(Duration.ofSeconds(9));
        }
        await().atMost(Duration.ofSeconds(10)).until(() -> worker.counters().protocolErrors() >= 2);
        stillServes();
    }

    @Test
    void malformedRequestsAreRefusedWithAReasonAndTheConnectionGoesOn() throws IOException {
        Map<String, byte[]> cases = new LinkedHashMap<>();
        cases.put("not JSON", "{\"id\":".getBytes(StandardCharsets.UTF_8));
        cases.put("no id", "{\"request_type\":\"single_in\"}".getBytes(StandardCharsets.UTF_8));
        cases.put("bidirectional", new String(header("json", 1), StandardCharsets.UTF_8)
                .replace("single_in", "many_in").getBytes(StandardCharsets.UTF_8));
        cases.put("quic", new String(header("json", 1), StandardCharsets.UTF_8)
                .replace("tcp_server", "quic_server").getBytes(StandardCharsets.UTF_8));
        cases.put("codec", new String(header("json", 1), StandardCharsets.UTF_8)
                .replace("\"json\"", "\"cbor\"").getBytes(StandardCharsets.UTF_8));
        try (Socket socket = connect()) {
            for (Map.Entry<String, byte[]> entry : cases.entrySet()) {
                socket.getOutputStream().write(request(entry.getValue(), new byte[] {'1'}));
                assertThat(readAck(socket)).as(entry.getKey()).startsWith("Decode error");
            }
            // two-part lengths that do not add up
            byte[] bad = request(header("json", 1), new byte[] {'1'});
            bad[bad.length - 1 - 1 - header("json", 1).length - 16 + 7] ^= 0x10;
            socket.getOutputStream().write(bad);
            assertThat(readAck(socket)).startsWith("Decode error");
            // headers that are not JSON: refused, and the connection still answers
            byte[] path = instance.subject().getBytes(StandardCharsets.UTF_8);
            java.io.ByteArrayOutputStream garbage = new java.io.ByteArrayOutputStream();
            garbage.write(0);
            garbage.write(path.length);
            garbage.writeBytes(path);
            garbage.writeBytes(new byte[] {0, 3, 'n', 'o', '!', 0, 0, 0, 0});
            socket.getOutputStream().write(garbage.toByteArray());
            assertThat(readAck(socket)).startsWith("Decode error");
            socket.getOutputStream().write(RequestFrame.encode("ffff/demo/worker/generate", Map.of(), new byte[0]));
            assertThat(readAck(socket)).isEqualTo("Server unavailable: unknown endpoint ffff/demo/worker/generate");
        }
        assertThat(handled.get()).isZero();
        assertThat(worker.counters().requestsRefusedOther()).isEqualTo(cases.size() + 3);
        stillServes();
    }

    @Test
    void aPayloadTheCodecCannotReadGetsAnErrorPrologue() throws IOException {
        try (ServerSocket home = new ServerSocket(0, 5, InetAddress.getLoopbackAddress()); Socket socket = connect()) {
            home.setSoTimeout(10_000);
            byte[] header = ControlMessages.requestHeader("req-2", PayloadCodec.MSGPACK,
                    "127.0.0.1:" + home.getLocalPort(), "subject-2");
            socket.getOutputStream().write(request(header, new byte[] {(byte) 0xc1}));
            assertThat(readAck(socket)).isEmpty();
            try (Socket called = home.accept()) {
                called.setSoTimeout(10_000);
                FrameInput in = new FrameInput(called, 10_000);
                TwoPart handshake = TwoPart.read(in, in.beginFrame(10_000), LIMIT);
                assertThat(ControlMessages.parseHandshake(handshake.header())).isEqualTo("subject-2");
                TwoPart prologue = TwoPart.read(in, in.beginFrame(10_000), LIMIT);
                assertThat(ControlMessages.parsePrologue(prologue.header())).contains("cannot decode");
            }
        }
        assertThat(handled.get()).isZero();
        stillServes();
    }

    @Test
    void aCallHomeAddressThatRefusesIsCountedAndFreesItsSlot() throws IOException {
        int closedPort;
        try (ServerSocket probe = new ServerSocket(0, 1, InetAddress.getLoopbackAddress())) {
            closedPort = probe.getLocalPort();
        }
        try (Socket socket = connect()) {
            socket.getOutputStream().write(request(header("json", closedPort), "{}".getBytes(StandardCharsets.UTF_8)));
            assertThat(readAck(socket)).isEmpty();
        }
        await().atMost(Duration.ofSeconds(10)).until(() -> worker.counters().callHomeFailures() == 1);
        await().atMost(Duration.ofSeconds(10)).until(() -> worker.counters().requestsInFlight() == 0);
        stillServes(); // maxConcurrentRequests is 1: the refused call home gave its slot back
    }

    @Test
    void aCallHomeAddressThatNeverAnswersTimesOutAndFreesItsSlot() throws IOException {
        // A listener that never accepts, its backlog full: Linux drops further SYNs, so connecting hangs.
        try (ServerSocket silent = new ServerSocket(0, 1, InetAddress.getLoopbackAddress())) {
            List<Socket> fillers = new java.util.ArrayList<>();
            try {
                for (int i = 0; i < 3; i++) {
                    Socket filler = new Socket();
                    try {
                        filler.connect(silent.getLocalSocketAddress(), 300);
                    } catch (IOException e) {
                        // the backlog is full already
                    }
                    fillers.add(filler);
                }
                long started = System.nanoTime();
                try (Socket socket = connect()) {
                    socket.getOutputStream().write(request(header("json", silent.getLocalPort()),
                            "{}".getBytes(StandardCharsets.UTF_8)));
                    assertThat(readAck(socket)).isEmpty();
                }
                await().atMost(Duration.ofSeconds(20)).until(() -> worker.counters().callHomeFailures() == 1);
                assertThat(Duration.ofNanos(System.nanoTime() - started)).isLessThan(Duration.ofSeconds(15));
                await().atMost(Duration.ofSeconds(10)).until(() -> worker.counters().requestsInFlight() == 0);
            } finally {
                for (Socket filler : fillers) {
                    filler.close();
                }
            }
        }
        assertThat(handled.get()).isZero();
        stillServes();
    }

    @Test
    void aCallerThatStopsReadingIsDroppedAndTheHandlerLearnsIt() throws IOException {
        try (ServerSocket home = new ServerSocket(0, 5, InetAddress.getLoopbackAddress()); Socket socket = connect()) {
            home.setReceiveBufferSize(4096);
            home.setSoTimeout(10_000);
            socket.getOutputStream().write(request(header("json", home.getLocalPort()),
                    "{\"flood\":true}".getBytes(StandardCharsets.UTF_8)));
            assertThat(readAck(socket)).isEmpty();
            try (Socket called = home.accept()) {
                // accepted, never read: the worker's writes fill the socket buffers and stall
                assertThat(called.isConnected()).isTrue();
                await().atMost(Duration.ofSeconds(20)).until(() -> handlerFailure.get() != null);
                assertThat(handlerFailure.get()).isInstanceOf(DynamoCancelledException.class);
            }
        }
        await().atMost(Duration.ofSeconds(10)).until(() -> worker.counters().requestsInFlight() == 0);
        stillServes();
    }

    @Test
    void anUnknownControlFrameFromTheCallerKillsItsRequest() throws IOException {
        try (ServerSocket home = new ServerSocket(0, 5, InetAddress.getLoopbackAddress()); Socket socket = connect()) {
            home.setSoTimeout(10_000);
            socket.getOutputStream().write(request(header("json", home.getLocalPort()),
                    "{\"flood\":true}".getBytes(StandardCharsets.UTF_8)));
            assertThat(readAck(socket)).isEmpty();
            try (Socket called = home.accept()) {
                called.getOutputStream().write(TwoPart.headerOnly("\"pause\"".getBytes(StandardCharsets.UTF_8)).encode());
                InputStream in = called.getInputStream();
                byte[] drain = new byte[64 * 1024];
                called.setSoTimeout(10_000);
                while (in.read(drain) >= 0) {
                    // read until the worker closes the stream
                }
            }
        }
        await().atMost(Duration.ofSeconds(10)).until(() -> handlerFailure.get() instanceof DynamoCancelledException);
        assertThat(worker.counters().protocolErrors()).isGreaterThanOrEqualTo(1);
        stillServes();
    }

    /** Random corruptions of a good request, each on its own connection: answered, refused or dropped; never a stop. */
    @Test
    void fuzzedRequestsNeverStopTheWorker() throws IOException {
        try (ServerSocket home = new ServerSocket(0, 50, InetAddress.getLoopbackAddress())) {
            Thread sink = new Thread(() -> {
                while (!home.isClosed()) {
                    try (Socket called = home.accept()) {
                        called.getInputStream().transferTo(java.io.OutputStream.nullOutputStream());
                    } catch (IOException e) {
                        // next
                    }
                }
            });
            sink.setDaemon(true);
            sink.start();
            byte[] good = request(header("json", home.getLocalPort()), "{\"x\":[1,2,3]}".getBytes(StandardCharsets.UTF_8));
            Random random = new Random(3301);
            for (int round = 0; round < 80; round++) {
                byte[] mutated = good.clone();
                for (int i = 0, flips = 1 + random.nextInt(4); i < flips; i++) {
                    mutated[random.nextInt(mutated.length)] = (byte) random.nextInt(256);
                }
                try (Socket socket = connect()) {
                    socket.setSoTimeout(3000);
                    socket.getOutputStream().write(mutated);
                    socket.shutdownOutput();
                    socket.getInputStream().transferTo(java.io.OutputStream.nullOutputStream());
                } catch (IOException e) {
                    // dropped: fine
                }
            }
        }
        await().atMost(Duration.ofSeconds(10)).until(() -> worker.counters().requestsInFlight() == 0);
        stillServes();
        assertThat(worker.counters().protocolErrors() + worker.counters().requestsRefusedOther()).isPositive();
    }

    @Test
    void theWorkerStillListsOnlyItself() {
        assertThat(client.instances()).hasSize(1);
        assertThat(List.of(worker.servedEndpoints().get(0).instanceId())).containsExactly(instance.instanceId());
    }
}
