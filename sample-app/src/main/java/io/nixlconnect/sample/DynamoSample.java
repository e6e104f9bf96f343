package io.nixlconnect.sample;

import io.nixlconnect.Connector;
import io.nixlconnect.Descriptor;
import io.nixlconnect.ReadableOperation;
import io.nixlconnect.autoconfigure.dynamo.DynamoEndpointRegistration;
import io.nixlconnect.dynamo.DynamoClient;
import io.nixlconnect.dynamo.DynamoHandler;
import io.nixlconnect.dynamo.DynamoResponse;
import io.nixlconnect.dynamo.DynamoRuntime;
import io.nixlconnect.dynamo.EncodeReply;
import io.nixlconnect.dynamo.EndpointId;
import io.nixlconnect.dynamo.ResponseStream;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.security.SecureRandom;
import java.util.HexFormat;
import java.util.Locale;
import java.util.Map;
import java.util.SplittableRandom;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;
import org.springframework.beans.factory.ObjectProvider;
import org.springframework.boot.ApplicationArguments;
import org.springframework.boot.ApplicationRunner;
import org.springframework.boot.ExitCodeGenerator;
import org.springframework.boot.autoconfigure.condition.ConditionalOnExpression;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;

/**
 * The sample as a member of a Dynamo deployment ({@link DynamoMode}), in a Dynamo worker's environment:
 * <ul>
 *   <li>{@code --sample.dynamo.call=NS.COMP.EP --sample.dynamo.requests=N} sends {@code {"request": i}} N times,
 *       reads the tensor of each reply shaped like Dynamo's TRT-LLM encode worker's ({@link EncodeReply}) and prints
 *       {@code dynamo: read <bytes> bytes from NS.COMP.EP instance <id hex> sha256 <hex>} per read, then
 *       {@code result: OK};</li>
 *   <li>{@code --sample.dynamo.serve=NS.COMP.EP --sample.dynamo.bytes=B --sample.dynamo.requests=N} serves the
 *       endpoint (a {@link DynamoEndpointRegistration} bean), answers N requests each with a fresh tensor of B random
 *       bytes in that reply shape, prints {@code dynamo: served <B> bytes sha256 <hex>} once each reader completed,
 *       then {@code result: OK}; closing the context deregisters it.</li>
 * </ul>
 * Any failure prints {@code result: FAILED: <reason>} and makes the exit code 1.
 */
@Configuration(proxyBeanMethods = false)
@ConditionalOnExpression("'${sample.role:both}'.equalsIgnoreCase('dynamo')")
class DynamoSample {

    /** Bytes per element of the dtypes an encode worker sends ({@code torch.*}). */
    static long elementSize(String dtype) {
        return switch (dtype.toLowerCase(Locale.ROOT).replace("torch.", "")) {
            case "uint8", "int8", "bool", "float8_e4m3fn", "float8_e5m2" -> 1;
            case "float16", "half", "bfloat16", "int16" -> 2;
            case "float32", "float", "int32" -> 4;
            case "float64", "double", "int64", "long" -> 8;
            default -> throw new IllegalArgumentException("unknown embeddings_dtype " + dtype);
        };
    }

    static String sha256(Descriptor tensor) {
        try {
            MessageDigest digest = MessageDigest.getInstance("SHA-256");
            digest.update(tensor.asByteBuffer());
            return HexFormat.of().formatHex(digest.digest());
        } catch (NoSuchAlgorithmException e) {
            throw new IllegalStateException(e);
        }
    }

    /** What the sample did: the exit code and the line saying so. */
    static final class Outcome implements ExitCodeGenerator {
        private final AtomicReference<String> failure = new AtomicReference<>();
        private volatile boolean done;

        void fail(String reason) {
            failure.compareAndSet(null, reason);
        }

        @Override
        public int getExitCode() {
            return done && failure.get() == null ? 0 : 1;
        }

        String failure() {
            return failure.get();
        }
    }

    @Bean
    Outcome dynamoOutcome() {
        return new Outcome();
    }

    @Bean
    @ConditionalOnExpression("!'${sample.dynamo.serve:}'.isBlank()")
    Server dynamoServer(Connector connector, SampleProperties properties, Outcome outcome) {
        return new Server(connector, properties.getDynamo(), outcome);
    }

    @Bean
    @ConditionalOnExpression("!'${sample.dynamo.serve:}'.isBlank()")
    DynamoEndpointRegistration sampleEndpoint(Server server, SampleProperties properties) {
        return DynamoEndpointRegistration.of(properties.getDynamo().getServe().trim(), server);
    }

    @Bean
    ApplicationRunner dynamoRunner(SampleProperties properties, DynamoRuntime runtime, Connector connector,
            Outcome outcome, ObjectProvider<Server> server) {
        return new Runner(properties.getDynamo(), runtime, connector, outcome, server.getIfAvailable());
    }

    /** The encode worker: a fresh random tensor per request, readable until its reader completes. */
    static final class Server implements DynamoHandler {
        private final Connector connector;
        private final SampleProperties.Dynamo settings;
        private final Outcome outcome;
        private final AtomicInteger accepted = new AtomicInteger();
        private final CountDownLatch served;
        private final SplittableRandom seeds = new SplittableRandom(new SecureRandom().nextLong());

        Server(Connector connector, SampleProperties.Dynamo settings, Outcome outcome) {
            this.connector = connector;
            this.settings = settings;
            this.outcome = outcome;
            this.served = new CountDownLatch(Math.max(1, settings.getRequests()));
        }

        @Override
        public void handle(io.nixlconnect.dynamo.DynamoRequest request, io.nixlconnect.dynamo.DynamoResponder responder)
                throws Exception {
            if (accepted.incrementAndGet() > settings.getRequests()) {
                throw new IllegalStateException("this sample answers " + settings.getRequests()
                        + " requests and has answered them");
            }
            long bytes = settings.getBytes().toBytes();
            SplittableRandom random;
            synchronized (seeds) {
                random = seeds.split();
            }
            try (Descriptor tensor = Descriptor.allocate(bytes)) {
                fill(tensor.asByteBuffer(), random);
                String sha256 = sha256(tensor);
                try (ReadableOperation readable = connector.createReadable(tensor)) {
                    responder.send(EncodeReply.ofBytes(readable.metadata(), bytes));
                    try {
                        readable.waitForCompletion(settings.getTimeout());
                    } catch (RuntimeException e) {
                        outcome.fail("the reader of request " + request.requestId() + " did not complete: " + e);
                        served.countDown();
                        throw e;
                    }
                }
                System.out.println("dynamo: served " + bytes + " bytes sha256 " + sha256);
                System.out.flush();
                served.countDown();
            }
        }

        private static void fill(ByteBuffer buffer, SplittableRandom random) {
            buffer.order(ByteOrder.LITTLE_ENDIAN);
            while (buffer.remaining() >= Long.BYTES) {
                buffer.putLong(random.nextLong());
            }
            while (buffer.hasRemaining()) {
                buffer.put((byte) random.nextInt());
            }
        }

        void awaitServed() throws InterruptedException {
            served.await();
        }
    }

    static final class Runner implements ApplicationRunner {
        private final SampleProperties.Dynamo settings;
        private final DynamoRuntime runtime;
        private final Connector connector;
        private final Outcome outcome;
        private final Server server;

        Runner(SampleProperties.Dynamo settings, DynamoRuntime runtime, Connector connector, Outcome outcome,
                Server server) {
            this.settings = settings;
            this.runtime = runtime;
            this.connector = connector;
            this.outcome = outcome;
            this.server = server;
        }

        @Override
        public void run(ApplicationArguments args) {
            try {
                if (settings.getRequests() < 1) {
                    throw new IllegalArgumentException("sample.dynamo.requests must be at least 1, was "
                            + settings.getRequests());
                }
                if (server != null) {
                    server.awaitServed();
                } else {
                    call(EndpointId.parse(settings.getCall().trim()));
                }
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                outcome.fail("interrupted");
            } catch (RuntimeException e) {
                outcome.fail(e.getClass().getSimpleName() + ": " + e.getMessage());
            }
            outcome.done = true;
            String failure = outcome.failure();
            System.out.println(failure == null ? "result: OK" : "result: FAILED: " + failure);
            System.out.flush();
        }

        private void call(EndpointId endpoint) {
            try (DynamoClient client = runtime.client(endpoint, io.nixlconnect.dynamo.RouterMode.ROUND_ROBIN)) {
                client.waitForInstances(settings.getTimeout());
                for (int i = 0; i < settings.getRequests(); i++) {
                    try (ResponseStream replies = client.call(Map.of("request", (long) i))) {
                        DynamoResponse first = replies.read();
                        if (first == null) {
                            throw new IllegalStateException("instance " + replies.instance().instanceIdHex() + " of "
                                    + endpoint + " answered request " + i + " with no reply");
                        }
                        read(endpoint, replies, EncodeReply.fromValue(first.data()));
                        replies.readAll(); // the worker ends the stream once its reader completed
                    }
                }
            }
        }

        private void read(EndpointId endpoint, ResponseStream replies, EncodeReply reply) {
            long bytes = Math.multiplyExact(reply.elementCount(), elementSize(reply.embeddingsDtype()));
            long offered = reply.nixlReadableMetadata().totalSize();
            if (offered != bytes) {
                throw new IllegalStateException("the reply's tensor " + reply.embeddingsShape() + " of "
                        + reply.embeddingsDtype() + " is " + bytes + " bytes but its metadata offers " + offered);
            }
            try (Descriptor tensor = Descriptor.allocate(bytes)) {
                connector.read(reply.nixlReadableMetadata(), tensor);
                System.out.println("dynamo: read " + bytes + " bytes from " + endpoint + " instance "
                        + replies.instance().instanceIdHex() + " sha256 " + sha256(tensor));
                System.out.flush();
            }
        }
    }

}
