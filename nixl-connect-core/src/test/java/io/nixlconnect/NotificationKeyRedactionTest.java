package io.nixlconnect;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.catchThrowable;

import ch.qos.logback.classic.Level;
import ch.qos.logback.classic.Logger;
import ch.qos.logback.classic.spi.ILoggingEvent;
import ch.qos.logback.classic.spi.IThrowableProxy;
import ch.qos.logback.core.read.ListAppender;
import io.nixlconnect.transport.embedded.EmbeddedSettings;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.slf4j.LoggerFactory;

/**
 * On the embedded transport the notification key is the credential that opens a passive operation's memory, so it
 * must not leak into what gets written down: toString()s, exception messages, log lines (at any level). They show
 * the key's fingerprint, which is the same on both sides; the key itself still travels in the metadata.
 */
@Timeout(value = 60, unit = TimeUnit.SECONDS)
class NotificationKeyRedactionTest {

    private static final Duration WAIT = Duration.ofSeconds(20);

    private Connector producer;
    private Connector consumer;
    private final ListAppender<ILoggingEvent> logs = new ListAppender<>();
    private final Logger library = (Logger) LoggerFactory.getLogger("io.nixlconnect");
    private Level levelBefore;
    /** Every key the test saw: none may appear in anything written down. */
    private final List<String> keys = new ArrayList<>();

    @BeforeEach
    void start() {
        levelBefore = library.getLevel();
        library.setLevel(Level.TRACE); // the debug lines name peers and failures: they must not name keys either
        logs.start();
        library.addAppender(logs);
        producer = new Connector(ConnectorOptions.builder().workerId("producer").transports(EmbeddedSettings.defaults()).build());
        consumer = new Connector(ConnectorOptions.builder().workerId("consumer").transports(EmbeddedSettings.defaults()).build());
    }

    @AfterEach
    void stop() {
        try {
            consumer.close();
            producer.close();
            // Threads of earlier tests may still log into "io.nixlconnect" (a drain warning): read a copy, taken
            // under the appender's lock once it no longer receives events.
            library.detachAppender(logs);
            List<ILoggingEvent> events;
            synchronized (logs) {
                events = new ArrayList<>(logs.list);
            }
            assertThat(keys).as("the test saw keys to look for").isNotEmpty();
            for (ILoggingEvent event : events) {
                for (String key : keys) {
                    assertThat(event.getFormattedMessage()).as("log line").doesNotContain(key);
                    for (IThrowableProxy thrown = event.getThrowableProxy(); thrown != null; thrown = thrown.getCause()) {
                        assertThat(String.valueOf(thrown.getMessage())).as("logged exception").doesNotContain(key);
                    }
                }
            }
        } finally {
            library.detachAppender(logs);
            library.setLevel(levelBefore);
        }
    }

    /** Messages of {@code thrown} and every cause, none holding {@code key}. */
    private static void assertNoKeyInMessages(Throwable thrown, String key) {
        assertThat(thrown).isNotNull();
        for (Throwable t = thrown; t != null; t = t.getCause()) {
            assertThat(String.valueOf(t.getMessage())).as("message of %s", t.getClass().getSimpleName()).doesNotContain(key);
            assertThat(t.toString()).doesNotContain(key);
        }
    }

    @Test
    void toStringsShowTheKeysFingerprintNotTheKey() {
        try (Descriptor source = new Descriptor(TestData.random(4096)); Descriptor target = Descriptor.allocate(4096)) {
            ReadableOperation readable = producer.createReadable(source);
            RdmaMetadata metadata = readable.metadata();
            String key = readable.notificationKey();
            keys.add(key);
            String fingerprint = readable.notificationKeyFingerprint();
            assertThat(fingerprint).matches("[0-9a-f]{12}");
            assertThat(key).doesNotContain(fingerprint);
            assertThat(metadata.toJson()).as("the key still travels in the metadata").contains(key);

            ReadOperation read = consumer.beginRead(metadata, target);
            assertThat(List.of(readable.toString(), metadata.toString(), read.toString()))
                    .allSatisfy(text -> assertThat(text).doesNotContain(key).contains(fingerprint));
            read.waitForCompletion(WAIT);
            readable.waitForCompletion(WAIT);
            assertThat(read.notificationKeyFingerprint()).as("the same on both sides").isEqualTo(fingerprint);
            assertThat(metadata.notificationKeyFingerprint()).isEqualTo(fingerprint);
            assertThat(List.of(readable.toString(), read.toString()))
                    .allSatisfy(text -> assertThat(text).doesNotContain(key).contains(fingerprint));
        }
    }

    @Test
    void exceptionMessagesNameTheFingerprintNotTheKey() {
        try (Descriptor source = new Descriptor(TestData.random(4096)); Descriptor target = Descriptor.allocate(4096)) {
            // A wait that runs out.
            ReadableOperation waiting = producer.createReadable(source);
            keys.add(waiting.notificationKey());
            Throwable timedOut = catchThrowable(() -> waiting.waitForCompletion(Duration.ofMillis(1)));
            assertThat(timedOut).isInstanceOf(WaitTimeoutException.class)
                    .hasMessageContaining(waiting.notificationKeyFingerprint());
            assertNoKeyInMessages(timedOut, waiting.notificationKey());

            // A passive operation closed before its peer came: cancelled.
            RdmaMetadata closedMetadata = waiting.metadata();
            waiting.close();
            assertNoKeyInMessages(catchThrowable(waiting::waitForCompletion), waiting.notificationKey());

            // A read the peer refuses (its readable is gone): the transport's error, wrapped.
            ReadOperation refused = consumer.beginRead(closedMetadata, target);
            Throwable failed = catchThrowable(() -> refused.waitForCompletion(WAIT));
            assertThat(failed).isInstanceOf(TransferException.class).hasMessageContaining("refused")
                    .hasMessageContaining(refused.notificationKeyFingerprint());
            assertNoKeyInMessages(failed, waiting.notificationKey());
            assertNoKeyInMessages(refused.failure(), waiting.notificationKey());

            // A read cancelled by its caller.
            ReadableOperation readable = producer.createReadable(source);
            keys.add(readable.notificationKey());
            ReadOperation cancelled = consumer.beginRead(readable.metadata(), target);
            cancelled.cancel();
            if (cancelled.status() == OperationStatus.CANCELLED) { // it may have completed first
                assertNoKeyInMessages(catchThrowable(cancelled::waitForCompletion), readable.notificationKey());
            }
            readable.close();
        }
    }
}
