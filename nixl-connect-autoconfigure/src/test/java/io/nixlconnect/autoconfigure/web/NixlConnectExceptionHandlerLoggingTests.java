package io.nixlconnect.autoconfigure.web;

import static org.assertj.core.api.Assertions.assertThat;

import ch.qos.logback.classic.Level;
import ch.qos.logback.classic.Logger;
import ch.qos.logback.classic.spi.ILoggingEvent;
import ch.qos.logback.core.read.ListAppender;
import io.nixlconnect.OperationStatus;
import io.nixlconnect.TransferException;
import io.nixlconnect.TransferTimeoutException;
import io.nixlconnect.TransportFailureException;
import io.nixlconnect.WaitTimeoutException;
import io.nixlconnect.transport.TransportException;
import java.io.EOFException;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.slf4j.LoggerFactory;

/**
 * What {@link NixlConnectExceptionHandler} logs for 502 and 504: a WARN every time, its stack trace for the first of
 * an exception type and then at most once per interval (a clock the test moves), one line otherwise.
 */
class NixlConnectExceptionHandlerLoggingTests {

    private final AtomicLong now = new AtomicLong();
    private final NixlConnectExceptionHandler handler = new NixlConnectExceptionHandler(
            new StackTraceRateLimit(NixlConnectExceptionHandler.STACK_TRACE_INTERVAL, now::get));
    private final Logger logger = (Logger) LoggerFactory.getLogger(NixlConnectExceptionHandler.class);
    private final ListAppender<ILoggingEvent> logs = new ListAppender<>();
    private Level levelBefore;

    @BeforeEach
    void captureAtInfo() {
        levelBefore = logger.getLevel();
        logger.setLevel(Level.INFO); // as an application logs by default
        logs.start();
        logger.addAppender(logs);
    }

    @AfterEach
    void release() {
        logger.detachAppender(logs);
        logger.setLevel(levelBefore);
    }

    @Test
    void aRepeated502LogsItsStackTraceOncePerIntervalAndOneLineOtherwise() {
        TransferException failed = new TransferException(OperationStatus.ERRORED, "read failed",
                new EOFException("connection closed by peer"));
        for (int i = 0; i < 3; i++) {
            handler.peerFailed(failed);
        }
        assertThat(logs.list).hasSize(3).allSatisfy(event -> assertThat(event.getLevel()).isEqualTo(Level.WARN));
        assertThat(logs.list.get(0).getThrowableProxy()).isNotNull();
        assertThat(logs.list.get(0).getFormattedMessage()).isEqualTo("Answering 502: a transfer with a peer failed");
        assertThat(logs.list.subList(1, 3)).allSatisfy(event -> {
            assertThat(event.getThrowableProxy()).isNull();
            assertThat(event.getFormattedMessage()).isEqualTo("Answering 502: a transfer with a peer failed: " + failed
                    + "; caused by java.io.EOFException: connection closed by peer (stack trace: at most one per 60 s "
                    + "per exception type, every one at DEBUG)");
        });

        now.addAndGet(NixlConnectExceptionHandler.STACK_TRACE_INTERVAL.toNanos());
        handler.peerFailed(failed);
        assertThat(logs.list.get(3).getThrowableProxy()).isNotNull();
        assertThat(logs.list.get(3).getFormattedMessage()).isEqualTo("Answering 502: a transfer with a peer failed "
                + "(2 more of TransferException logged without a stack trace since the last)");
    }

    @Test
    void eachExceptionTypeGetsItsOwnStackTrace() {
        handler.peerFailed(new TransferException(OperationStatus.ERRORED, "read failed", null));
        handler.peerFailed(transportFailed());
        handler.timedOut(new TransferTimeoutException("read timed out after PT30S"));
        handler.timedOut(new WaitTimeoutException(OperationStatus.IN_PROGRESS, "wait ran out"));
        assertThat(logs.list).hasSize(4).allSatisfy(event -> assertThat(event.getThrowableProxy()).isNotNull());

        handler.timedOut(new TransferTimeoutException("read timed out after PT30S"));
        assertThat(logs.list.get(4).getThrowableProxy()).isNull();
        assertThat(logs.list.get(4).getFormattedMessage()).startsWith(
                "Answering 504: a transfer timed out: io.nixlconnect.TransferTimeoutException: read timed out after PT30S (");
    }

    @Test
    void atDebugEveryOneLogsItsStackTrace() {
        logger.setLevel(Level.DEBUG);
        TransportFailureException refused = transportFailed();
        for (int i = 0; i < 3; i++) {
            handler.peerFailed(refused);
        }
        assertThat(logs.list).hasSize(3).allSatisfy(event -> {
            assertThat(event.getLevel()).isEqualTo(Level.WARN);
            assertThat(event.getThrowableProxy()).isNotNull();
        });
    }

    @Test
    void theOneLineFormIsOneLineAndShowsAFewCauses() {
        Throwable chain = new EOFException("root");
        for (int i = 0; i < 6; i++) {
            chain = new IllegalStateException("level " + i, chain);
        }
        TransferException failed = new TransferException(OperationStatus.ERRORED, "peer said:\nline two\r\nthree", chain);
        String line = NixlConnectExceptionHandler.oneLine(failed);
        assertThat(line).doesNotContain("\n").doesNotContain("\r")
                .startsWith("io.nixlconnect.TransferException: peer said: line two three; caused by "
                        + "java.lang.IllegalStateException: level 5; caused by")
                .contains("level 2").doesNotContain("level 1").endsWith("; ...");
        assertThat(NixlConnectExceptionHandler.oneLine(new TransferException(OperationStatus.ERRORED, "refused", null)))
                .isEqualTo("io.nixlconnect.TransferException: refused");
        assertThat(NixlConnectExceptionHandler.oneLine(transportFailed())).isEqualTo("io.nixlconnect."
                + "TransportFailureException: The embedded transport failed to open a window: peer 10.0.0.1:9000 refused; "
                + "caused by io.nixlconnect.transport.TransportException: peer 10.0.0.1:9000 refused");
    }

    /** What the connector throws when its transport refuses (the SPI's exception as the cause). */
    private static TransportFailureException transportFailed() {
        return new TransportFailureException("embedded",
                "The embedded transport failed to open a window: peer 10.0.0.1:9000 refused",
                new TransportException("peer 10.0.0.1:9000 refused"));
    }
}
